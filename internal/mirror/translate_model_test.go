package mirror

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
)

// copyModel copies one source partition to its remote partition, record
// by record, as a flow does: the source's offsets skip where compaction
// removed records, at transaction markers and over aborted transactions;
// with eos, a commit marker follows each batch downstream. The real sync
// rule decides the offset syncs, written after every batch (weir) or
// every flushEvery batches (MM2's offset.flush.interval.ms), a syncStore
// reads them, and copiedRuns records the copy; with handover set, the
// partition's task moves every 50 batches (the runs start afresh).
type copyModel struct {
	rng                        *rand.Rand
	eos, handover              bool
	compactPct, txnPct         int // chances, per record, of a compaction gap and of a transaction's end
	flushEvery                 int
	up, down                   []int64 // the records copied: source offset and remote offset
	nextUp, nextDown           int64
	rule                       *syncRule
	store                      *syncStore
	runs                       *copiedRuns
	batches                    int
	syncedUp                   int64 // the latest sync the store read
	weirRereads, mm2Rereads    int64
	failovers, exact, mm2Exact int64
}

func newCopyModel(seed uint64) *copyModel {
	m := &copyModel{rng: rand.New(rand.NewPCG(seed, 7)), rule: newSyncRule(100), store: newSyncStore(), runs: newCopiedRuns(), flushEvery: 1, syncedUp: -1}
	m.store.readToEnd = true
	return m
}

// batch copies the next 1 to maxBatch source records.
func (m *copyModel) batch(maxBatch int) {
	n := 1 + m.rng.IntN(maxBatch)
	from := len(m.up)
	for range n {
		if m.compactPct > 0 && m.rng.IntN(100) < m.compactPct {
			m.nextUp += 1 + m.rng.Int64N(20) // compacted away
		}
		m.up, m.down = append(m.up, m.nextUp), append(m.down, m.nextDown)
		m.rule.record("t", 0, m.nextUp, m.nextDown)
		m.nextUp++
		m.nextDown++
		if m.txnPct > 0 && m.rng.IntN(100) < m.txnPct {
			m.nextUp++ // the marker
			if m.rng.IntN(10) == 0 {
				m.nextUp += 1 + m.rng.Int64N(10) + 1 // an aborted transaction and its marker
			}
		}
	}
	tp := topicPartition{"t", 0}
	if m.handover && m.batches%50 == 0 {
		m.runs.reset(tp)
	}
	m.runs.note(tp, len(m.up)-from, func(i int) (int64, int64) { return m.up[from+i], m.down[from+i] })
	if m.eos {
		m.nextDown++ // the commit marker of the batch's transaction
	}
	m.batches++
	if m.batches%m.flushEvery == 0 {
		m.rule.flush()
	}
	for _, s := range m.rule.take() {
		m.store.add(s)
		m.syncedUp = s.UpstreamOffset
	}
}

// next returns the index of the first record copied at or after source
// offset g (len(m.up) when none).
func (m *copyModel) next(g int64) int {
	return sort.Search(len(m.up), func(i int) bool { return m.up[i] >= g })
}

// failover checks the translations of a group at source offset g, the
// next record it would read: never past that record's remote offset (or
// past the end of what was copied), and counts the records each rule
// makes the group read again.
func (m *copyModel) failover(t *testing.T, g int64) {
	t.Helper()
	got, ok := translateOffset(m.store, m.runs, topicPartition{"t", 0}, g)
	mm2, _ := m.store.translate("t", 0, g)
	if !ok {
		t.Fatal("nothing to translate with")
	}
	if got == -1 || mm2 == -1 {
		if got != mm2 {
			t.Fatalf("translate(%d) = %d, MM2's %d: only one too old", g, got, mm2)
		}
		return
	}
	i := m.next(g)
	truth := m.nextDown // past everything copied
	if i < len(m.up) {
		truth = m.down[i]
	}
	if got > truth {
		t.Fatalf("translate(%d) = %d, past the group's next record at %d", g, got, truth)
	}
	if got < mm2 {
		t.Fatalf("translate(%d) = %d, before MM2's %d", g, got, mm2)
	}
	rereads := func(from int64) int64 {
		return int64(i - sort.Search(len(m.down), func(j int) bool { return m.down[j] >= from }))
	}
	w, o := rereads(got), rereads(mm2)
	m.failovers++
	m.weirRereads += w
	m.mm2Rereads += o
	if w == 0 {
		m.exact++
	}
	if o == 0 {
		m.mm2Exact++
	}
	// Exact whenever the runs reach back to g.
	if _, known := m.runs.translate(topicPartition{"t", 0}, g); known && w != 0 {
		t.Fatalf("translate(%d) = %d re-reads %d records the copy knows", g, got, w)
	}
}

// TestTranslationAgainstModel copies partitions with compaction gaps,
// transaction markers, aborted transactions, exactly-once markers
// downstream and task handovers, and fails a group over at random offsets
// after every batch: weir's translation never passes the group's next
// record, is never behind MM2's, and is exact wherever the copy's runs
// reach back to the group's offset.
func TestTranslationAgainstModel(t *testing.T) {
	for _, sc := range modelScenarios {
		for seed := range uint64(4) {
			m := sc.model(seed)
			for range 300 {
				m.batch(sc.maxBatch)
				for range 5 {
					// Groups lag the mirror by up to a few thousand
					// offsets, or run ahead of it a little.
					m.failover(t, max(0, m.nextUp-m.rng.Int64N(3000)+m.rng.Int64N(5)))
				}
			}
		}
	}
}

// modelScenarios are the runs of TestTranslationAgainstModel and
// TestTranslationRereads.
var modelScenarios = []struct {
	name     string
	maxBatch int
	model    func(seed uint64) *copyModel
}{
	{"plain topic", 500, func(seed uint64) *copyModel { return newCopyModel(seed) }},
	{"compacted topic", 500, func(seed uint64) *copyModel { m := newCopyModel(seed); m.compactPct = 5; return m }},
	{"transactional producer", 500, func(seed uint64) *copyModel { m := newCopyModel(seed); m.txnPct = 2; return m }},
	{"exactly-once mirror", 500, func(seed uint64) *copyModel { m := newCopyModel(seed); m.eos = true; return m }},
	{"task moved every 50 batches, compacted", 500, func(seed uint64) *copyModel {
		m := newCopyModel(seed)
		m.handover, m.compactPct = true, 5
		return m
	}},
	{"MM2's sync flushes (every 20 batches)", 500, func(seed uint64) *copyModel { m := newCopyModel(seed); m.flushEvery = 20; return m }},
}

// TestTranslationRereads measures, for each scenario, how many records a
// group fails over to read again, with weir's translation and MM2's from
// the same syncs: 3,000 failovers each (5 seeds x 600 batches), the group
// lagging the mirror by 0 to 100 offsets, then by 0 to 3,000. Run with -v
// to see the table (docs/BENCHMARKS.md).
func TestTranslationRereads(t *testing.T) {
	var b strings.Builder
	fmt.Fprintf(&b, "| scenario | group lag (offsets) | weir: re-reads per failover | weir: exact | MM2's rule: re-reads per failover | MM2's rule: exact |\n|---|---|---|---|---|---|\n")
	for _, sc := range modelScenarios {
		for _, lag := range []int64{100, 3000} {
			rereads(t, &b, sc.name, sc.model, sc.maxBatch, lag)
		}
	}
	t.Log("\n" + b.String())
}

// rereads runs one scenario of TestTranslationRereads, groups lagging by
// 0 to lag offsets, and adds its row to b.
func rereads(t *testing.T, b *strings.Builder, name string, model func(uint64) *copyModel, maxBatch int, lag int64) {
	var total copyModel
	for seed := range uint64(5) {
		m := model(100 + seed)
		for range 600 {
			m.batch(maxBatch)
			m.failover(t, max(0, m.nextUp-m.rng.Int64N(lag)))
		}
		total.failovers += m.failovers
		total.weirRereads += m.weirRereads
		total.mm2Rereads += m.mm2Rereads
		total.exact += m.exact
		total.mm2Exact += m.mm2Exact
	}
	pct := func(n int64) string { return fmt.Sprintf("%.0f%%", 100*float64(n)/float64(total.failovers)) }
	per := func(n int64) string { return fmt.Sprintf("%.1f", float64(n)/float64(total.failovers)) }
	fmt.Fprintf(b, "| %s | 0-%d | %s | %s | %s | %s |\n", name, lag, per(total.weirRereads), pct(total.exact), per(total.mm2Rereads), pct(total.mm2Exact))
	if total.weirRereads > total.mm2Rereads {
		t.Errorf("%s: weir re-reads %d records, MM2's rule %d", name, total.weirRereads, total.mm2Rereads)
	}
}
