package histories

import (
	"bytes"
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
