package histories

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzLoad checks that Load never panics, and that whatever it accepts
// survives Save and Load unchanged.
func FuzzLoad(f *testing.F) {
	for _, name := range []string{"example.json", "every-type.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		require.NoError(f, err)
		f.Add(data)
	}
	for _, d := range []string{
		doc(okInit, produce(goodProduce, `, "resp": {"base_offset": 40}`)),
		doc(produce(goodProduce, `, "resp": {"base_offset": 40}, "error": "PRODUCER_FENCED"`)),
		doc(`{"id": 1.5, "proc": "A", "call": 0, "type": "stall"}`),
		doc(`{"id": 3, "proc": "coordinator", "call": 20, "type": "timeout_abort", "resp": {"transactional_id": "t", "producer_id": 1, "epoch": 2}}`),
		`{"format": "fencecheck/history/v1", "trips": [], "transactions_version": 1, "ops": null}`,
		`{"format": null, "ops": [null, {}, [], "x", 1]}`,
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[`,
	} {
		f.Add([]byte(d))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := Load(bytes.NewReader(data))
		whole, wholeErr := loadWhole(bytes.NewReader(data))
		require.Equal(t, wholeErr == nil, err == nil, "streaming: %v; whole: %v", err, wholeErr)
		if wholeErr != nil && !strings.HasPrefix(wholeErr.Error(), "not a JSON document") {
			require.EqualError(t, err, wholeErr.Error(), "the streaming read names the same field")
		}
		if err == nil {
			require.Equal(t, whole, h)
		}
		if err != nil {
			return
		}
		var buf bytes.Buffer
		require.NoError(t, Save(&buf, h))
		again, err := Load(&buf)
		require.NoError(t, err)
		require.Equal(t, h, again)
	})
}

// FuzzSplit holds the split of objects (as a map and as members), arrays and strings (scan.go) to
// what json.Unmarshal makes of the same valid JSON.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{`{"a": 1, "b": [1, {"c": "}"}], "a": "x\"y"}`, ` [ 1 ,"2", {} , [] , null ] `, `"caf\u00e9"`, `"café"`, `{"\u0061": 1}`, `{}`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		if m, ok := splitObject(data); ok {
			var want map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(data, &want))
			require.Equal(t, want, m)
		}
		if o, ok := splitMembers(data, nil); ok {
			var want map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(data, &want))
			for _, m := range o {
				require.Contains(t, want, m.name)
			}
			for name, raw := range want {
				got, found := o.get(name)
				require.True(t, found, name)
				require.Equal(t, raw, got, name)
			}
		}
		if a, ok := splitArray(data); ok {
			var want []json.RawMessage
			require.NoError(t, json.Unmarshal(data, &want))
			require.Equal(t, want, a)
		}
		if s, ok := plainString(data); ok {
			var want string
			require.NoError(t, json.Unmarshal(data, &want))
			require.Equal(t, want, s)
		}
	})
}
