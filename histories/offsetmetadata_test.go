package histories

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

// A commit's metadata, its per-partition answer, a fetch's metadata and
// offset.metadata.max.bytes load into their fields and save back as
// they were.
func TestOffsetMetadataLoadsAndSaves(t *testing.T) {
	h, err := Load(strings.NewReader(loadAccepts["a commit refused for one partition's metadata"]))
	require.NoError(t, err)
	require.True(t, h.OffsetMetadataMaxKnown)
	require.Equal(t, 3, h.OffsetMetadataMaxBytes)
	commit, fetch := h.Ops[0], h.Ops[1]
	require.Equal(t, map[model.Partition]string{"trips-0": "abcd", "trips-1": ""}, commit.Req.OffsetMetadata)
	require.Equal(t, map[model.Partition]model.Code{"trips-0": model.OffsetMetadataTooLarge}, commit.Result.Resp.PartitionErrors)
	require.True(t, commit.Result.Succeeded())
	require.Equal(t, map[model.Partition]int64{"trips-1": 4}, model.CommittedOffsets(commit.Req.Offsets, commit.Result))
	require.True(t, fetch.Result.Resp.MetadataSaid)
	require.Equal(t, "", fetch.Result.Resp.Metadata)

	var b bytes.Buffer
	require.NoError(t, Save(&b, h))
	again, err := Load(&b)
	require.NoError(t, err)
	require.Equal(t, h, again)
}

// A history that names no offset.metadata.max.bytes does not know it,
// and an offset_fetch answer without metadata does not say it.
func TestOffsetMetadataAbsent(t *testing.T) {
	h, err := Load(strings.NewReader(doc(`{"id": 1, "proc": "A", "call": 0, "return": 1, "type": "offset_fetch", "req": {"group": "g", "partition": "trips-1"}, "resp": {"offset": 4}}`)))
	require.NoError(t, err)
	require.False(t, h.OffsetMetadataMaxKnown)
	require.False(t, h.Ops[0].Result.Resp.MetadataSaid)
}
