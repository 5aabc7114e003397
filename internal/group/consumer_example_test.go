package group_test

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/group"
)

// A consumer group (KIP-848): the driver tells the coordinator the topics,
// then members heartbeat and the coordinator assigns partitions.
func ExampleCoordinator_SetTopics() {
	cfg := group.DefaultConfig()
	c := group.New(cfg)
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var logEnd int64 // one partition's log is enough here
	var act func(group.Ready)
	act = func(rd group.Ready) {
		for _, r := range rd.Responses {
			if hb, ok := r.Body.(*kmsg.ConsumerGroupHeartbeatResponse); ok {
				fmt.Printf("error %d epoch %d interval %dms partitions %v\n", hb.ErrorCode, hb.MemberEpoch,
					hb.HeartbeatIntervalMillis, hb.Assignment.Topics[0].Partitions)
			}
		}
		for _, w := range rd.Writes {
			first := logEnd // appended and committed at first
			logEnd += int64(len(w.Records))
			act(c.Persisted(now, w.ID, first, nil))
		}
	}
	for p := int32(0); p < cfg.OffsetsTopicPartitions; p++ {
		act(c.BeginLoad(now, p))
		rd, _ := c.LoadPartition(now, p, nil)
		act(rd)
	}
	// Before serving, and on every metadata change.
	act(c.SetTopics(now, map[string]group.TopicInfo{"orders": {ID: [16]byte{1}, Partitions: 3}}))

	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version, req.Group, req.MemberID, req.MemberEpoch = 1, "billing", "Qx3yS2tVQy6j0l4vYk1b8w", 0
	req.RebalanceTimeoutMillis = 300000
	req.SubscribedTopicNames = []string{"orders"}
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	act(c.Handle(now, group.Request{Token: 1, ClientID: "app", ClientHost: "/10.0.0.1", Body: req}))
	// Output:
	// error 0 epoch 1 interval 5000ms partitions [0 1 2]
}
