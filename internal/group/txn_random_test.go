package group

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Random plain and transactional commits, markers, deletions and write
// failures on two groups of one partition, with writes appended in order
// but reported late and in any order, and markers landing between a
// write's append and its report. Whenever everything is reported, the
// coordinator must hold exactly what replaying the log gives.
func TestTxnRandom(t *testing.T) {
	for seed := int64(1); seed <= 30; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { txnRandom(t, seed, 400) })
	}
}

func txnRandom(t *testing.T, seed int64, steps int) {
	rng := rand.New(rand.NewSource(seed))
	h := newHarness(t, testConfig())
	h.autoPersist = false
	groups := []string{"g", ""}
	for i := 0; groups[1] == "" || h.c.PartitionFor(groups[1]) != h.c.PartitionFor("g"); i++ {
		groups[1] = fmt.Sprintf("h%d", i)
	}
	p := h.c.PartitionFor("g")
	topics := []string{"a", "b", "c"}
	var appended []Write // in the log, not yet reported
	drain := func() {
		for len(h.pending) > 0 {
			w := h.pending[0]
			h.pending = h.pending[1:]
			h.appendLog(w)
			appended = append(appended, w)
		}
		for _, i := range rng.Perm(len(appended)) {
			w := appended[i]
			h.apply(h.c.Persisted(h.now, w.ID, h.offsetOf(w), nil))
		}
		appended = nil
		// Reports may have emitted more writes (none do today).
		if len(h.pending) > 0 {
			t.Fatalf("seed %d: writes emitted by reports", seed)
		}
	}
	for step := 0; step < steps; step++ {
		g := groups[rng.Intn(len(groups))]
		pick := func() map[string]int64 {
			offs := make(map[string]int64)
			for _, topic := range topics {
				if rng.Intn(2) == 0 {
					offs[topic] = int64(step)
				}
			}
			if len(offs) == 0 {
				offs[topics[rng.Intn(len(topics))]] = int64(step)
			}
			return offs
		}
		switch r := rng.Intn(100); {
		case r < 25:
			h.txnCommit(txnReq{group: g, pid: int64(1 + rng.Intn(3))}, pick())
		case r < 35:
			h.commit(g, "", -1, pick())
		case r < 50:
			// A marker: everything appended so far precedes it.
			for len(h.pending) > 0 && rng.Intn(2) == 0 {
				w := h.pending[0]
				h.pending = h.pending[1:]
				h.appendLog(w)
				appended = append(appended, w)
			}
			h.marker(g, int64(1+rng.Intn(3)), rng.Intn(3) > 0)
		case r < 55:
			od := kmsg.NewPtrOffsetDeleteRequest()
			od.Group = g
			od.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: topics[rng.Intn(len(topics))],
				Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
			h.send("c", od)
		case r < 70:
			if len(h.pending) > 0 {
				w := h.pending[0]
				h.pending = h.pending[1:]
				h.appendLog(w)
				appended = append(appended, w)
			}
		case r < 90:
			if len(appended) > 0 {
				i := rng.Intn(len(appended))
				w := appended[i]
				appended = append(appended[:i], appended[i+1:]...)
				h.apply(h.c.Persisted(h.now, w.ID, h.offsetOf(w), nil))
			}
		case r < 93:
			// The unappended writes fail, as the driver fails a
			// partition's writes queued behind a failed one. Not
			// tombstones: a failed OffsetDelete does not undo its
			// deletion (a known gap, not of transactions).
			if hasTombstone(h.pending) {
				break
			}
			ws := h.pending
			h.pending = nil
			for _, w := range ws {
				h.apply(h.c.Persisted(h.now, w.ID, -1, kerr.NotLeaderForPartition))
			}
		default:
			drain()
			h.checkReplay()
		}
		checkStats(t, h.c)
		if len(h.pending)+len(appended) > 0 && h.c.parts[p] == nil {
			t.Fatalf("seed %d: partition lost", seed)
		}
	}
	drain()
	h.checkReplay()
}

// offsetOf is the log offset of an appended write's first record.
func (h *harness) offsetOf(w Write) int64 {
	h.t.Helper()
	for _, r := range h.log[w.Partition] {
		if &r.Key[0] == &w.Records[0].Key[0] {
			return r.Offset
		}
	}
	h.t.Fatalf("write %d not in the log", w.ID)
	return -1
}

func hasTombstone(ws []Write) bool {
	for _, w := range ws {
		for _, r := range w.Records {
			if r.Value == nil {
				return true
			}
		}
	}
	return false
}
