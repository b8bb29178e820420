package histories

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fastValid is whether skipValue reads b whole as one JSON value. A
// blank follows b, because a number that runs to the end is short.
func fastValid(b []byte) bool {
	b = append(b[:len(b):len(b)], ' ')
	end, st := skipValue(b, skipSpace(b, 0), 0)
	return st == scanOK && skipSpace(b, end) == len(b)
}

// TestSkipValueAgreesWithEncodingJSON: skipValue accepts a value exactly
// when encoding/json does, on values written to probe each rule and on
// random corruptions of an operation, so that the fast reading is never
// looser than the general one.
func TestSkipValueAgreesWithEncodingJSON(t *testing.T) {
	values := []string{
		`0`, `-0`, `01`, `-`, `1.`, `1.5`, `.5`, `1e5`, `1E+5`, `1e-`, `1e`, `-1.25e-7`, `2x`,
		`true`, `tru`, `truex`, `false`, `null`, `nul`, `nulll`,
		`""`, `"a"`, `"\n"`, "\"a\tb\"", `"\u00e9"`, `"\u00g9"`, `"\x"`, `"\/"`, `"\`, `"ab`, "\"\xff\"",
		`{}`, `{ }`, `{"a":1}`, `{"a" : 1 , "b":[1,2]}`, `{"a":1,}`, `{,}`, `{"a"}`, `{"a":}`, `{1:2}`, `{"a":1`,
		`[]`, `[ ]`, `[1,2]`, `[1,,2]`, `[1,]`, `[,1]`, `[1 2]`, `[[[]]]`, `[[[]]`, `[}`, `{]`,
	}
	for _, v := range values {
		require.Equal(t, json.Valid([]byte(v)), fastValid([]byte(v)), "%q", v)
	}
	op := []byte(okInit)
	specials := []byte(`{}[]",:\ -.0123456789eEtfnu` + "\t\n\x01")
	rng := rand.New(rand.NewPCG(38, 2))
	for range 20_000 {
		b := append([]byte(nil), op...)
		for range 1 + rng.IntN(3) {
			i := rng.IntN(len(b))
			switch rng.IntN(3) {
			case 0:
				b = append(b[:i], b[i+1:]...)
			case 1:
				b = append(b[:i], append([]byte{specials[rng.IntN(len(specials))]}, b[i:]...)...)
			default:
				b[i] = specials[rng.IntN(len(specials))]
			}
		}
		require.Equal(t, json.Valid(b), fastValid(b), "%q", b)
	}
}

// TestSkipValueIsShortOfACutValue: a value cut anywhere is short, not
// bad, so that the reader reads on for the rest of it.
func TestSkipValueIsShortOfACutValue(t *testing.T) {
	for n := range len(okInit) {
		_, st := skipValue([]byte(okInit[:n]), 0, 0)
		require.Equal(t, scanShort, st, "cut at %d: %q", n, okInit[:n])
	}
}

// layouts are one history written in the ways JSON allows: what the
// fast reading must read as the general one does.
func layouts() map[string]string {
	ops := []string{okInit, produce(goodProduce, `, "resp": {"base_offset": 0}`),
		`{"id": 9, "proc": "B", "call": 3, "return": 4, "type": "leave_group", "req": {"group": "g", "member_id": "m"}, "resp": {}}`}
	return map[string]string{
		"one a line": doc(ops...),
		"compact": strings.NewReplacer(": ", ":", ", ", ",", ",\n", ",").Replace(
			`{"format": "fencecheck/history/v1", "ops": [` + strings.Join(ops, ",") + `]}`),
		"spread over lines": strings.ReplaceAll(doc(ops...), ", ", "\r\n  ,\t"),
		"members after ops": `{"ops": [` + strings.Join(ops, ",") + `], "clock": "wall", "format": "fencecheck/history/v1"}`,
		"no ops":            `{"format": "fencecheck/history/v1", "ops": [ ]}`,
		"a name escaped":    `{"format": "fencecheck/history/v1", "o\u0070s": [` + strings.Join(ops, ",") + `]}`,
		"an op's escapes":   doc(strings.Replace(ops[0], `"t"`, `"\u0074"`, 1)),
	}
}

// TestStreamReadsEveryLayout: the fast reading reads a history in any
// layout as Load does, and leaves to the general reading what it does
// not expect.
func TestStreamReadsEveryLayout(t *testing.T) {
	general := map[string]bool{"a name escaped": true}
	for name, text := range layouts() {
		t.Run(name, func(t *testing.T) {
			path := writeTemp(t, text)
			requireStreamsAsLoaded(t, path)
			s, err := OpenStream(path, StreamOptions{})
			require.NoError(t, err)
			require.Equal(t, !general[name], s.light, "the fast reading reads it")
		})
	}
}

// TestStreamNamesAnOpThatDoesNotDecodeFirst: the light first pass leaves
// an operation that does not decode to the second pass, which still
// names it before an overlap found earlier in call order, as Load does.
func TestStreamNamesAnOpThatDoesNotDecodeFirst(t *testing.T) {
	overlapping := strings.Replace(produce(goodProduce, `, "resp": {"base_offset": 40}`), `"id": 4, "proc": "A", "call": 10`, `"id": 5, "proc": "A", "call": 1`, 1)
	var ops []string
	for i := range 3000 {
		ops = append(ops, fmt.Sprintf(`{"id": %d, "proc": "p%d", "call": %d, "return": %d, "type": "leave_group", "req": {"group": "g", "member_id": "m"}, "resp": {}}`, 100+i, i, 20+i, 21+i))
	}
	bad := `{"id": 99, "proc": "Z", "call": 9000, "return": 9001, "type": "leave_group", "req": {"group": "g"}, "resp": {}}`
	// A's next request makes the overlap known as soon as it is handed on.
	next := `{"id": 6, "proc": "A", "call": 15, "type": "leave_group", "req": {"group": "g", "member_id": "m"}}`
	path := writeTemp(t, doc(append(append([]string{okInit, overlapping, next}, ops...), bad)...))
	_, loadErr := LoadFile(path)
	require.ErrorContains(t, loadErr, "op 99: leave_group: ")
	s, _, err := streamFile(t, path)
	require.True(t, s.light)
	require.EqualError(t, err, loadErr.Error())
}

// FuzzSkipValue holds skipValue to json.Valid on any bytes: the fast
// reading accepts a value exactly when encoding/json does, but for one
// nested deeper than it follows, which it leaves to the general reading.
//
//	go test -run '^$' -fuzz '^FuzzSkipValue$' -fuzztime 60s ./histories/
func FuzzSkipValue(f *testing.F) {
	for _, s := range []string{okInit, `[1, -0.5e+3, "\u00e9\n", true, false, null, {}]`, `{"a": 01}`, `"\x"`, `[1,]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, valid := fastValid(data), json.Valid(data)
		if valid && !fast {
			require.GreaterOrEqual(t, bytes.Count(data, []byte("["))+bytes.Count(data, []byte("{")), maxFastDepth, "%q", data)
			return
		}
		require.Equal(t, valid, fast, "%q", data)
	})
}
