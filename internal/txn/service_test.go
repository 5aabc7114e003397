package txn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/coordinator"
	"weir/internal/metadata"
	"weir/internal/testwait"
)

// memLog is an in-memory __transaction_state whose appends complete on
// another goroutine.
type memLog struct {
	mu   sync.Mutex
	recs map[int32][]Record
	fail error // the next append fails with it
}

func (l *memLog) Append(p int32, recs []Record, done func(error)) {
	l.mu.Lock()
	err := l.fail
	l.fail = nil
	if err == nil {
		l.recs[p] = append(l.recs[p], recs...)
	}
	l.mu.Unlock()
	go done(err)
}

func (l *memLog) ReadAll(p int32) ([]Record, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Record(nil), l.recs[p]...), nil
}

// fakeCluster has one topic "t" led by broker 1 and answers markers,
// refusing the first of each partition with NOT_LEADER_OR_FOLLOWER.
type fakeCluster struct {
	img *metadata.Image

	mu      sync.Mutex
	markers []*kmsg.WriteTxnMarkersRequestMarker
	refused map[string]bool
	blocks  int
}

func newFakeCluster() *fakeCluster {
	img := metadata.Empty()
	img.Brokers[1] = &metadata.Broker{ID: 1}
	t := &metadata.Topic{Name: "t", Partitions: map[int32]*metadata.Partition{}}
	for p := range int32(4) {
		t.Partitions[p] = &metadata.Partition{ID: p, Leader: 1}
	}
	img.Topics = metadata.MapOf(map[string]*metadata.Topic{"t": t})
	return &fakeCluster{img: img, refused: map[string]bool{}}
}

func (c *fakeCluster) Image() *metadata.Image { return c.img }

func (c *fakeCluster) WriteTxnMarkers(ctx context.Context, broker int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error) {
	if broker != 1 {
		return nil, errors.New("no such broker")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := kmsg.NewPtrWriteTxnMarkersResponse()
	for i := range req.Markers {
		m := &req.Markers[i]
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				key := t.Topic + string(rune('0'+p))
				if !c.refused[key] {
					c.refused[key] = true
					rp.ErrorCode = kerr.NotLeaderForPartition.Code
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
		c.markers = append(c.markers, m)
	}
	return resp, nil
}

func (c *fakeCluster) AllocateProducerIDs() (int64, int32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.blocks++
	return int64(c.blocks-1) * 5, 5, nil
}

// call sends a request through the service and waits for its answer (it
// panics after 10 s: it is called from several goroutines).
func call(_ *testing.T, s *Service, req kmsg.Request) kmsg.Response {
	ch := make(chan kmsg.Response, 1)
	s.Handle(context.Background(), req, func(r kmsg.Response) { ch <- r })
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		panic(fmt.Sprintf("%T not answered", req))
	}
}

// The service end to end with its goroutines: many producers at once
// commit transactions through the fake log and cluster (markers retried
// once per partition, producer ids fetched in small blocks), then a new
// service loads the log.
func TestService(t *testing.T) {
	cfg := DefaultConfig()
	cfg.StatePartitions = 3
	cfg.RetryBackoff = 5 * time.Millisecond
	lg := &memLog{recs: map[int32][]Record{}}
	cl := newFakeCluster()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := NewService(cfg, lg, cl, quiet, time.Now, time.Second, nil)
	go s.Run(ctx)
	for p := range cfg.StatePartitions {
		s.Elected(p, 4)
	}
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := string(rune('a' + i))
			var pid int64
			var epoch int16
			var code int16
			if err := testwait.Poll(10*time.Second, func() error {
				r := call(t, s, initReq(id, 60000)).(*kmsg.InitProducerIDResponse)
				code, pid, epoch = r.ErrorCode, r.ProducerID, r.ProducerEpoch
				return waitOn(code, kerr.CoordinatorLoadInProgress)
			}); err != nil || code != 0 {
				t.Errorf("%s: InitProducerId: %v", id, kerr.ErrorForCode(code))
				return
			}
			for round := range 3 {
				if err := testwait.Poll(10*time.Second, func() error {
					code = addCode(t, call(t, s, addReq(id, pid, epoch, tp("t", int32(i%4)), tp("t", int32(round%4)))))
					return waitOn(code, kerr.ConcurrentTransactions)
				}); err != nil || code != 0 {
					t.Errorf("%s: AddPartitionsToTxn: %v", id, kerr.ErrorForCode(code))
					return
				}
				if code := call(t, s, endReq(id, pid, epoch, round != 1)).(*kmsg.EndTxnResponse).ErrorCode; code != 0 {
					t.Errorf("%s: EndTxn: %v", id, kerr.ErrorForCode(code))
					return
				}
			}
		}()
	}
	wg.Wait()
	describe := func(s *Service, id string) kmsg.DescribeTransactionsResponseTransactionState {
		r := kmsg.NewPtrDescribeTransactionsRequest()
		r.TransactionalIDs = []string{id}
		return call(t, s, r).(*kmsg.DescribeTransactionsResponse).TransactionStates[0]
	}
	for i := range 12 {
		id := string(rune('a' + i))
		testwait.For(t, 10*time.Second, id+" in CompleteCommit", func() error {
			if st := describe(s, id).State; st != "CompleteCommit" {
				return fmt.Errorf("%s is %s", id, st)
			}
			return nil
		})
	}
	cl.mu.Lock()
	if cl.blocks < 3 {
		t.Errorf("%d producer id blocks of 5 for 12 producers", cl.blocks)
	}
	for _, m := range cl.markers {
		if m.CoordinatorEpoch != 4 {
			t.Errorf("marker at coordinator epoch %d, want 4", m.CoordinatorEpoch)
		}
	}
	cl.mu.Unlock()

	// Another service loads what was written.
	s2 := NewService(cfg, lg, cl, quiet, time.Now, time.Second, nil)
	go s2.Run(ctx)
	for p := range cfg.StatePartitions {
		s2.Elected(p, 5)
	}
	for i := range 12 {
		id := string(rune('a' + i))
		var d kmsg.DescribeTransactionsResponseTransactionState
		if err := testwait.Poll(10*time.Second, func() error {
			d = describe(s2, id)
			return waitOn(d.ErrorCode, kerr.CoordinatorLoadInProgress)
		}); err != nil || d.State != "CompleteCommit" {
			t.Fatalf("%s loaded as %+v", id, d)
		}
	}
	// Resigned: NOT_COORDINATOR.
	s2.Resigned(coordinator.PartitionFor("a", 3))
	if d := describe(s2, "a"); d.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("after resigning: %+v", d)
	}
}

// waitOn reports code as an error to wait on when it is the transient
// error want, and nil (stop waiting) for success and any other error.
func waitOn(code int16, want *kerr.Error) error {
	if code == want.Code {
		return want
	}
	return nil
}

// heldLog is a memLog whose appends, while hold is set, are kept in held
// and never complete on their own.
type heldLog struct {
	memLog
	hold bool
	held []func(error)
}

func (l *heldLog) Append(p int32, recs []Record, done func(error)) {
	l.mu.Lock()
	if l.hold {
		l.held = append(l.held, done)
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	l.memLog.Append(p, recs, done)
}

// Re-elected without resigning (a new leader epoch on the same broker):
// the request whose write of the old epoch is in flight is answered
// NOT_COORDINATOR at once, as Kafka answers a write whose coordinator
// epoch changed, and the client retries against the reloaded partition.
func TestServiceReelectedAnswersWritesInFlight(t *testing.T) {
	cfg := DefaultConfig()
	cfg.StatePartitions = 1
	lg := &heldLog{memLog: memLog{recs: map[int32][]Record{}}, hold: true}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := NewService(cfg, lg, newFakeCluster(), quiet, time.Now, time.Second, nil)
	go s.Run(ctx)
	s.Elected(0, 4)
	describe := func() int16 {
		r := kmsg.NewPtrDescribeTransactionsRequest()
		r.TransactionalIDs = []string{"tx"}
		return call(t, s, r).(*kmsg.DescribeTransactionsResponse).TransactionStates[0].ErrorCode
	}
	testwait.For(t, 10*time.Second, "partition 0 loaded", func() error { return waitOn(describe(), kerr.CoordinatorLoadInProgress) })

	got := make(chan kmsg.Response, 1)
	s.Handle(context.Background(), initReq("tx", 60000), func(r kmsg.Response) { got <- r })
	testwait.For(t, 10*time.Second, "the InitProducerId record appended", func() error {
		lg.mu.Lock()
		defer lg.mu.Unlock()
		if len(lg.held) == 0 {
			return errors.New("no append yet")
		}
		return nil
	})
	s.Elected(0, 5)
	select {
	case r := <-got:
		wantCode(t, "InitProducerId in flight across the re-election", r.(*kmsg.InitProducerIDResponse).ErrorCode, kerr.NotCoordinator)
	case <-time.After(10 * time.Second):
		t.Fatal("InitProducerId in flight across the re-election never answered")
	}

	// The old epoch's append completing late changes nothing; the retry is
	// served by the reloaded partition.
	lg.mu.Lock()
	lg.hold = false
	late := lg.held
	lg.mu.Unlock()
	for _, done := range late {
		done(nil)
	}
	var r *kmsg.InitProducerIDResponse
	testwait.For(t, 10*time.Second, "InitProducerId retried", func() error {
		r = call(t, s, initReq("tx", 60000)).(*kmsg.InitProducerIDResponse)
		return waitOn(r.ErrorCode, kerr.CoordinatorLoadInProgress)
	})
	wantCode(t, "InitProducerId retried", r.ErrorCode, nil)
}
