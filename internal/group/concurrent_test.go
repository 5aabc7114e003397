package group

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestManyGroupsRebalanceInterleaved runs 100 three-member groups through
// their first rebalance with every request of every group shuffled into one
// stream.
func TestManyGroupsRebalanceInterleaved(t *testing.T) {
	const groups, members = 100, 3
	h := newHarness(t, testConfig())
	rng := rand.New(rand.NewSource(1))

	type client struct {
		group, name, id string
		step            int // 0: first join, 1: second join, 2: joined
		join            uint64
	}
	var clients []*client
	for g := 0; g < groups; g++ {
		for m := 0; m < members; m++ {
			clients = append(clients, &client{group: fmt.Sprintf("g%03d", g), name: fmt.Sprintf("c%03d-%d", g, m)})
		}
	}
	// Joins: each client's two JoinGroups in order, clients interleaved.
	firstJoined := make(map[string]string) // group -> id of the first member to join
	for left := 2 * len(clients); left > 0; {
		c := clients[rng.Intn(len(clients))]
		switch c.step {
		case 0:
			r := h.joinResp(h.join(c.group, c.name, "", joinOpts{}))
			wantCode(t, "first join", r.ErrorCode, kerr.MemberIDRequired.Code)
			c.id = r.MemberID
		case 1:
			c.join = h.join(c.group, c.name, c.id, joinOpts{})
			if firstJoined[c.group] == "" {
				firstJoined[c.group] = c.id
			}
		default:
			continue
		}
		c.step++
		left--
	}
	h.tick()

	leaders := make(map[string]string)
	for _, c := range clients {
		r := h.joinResp(c.join)
		wantCode(t, "join", r.ErrorCode, 0)
		if r.Generation != 1 || r.LeaderID != firstJoined[c.group] {
			t.Fatalf("%s: generation %d leader %s, want 1 and %s", c.name, r.Generation, r.LeaderID, firstJoined[c.group])
		}
		if (r.LeaderID == c.id) != (len(r.Members) == members) {
			t.Fatalf("%s: %d members in its join response", c.name, len(r.Members))
		}
		leaders[c.group] = r.LeaderID
	}

	// Syncs, shuffled; the leaders assign each member its own id.
	rng.Shuffle(len(clients), func(i, j int) { clients[i], clients[j] = clients[j], clients[i] })
	syncs := make(map[*client]uint64)
	for _, c := range clients {
		var assign map[string][]byte
		if leaders[c.group] == c.id {
			assign = make(map[string][]byte)
			for _, m := range h.group(c.group).members {
				assign[m.id] = []byte(m.id)
			}
		}
		syncs[c] = h.sync(c.group, c.id, 1, "", assign)
	}
	for c, tok := range syncs {
		r := h.syncResp(tok)
		if r.ErrorCode != 0 || string(r.MemberAssignment) != c.id {
			t.Fatalf("%s: sync %+v", c.name, r)
		}
	}
	for g := 0; g < groups; g++ {
		id := fmt.Sprintf("g%03d", g)
		if gr := h.group(id); gr.state != Stable || gr.generation != 1 || len(gr.members) != members {
			t.Fatalf("%s: %v generation %d", id, gr.state, gr.generation)
		}
		// The group's records went to its own partition.
		found := false
		for _, r := range h.log[h.c.PartitionFor(id)] {
			found = found || string(r.Key) == string(groupKey(id))
		}
		if !found {
			t.Fatalf("%s: no group metadata in partition %d", id, h.c.PartitionFor(id))
		}
	}
}
