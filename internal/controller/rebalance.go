package controller

// Automatic preferred-leader rebalancing (auto.leader.rebalance.enable), as
// Kafka's ZooKeeper-era controller ran it: for each broker, the share of
// the partitions it is the preferred (first) replica of that it does not
// lead is its imbalance; above leader.imbalance.per.broker.percentage, each
// of those partitions whose preferred replica is live and in the ISR, and
// that is not being reassigned, gets a preferred election. The server runs
// RebalanceLeaders every leader.imbalance.check.interval.seconds while this
// node is the active controller.

import (
	"weir/internal/metadata"
)

// RebalanceLeaders runs the preferred elections of one rebalancing round
// (see the file comment) and returns how many it committed.
func (c *Controller) RebalanceLeaders() (int, error) {
	n, err := run(c, func(img *metadata.Image) (result[int], error) { return c.rebalanceLeaders(img), nil })
	if n > 0 {
		c.lg.Info("moved leaderships back to preferred replicas", "partitions", n)
	}
	return n, err
}

// rebalanceLeaders builds RebalanceLeaders: the elections, and how many.
func (c *Controller) rebalanceLeaders(img *metadata.Image) result[int] {
	type share struct {
		preferred  int
		notLeading []*metadata.Partition
		topics     []*metadata.Topic // of notLeading, by index
	}
	shares := map[int32]*share{}
	for _, name := range sortedTopicNames(img) {
		t := img.Topics.Get(name)
		for _, p := range t.SortedPartitions() {
			if len(p.Replicas) == 0 {
				continue
			}
			s := shares[p.Replicas[0]]
			if s == nil {
				s = &share{}
				shares[p.Replicas[0]] = s
			}
			s.preferred++
			if p.Leader != p.Replicas[0] {
				s.notLeading, s.topics = append(s.notLeading, p), append(s.topics, t)
			}
		}
	}
	pct := int(c.cfg.Static.LeaderImbalancePerBrokerPercentage)
	minISR := c.elrMinISR(img)
	var recs []metadata.Record
	for _, id := range sortedBrokerIDs(img) {
		s := shares[id]
		// Imbalance above pct percent, in integers.
		if s == nil || len(s.notLeading)*100 <= pct*s.preferred {
			continue
		}
		for i, p := range s.notLeading {
			if inReassignment(p) {
				continue
			}
			ch := newChange(img, s.topics[i].ID, p, minISR(s.topics[i].Name))
			ch.election = electPreferred
			if rec := ch.record(); rec != nil && rec.Leader == id {
				recs = append(recs, rec)
			}
		}
	}
	return result[int]{Records: recs, Answer: len(recs)}
}
