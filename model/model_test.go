package model_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/fencecheck/fencecheck/model"
)

// TestTranscripts replays the transcripts in testdata/: each command is a
// request the reference broker answers (Apply), or, with got=..., an answer
// some broker gave that the model judges (Check). See testdata/README.md
// for the command language. Every state a transcript passes through is
// also a case of model.Equal, against every other.
//
// Each transcript is then replayed again under model.Reads, the offsets
// its fetches read from, and must give every answer and verdict it gave
// with every record kept: a log that keeps only what a fetch reads tells
// no request apart.
func TestTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if !strings.HasSuffix(path, ".txt") || isHeldOut(path) {
			return
		}
		reads := replayTranscript(t, path, isConformance(path), nil)
		t.Run("reads", func(t *testing.T) { replayTranscript(t, path, isConformance(path), reads) })
	})
}

// replayTranscript replays one transcript, and returns the offsets its
// fetches read from. With conformance set, each judged command is also
// held to its marks (conformanceMismatch). Under reads, every state the
// transcript sets up keeps only the records those fetches read.
func replayTranscript(t *testing.T, path string, conformance bool, under *model.Reads) *model.Reads {
	reads := model.NewReads()
	s := model.Init(model.Options{TxnVersion: 1, MarkerWindow: true, Reads: under})
	states := []model.State{s}
	defer func() { requireEqualAgrees(t, states) }()
	datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
		defer func() { states = append(states, s) }()
		switch td.Cmd {
		case "reset":
			s = model.Init(model.Options{TxnVersion: intArg(t, td, "txn-version", 1), WallClock: td.HasArg("wall-clock"),
				Allow: allowArg(t, td), Expiry: expiryArgs(t, td), AsyncMarkers: td.HasArg("async-markers"), MarkerWindow: !td.HasArg("markers-at-once"),
				TxnMaxTimeoutMs:          int64(intArg(t, td, model.TxnMaxTimeoutConfig, 0)),
				NoPartitionVerification:  verificationOff(t, td),
				GroupMaxSize:             intArg(t, td, model.GroupMaxSizeConfig, 0),
				ConsumerGroupMaxSize:     intArg(t, td, model.ConsumerGroupMaxSizeConfig, 0),
				MigrationPolicy:          migrationPolicy(t, td),
				GroupMinSessionTimeoutMs: int64(intArg(t, td, model.GroupMinSessionTimeoutConfig, 0)),
				GroupMaxSessionTimeoutMs: int64(intArg(t, td, model.GroupMaxSessionTimeoutConfig, 0)),
				TwoPhaseCommit:           twoPhaseCommit(t, td),
				OffsetMetadataMaxBytes:   intArg(t, td, model.OffsetMetadataMaxConfig, 0),
				OffsetMetadataMaxKnown:   td.HasArg(model.OffsetMetadataMaxConfig),
				ConsumerSessionTimeoutMs: int64(intArg(t, td, consumerSessionConfig, 0)),
				TopicsChangeOutside:      td.HasArg("topics-change-outside"),
				Reads:                    under})
			return ""
		case "land-markers":
			s = model.LandMarkers(s)
			return ""
		case "state":
			return strings.ReplaceAll(s.String(), "; ", "\n")
		case "set-epoch":
			set := model.SetEpoch
			if td.HasArg("kept") {
				set = model.SetKeptEpoch
			}
			next, err := set(s, strArg(td, "txn"), intArg(t, td, "epoch", -1))
			if err != nil {
				td.Fatalf(t, "%v", err)
			}
			s = next
			return ""
		}
		op := parseOp(t, td)
		if op.Kind == model.Fetch {
			reads.Fetch(op.Req.Partition, op.Req.Offset)
		}
		if got, judged := parseGot(t, td); judged {
			next, verdict := judge(t, td, s, op, got)
			if conformance {
				if mismatch := conformanceMismatch(td, verdict); mismatch != "" {
					t.Error(mismatch)
				}
			}
			if !td.HasArg("probe") {
				s = next
			}
			return verdict
		}
		var res model.Result
		s, res = model.Apply(s, op)
		return render(op.Kind, res)
	})
	return reads
}

// judge is the model's verdict on a broker's answer, and the state after
// it. A refusal with only the wrong code still moves the state on: the
// request was rightly refused.
func judge(t *testing.T, td *datadriven.TestData, s model.State, op model.Op, got model.Result) (model.State, string) {
	next, err := model.Check(s, op, got)
	var d *model.Disallowed
	switch {
	case errors.As(err, &d) && d.CodeOnly:
		return next, fmt.Sprintf("wrong code (%s): %s", d.Rule, d.Reason)
	case errors.As(err, &d):
		return s, fmt.Sprintf("refused (%s): %s", d.Rule, d.Reason)
	case err != nil:
		t.Fatalf("%s: not a *model.Disallowed: %v", td.Pos, err)
	}
	return next, "accepted"
}

// requireEqualAgrees holds model.Equal to model.EqualByReflection on each
// pair of states, and on each state and its copy that shares nothing; and
// model.Hash to Equal: equal states hash equally.
func requireEqualAgrees(t *testing.T, states []model.State) {
	for i, a := range states {
		for _, b := range states[i:] {
			requireEqualAgreesOn(t, a, b)
		}
		requireEqualAgreesOn(t, a, model.Rebuilt(a))
	}
}

func requireEqualAgreesOn(t *testing.T, a, b model.State) {
	if model.Equal(a, b) != model.EqualByReflection(a, b) {
		t.Fatalf("Equal is %v, EqualByReflection %v, on\n%s\nand\n%s", model.Equal(a, b), !model.Equal(a, b), a, b)
	}
	if model.Equal(a, b) && model.Hash(a) != model.Hash(b) {
		t.Fatalf("equal states hash apart:\n%s\nand\n%s", a, b)
	}
}

var commands = map[string]model.Kind{
	"init": model.InitProducerID, "add-partitions": model.AddPartitions, "produce": model.Produce,
	"add-offsets": model.AddOffsets, "commit-offsets": model.TxnOffsetCommit, "end-txn": model.EndTxn,
	"join": model.JoinGroup, "leave": model.LeaveGroup, "offset-fetch": model.OffsetFetch,
	"fetch": model.Fetch, "heartbeat": model.Heartbeat, "offset-commit": model.OffsetCommit,
	"tick": model.Tick, "restart": model.BrokerRestart, "sync": model.SyncGroup,
	"consumer-heartbeat": model.ConsumerGroupHeartbeat, "delete-records": model.DeleteRecords,
	"alter-config": model.AlterConfig, "create-topics": model.CreateTopics,
	"create-partitions": model.CreatePartitions, "delete-topics": model.DeleteTopics,
}

func parseOp(t *testing.T, td *datadriven.TestData) model.Op {
	kind, ok := commands[td.Cmd]
	if !ok {
		td.Fatalf(t, "unknown command %q", td.Cmd)
	}
	r := model.NewRequest()
	r.TransactionalID = strArg(td, "txn")
	if arg, ok := td.Arg("txn"); ok && len(arg.Vals) == 1 && arg.Vals[0] == "" {
		// txn= names the empty transactional.id.
		r.EmptyTransactionalID = true
	}
	r.TimeoutMs = int64(intArg(t, td, "timeout", 0))
	r.ProducerID = int64(intArg(t, td, "pid", -1))
	r.Epoch = int16(intArg(t, td, "epoch", -1))
	r.Enable2PC = td.HasArg("enable-2pc")
	r.KeepPreparedTxn = td.HasArg("keep-prepared")
	r.Partition = model.Partition(strArg(td, "partition"))
	r.Partitions = partitions(td, "partitions")
	r.Sequence = int32(intArg(t, td, "seq", 0))
	r.Records = records(t, td)
	r.MixedProducers = td.HasArg("mixed-producers")
	r.Group = strArg(td, "group")
	if arg, ok := td.Arg("group"); ok && len(arg.Vals) == 1 && arg.Vals[0] == "" {
		// group= names the empty group id.
		r.EmptyGroup = true
	}
	r.MemberID = strArg(td, "member")
	r.InstanceID = strArg(td, "instance")
	r.GenerationID = int32(intArg(t, td, "gen", -1))
	r.Offsets = offsets(t, td)
	r.OffsetMetadata = offsetMetadata(t, td)
	r.Commit = td.HasArg("commit")
	r.Offset = int64(intArg(t, td, "from", 0))
	r.Isolation = model.ReadUncommitted
	if td.HasArg("committed") {
		r.Isolation = model.ReadCommitted
	}
	r.RequireStable = td.HasArg("stable")
	r.Ms = int64(intArg(t, td, "ms", 0))
	r.SessionTimeoutMs = int64(intArg(t, td, "session", 0))
	r.JoinOnly = td.HasArg("join-only")
	r.RebalanceTimeoutMs = int64(intArg(t, td, "rebalance", 0))
	r.ProtocolType = strArg(td, "protocol-type")
	if arg, ok := td.Arg("protocol-type"); ok && len(arg.Vals) == 1 && arg.Vals[0] == "" && kind == model.JoinGroup {
		// protocol-type= names the empty protocol type.
		r.EmptyProtocolType = true
	}
	r.Protocols = protocols(td)
	r.Protocol = strArg(td, "protocol")
	r.Assignments = assignments(t, td)
	op := model.Op{Kind: kind, Req: r, Span: span(t, td)}
	if v := intArg(t, td, "api-version", -1); v >= 0 {
		op.APIVersion = model.AtVersion(int16(v)) // the request header's version
	}
	if kind == model.ConsumerGroupHeartbeat {
		parseConsumerHeartbeat(t, td, &op)
	}
	if kind == model.AlterConfig {
		r.PartitionVerification = !verificationOff(t, td)
		op.Req = r
	}
	if kind == model.CreateTopics || kind == model.CreatePartitions || kind == model.DeleteTopics {
		r.Topic = strArg(td, "topic")
		r.PartitionCount = int32(intArg(t, td, "count", 0))
		op.Req = r
	}
	if kind == model.DeleteRecords {
		r.Offset = int64(intArg(t, td, "before", -1)) // absent: Kafka's -1, the high watermark
		op.Req = r
	}
	if kind == model.OffsetFetch {
		r.MemberEpoch = int32(intArg(t, td, "member-epoch", 0))
		r.AllPartitions = td.HasArg("all")
		op.Req = r
	}
	return op
}

// span reads at=T (sent and answered at T) or at=(FROM,TO), the wall-clock
// span of an op; an op answered got=none never ends.
func span(t *testing.T, td *datadriven.TestData) model.Span {
	arg, ok := td.Arg("at")
	if !ok {
		return model.Span{}
	}
	var at []int64
	for _, v := range arg.Vals {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			td.Fatalf(t, "at=%s: %v", v, err)
		}
		at = append(at, n)
	}
	sp := model.Span{From: at[0], To: at[len(at)-1]}
	if strArg(td, "got") == "none" {
		sp.To = model.Unanswered
	}
	return sp
}

// parseGot reads a broker's answer: got=ok (with got-* fields), got=CODE, or
// got=none (no answer).
func parseGot(t *testing.T, td *datadriven.TestData) (model.Result, bool) {
	answer := strArg(td, "got")
	switch answer {
	case "":
		return model.Result{}, false
	case "none":
		return model.NoAnswer(), true
	case "ok":
	default:
		// A refusal may name a member id: MEMBER_ID_REQUIRED's (KIP-394).
		res := model.Fail(model.Code(answer))
		res.Resp.MemberID = strArg(td, "got-member")
		return res, true
	}
	r := model.NewResponse()
	r.ProducerID = int64(intArg(t, td, "got-pid", -1))
	r.Epoch = int16(intArg(t, td, "got-epoch", -1))
	r.OngoingTxnProducerID = int64(intArg(t, td, "got-ongoing-pid", -1))
	r.OngoingTxnEpoch = int16(intArg(t, td, "got-ongoing-epoch", -1))
	r.BaseOffset = int64(intArg(t, td, "got-offset", -1))
	r.Offset = r.BaseOffset
	r.MemberID = strArg(td, "got-member")
	r.GenerationID = int32(intArg(t, td, "got-gen", -1))
	r.Assignment = partitions(td, "got-assign")
	r.Leader = strArg(td, "got-leader")
	r.Protocol = strArg(td, "got-protocol")
	r.ProtocolType = strArg(td, "got-protocol-type")
	r.HighWatermark = int64(intArg(t, td, "got-hw", -1))
	r.LastStableOffset = int64(intArg(t, td, "got-lso", -1))
	r.LowWatermark = int64(intArg(t, td, "got-low-watermark", -1))
	if arg, ok := td.Arg("got-metadata"); ok {
		r.Metadata, r.MetadataSaid = metadataText(t, td, strings.Join(arg.Vals, ",")), true
	}
	r.PartitionErrors = partitionErrors(t, td)
	parseConsumerAnswer(t, td, &r)
	// An offset fetch of all partitions: got-offsets=(foo-0:100) lists
	// the partitions at their offsets, got-unstable=(foo-1) those
	// answered UNSTABLE_OFFSET_COMMIT.
	r.FetchedOffsets = offsetsArg(t, td, "got-offsets")
	r.Unstable = partitions(td, "got-unstable")
	if arg, ok := td.Arg("got-records"); ok {
		for _, v := range arg.Vals {
			if v != "" {
				r.Records = append(r.Records, fetched(t, td, v))
			}
		}
	}
	return model.OK(r), true
}

// fetched parses key@offset/pid.
func fetched(t *testing.T, td *datadriven.TestData, v string) model.FetchedRecord {
	key, rest, ok1 := strings.Cut(v, "@")
	off, pid, ok2 := strings.Cut(rest, "/")
	o, err1 := strconv.ParseInt(off, 10, 64)
	p, err2 := strconv.ParseInt(pid, 10, 64)
	if !ok1 || !ok2 || err1 != nil || err2 != nil {
		td.Fatalf(t, "record %q is not key@offset/pid", v)
	}
	return model.FetchedRecord{Offset: o, Key: key, ProducerID: p}
}

func strArg(td *datadriven.TestData, key string) string {
	if arg, ok := td.Arg(key); ok && len(arg.Vals) > 0 {
		return arg.Vals[0]
	}
	return ""
}

func intArg(t *testing.T, td *datadriven.TestData, key string, def int) int {
	s := strArg(td, key)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		td.Fatalf(t, "%s=%q is not a number", key, s)
	}
	return n
}

// verificationOff reads transaction.partition.verification.enable on a
// reset: true or false, absent being Kafka's default, true.
// twoPhaseCommit reads transaction.two.phase.commit.enable=true|false;
// left out, the broker's setting is not known.
func twoPhaseCommit(t *testing.T, td *datadriven.TestData) model.TwoPhaseCommit {
	switch s := strArg(td, model.TwoPhaseCommitConfig); s {
	case "":
		return model.TwoPhaseCommitUnknown
	case "true":
		return model.TwoPhaseCommitEnabled
	case "false":
		return model.TwoPhaseCommitDisabled
	default:
		td.Fatalf(t, "%s=%q is neither true nor false", model.TwoPhaseCommitConfig, s)
		return model.TwoPhaseCommitUnknown
	}
}

func migrationPolicy(t *testing.T, td *datadriven.TestData) model.MigrationPolicy {
	s := strArg(td, model.MigrationPolicyConfig)
	if s == "" {
		return model.MigrationPolicyUnknown
	}
	p, err := model.ParseMigrationPolicy(s)
	if err != nil {
		td.Fatalf(t, "%s: %v", model.MigrationPolicyConfig, err)
	}
	return p
}

func verificationOff(t *testing.T, td *datadriven.TestData) bool {
	switch s := strArg(td, model.PartitionVerificationConfig); s {
	case "", "true":
		return false
	case "false":
		return true
	default:
		td.Fatalf(t, "%s=%q is neither true nor false", model.PartitionVerificationConfig, s)
		return false
	}
}

func partitions(td *datadriven.TestData, key string) []model.Partition {
	arg, _ := td.Arg(key)
	var ps []model.Partition
	for _, v := range arg.Vals {
		if v != "" {
			ps = append(ps, model.Partition(v))
		}
	}
	return ps
}

// records reads keys=(a,b) or keys=prefix*N (N records prefix-0..prefix-N-1).
func records(t *testing.T, td *datadriven.TestData) []model.Record {
	arg, _ := td.Arg("keys")
	var recs []model.Record
	for _, v := range arg.Vals {
		prefix, count, many := strings.Cut(v, "*")
		if !many {
			recs = append(recs, model.Record{Key: v})
			continue
		}
		n, err := strconv.Atoi(count)
		if err != nil {
			td.Fatalf(t, "keys=%s: %v", v, err)
		}
		for i := range n {
			recs = append(recs, model.Record{Key: fmt.Sprintf("%s-%d", prefix, i)})
		}
	}
	return recs
}

// protocols reads protocols=(range:trips+fares,roundrobin): each
// protocol's name and the topics its subscription names.
func protocols(td *datadriven.TestData) []model.Protocol {
	arg, _ := td.Arg("protocols")
	var out []model.Protocol
	for _, v := range arg.Vals {
		name, topics, _ := strings.Cut(v, ":")
		p := model.Protocol{Name: name}
		if topics != "" {
			p.Topics = strings.Split(topics, "+")
		}
		out = append(out, p)
	}
	return out
}

// assignments reads a leader's sync assign=(member-0:trips-0,
// member-0:trips-1,member-1:): each member's partitions, one a value; a
// member with nothing after the colon is in the map with none.
func assignments(t *testing.T, td *datadriven.TestData) map[string][]model.Partition {
	arg, ok := td.Arg("assign")
	if !ok {
		return nil
	}
	out := map[string][]model.Partition{}
	for _, v := range arg.Vals {
		id, p, found := strings.Cut(v, ":")
		if !found || id == "" {
			td.Fatalf(t, "assign=%s is not member:partition", v)
		}
		if p == "" {
			out[id] = append(out[id], []model.Partition{}...)
			continue
		}
		out[id] = append(out[id], model.Partition(p))
	}
	return out
}

// offsets reads offsets=(trips-0:6,trips-1:3).
func offsets(t *testing.T, td *datadriven.TestData) map[model.Partition]int64 {
	return offsetsArg(t, td, "offsets")
}

// offsetsArg reads key=(trips-0:6,trips-1:3); key=() is an empty map.
func offsetsArg(t *testing.T, td *datadriven.TestData, key string) map[model.Partition]int64 {
	arg, ok := td.Arg(key)
	if !ok {
		return nil
	}
	m := map[model.Partition]int64{}
	for _, v := range arg.Vals {
		if v == "" {
			continue
		}
		p, off, _ := strings.Cut(v, ":")
		n, err := strconv.ParseInt(off, 10, 64)
		if err != nil {
			td.Fatalf(t, "%s=%s: %v", key, v, err)
		}
		m[model.Partition(p)] = n
	}
	return m
}

// offsetMetadata reads metadata=(trips-0:abc,trips-1:s*4097): each
// partition's metadata, where TEXT*N is TEXT N times over.
func offsetMetadata(t *testing.T, td *datadriven.TestData) map[model.Partition]string {
	arg, ok := td.Arg("metadata")
	if !ok {
		return nil
	}
	m := map[model.Partition]string{}
	for _, v := range arg.Vals {
		p, text, found := strings.Cut(v, ":")
		if !found {
			td.Fatalf(t, "metadata=%s is not partition:text", v)
		}
		m[model.Partition(p)] = metadataText(t, td, text)
	}
	return m
}

// metadataText is TEXT, or TEXT*N: TEXT N times over.
func metadataText(t *testing.T, td *datadriven.TestData, text string) string {
	unit, times, repeated := strings.Cut(text, "*")
	if !repeated {
		return text
	}
	n, err := strconv.Atoi(times)
	if err != nil || n < 0 {
		td.Fatalf(t, "metadata %q: %s is not a count", text, times)
	}
	return strings.Repeat(unit, n)
}

// partitionErrors reads got-errors=(trips-1:OFFSET_METADATA_TOO_LARGE):
// the partitions of a commit the broker refused while it took the others.
func partitionErrors(t *testing.T, td *datadriven.TestData) map[model.Partition]model.Code {
	arg, ok := td.Arg("got-errors")
	if !ok {
		return nil
	}
	m := map[model.Partition]model.Code{}
	for _, v := range arg.Vals {
		p, code, found := strings.Cut(v, ":")
		if !found {
			td.Fatalf(t, "got-errors=%s is not partition:CODE", v)
		}
		m[model.Partition(p)] = model.Code(code)
	}
	return m
}

func render(kind model.Kind, res model.Result) string {
	if !res.Succeeded() {
		return string(res.Err)
	}
	r := res.Resp
	switch kind {
	case model.InitProducerID:
		if r.OngoingTxnProducerID != model.NoProducerID {
			return fmt.Sprintf("producer %d epoch %d, keeping producer %d epoch %d", r.ProducerID, r.Epoch, r.OngoingTxnProducerID, r.OngoingTxnEpoch)
		}
		return fmt.Sprintf("producer %d epoch %d", r.ProducerID, r.Epoch)
	case model.EndTxn:
		if r.ProducerID != model.NoProducerID {
			return fmt.Sprintf("ok, producer %d epoch %d", r.ProducerID, r.Epoch)
		}
	case model.Produce:
		return fmt.Sprintf("offset %d", r.BaseOffset)
	case model.JoinGroup:
		out := fmt.Sprintf("%s generation %d assigned %v led by %s", r.MemberID, r.GenerationID, r.Assignment, r.Leader)
		if r.Protocol != "" {
			out += fmt.Sprintf(", protocol %s (%s)", r.Protocol, r.ProtocolType)
		}
		return out
	case model.SyncGroup:
		return fmt.Sprintf("assigned %v", r.Assignment)
	case model.OffsetFetch:
		if r.FetchedOffsets != nil || r.Unstable != nil {
			return renderFetchedOffsets(r)
		}
		if r.MetadataSaid {
			return fmt.Sprintf("offset %d metadata %q", r.Offset, r.Metadata)
		}
		return fmt.Sprintf("offset %d", r.Offset)
	case model.OffsetCommit, model.TxnOffsetCommit:
		if len(r.PartitionErrors) > 0 {
			out := "ok, but"
			for _, p := range slices.Sorted(maps.Keys(r.PartitionErrors)) {
				out += fmt.Sprintf(" %s %s", p, r.PartitionErrors[p])
			}
			return out
		}
	case model.DeleteRecords:
		return fmt.Sprintf("low watermark %d", r.LowWatermark)
	case model.ConsumerGroupHeartbeat:
		return renderConsumerHeartbeat(r)
	case model.Fetch:
		var b strings.Builder
		for _, rec := range r.Records {
			fmt.Fprintf(&b, "%s@%d/%d ", rec.Key, rec.Offset, rec.ProducerID)
		}
		return fmt.Sprintf("%shw %d lso %d", b.String(), r.HighWatermark, r.LastStableOffset)
	}
	return "ok"
}

// renderFetchedOffsets is an offset fetch of all partitions' answer:
// offsets (foo-0:100 ...), then unstable (foo-1 ...).
func renderFetchedOffsets(r model.Response) string {
	var listed []string
	for _, p := range slices.Sorted(maps.Keys(r.FetchedOffsets)) {
		listed = append(listed, fmt.Sprintf("%s:%d", p, r.FetchedOffsets[p]))
	}
	out := fmt.Sprintf("offsets (%s)", strings.Join(listed, ","))
	if len(r.Unstable) > 0 {
		out += fmt.Sprintf(" unstable %v", r.Unstable)
	}
	return out
}

// allowArg is the deviations a transcript's reset allows (allow=NAME,...).
func allowArg(t *testing.T, td *datadriven.TestData) model.Deviation {
	var allow model.Deviation
	for _, arg := range td.CmdArgs {
		if arg.Key != "allow" {
			continue
		}
		for _, name := range arg.Vals {
			d, err := model.ParseDeviation(name)
			if err != nil {
				t.Fatalf("%s: %v", td.Pos, err)
			}
			allow |= d
		}
	}
	return allow
}

// expiryArgs is the expiry intervals a transcript's reset sets, each under
// its Kafka broker config name (transactional.id.expiration.ms=MS...).
func expiryArgs(t *testing.T, td *datadriven.TestData) model.Expiry {
	var e model.Expiry
	for _, c := range model.ExpiryConfigs {
		if ms := intArg(t, td, c.Name, 0); ms != 0 {
			*c.Field(&e) = int64(ms)
		}
	}
	return e
}
