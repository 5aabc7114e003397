package server_test

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/record"
	"weir/internal/servertest"
	"weir/internal/testwait"
	"weir/internal/vfs"
)

// gateFS holds every access to one partition's directory while the gate
// is shut: that log is slow to open.
type gateFS struct {
	vfs.FS
	dir string // the partition directory's name

	mu      sync.Mutex
	shut    bool
	open    chan struct{} // closed when the gate opens
	reached chan struct{} // closed when an access first waits
}

func (g *gateFS) shutGate() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.shut, g.open, g.reached = true, make(chan struct{}), make(chan struct{})
}

func (g *gateFS) openGate() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shut {
		g.shut = false
		close(g.open)
	}
}

func (g *gateFS) wait(name string) {
	if !strings.Contains(filepath.ToSlash(name), "/"+g.dir) {
		return
	}
	g.mu.Lock()
	shut, open, reached := g.shut, g.open, g.reached
	if shut {
		select {
		case <-reached:
		default:
			close(reached)
		}
	}
	g.mu.Unlock()
	if shut {
		<-open
	}
}

func (g *gateFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	g.wait(name)
	return g.FS.OpenFile(name, flag, perm)
}

func (g *gateFS) ReadDir(name string) ([]fs.DirEntry, error) {
	g.wait(name)
	return g.FS.ReadDir(name)
}

func (g *gateFS) Stat(name string) (fs.FileInfo, error) {
	g.wait(name)
	return g.FS.Stat(name)
}

// A restarted broker serves each partition as soon as its log is open:
// while one log is slow to open, the others are produced to and read,
// and the slow one answers NOT_LEADER_OR_FOLLOWER (retriable) until it is
// open, then works.
func TestStartupServesPartitionsWhileALogOpens(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	gate := &gateFS{FS: vfs.OS, dir: "slow-0"}
	opts := servertest.Options{FS: gate, ServeWhileLoading: true, Overrides: map[string]string{"num.recovery.threads.per.data.dir": "2"}}
	n := servertest.Start(t, opts)
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	const fast = 20
	if _, err := adm.CreateTopic(ctx, fast, 1, nil, "fast"); err != nil {
		t.Fatal(err)
	}
	created, err := adm.CreateTopic(ctx, 1, 1, nil, "slow")
	if err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for p := range int32(fast) {
		recs = append(recs, &kgo.Record{Topic: "fast", Partition: p, Value: []byte("before")})
	}
	recs = append(recs, &kgo.Record{Topic: "slow", Value: []byte("before")})
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()

	n.Stop()
	gate.shutGate()
	defer gate.openGate() // the node stops at cleanup
	opts.Dir = n.Dir
	n = servertest.Start(t, opts)
	select {
	case <-gate.reached:
	case <-ctx.Done():
		t.Fatal("the slow log was never opened")
	}
	cl, err = kgo.NewClient(kgo.SeedBrokers(n.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"fast": {0: kgo.NewOffset().AtStart(), fast - 1: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// The fast partitions work while the slow log is still held.
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "fast", Partition: 0, Value: []byte("after")},
		&kgo.Record{Topic: "fast", Partition: fast - 1, Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	got := 0
	for got < 4 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	// The slow one, still held, answers the retriable error to produce,
	// fetch and ListOffsets, without holding the request.
	if code := produceCode(ctx, t, cl, "slow"); code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce to the loading partition: %v", kerr.ErrorForCode(code))
	}
	if code := fetchCode(ctx, t, cl, "slow", created.ID); code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("fetch from the loading partition: %v", kerr.ErrorForCode(code))
	}
	lreq := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "slow"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -1
	lt.Partitions = append(lt.Partitions, lp)
	lreq.Topics = append(lreq.Topics, lt)
	lresp, err := lreq.RequestWith(ctx, cl.Broker(1)) // to the broker: the client would retry
	if err != nil {
		t.Fatal(err)
	}
	if code := lresp.Topics[0].Partitions[0].ErrorCode; code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("ListOffsets of the loading partition: %v", kerr.ErrorForCode(code))
	}

	gate.openGate()
	testwait.For(t, 60*time.Second, "the slow partition to take produces", func() error {
		return kerr.ErrorForCode(produceCode(ctx, t, cl, "slow"))
	})
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, "slow", "fast")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("slow", 0); o.Offset != 2 {
		t.Fatalf("slow-0 ends at %d (%v), want 2", o.Offset, o.Err)
	}
	if code := fetchCode(ctx, t, cl, "slow", created.ID); code != 0 {
		t.Fatalf("fetch from slow-0 once open: %v", kerr.ErrorForCode(code))
	}
	if o, _ := ends.Lookup("fast", fast-1); o.Offset != 2 {
		t.Fatalf("fast-%d ends at %d (%v), want 2", fast-1, o.Offset, o.Err)
	}
}

// produceCode sends one record to partition 0 of topic (acks=all) and
// returns the partition's error code, as broker 1 answers (the client
// does not retry it).
func produceCode(ctx context.Context, t *testing.T, cl *kgo.Client, topic string) int16 {
	t.Helper()
	h := record.NewBatchHeader()
	h.BaseTimestamp = time.Now().UnixMilli()
	h.MaxTimestamp = h.BaseTimestamp
	batch, err := record.Build(h, []record.Record{{Value: []byte("v")}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// fetchCode fetches partition 0 of topic from offset 0 without waiting
// and returns the partition's error code, as broker 1 answers.
func fetchCode(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, id [16]byte) int16 {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = -1, 0, 1<<20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = 1<<20, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("fetch: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}
