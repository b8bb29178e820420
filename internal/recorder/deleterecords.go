package recorder

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fencecheck/fencecheck/model"
)

// deleteRecords is an admin's DeleteRecords (KIP-107), one operation per
// partition, each answered by its partition's code. DeleteRecords names
// topics by name at every version. A misrouted answer is recorded too:
// the leader moves its log start offset before it waits for the
// followers, so NOT_LEADER_OR_FOLLOWER may follow the deletion
// (model/deleterecords.go), and the history keeps it undecided. An offset
// below -1, which Kafka refuses and the format cannot hold, is not
// recorded.
func (c *Client) deleteRecords(r *kmsg.DeleteRecordsRequest) []observed {
	var ops []observed
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			partition, ok := c.partition(t.Topic, p.Partition)
			if !ok || p.Offset < model.HighWatermarkOffset {
				continue
			}
			req := model.NewRequest()
			req.Partition, req.Offset = partition, p.Offset
			topic, number := t.Topic, p.Partition
			answer := func(resp kmsg.Response) (model.Result, fate) {
				dr, ok := resp.(*kmsg.DeleteRecordsResponse)
				if !ok {
					return c.undecided(model.DeleteRecords, "the answer is a %T", resp), ended
				}
				rp, found := deletedPartition(dr, topic, number)
				if !found {
					return c.undecided(model.DeleteRecords, "the answer leaves out %s", partition), ended
				}
				if rp.ErrorCode == kerr.NotLeaderForPartition.Code {
					// kerr's older name of NOT_LEADER_OR_FOLLOWER.
					return model.Fail(model.NotLeaderOrFollower), ended
				}
				out := model.NewResponse()
				out.LowWatermark = rp.LowWatermark
				return c.result(model.DeleteRecords, rp.ErrorCode, out), ended
			}
			ops = append(ops, observed{op: c.begin(model.DeleteRecords, r.Version, req), answer: answer})
		}
	}
	return ops
}

func deletedPartition(resp *kmsg.DeleteRecordsResponse, topic string, partition int32) (kmsg.DeleteRecordsResponseTopicPartition, bool) {
	for _, t := range resp.Topics {
		if t.Topic != topic {
			continue
		}
		for _, p := range t.Partitions {
			if p.Partition == partition {
				return p, true
			}
		}
	}
	return kmsg.DeleteRecordsResponseTopicPartition{}, false
}
