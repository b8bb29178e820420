package impl

import (
	"maps"

	"github.com/fencecheck/fencecheck/model"
)

// perPartition answers a commit whose partitions may be refused one by
// one, for metadata above offset.metadata.max.bytes: commit validates
// the whole request and writes the partitions it is given. A commit
// whose every partition is refused writes none and is answered
// OFFSET_METADATA_TOO_LARGE (model: perPartition).
func (b *Broker) perPartition(r model.Request, commit func(model.Request) model.Result) model.Result {
	var refused map[model.Partition]model.Code
	for p := range r.Offsets {
		if model.MetadataLength(r.OffsetMetadata[p]) > b.metadataMax {
			if refused == nil {
				refused = map[model.Partition]model.Code{}
			}
			refused[p] = model.OffsetMetadataTooLarge
		}
	}
	if refused == nil {
		return commit(r)
	}
	taken := r
	taken.Offsets = maps.Clone(r.Offsets)
	for p := range refused {
		delete(taken.Offsets, p)
	}
	res := commit(taken)
	switch {
	case !res.Succeeded():
		return res
	case len(refused) == len(r.Offsets):
		return model.Fail(model.OffsetMetadataTooLarge)
	}
	res.Resp.PartitionErrors = refused
	return res
}

// withMetadata sets the metadata committed with offsets (model:
// group.withMetadata): "" is none.
func (g *group) withMetadata(offsets map[model.Partition]int64, metadata map[model.Partition]string) {
	for p := range offsets {
		setMetadata(g, p, metadata[p])
	}
}

func setMetadata(g *group, p model.Partition, metadata string) {
	if metadata == "" {
		delete(g.metadata, p)
		return
	}
	if g.metadata == nil {
		g.metadata = map[model.Partition]string{}
	}
	g.metadata[p] = metadata
}
