package histories

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

// doc is a v1 document whose ops are the given JSON objects.
func doc(ops ...string) string {
	return `{"format": "fencecheck/history/v1", "ops": [` + strings.Join(ops, ",\n") + `]}`
}

const (
	okInit    = `{"id": 0, "proc": "A", "call": 0, "return": 5, "type": "init_producer_id", "req": {"transactional_id": "t"}, "resp": {"producer_id": 1, "epoch": 0}}`
	txnFields = `"transactional_id": "t", "producer_id": 1, "epoch": 0`
)

// produce is a produce op with id 4 whose req carries extra after the
// transactional fields, and whose tail follows the req.
func produce(req, tail string) string {
	return `{"id": 4, "proc": "A", "call": 10, "return": 12, "type": "produce", "req": {` + txnFields + req + `}` + tail + `}`
}

const goodProduce = `, "partition": "fares-2", "sequence": 0, "records": [{"key": "trip-1"}]`

// loadRejects are documents Load must refuse, with the error it gives.
// TestSchemaRejectsWhatLoadRejects holds the schema to the same table.
var loadRejects = []struct {
	name, doc, err string
}{
	{"not json", `{"format":`, "not a JSON document: unexpected EOF"},
	{"ops twice", `{"format": "fencecheck/history/v1", "ops": [], "ops": []}`,
		`the document has two members "ops"; a history has one list of operations`},
	{"consumer_group_heartbeat without member_epoch", doc(`{"id": 1, "proc": "A", "call": 0, "type": "consumer_group_heartbeat", "req": {"group": "g", "member_id": "m"}}`),
		"op 1: consumer_group_heartbeat: req.member_epoch is required"},
	{"consumer_group_heartbeat owning a topic", doc(`{"id": 1, "proc": "A", "call": 0, "type": "consumer_group_heartbeat", "req": {"group": "g", "member_id": "m", "member_epoch": 1, "owned_partitions": ["trips"]}}`),
		`op 1: consumer_group_heartbeat: req.owned_partitions[0]: "trips" is not a partition written "topic-N"`},
	{"offset_fetch of no partition", doc(`{"id": 1, "proc": "A", "call": 0, "type": "offset_fetch", "req": {"group": "g"}}`),
		"op 1: offset_fetch: req.partition is required (or req.all_partitions: true)"},
	{"offset_fetch of one partition and all", doc(`{"id": 1, "proc": "A", "call": 0, "type": "offset_fetch", "req": {"group": "g", "partition": "in-0", "all_partitions": true}}`),
		"op 1: offset_fetch: req.partition and req.all_partitions contradict: an offset_fetch names one partition or asks for all, not both"},
	{"offset_fetch of all partitions below v2", doc(`{"id": 1, "proc": "A", "call": 0, "type": "offset_fetch", "api_version": 1, "req": {"group": "g", "all_partitions": true}}`),
		"op 1: offset_fetch: req.all_partitions is OffsetFetch v2's (topics null, KIP-88), but api_version is 1"},
	{"offset_fetch of all partitions answered one offset", doc(`{"id": 1, "proc": "A", "call": 0, "return": 1, "type": "offset_fetch", "req": {"group": "g", "all_partitions": true}, "resp": {"offset": 4}}`),
		"op 1: offset_fetch: resp.offset answers one partition, but req.all_partitions asks for all: list them in resp.offsets"},
	{"offset_fetch of one partition answered a list", doc(`{"id": 1, "proc": "A", "call": 0, "return": 1, "type": "offset_fetch", "req": {"group": "g", "partition": "in-0"}, "resp": {"offsets": {"in-0": 4}}}`),
		"op 1: offset_fetch: resp.offsets and resp.unstable answer a fetch of all partitions, but req names in-0 alone"},
	{"offset_fetch listing a partition twice", doc(`{"id": 1, "proc": "A", "call": 0, "return": 1, "type": "offset_fetch", "req": {"group": "g", "all_partitions": true, "require_stable": true}, "resp": {"offsets": {"in-0": 4}, "unstable": ["in-0"]}}`),
		"op 1: offset_fetch: resp.offsets and resp.unstable contradict: in-0 is listed at offset 4 and as UNSTABLE_OFFSET_COMMIT"},
	{"offset_fetch listing a topic", doc(`{"id": 1, "proc": "A", "call": 0, "return": 1, "type": "offset_fetch", "req": {"group": "g", "all_partitions": true, "require_stable": true}, "resp": {"unstable": ["in"]}}`),
		`op 1: offset_fetch: resp.unstable[0]: "in" is not a partition written "topic-N"`},
	{"trailing data", doc() + ` {}`, "more data after the JSON document"},
	{"not an object", `[]`, "document: must be an object, got an array"},
	{"format missing", `{"ops": []}`, "format is required"},
	{"format wrong", `{"format": "fencecheck/history/v2", "ops": []}`,
		`format: must be "fencecheck/history/v1", got "fencecheck/history/v2"`},
	{"format not a string", `{"format": 1, "ops": []}`, "format: must be a string, got 1"},
	{"ops missing", `{"format": "fencecheck/history/v1"}`, "ops is required"},
	{"ops not a list", `{"format": "fencecheck/history/v1", "ops": {}}`, "ops: must be an array, got an object"},
	{"op null", doc(okInit, `null`), "ops[1]: must be an object, got null"},
	{"name not a string", `{"format": "fencecheck/history/v1", "name": ["x"], "ops": []}`,
		"name: must be a string, got an array"},
	{"trips not strings", `{"format": "fencecheck/history/v1", "trips": ["trip-1", 2], "ops": []}`,
		"trips[1]: must be a string, got 2"},
	{"trips not a list", `{"format": "fencecheck/history/v1", "trips": "trip-1", "ops": []}`,
		`trips: must be an array, got the string "trip-1"`},
	{"transactions_version 3", `{"format": "fencecheck/history/v1", "transactions_version": 3, "ops": []}`,
		"transactions_version: 3 is out of range 1..2"},
	{"transactions_version a string", `{"format": "fencecheck/history/v1", "transactions_version": "2", "ops": []}`,
		`transactions_version: must be an integer, got the string "2"`},

	{"api_version negative", doc(okInit, `{"id": 1, "proc": "A", "call": 6, "return": 8, "type": "end_txn", "api_version": -1, "req": {`+txnFields+`, "commit": true}, "resp": {}}`),
		"op 1: api_version: EndTxn has no version -1: a request header's version is never negative"},
	{"api_version beyond an int16", doc(okInit, `{"id": 1, "proc": "A", "call": 6, "return": 8, "type": "end_txn", "api_version": 40000, "req": {`+txnFields+`, "commit": true}, "resp": {}}`),
		"op 1: api_version: 40000 is not an API version (an int16)"},
	{"api_version not an integer", doc(okInit, `{"id": 1, "proc": "A", "call": 6, "return": 8, "type": "end_txn", "api_version": "3", "req": {`+txnFields+`, "commit": true}, "resp": {}}`),
		`op 1: api_version: must be an integer, got the string "3"`},
	{"api_version on a fault", doc(`{"id": 0, "proc": "A", "call": 0, "type": "stall", "api_version": 1}`),
		"op 0: api_version: a stall is a fault, not a request, and has no API version"},
	{"id missing", doc(`{"proc": "A", "call": 0, "type": "stall"}`), "ops[0]: id is required"},
	{"id not an integer", doc(okInit, `{"id": 1.5, "proc": "A", "call": 0, "type": "stall"}`),
		"ops[1]: id: must be an integer, got 1.5"},
	{"id a string", doc(`{"id": "7", "proc": "A", "call": 0, "type": "stall"}`),
		`ops[0]: id: must be an integer, got the string "7"`},
	{"id too large", doc(`{"id": 99999999999999999999, "proc": "A", "call": 0, "type": "stall"}`),
		"ops[0]: id: 99999999999999999999 is out of range"},
	{"id used twice", doc(okInit, `{"id": 3, "proc": "B", "call": 0, "type": "stall"}`,
		`{"id": 3, "proc": "C", "call": 0, "type": "stall"}`),
		`ops[2]: "id" 3 is used twice (also ops[1])`},
	{"proc missing", doc(`{"id": 2, "call": 0, "type": "stall"}`), "op 2: proc is required"},
	{"proc empty", doc(`{"id": 2, "proc": "", "call": 0, "type": "stall"}`),
		`op 2: proc is required, got "", which means absent`},
	{"call missing", doc(`{"id": 2, "proc": "A", "type": "stall"}`), "op 2: call is required"},
	{"call not an integer", doc(`{"id": 2, "proc": "A", "call": 1e3, "type": "stall"}`),
		"op 2: call: must be an integer, got 1e3"},
	{"return before call", doc(`{"id": 2, "proc": "A", "call": 10, "return": 9, "type": "leave_group", "req": {"group": "g", "member_id": "m"}, "resp": {}}`),
		"op 2: return: 9 is before call 10"},
	{"return not an integer", doc(`{"id": 2, "proc": "A", "call": 10, "return": true, "type": "stall"}`),
		"op 2: return: must be an integer, got a boolean"},
	{"type missing", doc(`{"id": 2, "proc": "A", "call": 0}`), "op 2: type is required"},
	{"type unknown", doc(`{"id": 2, "proc": "A", "call": 0, "type": "commit_txn"}`),
		`op 2: type: unknown operation type "commit_txn"`},

	{"req missing", doc(`{"id": 4, "proc": "A", "call": 0, "type": "produce"}`), "op 4: produce: req is required"},
	{"req not an object", doc(`{"id": 4, "proc": "A", "call": 0, "type": "produce", "req": [1]}`),
		"op 4: produce: req: must be an object, got an array"},
	{"sequence missing", doc(produce(`, "partition": "fares-2", "records": []`, `, "resp": {}`)),
		"op 4: produce: req.sequence is required"},
	{"sequence beyond int32", doc(produce(`, "partition": "fares-2", "sequence": 2147483648, "records": []`, ``)),
		"op 4: produce: req.sequence: 2147483648 is out of range -2147483648..2147483647"},
	{"records not a list", doc(produce(`, "partition": "fares-2", "sequence": 0, "records": {}`, ``)),
		"op 4: produce: req.records: must be an array, got an object"},
	{"record without key", doc(produce(`, "partition": "fares-2", "sequence": 0, "records": [{"key": "a"}, {"value": "v"}]`, ``)),
		"op 4: produce: req.records[1].key is required"},
	{"partition not topic-N", doc(produce(`, "partition": "fares", "sequence": 0, "records": []`, ``)),
		`op 4: produce: req.partition: "fares" is not a partition written "topic-N"`},
	{"partitions entry not topic-N", doc(`{"id": 1, "proc": "A", "call": 0, "type": "add_partitions", "req": {` +
		txnFields + `, "partitions": ["fares-2", "fares-x"]}}`),
		`op 1: add_partitions: req.partitions[1]: "fares-x" is not a partition written "topic-N"`},
	{"epoch out of range", doc(`{"id": 1, "proc": "A", "call": 0, "type": "add_offsets", "req": ` +
		`{"transactional_id": "t", "producer_id": 1, "epoch": 32768, "group": "g"}}`),
		"op 1: add_offsets: req.epoch: 32768 is out of range 0..32767 (or -1: absent)"},
	{"epoch negative", doc(`{"id": 1, "proc": "A", "call": 0, "type": "add_offsets", "req": ` +
		`{"transactional_id": "t", "producer_id": 1, "epoch": -2, "group": "g"}}`),
		"op 1: add_offsets: req.epoch: -2 is out of range 0..32767 (or -1: absent)"},
	{"producer_id missing", doc(`{"id": 1, "proc": "A", "call": 0, "type": "end_txn", "req": ` +
		`{"transactional_id": "t", "epoch": 0, "commit": true}}`),
		"op 1: end_txn: req.producer_id is required"},
	{"commit not a boolean", doc(`{"id": 1, "proc": "A", "call": 0, "type": "end_txn", "req": {` +
		txnFields + `, "commit": "yes"}}`),
		`op 1: end_txn: req.commit: must be true or false, got the string "yes"`},
	{"enable_2pc not a boolean", doc(`{"id": 1, "proc": "A", "call": 0, "type": "init_producer_id", "req": ` +
		`{"transactional_id": "t", "enable_2pc": 1}}`),
		"op 1: init_producer_id: req.enable_2pc: must be true or false, got 1"},
	{"KIP-939 flag at an older version", doc(`{"id": 1, "proc": "A", "call": 0, "type": "init_producer_id", "api_version": 5, "req": ` +
		`{"transactional_id": "t", "keep_prepared_txn": true}}`),
		"op 1: init_producer_id: req.enable_2pc and req.keep_prepared_txn are InitProducerId v6's (KIP-939), but api_version is 5"},
	{"KIP-939 answer at an older version", doc(`{"id": 1, "proc": "A", "call": 0, "return": 1, "type": "init_producer_id", "api_version": 4, ` +
		`"req": {"transactional_id": "t"}, "resp": {"producer_id": 4, "epoch": 2, "ongoing_txn_producer_id": 4, "ongoing_txn_epoch": 1}}`),
		"op 1: init_producer_id: resp.ongoing_txn_producer_id is InitProducerId v6's (KIP-939), but api_version is 4"},
	{"ongoing producer id without its epoch", doc(`{"id": 1, "proc": "A", "call": 0, "return": 1, "type": "init_producer_id", ` +
		`"req": {"transactional_id": "t", "enable_2pc": true, "keep_prepared_txn": true}, ` +
		`"resp": {"producer_id": 4, "epoch": 2, "ongoing_txn_producer_id": 4}}`),
		"op 1: init_producer_id: resp.ongoing_txn_producer_id and resp.ongoing_txn_epoch go together: both or neither"},
	{"delete_records before -2", doc(`{"id": 1, "proc": "A", "call": 0, "type": "delete_records", "req": ` +
		`{"partition": "fares-2", "offset": -2}}`),
		"op 1: delete_records: req.offset: -2 is out of range -1..9223372036854775807"},
	{"delete_records without an offset", doc(`{"id": 1, "proc": "A", "call": 0, "type": "delete_records", "req": ` +
		`{"partition": "fares-2"}}`),
		"op 1: delete_records: req.offset is required"},
	{"create_topics with no partitions", doc(`{"id": 1, "proc": "A", "call": 0, "type": "create_topics", "req": ` +
		`{"topic": "fares", "count": 0}}`),
		"op 1: create_topics: req.count: 0 is out of range 1..2147483647"},
	{"create_partitions without a count", doc(`{"id": 1, "proc": "A", "call": 0, "type": "create_partitions", "req": ` +
		`{"topic": "fares"}}`),
		"op 1: create_partitions: req.count is required"},
	{"delete_topics of a name Kafka refuses", doc(`{"id": 1, "proc": "A", "call": 0, "type": "delete_topics", "req": ` +
		`{"topic": "fares 2"}}`),
		`op 1: delete_topics: req.topic: "fares 2" is not a topic name: Kafka's hold only ASCII letters, digits, '.', '_' and '-'`},
	{"delete_topics without a topic", doc(`{"id": 1, "proc": "A", "call": 0, "type": "delete_topics", "req": {}}`),
		"op 1: delete_topics: req.topic is required"},
	{"alter_config of no config the model reads", doc(`{"id": 1, "proc": "A", "call": 0, "type": "alter_config", "req": ` +
		`{"log.retention.ms": 1000}}`),
		"op 1: alter_config: req.transaction.partition.verification.enable is required"},
	{"alter_config with a string", doc(`{"id": 1, "proc": "A", "call": 0, "type": "alter_config", "req": ` +
		`{"transaction.partition.verification.enable": "false"}}`),
		`op 1: alter_config: req.transaction.partition.verification.enable: must be true or false, got the string "false"`},
	{"two-phase commit switch as a string", `{"format": "fencecheck/history/v1", "broker_config": {"transaction.two.phase.commit.enable": "true"}, "ops": []}`,
		`broker_config.transaction.two.phase.commit.enable: must be true or false, got the string "true"`},
	{"producer_id without epoch", doc(`{"id": 1, "proc": "A", "call": 0, "type": "init_producer_id", "req": ` +
		`{"transactional_id": "t", "producer_id": 1}}`),
		"op 1: init_producer_id: req.producer_id and req.epoch go together: both or neither"},
	{"isolation unknown", doc(`{"id": 1, "proc": "R", "call": 0, "type": "fetch", "req": ` +
		`{"partition": "fares-2", "offset": 0, "isolation": "read_uncommited"}}`),
		`op 1: fetch: req.isolation: must be "read_committed" or "read_uncommitted", got "read_uncommited"`},
	{"offsets keyed by a non-partition", doc(`{"id": 1, "proc": "A", "call": 0, "type": "txn_offset_commit", "req": {` +
		txnFields + `, "group": "g", "offsets": {"trips-0": 3, "trips": 4}}}`),
		`op 1: txn_offset_commit: req.offsets: key "trips" is not a partition written "topic-N"`},
	{"offset negative", doc(`{"id": 1, "proc": "A", "call": 0, "type": "txn_offset_commit", "req": {` +
		txnFields + `, "group": "g", "offsets": {"trips-0": -3}}}`),
		"op 1: txn_offset_commit: req.offsets.trips-0: -3 is out of range 0..9223372036854775807"},
	{"generation out of range", doc(`{"id": 1, "proc": "A", "call": 0, "type": "txn_offset_commit", "req": {` +
		txnFields + `, "group": "g", "generation_id": -5, "offsets": {}}}`),
		"op 1: txn_offset_commit: req.generation_id: -5 is out of range 0..2147483647 (or -1: absent)"},
	{"offset_metadata of a partition not committed", doc(`{"id": 1, "proc": "A", "call": 0, "type": "offset_commit", "req": ` +
		`{"group": "g", "offsets": {"trips-0": 3}, "offset_metadata": {"trips-1": "m"}}}`),
		"op 1: offset_commit: req.offset_metadata names trips-1, which req.offsets does not commit"},
	{"offset_metadata not a string", doc(`{"id": 1, "proc": "A", "call": 0, "type": "txn_offset_commit", "req": {` +
		txnFields + `, "group": "g", "offsets": {"trips-0": 3}, "offset_metadata": {"trips-0": 7}}}`),
		"op 1: txn_offset_commit: req.offset_metadata.trips-0: must be a string, got 7"},
	{"partition_errors of a partition not committed", doc(`{"id": 1, "proc": "A", "call": 0, "return": 1, "type": "offset_commit", "req": ` +
		`{"group": "g", "offsets": {"trips-0": 3, "trips-1": 4}}, "resp": {"partition_errors": {"trips-2": "OFFSET_METADATA_TOO_LARGE"}}}`),
		"op 1: offset_commit: resp.partition_errors names trips-2, which req.offsets does not commit"},
	{"partition_errors the same for every partition", doc(`{"id": 1, "proc": "A", "call": 0, "return": 1, "type": "txn_offset_commit", "req": {` +
		txnFields + `, "group": "g", "offsets": {"trips-0": 3, "trips-1": 4}}, "resp": {"partition_errors": {"trips-0": "OFFSET_METADATA_TOO_LARGE", "trips-1": "OFFSET_METADATA_TOO_LARGE"}}}`),
		`op 1: txn_offset_commit: resp.partition_errors gives every partition OFFSET_METADATA_TOO_LARGE: write it as the operation's "error"`},
	{"partition_errors with a code Kafka does not answer", doc(`{"id": 1, "proc": "A", "call": 0, "return": 1, "type": "offset_commit", "req": ` +
		`{"group": "g", "offsets": {"trips-0": 3, "trips-1": 4}}, "resp": {"partition_errors": {"trips-0": "PRODUCER_FENCED"}}}`),
		"op 1: offset_commit: resp.partition_errors.trips-0: Kafka does not answer an OffsetCommit with PRODUCER_FENCED"},
	{"partition_errors beside an error", doc(`{"id": 1, "proc": "A", "call": 0, "return": 1, "type": "offset_commit", "req": ` +
		`{"group": "g", "offsets": {"trips-0": 3, "trips-1": 4}}, "error": "ILLEGAL_GENERATION", "resp": {"partition_errors": {"trips-0": "OFFSET_METADATA_TOO_LARGE"}}}`),
		`op 1: offset_commit: has both "resp" and "error"; an operation has one or neither`},
	{"offset.metadata.max.bytes not an integer", `{"format": "fencecheck/history/v1", "broker_config": {"offset.metadata.max.bytes": "4096"}, "ops": []}`,
		`broker_config.offset.metadata.max.bytes: must be an integer, got the string "4096"`},
	{"fetched record without offset", doc(`{"id": 1, "proc": "R", "call": 0, "return": 1, "type": "fetch", "req": ` +
		`{"partition": "fares-2", "offset": 0, "isolation": "read_committed"}, "resp": {"records": [{"key": "k"}]}}`),
		"op 1: fetch: resp.records[0].offset is required"},
	{"resp not an object", doc(produce(goodProduce, `, "resp": 40`)),
		"op 4: produce: resp: must be an object, got 40"},
	{"resp base_offset a string", doc(produce(goodProduce, `, "resp": {"base_offset": "40"}`)),
		`op 4: produce: resp.base_offset: must be an integer, got the string "40"`},

	{"error code unknown", doc(produce(goodProduce, `, "error": "FOO"`)),
		`op 4: produce: error: unknown error code "FOO"`},
	{"error code empty", doc(produce(goodProduce, `, "error": ""`)),
		`op 4: produce: error: unknown error code ""`},
	{"error not a string", doc(produce(goodProduce, `, "error": 22`)),
		"op 4: produce: error: must be a string, got 22"},
	{"error code the request cannot get", doc(produce(goodProduce, `, "error": "GROUP_AUTHORIZATION_FAILED"`)),
		`op 4: produce: Kafka does not answer a Produce with GROUP_AUTHORIZATION_FAILED`},
	{"error code a coordinator turns into another", doc(`{"id": 1, "proc": "A", "call": 0, "return": 1, "type": "end_txn", "req": {` +
		txnFields + `, "commit": true}, "error": "NOT_ENOUGH_REPLICAS"}`),
		`op 1: end_txn: Kafka does not answer an EndTxn with NOT_ENOUGH_REPLICAS`},
	{"a code no version gets, at a version", doc(okInit, `{"id": 1, "proc": "A", "call": 6, "return": 8, "type": "end_txn", "api_version": 4, "req": {`+txnFields+`, "commit": true}, "error": "NOT_ENOUGH_REPLICAS"}`),
		`op 1: end_txn: Kafka does not answer an EndTxn with NOT_ENOUGH_REPLICAS at any version, v4 included`},
	{"resp and error", doc(produce(goodProduce, `, "resp": {"base_offset": 40}, "error": "PRODUCER_FENCED"`)),
		`op 4: produce: has both "resp" and "error"; an operation has one or neither`},
	{"resp without return", doc(`{"id": 4, "proc": "A", "call": 10, "type": "produce", "req": {` + txnFields + goodProduce +
		`}, "resp": {"base_offset": 40}}`),
		`op 4: produce: has an answer ("resp" or "error") but no "return"; an operation that never returned has neither`},
	{"error without return", doc(`{"id": 4, "proc": "A", "call": 10, "return": null, "type": "produce", "req": {` +
		txnFields + goodProduce + `}, "error": "REQUEST_TIMED_OUT"}`),
		`op 4: produce: has an answer ("resp" or "error") but no "return"; an operation that never returned has neither`},

	{"fault with req", doc(`{"id": 3, "proc": "A", "call": 20, "type": "stall", "req": {}}`),
		"op 3: stall: req: a stall has none"},
	{"fault with resp", doc(`{"id": 3, "proc": "A", "call": 20, "type": "crash", "resp": {}}`),
		"op 3: crash: resp: a crash has none"},
	{"fault with return", doc(`{"id": 3, "proc": "A", "call": 20, "return": 21, "type": "restart"}`),
		"op 3: restart: return: a fault has none"},
	{"fault with error", doc(`{"id": 3, "proc": "A", "call": 20, "type": "wake", "error": "PRODUCER_FENCED"}`),
		"op 3: wake: error: a fault has none"},
	{"tick without req", doc(`{"id": 3, "proc": "broker", "call": 20, "type": "tick"}`),
		"op 3: tick: req is required"},
	{"tick backwards", doc(`{"id": 3, "proc": "broker", "call": 20, "type": "tick", "req": {"ms": -1}}`),
		"op 3: tick: req.ms: -1 is out of range 0..9223372036854775807"},
	{"timeout_abort without resp", doc(`{"id": 3, "proc": "coordinator", "call": 20, "type": "timeout_abort"}`),
		"op 3: timeout_abort: resp is required"},
	{"timeout_abort without epoch", doc(`{"id": 3, "proc": "coordinator", "call": 20, "type": "timeout_abort", ` +
		`"resp": {"transactional_id": "t", "producer_id": 1}}`),
		"op 3: timeout_abort: resp.epoch is required"},

	{"format null", `{"format": null, "ops": []}`, "format is required"},
	{"clock unknown", `{"format": "fencecheck/history/v1", "clock": "cpu", "ops": []}`,
		`clock must be "wall" (the broker's timers ran on the ops' clock) or absent, got "cpu"`},
	{"topic_changes unknown", `{"format": "fencecheck/history/v1", "topic_changes": "some", "ops": []}`,
		`topic_changes must be "unrecorded" (the topics may have changed by requests the history does not hold) or absent, got "some"`},
	{"topics with a name Kafka refuses", `{"format": "fencecheck/history/v1", "topics": {"fares 2": 3}, "ops": []}`,
		`topics: key "fares 2" is not a topic name: Kafka's hold only ASCII letters, digits, '.', '_' and '-'`},
	{"topics with no partitions", `{"format": "fencecheck/history/v1", "topics": {"fares": 0}, "ops": []}`,
		"topics.fares: 0 is out of range 1..2147483647"},
	{"broker_config not an object", `{"format": "fencecheck/history/v1", "broker_config": 7, "ops": []}`,
		"broker_config: must be an object, got 7"},
	{"expiry interval 0", `{"format": "fencecheck/history/v1", "broker_config": {"producer.id.expiration.ms": 0}, "ops": []}`,
		"broker_config.producer.id.expiration.ms: 0 is out of range 1..2147483647"},
	{"offsets retention 0", `{"format": "fencecheck/history/v1", "broker_config": {"offsets.retention.minutes": 0}, "ops": []}`,
		"broker_config.offsets.retention.minutes: 0 is out of range 1..2147483647"},
	{"offsets retention check not a number", `{"format": "fencecheck/history/v1", "broker_config": {"offsets.retention.check.interval.ms": "10m"}, "ops": []}`,
		`broker_config.offsets.retention.check.interval.ms: must be an integer, got the string "10m"`},
	{"max transaction timeout 0", `{"format": "fencecheck/history/v1", "broker_config": {"transaction.max.timeout.ms": 0}, "ops": []}`,
		"broker_config.transaction.max.timeout.ms: 0 is out of range 1..2147483647"},
	{"max transaction timeout past an INT", `{"format": "fencecheck/history/v1", "broker_config": {"transaction.max.timeout.ms": 2147483648}, "ops": []}`,
		"broker_config.transaction.max.timeout.ms: 2147483648 is out of range 1..2147483647"},
	{"group size 0", `{"format": "fencecheck/history/v1", "broker_config": {"group.max.size": 0}, "ops": []}`,
		"broker_config.group.max.size: 0 is out of range 1..2147483647"},
	{"session timeout minimum 0", `{"format": "fencecheck/history/v1", "broker_config": {"group.min.session.timeout.ms": 0}, "ops": []}`,
		"broker_config.group.min.session.timeout.ms: 0 is out of range 1..2147483647"},
	{"session timeout maximum as a string", `{"format": "fencecheck/history/v1", "broker_config": {"group.max.session.timeout.ms": "300000"}, "ops": []}`,
		`broker_config.group.max.session.timeout.ms: must be an integer, got the string "300000"`},
	{"group size as a string", `{"format": "fencecheck/history/v1", "broker_config": {"group.max.size": "4"}, "ops": []}`,
		`broker_config.group.max.size: must be an integer, got the string "4"`},
	{"consumer group size 0", `{"format": "fencecheck/history/v1", "broker_config": {"group.consumer.max.size": 0}, "ops": []}`,
		"broker_config.group.consumer.max.size: 0 is out of range 1..2147483647"},
	{"no such migration policy", `{"format": "fencecheck/history/v1", "broker_config": {"group.consumer.migration.policy": "sideways"}, "ops": []}`,
		`broker_config.group.consumer.migration.policy: "sideways" is not a migration policy: Kafka has disabled, upgrade, downgrade and bidirectional`},
	{"migration policy as a flag", `{"format": "fencecheck/history/v1", "broker_config": {"group.consumer.migration.policy": true}, "ops": []}`,
		`broker_config.group.consumer.migration.policy: must be a string, got a boolean`},
	{"verification switch as a string", `{"format": "fencecheck/history/v1", "broker_config": {"transaction.partition.verification.enable": "false"}, "ops": []}`,
		`broker_config.transaction.partition.verification.enable: must be true or false, got the string "false"`},
	{"expiry interval as a string", `{"format": "fencecheck/history/v1", "broker_config": {"transactional.id.expiration.ms": "1000"}, "ops": []}`,
		`broker_config.transactional.id.expiration.ms: must be an integer, got the string "1000"`},
	{"trips holding null", `{"format": "fencecheck/history/v1", "trips": ["trip-1", null], "ops": []}`,
		"trips[1]: must be a string, got null"},
	{"output_topics not a list", `{"format": "fencecheck/history/v1", "output_topics": "fares", "ops": []}`,
		`output_topics: must be an array, got the string "fares"`},
	{"client not a string", doc(`{"id": 2, "proc": "A", "client": 7, "call": 0, "type": "stall"}`),
		"op 2: client: must be a string, got 7"},
	{"req null", doc(`{"id": 4, "proc": "A", "call": 0, "type": "produce", "req": null}`), "op 4: produce: req is required"},
	{"transactional_id empty where required", doc(`{"id": 1, "proc": "A", "call": 0, "type": "add_offsets", "req": ` +
		`{"transactional_id": "", "producer_id": 1, "epoch": 0, "group": "g"}}`),
		`op 1: add_offsets: req.transactional_id is required, got "", which means absent`},
	{"transactional_id of add_partitions null", doc(`{"id": 1, "proc": "A", "call": 0, "type": "add_partitions", "req": ` +
		`{"transactional_id": null, "producer_id": 1, "epoch": 0, "partitions": []}}`),
		`op 1: add_partitions: req.transactional_id is required`},
	{"offsets missing", doc(`{"id": 1, "proc": "A", "call": 0, "type": "txn_offset_commit", "req": {` + txnFields + `, "group": "g"}}`),
		"op 1: txn_offset_commit: req.offsets is required"},
	{"offset_commit offsets missing", doc(`{"id": 1, "proc": "A", "call": 0, "type": "offset_commit", "req": {"group": "g", "member_id": "m", "generation_id": 1}}`),
		"op 1: offset_commit: req.offsets is required"},
	{"offset_commit answered INVALID_TXN_STATE", doc(`{"id": 1, "proc": "A", "call": 0, "return": 1, "type": "offset_commit", "req": {"group": "g", "offsets": {"in-0": 1}}, "error": "INVALID_TXN_STATE"}`),
		"op 1: offset_commit: Kafka does not answer an OffsetCommit with INVALID_TXN_STATE"},
	{"join_group without member_id", doc(`{"id": 1, "proc": "A", "call": 0, "type": "join_group", "req": {"group": "g", "partitions": []}}`),
		"op 1: join_group: req.member_id is required"},
	{"heartbeat generation -1", doc(`{"id": 1, "proc": "A", "call": 0, "type": "heartbeat", "req": ` +
		`{"group": "g", "member_id": "m", "generation_id": -1}}`),
		"op 1: heartbeat: req.generation_id is required, got -1, which means absent"},
	{"heartbeat member_id empty", doc(`{"id": 1, "proc": "A", "call": 0, "type": "heartbeat", "req": ` +
		`{"group": "g", "member_id": "", "generation_id": 1}}`),
		`op 1: heartbeat: req.member_id is required, got "", which means absent`},
	{"sync_group assignments to an empty member id", doc(`{"id": 1, "proc": "A", "call": 0, "type": "sync_group", "req": ` +
		`{"group": "g", "member_id": "m", "generation_id": 1, "assignments": {"": ["trips-0"]}}}`),
		"op 1: sync_group: req.assignments: a member id must not be empty"},
	{"sync_group assignments not partitions", doc(`{"id": 1, "proc": "A", "call": 0, "type": "sync_group", "req": ` +
		`{"group": "g", "member_id": "m", "generation_id": 1, "assignments": {"m": ["trips"]}}}`),
		`op 1: sync_group: req.assignments.m[0]: "trips" is not a partition written "topic-N"`},
	{"sync_group without generation", doc(`{"id": 1, "proc": "A", "call": 0, "type": "sync_group", "req": ` +
		`{"group": "g", "member_id": "m"}}`),
		"op 1: sync_group: req.generation_id is required"},
	{"join_group protocol without name", doc(`{"id": 1, "proc": "A", "call": 0, "type": "join_group", "req": ` +
		`{"group": "g", "member_id": "", "partitions": [], "join_only": true, "protocols": [{"topics": ["trips"]}]}}`),
		"op 1: join_group: req.protocols[0].name is required"},
	{"join_group answer's protocol not a string", doc(`{"id": 1, "proc": "A", "call": 0, "return": 1, "type": "join_group", "req": ` +
		`{"group": "g", "member_id": "", "partitions": []}, "resp": {"member_id": "m", "protocol": 7}}`),
		"op 1: join_group: resp.protocol: must be a string, got 7"},
	{"sync_group protocol_type not a string", doc(`{"id": 1, "proc": "A", "call": 0, "type": "sync_group", "req": ` +
		`{"group": "g", "member_id": "m", "generation_id": 1, "protocol_type": ["consumer"]}}`),
		"op 1: sync_group: req.protocol_type: must be a string, got an array"},
	{"fetch offset -1", doc(`{"id": 1, "proc": "R", "call": 0, "type": "fetch", "req": ` +
		`{"partition": "fares-2", "offset": -1, "isolation": "read_committed"}}`),
		"op 1: fetch: req.offset is required, got -1, which means absent"},
	{"partition number beyond int32", doc(produce(`, "partition": "fares-2147483648", "sequence": 0, "records": []`, ``)),
		`op 4: produce: req.partition: "fares-2147483648" is not a partition written "topic-N"`},
	{"epoch without producer_id", doc(`{"id": 1, "proc": "A", "call": 0, "type": "init_producer_id", "req": {"epoch": 3}}`),
		"op 1: init_producer_id: req.producer_id and req.epoch go together: both or neither"},
	{"leave with no member and no instance", doc(`{"id": 1, "proc": "A", "call": 0, "return": 1, "type": "leave_group", "req": ` +
		`{"group": "g", "member_id": ""}, "resp": {}}`),
		`op 1: leave_group: req.member_id of a leave_group may be "" only with a group_instance_id (KIP-345)`},
	{"leave with no member and an empty instance", doc(`{"id": 1, "proc": "A", "call": 0, "return": 1, "type": "leave_group", "req": ` +
		`{"group": "g", "member_id": "", "group_instance_id": ""}, "resp": {}}`),
		`op 1: leave_group: req.member_id of a leave_group may be "" only with a group_instance_id (KIP-345)`},
	{"resp an array", doc(`{"id": 1, "proc": "A", "call": 0, "return": 1, "type": "leave_group", "req": ` +
		`{"group": "g", "member_id": "m"}, "resp": []}`),
		"op 1: leave_group: resp: must be an object, got an array"},
	{"assignment not partitions", doc(`{"id": 1, "proc": "A", "call": 0, "return": 1, "type": "join_group", "req": ` +
		`{"group": "g", "member_id": "", "partitions": []}, "resp": {"assignment": ["trips"]}}`),
		`op 1: join_group: resp.assignment[0]: "trips" is not a partition written "topic-N"`},
	{"fetched producer_id -2", doc(`{"id": 1, "proc": "R", "call": 0, "return": 1, "type": "fetch", "req": ` +
		`{"partition": "fares-2", "offset": 0, "isolation": "read_committed"}, "resp": {"records": [{"offset": 0, "key": "k", "producer_id": -2}]}}`),
		"op 1: fetch: resp.records[0].producer_id: -2 is out of range 0..9223372036854775807 (or -1: absent)"},
	{"tick with resp", doc(`{"id": 3, "proc": "broker", "call": 20, "type": "tick", "req": {"ms": 5}, "resp": {}}`),
		"op 3: tick: resp: a tick has none"},
	{"timeout_abort with req", doc(`{"id": 3, "proc": "coordinator", "call": 20, "type": "timeout_abort", "req": {}, ` +
		`"resp": {"transactional_id": "t", "producer_id": 1, "epoch": 2}}`),
		"op 3: timeout_abort: req: a timeout_abort has none"},
	{"tick ms written 1.0", doc(`{"id": 3, "proc": "broker", "call": 20, "type": "tick", "req": {"ms": 1.0}}`),
		"op 3: tick: req.ms: must be an integer, got 1.0"},

	{"requests of one proc overlap", doc(okInit, produce(goodProduce, `, "resp": {"base_offset": 40}`),
		`{"id": 7, "proc": "A", "call": 11, "return": 13, "type": "leave_group", "req": {"group": "g", "member_id": "m"}, "resp": {}}`),
		`op 7: proc "A": called at 11 while its op 4 (call 10, return 12) was running; a process's operations do not overlap`},
	{"requests of one proc called together", doc(`{"id": 1, "proc": "A", "call": 10, "return": 11, "type": "leave_group", "req": {"group": "g", "member_id": "m"}, "resp": {}}`,
		produce(goodProduce, `, "resp": {"base_offset": 40}`)),
		`op 4: proc "A": called at 10 while its op 1 (call 10, return 11) was running; a process's operations do not overlap`},
	{"called together, one answered at once", doc(`{"id": 1, "proc": "A", "call": 10, "return": 10, "type": "leave_group", "req": {"group": "g", "member_id": "m"}, "resp": {}}`,
		`{"id": 2, "proc": "A", "call": 10, "return": 10, "type": "leave_group", "req": {"group": "g", "member_id": "m"}, "resp": {}}`,
		`{"id": 3, "proc": "A", "call": 10, "return": 11, "type": "leave_group", "req": {"group": "g", "member_id": "m"}, "resp": {}}`,
		produce(goodProduce, `, "resp": {"base_offset": 40}`)),
		`op 4: proc "A": called at 10 while its op 3 (call 10, return 11) was running; a process's operations do not overlap`},
}

func TestLoadRejects(t *testing.T) {
	for _, c := range loadRejects {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(strings.NewReader(c.doc))
			require.EqualError(t, err, c.err)
			_, whole := loadWhole(strings.NewReader(c.doc))
			require.EqualError(t, whole, c.err, "the streaming read and the whole-document read agree")
		})
	}
}

// loadAccepts are documents Load must accept. TestSchemaAcceptsWhatLoadAccepts
// holds the schema to the same table.
var loadAccepts = map[string]string{
	"a leave naming the instance alone": doc(`{"id": 1, "proc": "A", "call": 0, "return": 1, "type": "leave_group", "req": {"group": "g", "member_id": "", "group_instance_id": "i"}, "resp": {}}`),
	"empty":                             doc(),
	"a commit refused for one partition's metadata": `{"format": "fencecheck/history/v1", "broker_config": {"offset.metadata.max.bytes": 3}, "ops": [` +
		`{"id": 1, "proc": "A", "call": 0, "return": 1, "type": "offset_commit", "req": {"group": "g", "offsets": {"trips-0": 3, "trips-1": 4}, "offset_metadata": {"trips-0": "abcd", "trips-1": ""}}, "resp": {"partition_errors": {"trips-0": "OFFSET_METADATA_TOO_LARGE"}}},` +
		`{"id": 2, "proc": "A", "call": 2, "return": 3, "type": "offset_fetch", "req": {"group": "g", "partition": "trips-1"}, "resp": {"offset": 4, "metadata": ""}}]}`,
	"consumer_group_heartbeat": doc(`{"id": 0, "proc": "A", "call": 0, "return": 1, "type": "consumer_group_heartbeat", "req": {"group": "g", "member_id": "", "member_epoch": 0, "group_instance_id": "i", "rebalance_timeout_ms": 300000, "subscribed_topic_names": ["trips"], "server_assignor": "uniform", "owned_partitions": []}, "resp": {"member_id": "m", "member_epoch": 1, "heartbeat_interval_ms": 5000, "assignment": []}}`,
		`{"id": 1, "proc": "A", "call": 2, "return": 3, "type": "consumer_group_heartbeat", "req": {"group": "g", "member_id": "m", "member_epoch": -2, "group_instance_id": "i"}, "resp": {"member_id": "m", "member_epoch": -2}}`),
	"api_version on requests": doc(`{"id": 0, "proc": "A", "call": 0, "return": 5, "type": "init_producer_id", "api_version": 4, "req": {"transactional_id": "t"}, "resp": {"producer_id": 1, "epoch": 0}}`,
		`{"id": 1, "proc": "A", "call": 6, "return": 8, "type": "end_txn", "api_version": 1, "req": {`+txnFields+`, "commit": true}, "error": "INVALID_PRODUCER_EPOCH"}`,
		`{"id": 2, "proc": "A", "call": 9, "return": 10, "type": "end_txn", "api_version": 3, "req": {`+txnFields+`, "commit": true}, "error": "PRODUCER_FENCED"}`,
		`{"id": 3, "proc": "A", "call": 11, "return": 12, "type": "end_txn", "api_version": null, "req": {`+txnFields+`, "commit": true}, "error": "PRODUCER_FENCED"}`),
	// A newer Kafka's version, and codes that Kafka sends only at other
	// versions: error-codes judges them (checker's tests); a recording
	// of another broker stays usable.
	// OffsetFetch with topics null: every partition with an offset.
	"offset_fetch of all partitions": doc(`{"id": 0, "proc": "A", "call": 0, "return": 1, "type": "offset_fetch", "api_version": 8, "req": {"group": "g", "all_partitions": true, "require_stable": true}, "resp": {"offsets": {"in-0": 4}, "unstable": ["in-1"]}}`,
		`{"id": 1, "proc": "A", "call": 2, "return": 3, "type": "offset_fetch", "req": {"group": "g", "partition": null, "all_partitions": true}, "resp": {"offset": -1}}`,
		`{"id": 2, "proc": "A", "call": 4, "return": 5, "type": "offset_fetch", "req": {"group": "g", "partition": "in-0", "all_partitions": false}, "resp": {"offset": 4, "offsets": {}, "unstable": []}}`),
	// A simple commit sends no member and generation -1.
	"offset_commit of a simple consumer": doc(`{"id": 0, "proc": "A", "call": 0, "return": 1, "type": "offset_commit", "req": {"group": "g", "offsets": {"in-0": 4}}, "resp": {}}`,
		`{"id": 1, "proc": "A", "call": 2, "return": 3, "type": "offset_commit", "req": {"group": "g", "member_id": "", "generation_id": -1, "offsets": {"in-0": 5}}, "error": "REBALANCE_IN_PROGRESS"}`),
	"api_version above the newest known":   doc(okInit, `{"id": 1, "proc": "A", "call": 6, "return": 8, "type": "end_txn", "api_version": 6, "req": {`+txnFields+`, "commit": true}, "resp": {}}`),
	"PRODUCER_FENCED to EndTxn v1":         doc(okInit, `{"id": 1, "proc": "A", "call": 6, "return": 8, "type": "end_txn", "api_version": 1, "req": {`+txnFields+`, "commit": true}, "error": "PRODUCER_FENCED"}`),
	"TRANSACTION_ABORTABLE to Produce v10": doc(okInit, produce(goodProduce, `, "api_version": 10, "error": "TRANSACTION_ABORTABLE"`)),
	"good":                                 doc(okInit, produce(goodProduce, `, "resp": {"base_offset": 40}`)),
	"pending":                              doc(`{"id": 4, "proc": "A", "call": 10, "type": "produce", "req": {`+txnFields+goodProduce+`}}`, `{"id": 5, "proc": "A", "call": 11, "return": 13, "type": "produce", "req": {`+txnFields+goodProduce+`}}`),
	"a stall strikes mid-request": doc(produce(goodProduce, `, "resp": {"base_offset": 40}`),
		`{"id": 7, "proc": "A", "call": 11, "type": "stall"}`),
	"call at the return of the last (a coarse clock)": doc(`{"id": 1, "proc": "A", "call": 12, "return": 14, "type": "leave_group", "req": {"group": "g", "member_id": "m"}, "resp": {}}`,
		produce(goodProduce, `, "resp": {"base_offset": 40}`)),
	"a run of answers on one tick": doc(`{"id": 1, "proc": "A", "call": 12, "return": 12, "type": "leave_group", "req": {"group": "g", "member_id": "m"}, "resp": {}}`,
		`{"id": 2, "proc": "A", "call": 12, "return": 12, "type": "leave_group", "req": {"group": "g", "member_id": "m"}, "resp": {}}`,
		`{"id": 3, "proc": "A", "call": 12, "type": "leave_group", "req": {"group": "g", "member_id": "m"}}`,
		produce(goodProduce, `, "resp": {"base_offset": 40}`)),
	"other procs overlap": doc(produce(goodProduce, `, "error": "PRODUCER_FENCED"`),
		`{"id": 5, "proc": "B", "call": 11, "return": 12, "type": "leave_group", "req": {"group": "g", "member_id": "m"}, "resp": {}}`),
	"null counts as absent": `{"format": "fencecheck/history/v1", "name": null, "transactions_version": null, "clock": null, ` +
		`"trips": null, "output_topics": null, "ops": [` +
		`{"id": 1, "proc": "A", "client": null, "call": 0, "return": null, "type": "stall", "req": null, "resp": null, "error": null},` +
		`{"id": 2, "proc": "B", "call": 0, "return": null, "type": "init_producer_id", "req": ` +
		`{"transactional_id": null, "timeout_ms": null, "producer_id": null, "epoch": null}, "resp": null, "error": null}]}`,
	"members the format does not name": `{"format": "fencecheck/history/v1", "recorded_by": {"tool": "x"}, "ops": [` +
		`{"id": 1, "proc": "A", "call": 0, "return": 1, "type": "leave_group", "note": 1, ` +
		`"req": {"group": "g", "member_id": "m", "reason": "done"}, "resp": {"throttle_time_ms": 0}}]}`,
	"clock wall":  `{"format": "fencecheck/history/v1", "clock": "wall", "ops": []}`,
	"clock empty": `{"format": "fencecheck/history/v1", "clock": "", "ops": []}`,
	"broker_config naming the maximum transaction timeout": `{"format": "fencecheck/history/v1", "broker_config": ` +
		`{"transaction.max.timeout.ms": 900000}, "ops": []}`,
	"an add_partitions with an empty transactional_id": doc(`{"id": 1, "proc": "A", "call": 0, "return": 1, "type": "add_partitions", "req": ` +
		`{"transactional_id": "", "producer_id": 1, "epoch": 0, "partitions": ["fares-2"]}, "error": "INVALID_REQUEST"}`),
	"an init_producer_id with an empty transactional_id": doc(`{"id": 1, "proc": "A", "call": 0, "return": 1, "type": "init_producer_id", "req": ` +
		`{"transactional_id": "", "timeout_ms": 60000}, "error": "INVALID_REQUEST"}`),
	"an end_txn with an empty transactional_id": doc(`{"id": 1, "proc": "A", "call": 0, "return": 1, "type": "end_txn", "req": ` +
		`{"transactional_id": "", "producer_id": 1, "epoch": 0, "commit": true}, "error": "INVALID_REQUEST"}`),
	"broker_config with two-phase commit off": `{"format": "fencecheck/history/v1", "broker_config": ` +
		`{"transaction.two.phase.commit.enable": false}, "ops": []}`,
	"a KIP-939 init keeping a prepared transaction": doc(`{"id": 1, "proc": "A", "call": 0, "return": 1, "type": "init_producer_id", "api_version": 6, ` +
		`"req": {"transactional_id": "t", "enable_2pc": true, "keep_prepared_txn": true}, ` +
		`"resp": {"producer_id": 4, "epoch": 2, "ongoing_txn_producer_id": 4, "ongoing_txn_epoch": 1}}`),
	"an ongoing identity of -1 is none": doc(`{"id": 1, "proc": "A", "call": 0, "return": 1, "type": "init_producer_id", ` +
		`"req": {"transactional_id": "t", "enable_2pc": false}, "resp": {"producer_id": 4, "epoch": 0, ` +
		`"ongoing_txn_producer_id": -1, "ongoing_txn_epoch": -1}}`),
	"broker_config with partition verification on": `{"format": "fencecheck/history/v1", "broker_config": ` +
		`{"transaction.partition.verification.enable": true}, "ops": []}`,
	"broker_config with names the checker does not read": `{"format": "fencecheck/history/v1", "broker_config": ` +
		`{"transactional.id.expiration.ms": 1000, "log.retention.ms": "-1", "min.insync.replicas": 2}, "ops": []}`,
	"a topic with dashes, a partition with zeros": doc(produce(`, "partition": "fare-writes-007", "sequence": -5, `+
		`"records": [{"key": "", "value": null}]`, ``)),
	"negative ids and times":            doc(`{"id": -3, "proc": "A", "call": -10, "return": -2, "type": "leave_group", "req": {"group": "g", "member_id": "m"}, "resp": {}}`),
	"produce refused before its append": doc(produce(goodProduce, `, "error": "NOT_ENOUGH_REPLICAS"`)),
	"commit answered by a coordinator that lost its log": doc(`{"id": 1, "proc": "A", "call": 0, "return": 1, "type": "end_txn", "req": {` +
		txnFields + `, "commit": true}, "error": "COORDINATOR_NOT_AVAILABLE"}`),
	"fetch out of range": doc(`{"id": 1, "proc": "R", "call": 0, "return": 1, "type": "fetch", "req": ` +
		`{"partition": "fares-2", "offset": 9, "isolation": "read_committed"}, "error": "OFFSET_OUT_OF_RANGE"}`),
	"epoch -1 where optional": doc(`{"id": 1, "proc": "A", "call": 0, "type": "init_producer_id", "req": {"producer_id": -1, "epoch": -1}}`),
}

func TestLoadAccepts(t *testing.T) {
	for name, d := range loadAccepts {
		t.Run(name, func(t *testing.T) {
			_, err := Load(strings.NewReader(d))
			require.NoError(t, err)
		})
	}
}

// requestOf is a minimal request of each kind, answered with code.
func requestOf(k model.Kind, code model.Code) string {
	reqs := map[model.Kind]string{
		model.InitProducerID:         `{"transactional_id": "t"}`,
		model.AddPartitions:          `{` + txnFields + `, "partitions": ["fares-2"]}`,
		model.Produce:                `{` + txnFields + goodProduce + `}`,
		model.AddOffsets:             `{` + txnFields + `, "group": "g"}`,
		model.TxnOffsetCommit:        `{` + txnFields + `, "group": "g", "offsets": {"trips-0": 3}}`,
		model.EndTxn:                 `{` + txnFields + `, "commit": true}`,
		model.JoinGroup:              `{"group": "g", "member_id": "", "partitions": ["trips-0"]}`,
		model.LeaveGroup:             `{"group": "g", "member_id": "m"}`,
		model.OffsetFetch:            `{"group": "g", "partition": "trips-0"}`,
		model.Fetch:                  `{"partition": "fares-2", "offset": 0, "isolation": "read_committed"}`,
		model.Heartbeat:              `{"group": "g", "member_id": "m", "generation_id": 1}`,
		model.OffsetCommit:           `{"group": "g", "offsets": {"trips-0": 3}}`,
		model.SyncGroup:              `{"group": "g", "member_id": "m", "generation_id": 1, "assignments": {"m": ["trips-0"]}}`,
		model.ConsumerGroupHeartbeat: `{"group": "g", "member_id": "m", "member_epoch": 1}`,
		model.DeleteRecords:          `{"partition": "fares-2", "offset": 40}`,
		model.AlterConfig:            `{"transaction.partition.verification.enable": false}`,
		model.CreateTopics:           `{"topic": "fares", "count": 3}`,
		model.CreatePartitions:       `{"topic": "fares", "count": 6}`,
		model.DeleteTopics:           `{"topic": "fares"}`,
	}
	return fmt.Sprintf(`{"id": 1, "proc": "A", "call": 0, "return": 1, "type": %q, "req": %s, "error": %q}`, k, reqs[k], code)
}

// Load takes a code for exactly the requests Kafka answers with it, and
// names the request and the code otherwise.
func TestLoadTakesACodeForTheRequestsThatGetIt(t *testing.T) {
	for _, k := range model.Kinds {
		if !k.IsRequest() {
			continue
		}
		for _, code := range model.Codes {
			_, err := Load(strings.NewReader(doc(requestOf(k, code))))
			if model.Answers(k, code) {
				require.NoError(t, err, "%s answered %s", k, code)
				continue
			}
			require.EqualError(t, err, fmt.Sprintf("op 1: %s: Kafka does not answer %s with %s", k, withArticle(k.APIName()), code))
		}
	}
}

// LoadFile makes room for the operations at once: countOps finds them
// whatever their strings hold.
func TestCountOps(t *testing.T) {
	tricky := `{"id": 5, "proc": "{[\"\\", "call": 1, "type": "stall"}`
	n, err := countOps(strings.NewReader(`{"format": "fencecheck/history/v1", "trips": ["{", "["], "ops": [` + okInit + `,` + tricky + `]}`))
	require.NoError(t, err)
	require.Equal(t, 2, n)
}

// TestLoadBrokenOps: a document that stops being JSON inside its ops names
// the operation and the byte after which it begins, and keeps the whole
// operations before it, with the header read before the ops.
func TestLoadBrokenOps(t *testing.T) {
	whole := `{"format": "fencecheck/history/v1", "clock": "wall", "ops": [` + okInit + ",\n" + produce(goodProduce, `, "resp": {"base_offset": 0}`) + `]}`
	second := strings.Index(whole, `{"id": 4`)
	cases := []struct {
		name, doc, err string
		index, before  int
	}{
		{"cut inside an operation", whole[:second+30], "ops[1], after byte %d, is cut short", 1, 1},
		{"cut after an operation", whole[:second-2], "ops[1], after byte %d, is cut short", 1, 1},
		{"corrupted", whole[:second] + "x" + whole[second+1:], "ops[1], after byte %d, is not JSON: invalid character 'x' looking for beginning of value", 1, 1},
		{"cut in the first", whole[:second-40], "ops[0], after byte %d, is cut short", 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(strings.NewReader(c.doc))
			var broken *BrokenError
			require.ErrorAs(t, err, &broken)
			require.EqualError(t, err, "not a JSON document: "+fmt.Sprintf(c.err, broken.Offset))
			require.Equal(t, c.index, broken.Index)
			require.LessOrEqual(t, broken.Offset, int64(second))
			require.NotNil(t, broken.Before)
			require.Len(t, broken.Before.Ops, c.before)
			require.True(t, broken.Before.WallClock, "the header before the ops is kept")
		})
	}

	_, err := Load(strings.NewReader(doc(okInit, `{"id": 0, "proc": "A", "call": 9, "type": "stall"}`, `{"id": 2`)))
	var broken *BrokenError
	require.ErrorAs(t, err, &broken)
	require.Nil(t, broken.Before, "the operations before do not load: an id is used twice")

	cut := doc(`{"id": 0, "proc": "A", "call": 9, "type": "stal"}`, okInit, okInit)
	_, err = Load(strings.NewReader(cut[:len(cut)-2]))
	require.ErrorAs(t, err, &broken)
	require.Equal(t, 3, broken.Index, "the operations after one that does not decode are counted too")
	require.Nil(t, broken.Before, "an operation before does not decode")
}

// A group request may name the empty group id, which Kafka refuses to a
// classic group's requests and takes as any other in a commit: it loads
// as an empty group, not an absent one, and is saved back as "". A
// consumer_group_heartbeat still needs a group.
func TestLoadEmptyGroupID(t *testing.T) {
	h, err := Load(strings.NewReader(doc(`{"id": 1, "proc": "A", "call": 0, "return": 1, "type": "join_group", "req": {"group": "", "member_id": "", "partitions": ["trips-0"]}, "error": "INVALID_GROUP_ID"}`)))
	require.NoError(t, err)
	require.True(t, h.Ops[0].Req.EmptyGroup)
	var buf bytes.Buffer
	require.NoError(t, Save(&buf, h))
	require.Contains(t, buf.String(), `"group": ""`)
	again, err := Load(&buf)
	require.NoError(t, err)
	require.Equal(t, h, again)

	_, err = Load(strings.NewReader(doc(`{"id": 1, "proc": "A", "call": 0, "type": "consumer_group_heartbeat", "req": {"group": "", "member_id": "m", "member_epoch": 1}}`)))
	require.ErrorContains(t, err, "req.group is required")
}

// A join_group's protocol_type "" is the empty protocol type, which
// Kafka refuses, and not one left out: it loads as such and is saved
// back as "".
func TestLoadEmptyProtocolType(t *testing.T) {
	h, err := Load(strings.NewReader(doc(`{"id": 1, "proc": "A", "call": 0, "return": 1, "type": "join_group", "req": {"group": "g", "member_id": "", "partitions": ["trips-0"], "protocol_type": "", "protocols": [{"name": "range"}]}, "error": "INCONSISTENT_GROUP_PROTOCOL"}`)))
	require.NoError(t, err)
	require.True(t, h.Ops[0].Req.EmptyProtocolType)
	var buf bytes.Buffer
	require.NoError(t, Save(&buf, h))
	require.Contains(t, buf.String(), `"protocol_type": ""`)
	again, err := Load(&buf)
	require.NoError(t, err)
	require.Equal(t, h, again)

	h, err = Load(strings.NewReader(doc(`{"id": 1, "proc": "A", "call": 0, "type": "join_group", "req": {"group": "g", "member_id": "", "partitions": ["trips-0"]}}`)))
	require.NoError(t, err)
	require.False(t, h.Ops[0].Req.EmptyProtocolType, "a protocol type left out is not known")
}
