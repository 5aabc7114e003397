package quorum

import (
	"fmt"
	"testing"

	"weir/internal/vfs/vfstest"
)

// A voter restarted on an empty disk (its metadata log dir wiped) rejoins
// and catches up, with and without a snapshot behind the leader's log
// start; the leader remembers it had acknowledged entries it no longer
// has, which etcd raft alone does not survive (a panic on the wiped
// voter, then a leader that ignores its rejections).
func TestWipedVoterCatchesUp(t *testing.T) {
	for _, snapshotBytes := range []int64{0, 512} {
		t.Run(fmt.Sprintf("snapshot bytes %d", snapshotBytes), func(t *testing.T) {
			c := newCluster(t, 3, snapshotBytes)
			var names []string
			for i := 0; i < 30; i++ {
				names = append(names, fmt.Sprintf("t%02d", i))
				c.createTopic(names[i])
			}
			c.waitTopics(names...)
			l := c.leader()
			w := c.ms[(l.id+1)%3]
			c.stop(w)
			c.start(&member{id: w.id, fs: vfstest.NewMem()})
			c.createTopic("after")
			c.waitTopics(append(names, "after")...)
			if got, want := c.ms[w.id].image().Topics.Len(), len(names)+1; got != want {
				t.Fatalf("the wiped voter has %d topics, want %d", got, want)
			}
		})
	}
}
