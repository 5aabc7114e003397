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

// scrape returns the unlabelled samples of /metrics by name.
func scrape(t *testing.T, addr string) map[string]string {
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
	out := map[string]string{}
	for _, line := range strings.Split(string(body), "\n") {
		if name, v, ok := strings.Cut(line, " "); ok && !strings.HasPrefix(line, "#") && !strings.Contains(name, "{") {
			out[name] = v
		}
	}
	return out
}

// A single node serves /metrics on weir.metrics.listener: it is the active
// controller and leads every replica of a new topic.
func TestMetricsEndpoint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{config.KeyMetricsListener: "http://127.0.0.1:0"}})
	addr := n.Server.MetricsAddr()
	if addr == nil {
		t.Fatal("no metrics address")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 1, nil, "metered"); err != nil {
		t.Fatal(err)
	}
	got := scrape(t, addr.String())
	for name, want := range map[string]string{
		"kafka_server_replicamanager_partitioncount":                      "3",
		"kafka_server_replicamanager_leadercount":                         "3",
		"kafka_server_replicamanager_underreplicatedpartitions":           "0",
		"kafka_server_replicamanager_underminisrpartitioncount":           "0",
		"kafka_server_replicamanager_atminisrpartitioncount":              "3",
		"kafka_server_replicamanager_isrshrinks_total":                    "0",
		"kafka_controller_kafkacontroller_activecontrollercount":          "1",
		"kafka_controller_kafkacontroller_offlinepartitionscount":         "0",
		"kafka_controller_kafkacontroller_globaltopiccount":               "1",
		"kafka_controller_kafkacontroller_globalpartitioncount":           "3",
		"kafka_controller_kafkacontroller_activebrokercount":              "1",
		"kafka_controller_kafkacontroller_fencedbrokercount":              "0",
		"kafka_controller_kafkacontroller_preferredreplicaimbalancecount": "0",
		"kafka_controller_controllerstats_uncleanleaderelections_total":   "0",
		"kafka_server_raft_metrics_current_leader":                        "1",
		"weir_server_ready":                      "1",
		"kafka_server_raft_metrics_current_vote": "1",
	} {
		if got[name] != want {
			t.Errorf("%s = %q, want %s", name, got[name], want)
		}
	}
	// Creating partitions elects no leader (their first leader comes
	// with their PartitionRecord). The metadata log's offsets agree
	// between the quorum and the controller.
	if got["kafka_controller_controllerstats_leaderelectionrateandtimems_count"] != "0" {
		t.Errorf("leader elections: %s, want 0", got["kafka_controller_controllerstats_leaderelectionrateandtimems_count"])
	}
	hw, _ := strconv.Atoi(got["kafka_server_raft_metrics_high_watermark"])
	if hw == 0 || got["kafka_controller_kafkacontroller_lastcommittedrecordoffset"] != strconv.Itoa(hw-1) {
		t.Errorf("raft high watermark %d, last committed record offset %s", hw, got["kafka_controller_kafkacontroller_lastcommittedrecordoffset"])
	}
	for _, name := range []string{"kafka_controller_kafkacontroller_lastappliedrecordoffset", "kafka_server_broker_metadata_metrics_last_applied_record_offset", "kafka_server_snapshot_emitter_metrics_latest_snapshot_generated_age_ms", "kafka_server_raft_metrics_commit_latency_ms_count", "kafka_server_raft_metrics_append_records_total", "kafka_server_raft_metrics_election_latency_ms_count"} {
		if v, err := strconv.ParseFloat(got[name], 64); err != nil || v <= 0 && !strings.Contains(name, "_age_") {
			t.Errorf("%s = %q, want a positive number", name, got[name])
		}
	}
	if got["go_goroutines"] == "" {
		t.Error("no Go runtime metrics")
	}

	n.Stop()
	if _, err := http.Get("http://" + addr.String() + "/metrics"); err == nil {
		t.Error("metrics endpoint still serves after shutdown")
	}
}

// Without weir.metrics.listener there is no endpoint.
func TestMetricsDisabledByDefault(t *testing.T) {
	n := servertest.Start(t, servertest.Options{})
	if a := n.Server.MetricsAddr(); a != nil {
		t.Fatalf("metrics listening on %v without weir.metrics.listener", a)
	}
}

// With log.open.files.max=16, a broker with 40 partitions that were all
// written and read keeps at most 16 segment files open, and a restart
// (opening the logs with num.recovery.threads.per.data.dir=4) serves
// them all again.
func TestLogOpenFilesMax(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{
		config.KeyMetricsListener: "http://127.0.0.1:0", config.KeyLogOpenFilesMax: "16",
		"num.recovery.threads.per.data.dir": "4",
	}})
	const parts = 40
	// round produces one record to every partition and reads all the
	// records from the start: want per partition.
	round := func(want int) {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ConsumeTopics("files"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		for p := range int32(parts) {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "files", Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatalf("produce to partition %d: %v", p, err)
			}
		}
		seen := 0
		for seen < want*parts {
			fs := cl.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatalf("after %d of %d records: %v", seen, want*parts, err)
			}
			seen += fs.NumRecords()
		}
		open, err := strconv.Atoi(scrape(t, n.Server.MetricsAddr().String())["weir_log_open_segment_files"])
		if err != nil || open > 16 || open == 0 {
			t.Fatalf("weir_log_open_segment_files = %d (%v), want 1 to 16", open, err)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, parts, 1, nil, "files"); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	round(1)
	n.Restart()
	round(2)
}

// A started node answers its health probes on the metrics listener.
func TestHealthEndpoints(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{config.KeyMetricsListener: "http://127.0.0.1:0"}})
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get("http://" + n.Server.MetricsAddr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"status":"ok"`) {
			t.Errorf("%s: %d %s", path, resp.StatusCode, body)
		}
	}
}
