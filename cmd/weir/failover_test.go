package main_test

// Failover under SIGKILL (issue 20): three combined weir processes; for
// each try a new topic with one partition of three replicas and
// min.insync.replicas=2, led by the node about to die, an idempotent
// acks=all producer writing to it from its creation, and that node
// SIGKILLed 0 to 3 s later, half the time while it is also the active
// controller. Each try must see a survivor lead with both survivors in
// the ISR and writes resume; the gap (from the kill to the first
// acknowledgement of a record sent after it) is logged, with the
// distribution per fencing mode at the end. The killed node restarts on
// its disk before the next try.
//
// CI runs it with short timeouts (broker.session.timeout.ms 1500) and
// fast fencing off (the session decides, as in Kafka) and on. The flags
// below let bench/failover.sh run the same scenario at Kafka's default
// timeouts with more tries.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/testwait"
)

var (
	flagFailoverTries = flag.Int("failover.tries", 25, "tries per fencing mode")
	flagFailoverModes = flag.String("failover.fast-fencing", "false,true", "weir.fast.fencing.enable values to run, comma-separated")
	flagFailoverKafka = flag.Bool("failover.kafka-timeouts", false, "Kafka's default broker.session.timeout.ms (9000), broker.heartbeat.interval.ms (2000) and controller.quorum.election.timeout.ms (1000)")
	flagFailoverCSV   = flag.String("failover.csv", "", "append one line per try to this file: mode,session_ms,controller,delay_ms,gap_ms")
)

// failoverConf is the nodes' server.properties for one fencing mode.
func failoverConf(fast bool) map[string]string {
	conf := map[string]string{
		"broker.heartbeat.interval.ms":           "200",
		"broker.session.timeout.ms":              "1500",
		"controller.quorum.election.timeout.ms":  "500",
		"initial.broker.registration.timeout.ms": "30000",
		"weir.fast.fencing.enable":               strconv.FormatBool(fast),
	}
	if *flagFailoverKafka {
		conf["broker.heartbeat.interval.ms"] = "2000"
		conf["broker.session.timeout.ms"] = "9000"
		conf["controller.quorum.election.timeout.ms"] = "1000"
	}
	return conf
}

func TestFailoverAfterSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("minutes of kills")
	}
	seed := faultSeed(t, "WEIR_FAILOVER_SEED")
	t.Logf("seed %d (WEIR_FAILOVER_SEED=%d replays the kill timings)", seed, seed)
	for _, mode := range strings.Split(*flagFailoverModes, ",") {
		fast, err := strconv.ParseBool(mode)
		if err != nil {
			t.Fatalf("-failover.fast-fencing: %v", err)
		}
		t.Run("fast fencing "+mode, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, seed^0xfa11))
			failoverTries(t, fast, *flagFailoverTries, rng, seed)
		})
	}
}

// failoverTries runs tries kills on one cluster and logs the gaps.
func failoverTries(t *testing.T, fast bool, tries int, rng *rand.Rand, seed uint64) {
	conf := failoverConf(fast)
	session, _ := strconv.Atoi(conf["broker.session.timeout.ms"])
	var clientLog lockedBuffer
	nodes, _ := startFaultCluster(t, conf, "failover", seed, &clientLog)
	if err := testwait.Poll(60*time.Second, func() error { return allUnfenced(nodes) }); err != nil {
		t.Fatalf("the cluster did not come up: %v", err)
	}
	var gaps [2][]time.Duration // by whether the victim was the active controller
	for try := range tries {
		ctrl, err := activeController(nodes)
		if err != nil {
			t.Fatalf("try %d: %v", try, err)
		}
		victim := nodes[ctrl-1]
		onController := try%2 == 0
		if !onController {
			victim = nodes[(int(ctrl)+rng.IntN(2))%3]
		}
		var survivors []*faultNode
		replicas := []int32{victim.id}
		for _, n := range nodes {
			if n != victim {
				survivors, replicas = append(survivors, n), append(replicas, n.id)
			}
		}
		topic := fmt.Sprintf("failover-%d", try)
		if err := createLedBy(survivors[0], topic, replicas); err != nil {
			t.Fatalf("try %d: creating %s: %v", try, topic, err)
		}
		created := time.Now()
		delay := time.Duration(rng.IntN(3000)) * time.Millisecond
		p := produceTo(t, nodes, topic, &clientLog)
		time.Sleep(time.Until(created.Add(delay)))
		killed := time.Now()
		victim.p.cmd.Process.Kill()
		victim.p.cmd.Wait()
		gap, err := p.resumed(killed, 60*time.Second)
		if err != nil {
			t.Fatalf("try %d: node %d (active controller: %v) killed %v after creating %s: writes did not resume: %v",
				try, victim.id, onController, delay, topic, err)
		}
		if err := testwait.Poll(10*time.Second, func() error { return ledBySurvivors(survivors, topic, victim.id) }); err != nil {
			t.Fatalf("try %d: after writes resumed: %v", try, err)
		}
		t.Logf("try %d: node %d (active controller: %v) killed %v after creating %s; writes resumed after %v",
			try, victim.id, onController, delay, topic, gap.Round(time.Millisecond))
		gaps[b2i(onController)] = append(gaps[b2i(onController)], gap)
		if *flagFailoverCSV != "" {
			line := fmt.Sprintf("%v,%d,%v,%d,%d\n", fast, session, onController, delay.Milliseconds(), gap.Milliseconds())
			if err := appendFile(*flagFailoverCSV, line); err != nil {
				t.Fatal(err)
			}
		}
		victim.start(t)
		if err := testwait.Poll(60*time.Second, func() error { return allUnfenced(nodes) }); err != nil {
			t.Fatalf("try %d: node %d did not come back: %v", try, victim.id, err)
		}
	}
	for i, what := range []string{"another node", "the active controller"} {
		t.Logf("fast fencing %v, session %d ms, victim %s: %s", fast, session, what, distribution(gaps[i]))
	}
	t.Logf("fast fencing %v, session %d ms, all: %s", fast, session, distribution(append(gaps[0], gaps[1]...)))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// distribution summarizes gaps: count, p50, p99, max.
func distribution(gaps []time.Duration) string {
	if len(gaps) == 0 {
		return "no tries"
	}
	s := slices.Clone(gaps)
	slices.Sort(s)
	pct := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return fmt.Sprintf("%d tries, gap p50 %v p99 %v max %v", len(s), pct(0.5).Round(time.Millisecond),
		pct(0.99).Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond))
}

func appendFile(name, line string) error {
	f, err := os.OpenFile(name, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line)
	return errors.Join(err, f.Close())
}

// activeController asks the running nodes which node is the active
// controller.
func activeController(nodes []*faultNode) (int32, error) {
	var last error
	for range 100 {
		for _, n := range nodes {
			if n.p.cmd.ProcessState != nil {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			req := kmsg.NewPtrDescribeQuorumRequest()
			rt := kmsg.NewDescribeQuorumRequestTopic()
			rt.Topic = "__cluster_metadata"
			rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
			req.Topics = append(req.Topics, rt)
			resp, err := n.cl.SeedBrokers()[0].Request(ctx, req)
			cancel()
			if err != nil {
				last = err
				continue
			}
			r := resp.(*kmsg.DescribeQuorumResponse)
			if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 && r.Topics[0].Partitions[0].LeaderID > 0 {
				return r.Topics[0].Partitions[0].LeaderID, nil
			}
			last = fmt.Errorf("node %d knows no active controller", n.id)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return -1, last
}

// allUnfenced checks that every node lists all three brokers.
func allUnfenced(nodes []*faultNode) error {
	for _, n := range nodes {
		req := kmsg.NewPtrMetadataRequest()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		resp, err := n.cl.SeedBrokers()[0].Request(ctx, req)
		cancel()
		if err != nil {
			return fmt.Errorf("node %d: %w", n.id, err)
		}
		if b := resp.(*kmsg.MetadataResponse).Brokers; len(b) != len(nodes) {
			return fmt.Errorf("node %d lists %d brokers", n.id, len(b))
		}
	}
	return nil
}

// createLedBy creates topic with one partition on replicas (the first
// leads) and min.insync.replicas=2, through node n.
func createLedBy(n *faultNode, topic string, replicas []int32) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, replicas
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	c := kmsg.NewCreateTopicsRequestTopicConfig()
	c.Name, c.Value = "min.insync.replicas", kmsg.StringPtr("2")
	rt.Configs = append(rt.Configs, c)
	req.Topics = append(req.Topics, rt)
	return testwait.Poll(15*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 12*time.Second)
		defer cancel()
		resp, err := n.cl.SeedBrokers()[0].Request(ctx, req)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.CreateTopicsResponse)
		if len(r.Topics) != 1 {
			return errors.New("malformed CreateTopics answer")
		}
		return kerr.ErrorForCode(r.Topics[0].ErrorCode)
	})
}

// ledBySurvivors checks that every survivor sees topic led by one of them
// with both in the ISR.
func ledBySurvivors(survivors []*faultNode, topic string, dead int32) error {
	for _, n := range survivors {
		_, leaders, isrs, err := n.isr(topic)
		if err != nil {
			return fmt.Errorf("node %d: %w", n.id, err)
		}
		if len(leaders) != 1 || leaders[0] < 0 || leaders[0] == dead {
			return fmt.Errorf("node %d: %s led by %v", n.id, topic, leaders)
		}
		for _, s := range survivors {
			if !slices.Contains(isrs[0], s.id) {
				return fmt.Errorf("node %d: %s has ISR %v without live broker %d", n.id, topic, isrs[0], s.id)
			}
		}
	}
	return nil
}

// producer writes to one topic with acks=all, about a thousand records a
// second, and notes when records sent after a mark are acknowledged.
type producer struct {
	cl   *kgo.Client
	stop context.CancelFunc
	done chan struct{}

	mu    sync.Mutex
	mark  time.Time
	first time.Time // first acknowledgement of a record sent after mark
}

func produceTo(t *testing.T, nodes []*faultNode, topic string, clientLog *lockedBuffer) *producer {
	var seeds []string
	for _, n := range nodes {
		seeds = append(seeds, n.addr)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(2*time.Minute), kgo.MaxBufferedRecords(5000),
		// Java's producer refreshes metadata retry.backoff.ms (100 ms)
		// after an error; franz-go waits 5 s by default.
		kgo.MetadataMinAge(100*time.Millisecond),
		kgo.WithLogger(kgo.BasicLogger(clientLog, kgo.LogLevelInfo, func() string { return topic + " producer " })))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &producer{cl: cl, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			sent := time.Now()
			cl.TryProduce(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}, func(_ *kgo.Record, err error) {
				if err != nil {
					return
				}
				now := time.Now()
				p.mu.Lock()
				if !p.mark.IsZero() && sent.After(p.mark) && p.first.IsZero() {
					p.first = now
				}
				p.mu.Unlock()
			})
		}
	}()
	return p
}

// resumed marks t and waits up to within for a record sent after it to be
// acknowledged; it returns how long after t that was, and closes the
// producer.
func (p *producer) resumed(t time.Time, within time.Duration) (time.Duration, error) {
	defer func() {
		p.stop()
		<-p.done
		p.cl.Close()
	}()
	p.mu.Lock()
	p.mark = t
	p.mu.Unlock()
	var gap time.Duration
	err := testwait.Poll(within, func() error {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.first.IsZero() {
			return errors.New("no record sent after the kill was acknowledged")
		}
		gap = p.first.Sub(t)
		return nil
	})
	return gap, err
}
