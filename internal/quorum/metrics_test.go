package quorum

import (
	"sync"
	"testing"
	"time"

	"weir/internal/metadata"
	"weir/internal/testwait"
	"weir/internal/vfs/vfstest"
)

// The hooks of Kafka's raft-metrics: OnElection once a node learns of a
// leader after none, OnCommit once per committed Append with its
// records' count; Status has the leader's own vote.
func TestRaftMetricHooks(t *testing.T) {
	var mu sync.Mutex
	elected := map[int32]int{}
	var commits []int
	c := &cluster{t: t, net: &network{nodes: map[int32]*Node{}, cut: map[[2]int32]bool{}}, ms: map[int32]*member{}, voters: []int32{0, 1, 2}}
	c.configure = func(id int32, cfg *Config) {
		cfg.OnElection = func(d time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			if d < 0 {
				t.Errorf("node %d: negative election latency %v", id, d)
			}
			elected[id]++
		}
		cfg.OnCommit = func(d time.Duration, n int) {
			mu.Lock()
			defer mu.Unlock()
			commits = append(commits, n)
		}
	}
	for _, id := range c.voters {
		c.start(&member{id: id, fs: vfstest.NewMem()})
	}
	t.Cleanup(func() {
		for _, m := range c.ms {
			c.stop(m)
		}
	})
	l := c.leader()
	if st := l.node.Status(); st.Vote != l.id || st.Leader != l.id || st.LastSnapshot.IsZero() {
		t.Errorf("leader %d's status: vote %d leader %d last snapshot %v", l.id, st.Vote, st.Leader, st.LastSnapshot)
	}
	if _, err := l.node.Append([]metadata.Record{&metadata.TopicRecord{Name: "a", TopicId: metadata.Uuid{1}}, &metadata.TopicRecord{Name: "b", TopicId: metadata.Uuid{2}}}); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 10*time.Second, "every node to learn of the leader", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return elected[0] > 0 && elected[1] > 0 && elected[2] > 0
	})
	mu.Lock()
	defer mu.Unlock()
	if len(commits) != 1 || commits[0] != 2 {
		t.Errorf("OnCommit saw %v, want one batch of 2 records", commits)
	}
}
