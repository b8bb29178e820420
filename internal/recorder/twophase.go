package recorder

import (
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// initProducerID2PC is the first InitProducerId version with KIP-939's
// fields: the request's Enable2Pc and KeepPreparedTxn, the answer's
// OngoingTxnProducerId and OngoingTxnProducerEpoch (KIP-939).
const initProducerID2PC = 6

// initProducerIDv6 is an InitProducerId of version 6 or later. kmsg knows
// versions up to 5 only, and reads a v6 body wrongly without an error: it
// takes Enable2Pc for the count of tagged fields. So these versions are
// read here, with the fields in the order KIP-939's schema gives them,
// each version's fields after the last version's.
type initProducerIDv6 struct {
	*kmsg.InitProducerIDRequest
	enable2PC, keepPreparedTxn bool
}

// requestForKey is the request of key at version: kmsg's, but for an
// InitProducerId with KIP-939's fields.
func requestForKey(key, version int16) kmsg.Request {
	if key == kmsg.InitProducerID.Int16() && version >= initProducerID2PC {
		return &initProducerIDv6{InitProducerIDRequest: kmsg.NewPtrInitProducerIDRequest()}
	}
	return kmsg.RequestForKey(key)
}

func (r *initProducerIDv6) ReadFrom(src []byte) error {
	b := kbin.Reader{Src: src}
	r.TransactionalID = b.CompactNullableString()
	r.TransactionTimeoutMillis = b.Int32()
	r.ProducerID = b.Int64()
	r.ProducerEpoch = b.Int16()
	r.enable2PC = b.Bool()
	r.keepPreparedTxn = b.Bool()
	kmsg.SkipTags(&b)
	return b.Complete()
}

func (r *initProducerIDv6) ResponseKind() kmsg.Response {
	return &initProducerIDv6Response{InitProducerIDResponse: &kmsg.InitProducerIDResponse{Version: r.Version}}
}

// initProducerIDv6Response is the answer to an initProducerIDv6.
type initProducerIDv6Response struct {
	*kmsg.InitProducerIDResponse
	ongoingPID   int64
	ongoingEpoch int16
}

func (r *initProducerIDv6Response) ReadFrom(src []byte) error {
	b := kbin.Reader{Src: src}
	r.ThrottleMillis = b.Int32()
	r.ErrorCode = b.Int16()
	r.ProducerID = b.Int64()
	r.ProducerEpoch = b.Int16()
	r.ongoingPID = b.Int64()
	r.ongoingEpoch = b.Int16()
	kmsg.SkipTags(&b)
	return b.Complete()
}
