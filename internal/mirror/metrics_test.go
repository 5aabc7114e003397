package mirror

import (
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"weir/internal/testwait"
)

func TestSampled(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var s sampled
	if lo, hi, avg := s.stats(t0); !math.IsNaN(lo) || !math.IsNaN(hi) || !math.IsNaN(avg) || s.rate(t0) != 0 {
		t.Fatalf("empty: %v %v %v %v, want NaN and a rate of 0", lo, hi, avg, s.rate(t0))
	}
	s.record(t0, 10)
	s.record(t0.Add(time.Second), 30)
	// One window not yet full counts as a full one more: 40 over 40 s.
	if lo, hi, avg := s.stats(t0.Add(10 * time.Second)); lo != 10 || hi != 30 || avg != 20 {
		t.Fatalf("stats %v %v %v", lo, hi, avg)
	}
	if r := s.rate(t0.Add(10 * time.Second)); r != 1 {
		t.Fatalf("rate %v, want 40/40s", r)
	}
	// A second window: both count, over their span.
	s.record(t0.Add(40*time.Second), 20)
	if lo, hi, avg := s.stats(t0.Add(50 * time.Second)); lo != 10 || hi != 30 || avg != 20 {
		t.Fatalf("stats %v %v %v", lo, hi, avg)
	}
	if r := s.rate(t0.Add(50 * time.Second)); r != 60.0/50 {
		t.Fatalf("rate %v, want 60/50s", r)
	}
	// The first window expires two windows after it began.
	if lo, hi, _ := s.stats(t0.Add(61 * time.Second)); lo != 20 || hi != 20 {
		t.Fatalf("after expiry %v %v", lo, hi)
	}
	if lo, _, _ := s.stats(t0.Add(101 * time.Second)); !math.IsNaN(lo) {
		t.Fatalf("all expired: %v", lo)
	}
}

// scrape returns the lines of /metrics starting with prefix.
func scrape(t *testing.T, addr string, prefixes ...string) []string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		for _, p := range prefixes {
			if strings.HasPrefix(l, p) {
				out = append(out, l)
			}
		}
	}
	return out
}

func TestMetrics(t *testing.T) {
	a, b := startCluster(t), startCluster(t)
	a.create(t, "orders", 2)
	a.produce(t, "orders", 2, 0, 20)
	a.commit(t, "app", "orders", 2, 20)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	props := mirrorProps(a, b, "A->B")
	props["weir.metrics.listener"] = "http://" + addr
	props["emit.checkpoints.enabled"] = "true"
	props["emit.checkpoints.interval.seconds"] = "1"
	startMirror(t, props)
	b.readAll(t, "A.orders", 2, 20)
	b.waitCheckpoints(t, "A.checkpoints.internal", "app", "A.orders", 2, 20)

	want := []string{
		`kafka_connect_mirror_mirrorsourceconnector_record_count{partition="0",source="A",target="B",topic="A.orders"} 20`,
		`kafka_connect_mirror_mirrorsourceconnector_record_count{partition="1",source="A",target="B",topic="A.orders"} 20`,
		`weir_mirror_source_connector_lag_records{partition="0",source="A",target="B",topic="A.orders"} 0`,
		`kafka_connect_mirror_mirrorsourceconnector_byte_count{partition="1",source="A",target="B",topic="A.orders"} 210`,
		`kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms_max{group="app",partition="1",source="A",target="B",topic="A.orders"}`,
		`kafka_connect_mirror_mirrorsourceconnector_record_age_ms_avg{partition="0",source="A",target="B",topic="A.orders"}`,
		`kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms_min{partition="1",source="A",target="B",topic="A.orders"}`,
		`kafka_connect_mirror_mirrorsourceconnector_record_rate{partition="0",source="A",target="B",topic="A.orders"}`,
		`kafka_connect_mirror_mirrorsourceconnector_byte_rate{partition="0",source="A",target="B",topic="A.orders"}`,
	}
	testwait.For(t, 60*time.Second, "the mirror's metrics", func() error {
		got := strings.Join(scrape(t, addr, "weir_mirror_", "kafka_connect_mirror_"), "\n")
		for _, w := range want {
			if !strings.Contains(got, w) {
				return fmt.Errorf("no %s in\n%s", w, got)
			}
		}
		return nil
	})
}
