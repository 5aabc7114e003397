package clustertest

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/testwait"
)

// samples scrapes node i's /metrics and returns every sample by its full
// name (labels included, as exposed).
func samples(c *Cluster, i int) (map[string]float64, error) {
	addr := c.Node(i).Server.MetricsAddr()
	if addr == nil {
		return nil, fmt.Errorf("node %d serves no metrics", i)
	}
	resp, err := http.Get("http://" + addr.String() + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("sample %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

// The replication metrics of a 3-node cluster follow what happens to a
// partition: one active controller among the nodes; a follower cut off
// falls out of the ISR (a shrink on the leader, which then counts the
// partition under-replicated); back, it catches up under a throttle that
// keeps it lagging (throttles apply to replicas out of the ISR only), and
// rejoins the ISR (an expansion) once the throttle is lifted.
func TestReplicationMetrics(t *testing.T) {
	c := New(t, Options{Nodes: 3, Overrides: map[string]string{
		"weir.metrics.listener":                 "http://127.0.0.1:0",
		"replica.lag.time.max.ms":               "1000",
		"replication.quota.window.num":          "2",
		"replication.quota.window.size.seconds": "1",
		"auto.leader.rebalance.enable":          "false",
	}})
	// The leader and the follower cut off from it are not the active
	// controller, so that neither is fenced: the follower leaves the ISR
	// by lagging.
	ctl := c.Leader()
	leader, follower := (ctl+1)%3, (ctl+2)%3
	id := func(i int) int32 { return int32(i + 1) }
	createAssigned(t, c, "metered", [][]int32{{id(leader), id(follower), id(ctl)}}, nil)
	waitState(t, c, "metered", 0, "all in sync", isrIs(1, 2, 3))

	testwait.For(t, 10*time.Second, "one active controller", func() error {
		active := 0.0
		for _, i := range c.Live() {
			s, err := samples(c, i)
			if err != nil {
				return err
			}
			active += s["kafka_controller_kafkacontroller_activecontrollercount"]
		}
		if active != 1 {
			return fmt.Errorf("%v active controllers", active)
		}
		return nil
	})

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(c.Client(t))
	if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "follower.replication.throttled.rate", Value: ptr("1024")}}, id(follower)); err != nil {
		t.Fatal(err)
	}
	alterTopicConfig(t, c.Node(0), "metered", "follower.replication.throttled.replicas", fmt.Sprintf("0:%d", id(follower)))

	c.Cut(leader, follower)
	cl := c.Client(t, kgo.DefaultProduceTopic("metered"), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	value := make([]byte, 64<<10)
	for i := 0; i < 48; i++ { // 3 MiB, more than one replica fetch (replica.fetch.max.bytes)
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	waitState(t, c, "metered", 0, "the follower out of the ISR", isrIs(id(leader), id(ctl)))
	c.Mend(leader, follower)
	lag := `kafka_server_fetcherlagmetrics_consumerlag{clientId="ReplicaFetcherThread-0-` + strconv.Itoa(int(id(leader))) + `",partition="0",topic="metered"}`
	testwait.For(t, 20*time.Second, "the follower lagging", func() error {
		s, err := samples(c, follower)
		if err != nil {
			return err
		}
		if s[lag] <= 0 || s[`kafka_server_replicafetchermanager_maxlag{clientId="Replica"}`] <= 0 {
			return fmt.Errorf("follower: lag %v, max lag %v", s[lag], s[`kafka_server_replicafetchermanager_maxlag{clientId="Replica"}`])
		}
		l, err := samples(c, leader)
		if err != nil {
			return err
		}
		if l["kafka_server_replicamanager_isrshrinks_total"] < 1 || l["kafka_server_replicamanager_underreplicatedpartitions"] != 1 {
			return fmt.Errorf("leader: shrinks %v, under-replicated %v", l["kafka_server_replicamanager_isrshrinks_total"], l["kafka_server_replicamanager_underreplicatedpartitions"])
		}
		if l["kafka_server_replicamanager_leadercount"] != 1 || l["kafka_server_replicamanager_partitioncount"] != 1 {
			return fmt.Errorf("leader: %v leaders of %v partitions", l["kafka_server_replicamanager_leadercount"], l["kafka_server_replicamanager_partitioncount"])
		}
		return nil
	})

	if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "follower.replication.throttled.rate", Op: kadm.DeleteConfig}}, id(follower)); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 20*time.Second, "the follower caught up and back in the ISR", func() error {
		s, err := samples(c, follower)
		if err != nil {
			return err
		}
		l, err := samples(c, leader)
		if err != nil {
			return err
		}
		if s[lag] != 0 || l["kafka_server_replicamanager_isrexpands_total"] < 1 || l["kafka_server_replicamanager_underreplicatedpartitions"] != 0 {
			return fmt.Errorf("follower lag %v; leader: expands %v, under-replicated %v", s[lag], l["kafka_server_replicamanager_isrexpands_total"], l["kafka_server_replicamanager_underreplicatedpartitions"])
		}
		// The follower copied the 3 MiB; the leader sent them to both
		// followers, as replication, not as consumers' BytesOut.
		const copied = 48 * 64 << 10
		in, out := s["kafka_server_brokertopicmetrics_replicationbytesin_total"], l["kafka_server_brokertopicmetrics_replicationbytesout_total"]
		if in < copied || out < 2*copied || l["kafka_server_brokertopicmetrics_bytesout_total"] != 0 {
			return fmt.Errorf("replication bytes in on the follower %v, out on the leader %v, consumers' bytes out %v",
				in, out, l["kafka_server_brokertopicmetrics_bytesout_total"])
		}
		return nil
	})
}

// The coordinator of a group exports its consumer lag also for a
// partition another broker leads, whose high watermark it asks that
// leader for; no other broker exports the group's lag.
func TestConsumerLagOfAPartitionLedElsewhere(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := New(t, Options{Nodes: 3, Overrides: map[string]string{"weir.metrics.listener": "http://127.0.0.1:0"}})
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	var coord int32
	testwait.For(t, 20*time.Second, "the group's coordinator", func() error {
		rs := adm.FindGroupCoordinators(ctx, "far-group")
		if err := rs.Error(); err != nil {
			return err
		}
		coord = rs["far-group"].NodeID
		return nil
	})
	leader := coord%3 + 1 // another broker
	createAssigned(t, c, "far", [][]int32{{leader}}, nil)
	for range 6 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "far", Partition: 0, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "far", Partition: 0, At: 2, LeaderEpoch: -1})
	if resp, err := adm.CommitOffsets(ctx, "far-group", offs); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	const lag = `weir_group_consumer_lag{group="far-group",partition="0",topic="far"}`
	testwait.For(t, 20*time.Second, "the coordinator's lag", func() error {
		s, err := samples(c, int(coord-1))
		if err != nil {
			return err
		}
		if s[lag] != 4 || s[`weir_group_consumer_lag_sum{group="far-group"}`] != 4 {
			return fmt.Errorf("lag %v, sum %v; want 4", s[lag], s[`weir_group_consumer_lag_sum{group="far-group"}`])
		}
		return nil
	})
	for _, i := range c.Live() {
		if int32(i+1) == coord {
			continue
		}
		s, err := samples(c, i)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := s[lag]; ok {
			t.Errorf("node %d, not the coordinator, exports the group's lag", i+1)
		}
	}
}

// An acks=all produce that waits for its followers counts the wait in
// Produce's RemoteTimeMs (Kafka's purgatory time), not in its LocalTimeMs:
// with the leader cut from both followers (which stay in the ISR, as
// replica.lag.time.max.ms is long), the produce waits in the purgatory
// until the links are mended; its remote time is at least the time
// between the test seeing it wait and the mend.
func TestAcksAllProduceRemoteTime(t *testing.T) {
	c := New(t, Options{Nodes: 3, Overrides: map[string]string{
		"weir.metrics.listener":        "http://127.0.0.1:0",
		"replica.lag.time.max.ms":      "60000",
		"auto.leader.rebalance.enable": "false",
	}})
	ctl := c.Leader()
	leader, f1, f2 := (ctl+1)%3, (ctl+2)%3, ctl
	id := func(i int) int32 { return int32(i + 1) }
	createAssigned(t, c, "waited", [][]int32{{id(leader), id(f1), id(f2)}}, nil)
	waitState(t, c, "waited", 0, "all in sync", isrIs(1, 2, 3))
	cl := c.Client(t, kgo.DefaultProduceTopic("waited"), kgo.RequiredAcks(kgo.AllISRAcks()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("warm")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	const (
		remoteSum   = `kafka_network_requestmetrics_remotetimems_sum{request="Produce"}`
		remoteCount = `kafka_network_requestmetrics_remotetimems_count{request="Produce"}`
		localSum    = `kafka_network_requestmetrics_localtimems_sum{request="Produce"}`
		waiting     = `kafka_server_delayedoperationpurgatory_purgatorysize{delayedOperation="Produce"}`
	)
	before, err := samples(c, leader)
	if err != nil {
		t.Fatal(err)
	}

	c.Cut(leader, f1)
	c.Cut(leader, f2)
	done := make(chan error, 1)
	go func() { done <- cl.ProduceSync(ctx, &kgo.Record{Value: []byte("waits")}).FirstErr() }()
	testwait.For(t, 20*time.Second, "the produce waiting in the purgatory", func() error {
		s, err := samples(c, leader)
		if err != nil {
			return err
		}
		if s[waiting] != 1 {
			return fmt.Errorf("%v produces waiting", s[waiting])
		}
		return nil
	})
	seen := time.Now()
	// The produce is still waiting once the scrape is done: the time it
	// has waited since is at least what the scrape took.
	if _, err := samples(c, leader); err != nil {
		t.Fatal(err)
	}
	c.Mend(leader, f1)
	c.Mend(leader, f2)
	mended := time.Since(seen)
	if err := <-done; err != nil {
		t.Fatalf("the waiting produce: %v", err)
	}
	testwait.For(t, 10*time.Second, "the produce's times recorded", func() error {
		s, err := samples(c, leader)
		if err != nil {
			return err
		}
		if got := s[remoteCount] - before[remoteCount]; got < 1 {
			return fmt.Errorf("%v more Produce remote times", got)
		}
		remote, local := s[remoteSum]-before[remoteSum], s[localSum]-before[localSum]
		if remote < float64(mended.Milliseconds()) {
			return fmt.Errorf("remote time %v ms, the produce waited at least %v", remote, mended)
		}
		if local >= remote {
			return fmt.Errorf("local time %v ms not below the remote %v ms", local, remote)
		}
		return nil
	})
}
