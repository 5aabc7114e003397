package kafka_test

// The idempotent producer over the wire: sequences, retries of the last
// five batches, fencing by epoch, and all of it across a restart.

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/servertest"
)

func (w *wire) initProducerID() (int64, int16) {
	w.t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.SetVersion(4)
	req.TransactionTimeoutMillis = 60000
	resp := w.do(req).(*kmsg.InitProducerIDResponse)
	if resp.ErrorCode != 0 || resp.ProducerID < 0 || resp.ProducerEpoch < 0 {
		w.t.Fatalf("InitProducerId: error %v, id %d, epoch %d", kerr.ErrorForCode(resp.ErrorCode), resp.ProducerID, resp.ProducerEpoch)
	}
	return resp.ProducerID, resp.ProducerEpoch
}

func TestIdempotentProducer(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: noAutoCreate})
	w := dial(t, n.Addr)
	w.createTopic("idem", 1, nil)
	pid, epoch := w.initProducerID()
	if other, _ := w.initProducerID(); other == pid {
		t.Fatalf("two InitProducerId calls gave the same id %d", pid)
	}

	// Eight batches of two records: sequences 0, 2, 4, ... 14.
	const per = 2
	var sent [][]byte
	var offsets []int64
	for i := 0; i < 8; i++ {
		b := idemBatch(t, pid, epoch, int32(i*per), per, fmt.Sprint("e0b", i))
		off := w.produceOK("idem", 0, b)
		if off != int64(i*per) {
			t.Fatalf("batch %d at offset %d, want %d", i, off, i*per)
		}
		sent, offsets = append(sent, b), append(offsets, off)
	}

	// rejected asserts a produce fails with want and writes nothing.
	rejected := func(what string, b []byte, want *kerr.Error) {
		t.Helper()
		before := w.logState(n, "idem", 0)
		wantCode(t, what, w.produce("idem", 0, b).ErrorCode, want)
		w.unchanged(n, "idem", 0, before)
	}
	// duplicate asserts a retry answers the original offset and writes
	// nothing.
	duplicate := func(what string, b []byte, want int64) {
		t.Helper()
		before := w.logState(n, "idem", 0)
		p := w.produce("idem", 0, b)
		wantOK(t, what, p.ErrorCode)
		if p.BaseOffset != want {
			t.Fatalf("%s: answered offset %d, want the original %d", what, p.BaseOffset, want)
		}
		w.unchanged(n, "idem", 0, before)
	}

	// A retry of any of the last five batches is a duplicate.
	for i := 3; i < 8; i++ {
		duplicate(fmt.Sprintf("retry of batch %d", i), sent[i], offsets[i])
	}
	// The sixth from last is no longer remembered: out of order, as in Kafka.
	rejected("retry of batch 2", sent[2], kerr.OutOfOrderSequenceNumber)
	// A gap in the sequence.
	rejected("sequence gap", idemBatch(t, pid, epoch, 8*per+1, per, "gap"), kerr.OutOfOrderSequenceNumber)
	// A batch overlapping the last one without being it.
	rejected("overlapping sequence", idemBatch(t, pid, epoch, 7*per+1, per, "overlap"), kerr.OutOfOrderSequenceNumber)
	// The next in order is fine.
	if off := w.produceOK("idem", 0, idemBatch(t, pid, epoch, 8*per, per, "e0b8")); off != 8*per {
		t.Fatalf("next batch at offset %d, want %d", off, 8*per)
	}

	// A new epoch must start at sequence 0.
	rejected("new epoch at sequence 5", idemBatch(t, pid, epoch+1, 5, per, "e1"), kerr.OutOfOrderSequenceNumber)
	newEpoch := idemBatch(t, pid, epoch+1, 0, per, "e1b0")
	firstOfEpoch := w.produceOK("idem", 0, newEpoch)
	if firstOfEpoch != 9*per {
		t.Fatalf("first batch of the new epoch at offset %d, want %d", firstOfEpoch, 9*per)
	}
	// The old epoch is fenced, also for its retries.
	rejected("old epoch", idemBatch(t, pid, epoch, 9*per, per, "stale"), kerr.InvalidProducerEpoch)
	rejected("retry in the old epoch", sent[7], kerr.InvalidProducerEpoch)
	duplicate("retry of the new epoch's first batch", newEpoch, firstOfEpoch)

	// Other producers are independent.
	pid2, _ := w.initProducerID()
	if off := w.produceOK("idem", 0, idemBatch(t, pid2, 0, 100, per, "other")); off != 10*per {
		t.Fatalf("another producer's first batch at %d", off)
	}
	last2 := idemBatch(t, pid2, 0, 100+per, per, "other2")
	lastOff2 := w.produceOK("idem", 0, last2)

	// The state survives a restart: the last batch of each producer is
	// still a duplicate, its sequence continues, its epoch is still fenced.
	end := w.endOffset("idem", 0)
	n.Restart()
	w = dial(t, n.Addr)
	if got := w.endOffset("idem", 0); got != end {
		t.Fatalf("end offset %d after restart, want %d", got, end)
	}
	duplicate("retry after restart", newEpoch, firstOfEpoch)
	duplicate("other producer's retry after restart", last2, lastOff2)
	rejected("old epoch after restart", idemBatch(t, pid, epoch, 9*per, per, "stale"), kerr.InvalidProducerEpoch)
	rejected("gap after restart", idemBatch(t, pid, epoch+1, 2*per, per, "gap"), kerr.OutOfOrderSequenceNumber)
	if off := w.produceOK("idem", 0, idemBatch(t, pid, epoch+1, per, per, "e1b1")); off != end {
		t.Fatalf("next batch after restart at offset %d, want %d", off, end)
	}

	// Everything acknowledged is there once, in order.
	var want []string
	for i := 0; i < 9; i++ {
		want = append(want, fmt.Sprintf("e0b%d-0", i), fmt.Sprintf("e0b%d-1", i))
	}
	want = append(want, "e1b0-0", "e1b0-1", "other-0", "other-1", "other2-0", "other2-1", "e1b1-0", "e1b1-1")
	got := w.readAll("idem", 0)
	if len(got) != len(want) {
		t.Fatalf("log holds %d records, want %d", len(got), len(want))
	}
	for i, r := range got {
		if r.Value != want[i] {
			t.Fatalf("record %d is %q, want %q", i, r.Value, want[i])
		}
	}
}
