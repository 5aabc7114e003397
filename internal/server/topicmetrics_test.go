package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	"weir/internal/record"
	"weir/internal/servertest"
	"weir/internal/testwait"
)

// samples returns every sample of /metrics, labelled ones included, by
// name{labels} as the text format writes them.
func samples(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: status %d, %v", resp.StatusCode, err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		i := strings.LastIndexByte(line, ' ')
		if i < 0 || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// batch builds a batch of n records of size bytes each.
func batch(t *testing.T, n, size int) []byte {
	t.Helper()
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{OffsetDelta: int32(i), Value: make([]byte, size)}
	}
	h := record.NewBatchHeader()
	h.BaseTimestamp, h.MaxTimestamp = time.Now().UnixMilli(), time.Now().UnixMilli()
	b, err := record.Build(h, recs, 0)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func produceRaw(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, acks int16, b []byte) int16 {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = acks, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = b
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

func fetchRaw(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, offset int64) kmsg.FetchResponseTopicPartition {
	t.Helper()
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = -1, 1<<20, 0
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, md.Topics[topic].ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes = offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}

// Produce and Fetch move the BrokerTopicMetrics by exactly the records and
// batch bytes they carry, per topic and in the all-topics series, with
// Kafka's rules for what counts as rejected and as failed.
func TestBrokerTopicMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{config.KeyMetricsListener: "http://127.0.0.1:0"}})
	addr := n.Server.MetricsAddr().String()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for topic, cfg := range map[string]map[string]*string{
		"counted": {"max.message.bytes": kadm.StringPtr("2000")},
		"strict":  {"min.insync.replicas": kadm.StringPtr("2")},
	} {
		if _, err := adm.CreateTopic(ctx, 1, 1, cfg, topic); err != nil {
			t.Fatal(err)
		}
	}
	var bytes, records int
	for _, sz := range [][2]int{{2, 10}, {3, 100}, {5, 7}} {
		b := batch(t, sz[0], sz[1])
		if code := produceRaw(t, ctx, cl, "counted", 1, b); code != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(code))
		}
		bytes, records = bytes+len(b), records+sz[0]
	}
	big := batch(t, 1, 3000)
	if code := produceRaw(t, ctx, cl, "counted", 1, big); code != kerr.MessageTooLarge.Code {
		t.Fatalf("too large a batch: %v", kerr.ErrorForCode(code))
	}
	strict := batch(t, 4, 10)
	if code := produceRaw(t, ctx, cl, "strict", -1, strict); code != kerr.NotEnoughReplicas.Code {
		t.Fatalf("acks=all under min.insync.replicas: %v", kerr.ErrorForCode(code))
	}
	got := fetchRaw(t, ctx, cl, "counted", 0)
	if got.ErrorCode != 0 || len(got.RecordBatches) != bytes {
		t.Fatalf("fetch: %v, %d bytes of batches, want %d", kerr.ErrorForCode(got.ErrorCode), len(got.RecordBatches), bytes)
	}
	if got := fetchRaw(t, ctx, cl, "counted", 1000); got.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("fetch past the end: %v", kerr.ErrorForCode(got.ErrorCode))
	}

	s := samples(t, addr)
	for name, want := range map[string]int{
		`kafka_server_brokertopicmetrics_messagesin_total{topic="counted"}`:            records,
		`kafka_server_brokertopicmetrics_bytesin_total{topic="counted"}`:               bytes,
		`kafka_server_brokertopicmetrics_bytesrejected_total{topic="counted"}`:         len(big),
		`kafka_server_brokertopicmetrics_totalproducerequests_total{topic="counted"}`:  4,
		`kafka_server_brokertopicmetrics_failedproducerequests_total{topic="counted"}`: 0, // too large is expected
		`kafka_server_brokertopicmetrics_bytesout_total{topic="counted"}`:              bytes,
		`kafka_server_brokertopicmetrics_totalfetchrequests_total{topic="counted"}`:    2,
		`kafka_server_brokertopicmetrics_failedfetchrequests_total{topic="counted"}`:   0, // out of range is expected
		`kafka_server_brokertopicmetrics_totalproducerequests_total{topic="strict"}`:   1,
		`kafka_server_brokertopicmetrics_failedproducerequests_total{topic="strict"}`:  1,
		`kafka_server_brokertopicmetrics_messagesin_total{topic="strict"}`:             0,
		`kafka_server_brokertopicmetrics_messagesin_total`:                             records,
		`kafka_server_brokertopicmetrics_bytesin_total`:                                bytes,
		`kafka_server_brokertopicmetrics_bytesout_total`:                               bytes,
		`kafka_server_brokertopicmetrics_bytesrejected_total`:                          len(big),
		`kafka_server_brokertopicmetrics_totalproducerequests_total`:                   5,
		`kafka_server_brokertopicmetrics_failedproducerequests_total`:                  1,
		`kafka_server_brokertopicmetrics_totalfetchrequests_total`:                     2,
		`kafka_server_brokertopicmetrics_replicationbytesin_total`:                     0,
		`kafka_server_brokertopicmetrics_replicationbytesout_total`:                    0,
	} {
		if v, ok := s[name]; !ok || v != float64(want) {
			t.Errorf("%s = %v (present %v), want %d", name, v, ok, want)
		}
	}
	if _, ok := s[`kafka_server_brokertopicmetrics_replicationbytesin_total{topic="counted"}`]; ok {
		t.Error("replication bytes per topic: Kafka has them for all topics only")
	}

	// A topic's series go with its last replica here; the all-topics
	// series keep its counts.
	if _, err := adm.DeleteTopic(ctx, "counted"); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "the deleted topic's series to go", func() error {
		s := samples(t, addr)
		if _, ok := s[`kafka_server_brokertopicmetrics_bytesin_total{topic="counted"}`]; ok {
			return errors.New("the deleted topic's series remain")
		}
		if v := s[`kafka_server_brokertopicmetrics_bytesin_total`]; v != float64(bytes) {
			return fmt.Errorf("all topics' bytes in %v, want %d", v, bytes)
		}
		return nil
	})
}
