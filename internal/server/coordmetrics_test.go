package server_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/config"
	"weir/internal/servertest"
	"weir/internal/testwait"
)

// scrapeAll returns every sample of /metrics by its name with labels, as
// exposed.
func scrapeAll(addr string) (map[string]string, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.LastIndexByte(line, ' '); i > 0 && !strings.HasPrefix(line, "#") {
			out[line[:i]] = line[i+1:]
		}
	}
	return out, sc.Err()
}

// waitSamples waits until every sample named in want has its value.
func waitSamples(t *testing.T, addr string, want map[string]string) {
	t.Helper()
	testwait.For(t, 20*time.Second, fmt.Sprint(want), func() error {
		got, err := scrapeAll(addr)
		if err != nil {
			return err
		}
		for name, v := range want {
			if got[name] != v {
				return fmt.Errorf("%s = %q, want %s", name, got[name], v)
			}
		}
		return nil
	})
}

// The group coordinator of a single node counts the offsets committed and
// the groups by state, and exports each group's consumer lag: the high
// watermark minus the committed offset.
func TestGroupCoordinatorMetricsAndConsumerLag(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{config.KeyMetricsListener: "http://127.0.0.1:0",
		"group.initial.rebalance.delay.ms": "0"}})
	addr := n.Server.MetricsAddr().String()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "lagged"); err != nil {
		t.Fatal(err)
	}
	for p, count := range []int{10, 4} {
		for range count {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "lagged", Partition: int32(p), Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	commit := func(offsets map[int32]int64) {
		t.Helper()
		os := kadm.Offsets{}
		for p, o := range offsets {
			os.Add(kadm.Offset{Topic: "lagged", Partition: p, At: o, LeaderEpoch: -1})
		}
		resp, err := adm.CommitOffsets(ctx, "g", os)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	commit(map[int32]int64{0: 3, 1: 4})
	waitSamples(t, addr, map[string]string{
		`weir_group_consumer_lag{group="g",partition="0",topic="lagged"}`:        "7",
		`weir_group_consumer_lag{group="g",partition="1",topic="lagged"}`:        "0",
		`weir_group_consumer_lag_sum{group="g"}`:                                 "7",
		"kafka_server_group_coordinator_metrics_offset_commit_count":             "2",
		"kafka_coordinator_group_groupmetadatamanager_numoffsets":                "2",
		"kafka_coordinator_group_groupmetadatamanager_numgroupsempty":            "1",
		`kafka_server_group_coordinator_metrics_group_count{protocol="classic"}`: "1",
	})
	commit(map[int32]int64{0: 5})
	waitSamples(t, addr, map[string]string{
		`weir_group_consumer_lag{group="g",partition="0",topic="lagged"}`: "5",
		"kafka_server_group_coordinator_metrics_offset_commit_count":      "3",
	})

	// A classic consumer joins a group (Stable once its rebalance
	// completes) and leaves it (Empty).
	cons, err := kgo.NewClient(kgo.SeedBrokers(n.Addr), kgo.ConsumerGroup("c"), kgo.ConsumeTopics("lagged"),
		kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	waitSamples(t, addr, map[string]string{
		"kafka_coordinator_group_groupmetadatamanager_numgroupsstable":           "1",
		"kafka_coordinator_group_groupmetadatamanager_numgroups":                 "2",
		"kafka_server_group_coordinator_metrics_group_completed_rebalance_count": "1",
	})
	cons.Close()
	waitSamples(t, addr, map[string]string{
		"kafka_coordinator_group_groupmetadatamanager_numgroupsstable": "0",
		"kafka_coordinator_group_groupmetadatamanager_numgroupsempty":  "2",
	})

	// A KIP-848 consumer: a consumer protocol group, Stable, then Empty.
	next, err := kgo.NewClient(kgo.SeedBrokers(n.Addr), kgo.ConsumerGroup("n"), kgo.ConsumeTopics("lagged"),
		kgo.DisableAutoCommit(), kgo.Balancers(kgo.RangeBalancer()), kgo.ServerSideBalancer())
	if err != nil {
		t.Fatal(err)
	}
	waitSamples(t, addr, map[string]string{
		`kafka_server_group_coordinator_metrics_consumer_group_count{state="Stable"}`: "1",
		`kafka_server_group_coordinator_metrics_group_count{protocol="consumer"}`:     "1",
	})
	next.Close()
	waitSamples(t, addr, map[string]string{
		`kafka_server_group_coordinator_metrics_consumer_group_count{state="Stable"}`: "0",
		`kafka_server_group_coordinator_metrics_consumer_group_count{state="Empty"}`:  "1",
	})
}
