package histories

import (
	"encoding/json"
	"slices"
	"unicode/utf8"
	"unique"
	"unsafe"
)

// Every value the codecs see has been read by encoding/json already (the
// document's decoder, or Unmarshal into raw values), so it is valid JSON.
// A valid object or array can be split into its members by finding where
// each value ends, without encoding/json's reflection, which was most of
// the time a long history took to load. The split gives what
// json.Unmarshal into map[string]json.RawMessage or []json.RawMessage
// gives (the members' raw values, a later duplicate name winning), but
// its values are slices of raw, not copies: they live as long as raw is
// not reused. Whatever the split does not expect (an escape in a name, a
// name that is not UTF-8) is left to json.Unmarshal.

// splitObject is the members of the valid JSON object raw; ok is false
// when json.Unmarshal must decide.
func splitObject(raw []byte) (map[string]json.RawMessage, bool) {
	members, ok := splitMembers(raw, nil)
	if !ok {
		return nil, false
	}
	m := make(map[string]json.RawMessage, len(members))
	for _, member := range members {
		// The names are the format's few, on every object: one copy
		// of each, not one for every object. A later duplicate wins.
		m[unique.Make(member.name).Value()] = member.raw
	}
	return m, true
}

// rawMember is one member of an object as splitMembers finds it: its
// name and its raw value.
type rawMember struct {
	name string
	raw  json.RawMessage
}

// rawObject is an object's members in the order written. An operation's
// objects have a dozen members at most, so a look-up walks them: a map
// made for every object, and a copy of every name, were a third of the
// time a long history took to load.
type rawObject []rawMember

// get is the value of the member name; of two with that name the later
// wins, as in encoding/json.
func (o rawObject) get(name string) (json.RawMessage, bool) {
	for i := len(o) - 1; i >= 0; i-- {
		if o[i].name == name {
			return o[i].raw, true
		}
	}
	return nil, false
}

// value is the value of the member name, nil when there is none.
func (o rawObject) value(name string) json.RawMessage {
	raw, _ := o.get(name)
	return raw
}

// set gives the member name the value raw, in place of any it had.
func (o *rawObject) set(name string, raw json.RawMessage) {
	o.remove(name)
	*o = append(*o, rawMember{name, raw})
}

// remove drops every member name.
func (o *rawObject) remove(name string) {
	*o = slices.DeleteFunc(*o, func(m rawMember) bool { return m.name == name })
}

// splitMembers is the members of the valid JSON object raw, appended to
// into; ok is false when json.Unmarshal must decide. Names and values are
// raw's own bytes, not copies: they must not outlive raw, and no name is
// kept (a look-up compares it, and is done).
func splitMembers(raw []byte, into rawObject) (rawObject, bool) {
	ok := splitEach(raw, '{', '}', func(i int) int {
		end, plain := stringEnd(raw, i)
		if raw[i] != '"' || !plain {
			return -1
		}
		name := raw[i+1 : end-1]
		if i = skipSpace(raw, end); !utf8.Valid(name) || i >= len(raw) || raw[i] != ':' {
			return -1
		}
		start := skipSpace(raw, i+1)
		if end = valueEnd(raw, start); end >= 0 {
			into = append(into, rawMember{unsafe.String(unsafe.SliceData(name), len(name)), raw[start:end:end]})
		}
		return end
	})
	return into, ok
}

// splitArray is the elements of the valid JSON array raw; ok is false when
// json.Unmarshal must decide.
func splitArray(raw []byte) ([]json.RawMessage, bool) {
	elems := []json.RawMessage{}
	ok := splitEach(raw, '[', ']', func(i int) int {
		end := valueEnd(raw, i)
		if end >= 0 {
			elems = append(elems, raw[i:end:end])
		}
		return end
	})
	if !ok {
		return nil, false
	}
	return elems, true
}

// splitEach walks the members of the valid JSON object or array raw, which
// open and close delimit: member reads the one that starts at raw[i] and
// says where it ends (-1: it cannot). It reports false when the walk must
// be left to json.Unmarshal.
func splitEach(raw []byte, open, close byte, member func(i int) int) bool {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != open {
		return false
	}
	if i = skipSpace(raw, i+1); i < len(raw) && raw[i] == close {
		return skipSpace(raw, i+1) == len(raw)
	}
	for i < len(raw) {
		end := member(i)
		if end < 0 {
			return false
		}
		if i = skipSpace(raw, end); i >= len(raw) {
			return false
		}
		switch raw[i] {
		case ',':
			i = skipSpace(raw, i+1)
		case close:
			return skipSpace(raw, i+1) == len(raw)
		default:
			return false
		}
	}
	return false
}

// plainString is the string the valid JSON string raw holds, when it has
// no escape and is UTF-8 (so that its bytes are the string's); ok is false
// when json.Unmarshal must decide. The string is raw's own bytes, not a
// copy, so it must not outlive raw: text.decode keeps unique.Make's copy,
// because every operation's strings would otherwise be copied twice.
func plainString(raw []byte) (s string, ok bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	end, plain := stringEnd(raw, 0)
	if !plain || end != len(raw) || !utf8.Valid(raw[1:end-1]) {
		return "", false
	}
	return unsafe.String(unsafe.SliceData(raw[1:]), end-2), true
}

func skipSpace(raw []byte, i int) int {
	for i < len(raw) {
		switch raw[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd is the index just past the string that starts at raw[i], and
// whether it has no escape; -1 when it does not end.
func stringEnd(raw []byte, i int) (end int, plain bool) {
	plain = true
	for j := i + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			plain = false
			j++
		case '"':
			return j + 1, plain
		}
	}
	return -1, false
}

// valueEnd is the index just past the value that starts at raw[i]; -1 when
// there is none.
func valueEnd(raw []byte, i int) int {
	if i >= len(raw) {
		return -1
	}
	switch raw[i] {
	case '"':
		end, _ := stringEnd(raw, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(raw); j++ {
			switch raw[j] {
			case '"':
				end, _ := stringEnd(raw, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	case ',', ':', '}', ']':
		return -1
	}
	j := i
	for j < len(raw) {
		switch raw[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
		j++
	}
	return j
}
