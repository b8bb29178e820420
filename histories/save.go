package histories

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
)

// SaveFile writes h to the file at path (see Save).
func SaveFile(path string, h History) error {
	var buf bytes.Buffer
	if err := Save(&buf, h); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// Save writes h as a v1 document: fields in the order of
// docs/history-format.md, absent fields left out, map keys sorted and one
// operation per line, so that files diff well. Only the fields of each
// operation's type are written.
//
// Save refuses a history that Load would refuse (overlapping operations of
// one process, a request without its required fields...), so every file it
// writes can be checked.
func Save(w io.Writer, h History) error {
	doc := encodeHistory(h)
	if _, err := Load(bytes.NewReader(doc)); err != nil {
		return fmt.Errorf("history not saved: %w", err)
	}
	_, err := w.Write(doc)
	return err
}

func encodeHistory(h History) []byte {
	var b bytes.Buffer
	writeHeader(&b, h)
	for i := range h.Ops {
		writeOp(&b, i, &h.Ops[i])
	}
	writeTrailer(&b, len(h.Ops), History{})
	return b.Bytes()
}

// writeHeader writes the document up to the opening of its ops.
func writeHeader(b *bytes.Buffer, h History) {
	b.WriteString("{\n")
	writeMember(b, member{"format", Format})
	if h.Name != "" {
		writeMember(b, member{"name", h.Name})
	}
	if h.TransactionsVersion != 0 {
		writeMember(b, member{"transactions_version", h.TransactionsVersion})
	}
	if h.WallClock {
		writeMember(b, member{"clock", wallClock})
	}
	if h.AsyncMarkers {
		writeMember(b, member{"markers", asyncMarkers})
	}
	if h.TopicsChangeOutside {
		writeMember(b, member{"topic_changes", unrecordedTopicChanges})
	}
	if len(h.Topics) > 0 {
		writeMember(b, member{"topics", topicCounts{&h.Topics}.encode()})
	}
	if c := h.brokerConfig(); !c.absent() {
		writeMember(b, member{"broker_config", c.encode()})
	}
	writeKeySets(b, h)
	b.WriteString(`  "ops": [`)
}

// writeKeySets writes the trips and output topics, when h has them.
func writeKeySets(b *bytes.Buffer, h History) {
	if h.Trips != nil {
		writeMember(b, member{"trips", texts[string]{p: &h.Trips}.encode()})
	}
	if h.OutputTopics != nil {
		writeMember(b, member{"output_topics", texts[string]{p: &h.OutputTopics}.encode()})
	}
}

// writeOp writes the operation at index i of the ops, on a line of its
// own, as an object in the order of docs/history-format.md. Its own
// fields are written by hand, and its request and response by their
// slots (writeStruct), so that no object is made for it: a recording
// writes millions.
func writeOp(b *bytes.Buffer, i int, op *Op) {
	if i > 0 {
		b.WriteByte(',')
	}
	var num [20]byte
	b.WriteString("\n    {\"id\": ")
	b.Write(strconv.AppendInt(num[:0], int64(op.ID), 10))
	b.WriteString(`, "proc": `)
	writeString(b, op.Proc)
	if op.Client != "" {
		b.WriteString(`, "client": `)
		writeString(b, op.Client)
	}
	b.WriteString(`, "call": `)
	b.Write(strconv.AppendInt(num[:0], op.Call, 10))
	if op.Returned {
		b.WriteString(`, "return": `)
		b.Write(strconv.AppendInt(num[:0], op.Return, 10))
	}
	b.WriteString(`, "type": `)
	writeString(b, string(op.Kind))
	if n, known := op.APIVersion.Number(); known {
		b.WriteString(`, "api_version": `)
		b.Write(strconv.AppendInt(num[:0], int64(n), 10))
	}
	if slots, ok := reqSlots[op.Kind]; ok {
		b.WriteString(`, "req": `)
		writeStruct(b, &op.Req, slots)
	}
	res := &op.Result
	if slots, ok := respSlots[op.Kind]; ok && res.Answered && res.Err == "" {
		b.WriteString(`, "resp": `)
		writeStruct(b, &res.Resp, slots)
	}
	if res.Answered && res.Err != "" {
		b.WriteString(`, "error": `)
		writeString(b, string(res.Err))
	}
	b.WriteByte('}')
}

// writeTrailer closes a document of n ops, with end's trips and output
// topics after them when it has them.
func writeTrailer(b *bytes.Buffer, n int, end History) {
	if n > 0 {
		b.WriteString("\n  ")
	}
	b.WriteString("]")
	if end.Trips != nil || end.OutputTopics != nil {
		b.WriteString(",\n")
		var tail bytes.Buffer
		writeKeySets(&tail, end)
		b.Write(bytes.TrimSuffix(tail.Bytes(), []byte(",\n")))
	}
	b.WriteString("\n}\n")
}

// writeMember writes a top-level member on a line of its own.
func writeMember(b *bytes.Buffer, m member) {
	b.WriteString("  ")
	m.write(b)
	b.WriteString(",\n")
}

func (m member) write(b *bytes.Buffer) {
	writeString(b, m.key)
	b.WriteString(": ")
	writeValue(b, m.val)
}

// object is a JSON object whose members keep their order.
type object []member

type member struct {
	key string
	val any
}

// writes is a value that writes itself.
type writes func(b *bytes.Buffer)

// writeValue writes v (an object, a []any, writes or a scalar) on one line, with a
// space after each colon and comma so the line reads like the examples of
// docs/history-format.md.
func writeValue(b *bytes.Buffer, v any) {
	switch v := v.(type) {
	case writes:
		v(b)
	case object:
		b.WriteByte('{')
		for i, m := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			m.write(b)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			writeValue(b, e)
		}
		b.WriteByte(']')
	default:
		writeScalar(b, v)
	}
}

// writeScalar writes a string, number or boolean, which cannot fail to
// encode. The common kinds are written by hand, because an encoder per
// value was most of what recording a history cost; they come out as
// encoding/json writes them.
func writeScalar(b *bytes.Buffer, v any) {
	var num [20]byte
	switch v := v.(type) {
	case string:
		writeString(b, v)
		return
	case int:
		b.Write(strconv.AppendInt(num[:0], int64(v), 10))
		return
	case int64:
		b.Write(strconv.AppendInt(num[:0], v, 10))
		return
	case int32:
		b.Write(strconv.AppendInt(num[:0], int64(v), 10))
		return
	case int16:
		b.Write(strconv.AppendInt(num[:0], int64(v), 10))
		return
	case bool:
		b.WriteString(strconv.FormatBool(v))
		return
	}
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	b.Truncate(b.Len() - 1) // Encode ends with a newline
}

// writeString writes s as encoding/json does, without making it an
// interface value first, because that allocation was most of what
// writing a recorded record cost.
func writeString(b *bytes.Buffer, s string) {
	if printableString(s) {
		b.WriteByte('"')
		b.WriteString(s)
		b.WriteByte('"')
		return
	}
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.Truncate(b.Len() - 1) // Encode ends with a newline
}

// printableString reports whether encoding/json writes s as it is, between
// quotes: printable ASCII, with no quote or backslash to escape.
func printableString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
