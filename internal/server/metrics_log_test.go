package server_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/config"
	"weir/internal/servertest"
)

// scrapeBody is the text of one scrape of /metrics.
func scrapeBody(t *testing.T, addr string) string {
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
	return string(body)
}

// By partition (the default), the Log gauges of each partition are what
// the Admin API says of its log: DescribeLogDirs' size, ListOffsets' start
// and end; with flush.messages=1 every produce is a timed flush.
func TestLogMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{config.KeyMetricsListener: "http://127.0.0.1:0"}})
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	one := "1"
	if _, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"flush.messages": &one}, "logged"); err != nil {
		t.Fatal(err)
	}
	for i, p := range []int32{0, 0, 0, 1} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "logged", Partition: p, Value: []byte("record-" + strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := adm.DeleteRecords(ctx, kadm.Offsets{"logged": {0: {At: 1}}}); err != nil {
		t.Fatal(err)
	}
	dirs, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	starts, err := adm.ListStartOffsets(ctx, "logged")
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, "logged")
	if err != nil {
		t.Fatal(err)
	}
	got := samples(t, n.Server.MetricsAddr().String())
	for p := range int32(2) {
		var size int64 = -1
		for _, d := range dirs {
			if dp, ok := d.LookupPartition("logged", p); ok {
				size = dp.Size
			}
		}
		s, _ := starts.Lookup("logged", p)
		e, _ := ends.Lookup("logged", p)
		labels := `{partition="` + strconv.Itoa(int(p)) + `",topic="logged"}`
		for name, want := range map[string]int64{"kafka_log_log_size": size, "kafka_log_log_numlogsegments": 1,
			"kafka_log_log_logstartoffset": s.Offset, "kafka_log_log_logendoffset": e.Offset} {
			if v, ok := got[name+labels]; !ok || v != float64(want) {
				t.Errorf("%s%s = %v (%v), want %d", name, labels, v, ok, want)
			}
		}
	}
	if got[`kafka_log_log_logstartoffset{partition="0",topic="logged"}`] != 1 || got[`kafka_log_log_logendoffset{partition="0",topic="logged"}`] != 3 {
		t.Errorf("partition 0's offsets: start %v end %v, want 1 and 3", got[`kafka_log_log_logstartoffset{partition="0",topic="logged"}`], got[`kafka_log_log_logendoffset{partition="0",topic="logged"}`])
	}
	if c := got["kafka_log_logflushstats_logflushrateandtimems_count"]; c < 4 {
		t.Errorf("log flushes counted: %v, want at least the 4 produces' (flush.messages=1)", c)
	}
	if _, ok := got["kafka_log_logcleanermanager_time_since_last_run_ms"]; !ok {
		t.Error("no log cleaner metrics")
	}
}

// maxEndpointBytes bounds the whole /metrics answer (the Go runtime's
// and every request metric included) of a node with 10,000 partitions
// and weir.metrics.aggregation=topic.
const maxEndpointBytes = 128 << 10

// With weir.metrics.aggregation=topic, a node with 10,000 partitions has
// one series per topic in its per-partition families, summed: its
// endpoint stays under maxEndpointBytes.
func TestMetricsByTopicBounded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{config.KeyMetricsListener: "http://127.0.0.1:0",
		config.KeyMetricsAggregation: "topic"}})
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// Four topics of 2,500 partitions (a request makes at most 10,000
	// metadata records).
	for _, topic := range []string{"wide", "wide-1", "wide-2", "wide-3"} {
		if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2500, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []int32{0, 1000, 2499} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "wide", Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	body := scrapeBody(t, n.Server.MetricsAddr().String())
	if len(body) > maxEndpointBytes {
		t.Errorf("endpoint: %d bytes, want at most %d", len(body), maxEndpointBytes)
	}
	got := samples(t, n.Server.MetricsAddr().String())
	if got[`kafka_log_log_logendoffset{topic="wide"}`] != 3 || got[`kafka_log_log_numlogsegments{topic="wide"}`] != 2500 {
		t.Errorf("per topic: log end %v segments %v, want the sums 3 and 2500 (a log has its active segment from its creation)", got[`kafka_log_log_logendoffset{topic="wide"}`], got[`kafka_log_log_numlogsegments{topic="wide"}`])
	}
	if strings.Contains(body, `partition="`) {
		t.Error("a series with a partition label in topic mode")
	}
	t.Logf("10,000 partitions: %d bytes", len(body))
}
