package replsim

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	"weir/internal/controller"
	"weir/internal/metadata"
	"weir/internal/quorum"
)

// ctrlNode is the active controller: the real state machine over an
// in-memory quorum that commits every batch at once and keeps the
// committed batches, which the brokers fetch in order as their metadata
// log.
type ctrlNode struct {
	s       *Sim
	c       *controller.Controller
	end     int64
	batches []quorum.Committed
	// term is the quorum term: a failover (another controller takes
	// over) starts a new one.
	term uint64
}

const clusterID = "replsim-cluster-id-000"

func newCtrlNode(s *Sim) (*ctrlNode, error) {
	cfg, _, err := config.LoadBroker(nil)
	if err != nil {
		return nil, err
	}
	cfg.BrokerSessionTimeout = sessionTimeout
	n := &ctrlNode{s: s}
	n.c = controller.New(controller.Config{Static: cfg, ClusterID: clusterID}, n, s.lg.With("node", "controller"))
	return n, n.c.Bootstrap(nil)
}

// Append implements controller.Quorum: the batch is committed at once
// (through the records' wire encoding, as the real log stores them) and
// published to the controller before Append returns.
func (n *ctrlNode) Append(recs []metadata.Record) (int64, error) {
	if len(recs) == 0 {
		return n.end - 1, nil
	}
	c := quorum.Committed{LastOffset: n.end + int64(len(recs)) - 1}
	for _, r := range recs {
		b, err := metadata.AppendRecord(nil, r)
		if err != nil {
			return 0, err
		}
		d, err := metadata.DecodeRecord(b)
		if err != nil {
			return 0, err
		}
		c.Records = append(c.Records, d)
	}
	before := n.c.Image()
	n.end = c.LastOffset + 1
	n.batches = append(n.batches, c)
	if err := n.c.Publish(c); err != nil {
		return 0, err
	}
	n.s.chk.committed(before, n.c.Image())
	return c.LastOffset, nil
}

// EndOffset implements controller.Quorum.
func (n *ctrlNode) EndOffset() int64 { return n.end }

// Status implements controller.Quorum: this node is always the active
// controller.
func (n *ctrlNode) Status() quorum.Status {
	return quorum.Status{Leader: controllerID, Active: true, Term: n.term}
}

// partition is the simulated partition in the controller's image (nil
// before it is created).
func (n *ctrlNode) partition() *metadata.Partition {
	t := n.c.Image().Topics.Get(topic.Topic)
	if t == nil {
		return nil
	}
	return t.Partitions[topic.Partition]
}

// createTopic creates the simulated topic with the seed's replica order and
// configuration.
func (n *ctrlNode) createTopic() error {
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = topic.Topic, -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = topic.Partition, n.s.p.replicas
	t.ReplicaAssignment = append(t.ReplicaAssignment, a)
	cfg := map[string]string{
		"min.insync.replicas":            fmt.Sprint(minISR),
		"unclean.leader.election.enable": fmt.Sprint(n.s.p.chaos),
	}
	if n.s.p.flushOnAck {
		cfg["flush.messages"] = "1"
	}
	if n.s.p.smallIndex {
		// An index entry per batch and room for a few: segments roll
		// every few batches, so recovery and truncation cross segments.
		cfg["index.interval.bytes"] = "0"
		cfg["segment.index.bytes"] = fmt.Sprint(8 * (2 + n.s.rng.IntN(6)))
	}
	for _, k := range []string{"min.insync.replicas", "unclean.leader.election.enable", "flush.messages",
		"index.interval.bytes", "segment.index.bytes"} {
		if v, ok := cfg[k]; ok {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = k, &v
			t.Configs = append(t.Configs, c)
		}
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Topics = append(req.Topics, t)
	res, err := n.c.CreateTopics(req)
	if err != nil {
		return err
	}
	return errors.Join(res.Errs...)
}

// fetchMetadata answers a broker's metadata fetch: the committed batches
// from index from on (at most a few, as a fetch is bounded).
func (n *ctrlNode) fetchMetadata(from int) []quorum.Committed {
	if from >= len(n.batches) {
		return nil
	}
	to := min(len(n.batches), from+8)
	return n.batches[from:to]
}

// tick fences brokers whose sessions ran out, as the active controller
// does on its timer.
func (n *ctrlNode) tick() {
	fenced, err := n.c.FenceStaleBrokers(n.s.now)
	if err != nil {
		n.s.fail("FenceStaleBrokers: %v", err)
	}
	if len(fenced) > 0 {
		n.s.tracef("  controller fenced %v (sessions expired)", fenced)
	}
	for _, id := range fenced {
		if b := n.s.brokers[id]; !n.s.impaired(b) {
			n.s.chk.leftAssumption(fmt.Sprintf("broker %d fenced while healthy", id))
		}
	}
	n.s.after(fenceCheckEvery, controllerID, "controller: fence stale brokers", n.tick)
}
