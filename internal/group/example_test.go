package group_test

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/coordinator"
	"weir/internal/group"
)

// The loop a broker runs around the Coordinator: one goroutine feeds it
// inputs and acts on every Ready. Here the "log" is a slice and persistence
// is immediate.
func Example() {
	cfg := group.DefaultConfig()
	cfg.InitialRebalanceDelay = 0
	cfg.NewUUID = func() string { return "0c6f" } // tests only: Kafka uses a random UUID
	c := group.New(cfg)
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	log := make(map[int32][]group.LogRecord)

	var act func(group.Ready)
	act = func(rd group.Ready) {
		for _, r := range rd.Responses {
			if jr, ok := r.Body.(*kmsg.JoinGroupResponse); ok {
				fmt.Printf("request %d: JoinGroup error %d generation %d member %s\n", r.Token, jr.ErrorCode, jr.Generation, jr.MemberID)
			}
		}
		for _, w := range rd.Writes {
			first := int64(len(log[w.Partition])) // append and sync, as one batch
			for i, r := range w.Records {
				log[w.Partition] = append(log[w.Partition], group.LogRecord{Record: r, Offset: first + int64(i)})
			}
			act(c.Persisted(now, w.ID, first, nil))
		}
		if !rd.Deadline.IsZero() && !rd.Deadline.After(now) {
			act(c.Tick(now)) // a real loop arms a timer for rd.Deadline
		}
	}

	// This broker leads every __consumer_offsets partition; they are empty.
	for p := int32(0); p < cfg.OffsetsTopicPartitions; p++ {
		act(c.BeginLoad(now, p))
		rd, err := c.LoadPartition(now, p, log[p])
		if err != nil {
			panic(err)
		}
		act(rd)
	}

	join := func(token uint64, memberID string) {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version, req.Group, req.MemberID = 9, "orders", memberID
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 45000, 60000
		req.ProtocolType = "consumer"
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0}}}
		act(c.Handle(now, group.Request{Token: token, ClientID: "app", ClientHost: "/10.0.0.1", Body: req}))
	}
	join(1, "")         // MEMBER_ID_REQUIRED (79), with the id to use
	join(2, "app-0c6f") // joins; the zero initial delay ends the join phase
	fmt.Println(len(log[coordinator.PartitionFor("orders", cfg.OffsetsTopicPartitions)]), "records so far")
	// Output:
	// request 1: JoinGroup error 79 generation -1 member app-0c6f
	// request 2: JoinGroup error 0 generation 1 member app-0c6f
	// 0 records so far
}
