package log

import (
	"bytes"
	"slices"
	"testing"
)

// A replica that became leader (its epoch recorded at the log end) and was
// deposed before it appended has an epoch with no batch. Truncating to the
// log end, as a follower does when the leader's divergence answer points
// there, drops it; otherwise the follower keeps fetching with it as its
// last epoch and the leader keeps answering with the same divergence.
func TestTruncateToLogEndDropsAnEmptyEpoch(t *testing.T) {
	e := newEnv(t)
	l := e.open(smallConfig())
	defer l.Close()
	if err := l.AssignEpoch(1); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := l.AppendAsLeader(valueBatch(t, 1, 10, e.clock.Ms()), 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.AssignEpoch(2); err != nil { // led epoch 2, appended nothing
		t.Fatal(err)
	}
	if l.LatestEpoch() != 2 {
		t.Fatalf("latest epoch %d", l.LatestEpoch())
	}
	if err := l.TruncateTo(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if got, want := l.Epochs(), []EpochEntry{{1, 0}}; !slices.Equal(got, want) || l.LogEndOffset() != 3 {
		t.Fatalf("epochs %v, log end %d; want %v and 3", got, l.LogEndOffset(), want)
	}
	// The checkpoint says so too.
	l2 := e.reopen(l)
	defer l2.Close()
	if got := l2.Epochs(); !slices.Equal(got, []EpochEntry{{1, 0}}) {
		t.Fatalf("epochs after reopening %v", got)
	}
}

// A truncation is durable before anything is appended over it: a crash
// that keeps only what was synced must not bring back the batches cut off
// (under an epoch checkpoint, synced at once, that says they are gone).
func TestTruncationIsDurableBeforeAppendsOverIt(t *testing.T) {
	e := newEnv(t)
	cfg := smallConfig()
	l := e.open(cfg)
	if err := l.AssignEpoch(0); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := l.AppendAsLeader(valueBatch(t, 1, 10, e.clock.Ms()), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	kept := readBatches(t, l, 0)[:2]
	// A follower finds its log diverged at 2 and takes the leader's
	// batches of epoch 1 from there; none of it is flushed yet.
	if err := l.TruncateTo(2); err != nil {
		t.Fatal(err)
	}
	if s := l.active(); s.synced.Load() != s.size.Load() {
		t.Fatalf("synced %d after truncating to size %d", s.synced.Load(), s.size.Load())
	}
	if err := l.AssignEpoch(1); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := l.AppendAsLeader(valueBatch(t, 1, 12, e.clock.Ms()), 1); err != nil {
			t.Fatal(err)
		}
	}
	crashed := e.fs.CrashClone()
	l.Abandon()
	l2 := openOn(t, e, crashed, cfg, 5)
	defer l2.Close()
	got := readBatches(t, l2, 0)
	if l2.LogEndOffset() != 2 || len(got) != 2 {
		t.Fatalf("after the crash: log end %d, %d batches; want the 2 batches below the cut", l2.LogEndOffset(), len(got))
	}
	for i := range got {
		if !bytes.Equal(got[i], kept[i]) {
			t.Fatalf("batch %d differs", i)
		}
	}
	if eps := l2.Epochs(); !slices.Equal(eps, []EpochEntry{{0, 0}}) {
		t.Fatalf("epochs %v", eps)
	}
}
