package mirror

// copiedRuns is what this process copied of each source partition since it
// took the partition's task: runs of records whose upstream and downstream
// offsets both advance by one, in copy order. A new run starts wherever
// either side skips (compaction, transaction markers and aborted records
// upstream; commit markers of an exactly-once mirror downstream).
//
// MM2 translates a group's offset from the offset syncs alone: to the
// sync's downstream offset when the group sits exactly on it, else one
// past the sync below it, so a failed-over group re-reads every record
// between that sync and its position (up to offset.lag.max records, and
// far more for a group behind the latest syncs, whose kept syncs thin out).
// The copy knows better: for a group at upstream offset g,
//
//   - g in a run: the downstream offset of g's copy, exact;
//   - g in a gap between two runs: the next run's first downstream offset,
//     exact (the source has no record in the gap, or no longer has);
//   - g past the last run: one past its last downstream offset, where the
//     next record will be copied.
//
// Each answer is at or before the downstream offset of the next record the
// group reads: every record copied later is appended after, and the runs
// only hold acknowledged records of one stretch of ownership (a partition
// taken again starts afresh, see reset). The checkpoints take the larger
// of this and MM2's translation (translateOffset); the checkpoint records
// carry nothing new, and a group on a partition another process copies,
// or older than the runs kept, gets MM2's.
//
// The checkpoint goroutine reads the runs while the copy adds to them, so
// they have their own lock.

import (
	"sort"
	"sync"
)

// maxRuns bounds the runs kept per partition (12 KiB); the oldest quarter
// goes when it is reached. A plain topic copied by one process has one run;
// compaction gaps and an exactly-once mirror's markers (one per batch) make
// more.
const maxRuns = 512

// run is a stretch of records copied from upstream offsets up0..up1 to
// downstream offsets down0..down0+(up1-up0).
type run struct{ up0, up1, down0 int64 }

type copiedRuns struct {
	mu    sync.Mutex
	parts map[topicPartition][]run
}

func newCopiedRuns() *copiedRuns { return &copiedRuns{parts: map[topicPartition][]run{}} }

// reset forgets what was copied of tp: the partition is (re)taken, and
// others may have copied it meanwhile.
func (c *copiedRuns) reset(tp topicPartition) {
	c.mu.Lock()
	delete(c.parts, tp)
	c.mu.Unlock()
}

// note records that the records at upstream offsets ups were written at
// downstream offsets downs (acknowledged), in order.
func (c *copiedRuns) note(tp topicPartition, n int, at func(i int) (up, down int64)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	runs := c.parts[tp]
	for i := range n {
		up, down := at(i)
		if k := len(runs) - 1; k >= 0 {
			r := &runs[k]
			if up == r.up1+1 && down == r.down0+(up-r.up0) {
				r.up1 = up
				continue
			}
			if up <= r.up1 {
				runs = runs[:0] // the source went back (recreated): start afresh
			}
		}
		if len(runs) == maxRuns {
			runs = append(runs[:0], runs[maxRuns/4:]...)
		}
		runs = append(runs, run{up, up, down})
	}
	c.parts[tp] = runs
}

// translate returns the downstream offset at which a group at upstream
// offset g of tp resumes (see the type comment); ok is false when the runs
// do not reach back to g.
func (c *copiedRuns) translate(tp topicPartition, g int64) (down int64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	runs := c.parts[tp]
	i := sort.Search(len(runs), func(i int) bool { return runs[i].up0 > g }) - 1
	switch {
	case i < 0:
		return 0, false
	case g <= runs[i].up1:
		return runs[i].down0 + (g - runs[i].up0), true
	case i+1 < len(runs):
		return runs[i+1].down0, true
	default:
		return runs[i].down0 + (runs[i].up1 - runs[i].up0) + 1, true
	}
}

// translateOffset is the checkpoints' translation of a group at upstream
// offset g of tp: MM2's from the syncs (ok false: nothing to translate
// with; -1: too old), moved forward to what the runs know when they know
// more.
func translateOffset(store *syncStore, runs *copiedRuns, tp topicPartition, g int64) (down int64, ok bool) {
	down, ok = store.translate(tp.topic, tp.partition, g)
	if !ok || down < 0 {
		return down, ok
	}
	if r, known := runs.translate(tp, g); known && r > down {
		down = r
	}
	return down, true
}
