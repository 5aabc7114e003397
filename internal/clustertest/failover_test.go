package clustertest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/config"
	"weir/internal/testwait"
)

// A partition's leader crashes 0 to 3 s after its topic was created, while
// a producer writes to it with acks=all, sometimes on the node that is
// also the active controller. Throughout, two invariants hold: the
// controller's ISR keeps both surviving replicas (they fetch all along,
// and only a fenced broker or one behind for replica.lag.time.max.ms may
// leave it), and the partition is never without a leader; after the
// crash a survivor leads within a session timeout and an election (with
// slack for a loaded machine), and writes resume. With fast fencing off
// the dead broker is fenced when its session runs out, as in Kafka; with
// it on (the default), at once. The crashed node restarts on its disk
// before the next try.
func TestLeaderKilledSoonAfterCreation(t *testing.T) {
	session, _ := time.ParseDuration(Defaults["broker.session.timeout.ms"] + "ms")
	election, _ := time.ParseDuration(Defaults["controller.quorum.election.timeout.ms"] + "ms")
	delays := []time.Duration{0, 700 * time.Millisecond, 1500 * time.Millisecond, 2900 * time.Millisecond}
	for _, fast := range []bool{false, true} {
		t.Run("fast fencing "+strconv.FormatBool(fast), func(t *testing.T) {
			c := New(t, Options{Nodes: 3, Overrides: map[string]string{config.KeyFastFencing: strconv.FormatBool(fast)}})
			for try, delay := range delays {
				v := c.Leader()
				if try%2 == 1 {
					v = (v + 1) % c.Size()
				}
				victim := c.Node(v).ID
				replicas := []int32{victim}
				var survivors []int
				for _, i := range c.Live() {
					if i != v {
						replicas, survivors = append(replicas, c.Node(i).ID), append(survivors, i)
					}
				}
				topic := fmt.Sprintf("t%d", try)
				createAssigned(t, c, topic, [][]int32{replicas}, map[string]string{"min.insync.replicas": "2"})
				w := watchPartition(c, topic, survivors)
				p := startProducing(t, c, topic)
				time.Sleep(delay)
				killed := time.Now()
				c.Kill(v)
				bound := session + 2*election + 2*time.Second
				testwait.For(t, bound, fmt.Sprintf("try %d: a survivor of node %d's crash to lead %s", try, v, topic), func() error {
					for _, i := range survivors {
						if l, _, _ := partitionState(c, i, topic, 0); l < 0 || l == victim {
							return fmt.Errorf("node %d sees leader %d", i, l)
						}
					}
					return nil
				})
				elected := time.Since(killed)
				gap, err := p.resumedAfter(killed, 30*time.Second)
				if err != nil {
					t.Fatalf("try %d: %v", try, err)
				}
				if err := w.stop(); err != nil {
					t.Fatalf("try %d: %v", try, err)
				}
				t.Logf("try %d: node %d (controller %v) killed %v after creating %s: a survivor led after %v, writes resumed after %v",
					try, v, try%2 == 0, delay, topic, elected.Round(time.Millisecond), gap.Round(time.Millisecond))
				c.Restart(v, true)
				testwait.For(t, 15*time.Second, fmt.Sprintf("node %d unfenced", v), func() error {
					return unfenced(c.Node(c.Leader()).Server.Image(), victim)
				})
			}
		})
	}
}

// partitionWatch checks a partition in the images of live nodes every few
// milliseconds until stopped: once the partition is there, it always has
// a leader and its ISR holds every one of the watched nodes.
type partitionWatch struct {
	done chan struct{}
	err  chan error
}

func watchPartition(c *Cluster, topic string, nodes []int) *partitionWatch {
	w := &partitionWatch{done: make(chan struct{}), err: make(chan error, 1)}
	servers := make([]int32, len(nodes))
	for i, n := range nodes {
		servers[i] = c.Node(n).ID
	}
	images := make([]func() (int32, []int32), len(nodes))
	for i, n := range nodes {
		srv := c.Node(n).Server
		images[i] = func() (int32, []int32) {
			t := srv.Image().Topics.Get(topic)
			if t == nil || t.Partitions[0] == nil {
				return -2, nil
			}
			return t.Partitions[0].Leader, t.Partitions[0].ISR
		}
	}
	go func() {
		defer close(w.err)
		for {
			for i, image := range images {
				leader, isr := image()
				if leader == -2 {
					continue
				}
				if leader < 0 {
					w.err <- fmt.Errorf("node %d: %s has no leader (ISR %v)", nodes[i], topic, isr)
					return
				}
				for _, id := range servers {
					if !slices.Contains(isr, id) {
						w.err <- fmt.Errorf("node %d: %s's ISR %v lost live broker %d (leader %d)", nodes[i], topic, isr, id, leader)
						return
					}
				}
			}
			select {
			case <-w.done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	return w
}

// stop ends the watch and returns the first violation.
func (w *partitionWatch) stop() error {
	close(w.done)
	return <-w.err
}

// producing writes to a topic with acks=all every few milliseconds and
// notes when each record was sent and acknowledged.
type producing struct {
	mu    sync.Mutex
	acked []time.Time // acknowledgement times of records sent after mark
	mark  time.Time
	stop  context.CancelFunc
}

func startProducing(t *testing.T, c *Cluster, topic string) *producing {
	cl := c.Client(t, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.MetadataMinAge(50*time.Millisecond), kgo.RecordDeliveryTimeout(time.Minute))
	ctx, cancel := context.WithCancel(context.Background())
	p := &producing{stop: cancel}
	t.Cleanup(cancel)
	go func() {
		for i := 0; ctx.Err() == nil; i++ {
			sent := time.Now()
			cl.Produce(ctx, kgo.StringRecord(strconv.Itoa(i)), func(_ *kgo.Record, err error) {
				if err != nil {
					return
				}
				p.mu.Lock()
				if !p.mark.IsZero() && sent.After(p.mark) {
					p.acked = append(p.acked, time.Now())
				}
				p.mu.Unlock()
			})
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return p
}

// resumedAfter marks t (the crash) and waits up to within for a record
// sent after it to be acknowledged; it returns how long after t that was,
// and stops producing.
func (p *producing) resumedAfter(t time.Time, within time.Duration) (time.Duration, error) {
	defer p.stop()
	p.mu.Lock()
	p.mark = t
	p.mu.Unlock()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		if len(p.acked) > 0 {
			gap := p.acked[0].Sub(t)
			p.mu.Unlock()
			return gap, nil
		}
		p.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	return 0, fmt.Errorf("no record sent after the crash was acknowledged within %v", within)
}
