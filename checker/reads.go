package checker

import (
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// readsOf are the offsets the fetches of ops read from (model.Reads), so
// that the model judging them keeps no record no fetch reads. CheckFile
// learns them in its first reading of a file, before the search begins.
func readsOf(ops []histories.Op) *model.Reads {
	reads := model.NewReads()
	for i := range ops {
		noteRead(reads, &ops[i])
	}
	return reads
}

// noteRead adds op to reads when it is a fetch.
func noteRead(reads *model.Reads, op *histories.Op) {
	if op.Op.Kind == model.Fetch {
		reads.Fetch(op.Op.Req.Partition, op.Op.Req.Offset)
	}
}
