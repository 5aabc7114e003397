package metalog

import (
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"weir/internal/metadata"
	"weir/internal/record"
	"weir/internal/vfs/vfstest"
)

const metaDir = "/meta"

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func open(t *testing.T, fs *vfstest.MemFS, segmentBytes int64) *Local {
	t.Helper()
	m, err := OpenLocal(metaDir, segmentBytes, fs, quiet())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// sampleBatch returns the records of batch i: a few record types, with
// every array either nil or non-empty so that they decode to the same
// values (empty non-nullable arrays decode as nil).
func sampleBatch(i int) []metadata.Record {
	id := metadata.Uuid{byte(i), 1, 2, 3}
	name := "topic-" + strings.Repeat("x", i%7)
	pr := metadata.NewPartitionRecord()
	pr.PartitionId, pr.TopicId, pr.Replicas, pr.Isr, pr.Leader, pr.LeaderEpoch, pr.PartitionEpoch = 0, id, []int32{1, 2}, []int32{1}, 1, 0, 0
	value := strings.Repeat("v", i)
	recs := []metadata.Record{&metadata.TopicRecord{Name: name, TopicId: id}, pr}
	for j := 0; j < i%4; j++ {
		recs = append(recs, &metadata.ConfigRecord{ResourceType: metadata.ResourceTopic, ResourceName: name, Name: "k" + string(rune('a'+j)), Value: &value})
	}
	if i%3 == 0 {
		reg := metadata.NewRegisterBrokerRecord()
		reg.BrokerId, reg.BrokerEpoch = int32(i), int64(i)
		reg.EndPoints = []metadata.BrokerEndpoint{{Name: "PLAINTEXT", Host: "h", Port: 9092}}
		recs = append(recs, reg, &metadata.NoOpRecord{})
	}
	return recs
}

func replayAll(t *testing.T, m *Local) []Committed {
	t.Helper()
	var out []Committed
	if err := m.Replay(func(c Committed) error {
		out = append(out, c)
		return nil
	}); err != nil {
		t.Fatalf("Replay: %v", err)
	}
	return out
}

func checkSame(t *testing.T, got, want []Committed) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d batches, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].LastOffset != want[i].LastOffset {
			t.Fatalf("batch %d: last offset %d, want %d", i, got[i].LastOffset, want[i].LastOffset)
		}
		if !reflect.DeepEqual(got[i].Records, want[i].Records) {
			t.Fatalf("batch %d records differ:\n got %#v\nwant %#v", i, got[i].Records, want[i].Records)
		}
	}
}

func TestAppendReplayAcrossReopen(t *testing.T) {
	fs := vfstest.NewMem()
	m := open(t, fs, 1<<20)
	if m.EndOffset() != 0 || len(replayAll(t, m)) != 0 {
		t.Fatal("a new log is not empty")
	}
	var want []Committed
	next := int64(0)
	for i := range 12 {
		recs := sampleBatch(i)
		last, err := m.Append(recs)
		if err != nil {
			t.Fatal(err)
		}
		next += int64(len(recs))
		if last != next-1 || m.EndOffset() != next {
			t.Fatalf("batch %d: last %d, end %d; want %d, %d", i, last, m.EndOffset(), next-1, next)
		}
		want = append(want, Committed{Records: recs, LastOffset: last})
	}
	checkSame(t, replayAll(t, m), want)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	m = open(t, fs, 1<<20)
	if m.EndOffset() != next {
		t.Fatalf("end offset after reopen = %d, want %d", m.EndOffset(), next)
	}
	checkSame(t, replayAll(t, m), want)
	// Appends continue where the log ended.
	last, err := m.Append(sampleBatch(3))
	if err != nil || last != next+int64(len(sampleBatch(3)))-1 {
		t.Fatalf("append after reopen: %d, %v", last, err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestReplayLargeBatchesAndSegments replays batches bigger than one read
// (1 MiB) spread over several segments.
func TestReplayLargeBatchesAndSegments(t *testing.T) {
	fs := vfstest.NewMem()
	m := open(t, fs, 1<<20)
	defer m.Close()
	big := strings.Repeat("b", 30000)
	var want []Committed
	for i := range 5 {
		var recs []metadata.Record
		for j := range 20 + 10*i {
			recs = append(recs, &metadata.ConfigRecord{ResourceType: metadata.ResourceBroker, ResourceName: "",
				Name: "key" + string(rune('a'+j%26)), Value: &big})
		}
		last, err := m.Append(recs)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, Committed{Records: recs, LastOffset: last})
		// Small batches between the big ones.
		small := sampleBatch(i)
		if last, err = m.Append(small); err != nil {
			t.Fatal(err)
		}
		want = append(want, Committed{Records: small, LastOffset: last})
	}
	segs := 0
	ents, err := fs.ReadDir(filepath.Join(metaDir, DirName))
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range ents {
		if strings.HasSuffix(de.Name(), ".log") {
			segs++
		}
	}
	if segs < 2 {
		t.Fatalf("%d segments; the test wants several", segs)
	}
	checkSame(t, replayAll(t, m), want)
}

func TestSubscribersGetBatchesInOrder(t *testing.T) {
	m := open(t, vfstest.NewMem(), 1<<20)
	defer m.Close()
	var first, second []Committed
	m.Subscribe(func(c Committed) error { first = append(first, c); return nil })
	var want []Committed
	for i := range 3 {
		recs := sampleBatch(i)
		last, err := m.Append(recs)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, Committed{Records: recs, LastOffset: last})
		if i == 0 {
			// A later subscriber sees only later batches.
			m.Subscribe(func(c Committed) error { second = append(second, c); return nil })
		}
	}
	checkSame(t, first, want)
	checkSame(t, second, want[1:])
	// Replay yields the same batches the subscribers got.
	checkSame(t, replayAll(t, m), want)

	// A subscriber's error is returned with the committed offset.
	boom := errors.New("boom")
	m.Subscribe(func(Committed) error { return boom })
	end := m.EndOffset()
	last, err := m.Append(sampleBatch(1))
	if !errors.Is(err, boom) || last != m.EndOffset()-1 || m.EndOffset() <= end {
		t.Fatalf("append with a failing subscriber: %d, %v", last, err)
	}
}

func TestEmptyAppend(t *testing.T) {
	m := open(t, vfstest.NewMem(), 1<<20)
	defer m.Close()
	calls := 0
	m.Subscribe(func(Committed) error { calls++; return nil })
	if last, err := m.Append(nil); err != nil || last != -1 || m.EndOffset() != 0 {
		t.Fatalf("empty append on an empty log: %d, %v", last, err)
	}
	if _, err := m.Append(sampleBatch(2)); err != nil {
		t.Fatal(err)
	}
	end := m.EndOffset()
	if last, err := m.Append([]metadata.Record{}); err != nil || last != end-1 || m.EndOffset() != end {
		t.Fatalf("empty append: %d, %v", last, err)
	}
	if calls != 1 || len(replayAll(t, m)) != 1 {
		t.Fatalf("empty appends were delivered (%d calls)", calls)
	}
}

func TestAppendRejectsUnencodableRecords(t *testing.T) {
	m := open(t, vfstest.NewMem(), 1<<20)
	defer m.Close()
	bad := metadata.NewPartitionRecord()
	bad.SetVersion(0)
	bad.Directories = []metadata.Uuid{{1}} // not in version 0
	if _, err := m.Append([]metadata.Record{&metadata.NoOpRecord{}, bad}); !errors.Is(err, metadata.ErrNotEncodable) {
		t.Fatalf("append of an unencodable record: %v", err)
	}
	if m.EndOffset() != 0 {
		t.Fatal("part of a refused batch was written")
	}
}

// TestTornTail cuts the segment at random points after a few appends, as a
// crash in the middle of a write would: the log reopens and replays the
// batches that are whole, and appends continue after them.
func TestTornTail(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const batches = 5
	seg := filepath.Join(metaDir, DirName, "00000000000000000000.log")
	for trial := range 40 {
		fs := vfstest.NewMem()
		m := open(t, fs, 1<<20)
		var want []Committed
		var ends []int64 // file size after each batch
		for i := range batches {
			recs := sampleBatch(i + trial%3)
			last, err := m.Append(recs)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, Committed{Records: recs, LastOffset: last})
			st, err := fs.Stat(seg)
			if err != nil {
				t.Fatal(err)
			}
			ends = append(ends, st.Size())
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		// Cut somewhere after the first batch, sometimes exactly at a
		// batch boundary.
		cut := ends[0] + rng.Int64N(ends[batches-1]-ends[0])
		if trial%5 == 0 {
			cut = ends[trial%(batches-1)]
		}
		f, err := fs.OpenFile(seg, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(cut); err != nil {
			t.Fatal(err)
		}
		f.Close()

		whole := 0
		for whole < batches && ends[whole] <= cut {
			whole++
		}
		m = open(t, fs, 1<<20)
		got := replayAll(t, m)
		checkSame(t, got, want[:whole])
		end := want[whole-1].LastOffset + 1
		if m.EndOffset() != end {
			t.Fatalf("trial %d (cut %d): end offset %d, want %d", trial, cut, m.EndOffset(), end)
		}
		recs := sampleBatch(7)
		last, err := m.Append(recs)
		if err != nil || last != end+int64(len(recs))-1 {
			t.Fatalf("trial %d: append after recovery: %d, %v", trial, last, err)
		}
		checkSame(t, replayAll(t, m), append(want[:whole:whole], Committed{Records: recs, LastOffset: last}))
		m.Close()
	}
}

// TestReplayCorruptBatchFails damages a batch in the middle of an open
// log (after recovery, so only a bug or a disk fault can do this): Replay
// must report it, not loop forever re-reading it.
func TestReplayCorruptBatchFails(t *testing.T) {
	t.Run("magic", func(t *testing.T) {
		testReplayCorrupt(t, 16, []byte{0x7f}, record.ErrMagic)
	})
	// A length that runs past the end of the segment, but not past one
	// read, looks like a batch cut by the read size.
	t.Run("length", func(t *testing.T) {
		testReplayCorrupt(t, 8, []byte{0, 0, 0x10, 0}, record.ErrShort)
	})
}

func testReplayCorrupt(t *testing.T, at int64, patch []byte, want error) {
	fs := vfstest.NewMem()
	m := open(t, fs, 1<<20)
	defer m.Close()
	seg := filepath.Join(metaDir, DirName, "00000000000000000000.log")
	var ends []int64
	for i := range 3 {
		if _, err := m.Append(sampleBatch(i)); err != nil {
			t.Fatal(err)
		}
		st, err := fs.Stat(seg)
		if err != nil {
			t.Fatal(err)
		}
		ends = append(ends, st.Size())
	}
	f, err := fs.OpenFile(seg, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(patch, ends[0]+at); err != nil {
		t.Fatal(err)
	}
	f.Close()
	calls := 0
	err = m.Replay(func(Committed) error { calls++; return nil })
	if err == nil || !errors.Is(err, want) {
		t.Fatalf("Replay over a corrupt batch: %v", err)
	}
	if calls != 1 {
		t.Fatalf("%d batches delivered before the corrupt one, want 1", calls)
	}
}
