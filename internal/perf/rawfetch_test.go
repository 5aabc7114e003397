package perf

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// fill starts a kfake cluster holding n records of size bytes in topic.
func fill(t *testing.T, brokers int, partitions int32, n, size int, compress kgo.CompressionCodec) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(brokers), kfake.SeedTopics(partitions, "t"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(c.ListenAddrs()...),
		kgo.DefaultProduceTopic("t"),
		kgo.ProducerBatchCompression(compress),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.ProducerBatchMaxBytes(16<<10),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	value := make([]byte, size)
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: value}
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return c
}

// readAll runs a RawFetcher until it counted want records.
func readAll(t *testing.T, c *kfake.Cluster, cfg RawFetchConfig, want int64) *RawFetcher {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f := NewRawFetcher(cl, cfg)
	if err := f.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.Run(runCtx) }()
	for {
		select {
		case <-f.Progress():
			if got, _ := f.Counts(); got >= want {
				stop()
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				return f
			}
		case err := <-done:
			t.Fatalf("Run ended early: %v", err)
		case <-ctx.Done():
			got, _ := f.Counts()
			t.Fatalf("timed out with %d of %d records", got, want)
		}
	}
}

func TestRawFetcherCountsEveryRecord(t *testing.T) {
	for _, tc := range []struct {
		name       string
		brokers    int
		partitions int32
		streams    int
		codec      kgo.CompressionCodec
	}{
		{"one partition", 1, 1, 1, kgo.NoCompression()},
		{"three partitions one leader", 1, 3, 1, kgo.NoCompression()},
		{"three leaders two streams each", 3, 6, 2, kgo.NoCompression()},
		{"compressed batches", 1, 2, 1, kgo.Lz4Compression()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 5000
			c := fill(t, tc.brokers, tc.partitions, n, 100, tc.codec)
			f := readAll(t, c, RawFetchConfig{Topic: "t", PartitionMaxBytes: 32 << 10, MaxWait: 50 * time.Millisecond, Streams: tc.streams}, n)
			recs, bytes := f.Counts()
			if recs != n {
				t.Fatalf("counted %d records, want exactly %d", recs, n)
			}
			// Bytes are whole batches: more than the values alone when
			// uncompressed, and always at least a batch header each.
			_, batches := f.Fetches()
			if bytes < batches*61 {
				t.Fatalf("%d bytes for %d batches", bytes, batches)
			}
			if tc.codec == kgo.NoCompression() && bytes < n*100 {
				t.Fatalf("%d bytes for %d uncompressed 100-byte values", bytes, n)
			}
			parts, streams := f.Partitions()
			if parts != int(tc.partitions) {
				t.Fatalf("covers %d partitions, want %d", parts, tc.partitions)
			}
			// Each leader runs min(streams, its partitions) streams.
			adm := kadm.NewClient(f.cl)
			md, err := adm.Metadata(context.Background(), "t")
			if err != nil {
				t.Fatal(err)
			}
			perLeader := map[int32]int{}
			for _, p := range md.Topics["t"].Partitions {
				perLeader[p.Leader]++
			}
			want := 0
			for _, n := range perLeader {
				want += min(tc.streams, n)
			}
			if streams != want {
				t.Fatalf("%d streams, want %d for leaders %v", streams, want, perLeader)
			}
		})
	}
}

func TestRawFetcherFromLatestAndMissingTopic(t *testing.T) {
	c := fill(t, 1, 1, 100, 10, kgo.NoCompression())
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()

	f := NewRawFetcher(cl, RawFetchConfig{Topic: "t", FromLatest: true})
	if err := f.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.streams[0].parts[0].offset; got != 100 {
		t.Fatalf("from latest starts at %d, want 100", got)
	}
	if err := NewRawFetcher(cl, RawFetchConfig{Topic: "missing"}).Prepare(ctx); err == nil {
		t.Fatal("missing topic prepared")
	}
	if err := NewRawFetcher(cl, RawFetchConfig{Topic: "t"}).Run(ctx); err == nil {
		t.Fatal("Run without Prepare succeeded")
	}
}
