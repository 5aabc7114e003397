package controller

// Leader elections, as Kafka's controller runs them:
//
//   - a broker that is fenced, enters controlled shutdown or re-registers
//     leaves every ISR that has another member, and its leaderships move
//     to the first live ISR member in replica order (electAway);
//   - when a broker is unfenced, every partition without a leader gets
//     one if it can (electOffline);
//   - a partition left with no live ISR member goes offline (leader -1),
//     unless unclean.leader.election.enable holds for its topic: then the
//     first live replica leads and becomes the whole ISR, and records the
//     old ISR acknowledged may be lost. The setting can be turned on at
//     run time: AlterConfigs elects offline partitions in the same commit
//     as the config change, so no timer is needed;
//   - ElectLeaders runs preferred or unclean elections on request.
//
// The elections themselves are planned by change (change.go).

import (
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	"weir/internal/metadata"
)

// ElectLeaders election types.
const (
	preferredElection int8 = 0
	uncleanElection   int8 = 1
)

// PartitionResult is one partition's outcome in a multi-partition request:
// nil, or a *TopicError.
type PartitionResult struct {
	Partition int32
	Err       error
}

// TopicResult is a topic's partition outcomes, in request order.
type TopicResult struct {
	Topic      string
	Partitions []PartitionResult
}

// onlineElection returns, per topic, the election that keeps a partition
// online: electUnclean where unclean.leader.election.enable resolves to
// true (the topic's config, else this controller's dynamic broker config,
// the dynamic cluster default, the static config), else electOnline.
// Each topic is resolved once.
func (c *Controller) onlineElection(img *metadata.Image) func(topic string) election {
	self := img.BrokerConfig(strconv.Itoa(int(c.cfg.Static.NodeID)))
	memo := map[string]election{}
	return func(topic string) election {
		e, ok := memo[topic]
		if !ok {
			e = electOnline
			if config.ResolveTopic(img.TopicConfig(topic), img.BrokerConfig(""), self, c.cfg.Static).UncleanLeaderElection {
				e = electUnclean
			}
			memo[topic] = e
		}
		return e
	}
}

// elrMinISR returns, per topic, the min.insync.replicas that its eligible
// leader replicas follow, or 0 for every topic when the
// eligible.leader.replicas.version feature is not enabled in img. Each
// topic is resolved once.
func (c *Controller) elrMinISR(img *metadata.Image) func(topic string) int {
	if img.Features[metadata.ELRFeature] < 1 {
		return func(string) int { return 0 }
	}
	self := img.BrokerConfig(strconv.Itoa(int(c.cfg.Static.NodeID)))
	memo := map[string]int{}
	return func(topic string) int {
		n, ok := memo[topic]
		if !ok {
			n = max(1, config.ResolveTopic(img.TopicConfig(topic), img.BrokerConfig(""), self, c.cfg.Static).MinInsyncReplicas)
			memo[topic] = n
		}
		return n
	}
}

// electAway moves broker's leaderships and ISR memberships away; img has
// the broker no longer live.
func (c *Controller) electAway(img *metadata.Image, broker int32) []metadata.Record {
	electionFor, minISR := c.onlineElection(img), c.elrMinISR(img)
	var recs []metadata.Record
	for _, name := range sortedTopicNames(img) {
		t := img.Topics.Get(name)
		for _, p := range t.SortedPartitions() {
			if p.Leader != broker && !slices.Contains(p.ISR, broker) {
				continue
			}
			ch := newChange(img, t.ID, p, minISR(name))
			ch.isr, ch.election = without(p.ISR, []int32{broker}), electionFor(name)
			if rec := ch.record(); rec != nil {
				recs = append(recs, rec)
			}
		}
	}
	return recs
}

// uncleanShutdown takes broker out of every ELR and last known ELR: it
// shut down uncleanly and may have lost records it had.
func (c *Controller) uncleanShutdown(img *metadata.Image, broker int32) []metadata.Record {
	minISR := c.elrMinISR(img)
	var recs []metadata.Record
	for _, name := range sortedTopicNames(img) {
		t := img.Topics.Get(name)
		for _, p := range t.SortedPartitions() {
			if !slices.Contains(p.ELR, broker) && !slices.Contains(p.LastKnownELR, broker) {
				continue
			}
			ch := newChange(img, t.ID, p, minISR(name))
			ch.uncleanShutdown = []int32{broker}
			if rec := ch.record(); rec != nil {
				recs = append(recs, rec)
			}
		}
	}
	return recs
}

// electOffline elects a leader for every partition of img without one
// that has an eligible replica (unclean where the topic allows it).
func (c *Controller) electOffline(img *metadata.Image) []metadata.Record {
	electionFor, minISR := c.onlineElection(img), c.elrMinISR(img)
	var recs []metadata.Record
	for _, name := range sortedTopicNames(img) {
		t := img.Topics.Get(name)
		for _, p := range t.SortedPartitions() {
			if p.Leader >= 0 {
				continue
			}
			ch := newChange(img, t.ID, p, minISR(name))
			ch.election = electionFor(name)
			if rec := ch.record(); rec != nil {
				recs = append(recs, rec)
			}
		}
	}
	return recs
}

// thenElect returns recs followed by what elect plans against img with
// recs applied.
func thenElect(img *metadata.Image, recs []metadata.Record, elect func(*metadata.Image) []metadata.Record) ([]metadata.Record, error) {
	after, _, err := img.Apply(recs, img.Offset)
	if err != nil {
		return nil, err
	}
	return append(recs, elect(after)...), nil
}

// ElectLeaders handles ElectLeaders: a preferred election makes the first
// replica leader when it is live and in the ISR (ELECTION_NOT_NEEDED when
// it leads already, else PREFERRED_LEADER_NOT_AVAILABLE); an unclean one
// gives a partition without a leader a live ISR member, else any live
// replica whatever the topic's config (ELECTION_NOT_NEEDED when it has a
// leader, ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica is live). Topics
// nil means every partition, and then partitions needing no election are
// left out. An unknown election type is INVALID_REQUEST for the request.
func (c *Controller) ElectLeaders(req *kmsg.ElectLeadersRequest) (ElectLeadersResult, error) {
	return run(c, func(img *metadata.Image) (result[ElectLeadersResult], error) { return c.electLeaders(img, req) })
}

// ElectLeadersResult is the answer of ElectLeaders: the outcomes by topic.
type ElectLeadersResult struct {
	Committed
	Topics []TopicResult
}

// electLeaders builds ElectLeaders.
func (c *Controller) electLeaders(img *metadata.Image, req *kmsg.ElectLeadersRequest) (result[ElectLeadersResult], error) {
	res := result[ElectLeadersResult]{Answer: ElectLeadersResult{Committed: Committed{img.Offset}}}
	if req.ElectionType != preferredElection && req.ElectionType != uncleanElection {
		return res, topicErr(kerr.InvalidRequest, "Unknown election type %d.", req.ElectionType)
	}
	minISR := c.elrMinISR(img)
	var out []TopicResult
	var recs userRecords
	var tooMany error
	elect := func(topic string, partition int32) error {
		rec, err := electOne(img, topic, partition, req.ElectionType, minISR(topic))
		if rec == nil {
			return err
		}
		if tooMany = recs.add(rec); tooMany != nil {
			return tooMany
		}
		// Later entries for the same partition see this election.
		next, _, err := img.Apply([]metadata.Record{rec}, img.Offset)
		if err != nil {
			return err
		}
		img = next
		return nil
	}
	if req.Topics == nil {
		for _, name := range sortedTopicNames(img) {
			tr := TopicResult{Topic: name}
			for _, p := range img.Topics.Get(name).SortedPartitions() {
				err := elect(name, p.ID)
				if tooMany != nil {
					return res, tooMany
				}
				if errorIs(err, kerr.ElectionNotNeeded) {
					continue
				}
				tr.Partitions = append(tr.Partitions, PartitionResult{p.ID, err})
			}
			out = append(out, tr)
		}
	} else {
		for _, rt := range req.Topics {
			tr := TopicResult{Topic: rt.Topic}
			for _, id := range rt.Partitions {
				err := elect(rt.Topic, id)
				if tooMany != nil {
					return res, tooMany
				}
				tr.Partitions = append(tr.Partitions, PartitionResult{id, err})
			}
			out = append(out, tr)
		}
	}
	res.Records, res.Answer.Topics = recs, out
	return res, nil
}

// electOne plans one partition's election of type typ.
func electOne(img *metadata.Image, topic string, partition int32, typ int8, minISR int) (*metadata.PartitionChangeRecord, error) {
	t := img.Topics.Get(topic)
	if t == nil || t.Partitions[partition] == nil {
		return nil, topicErr(kerr.UnknownTopicOrPartition, "No such partition as %s-%d.", topic, partition)
	}
	p := t.Partitions[partition]
	ch := newChange(img, t.ID, p, minISR)
	if typ == preferredElection {
		if len(p.Replicas) > 0 && p.Leader == p.Replicas[0] {
			return nil, topicErr(kerr.ElectionNotNeeded, "%s-%d is led by its preferred replica.", topic, partition)
		}
		ch.election = electPreferred
		if rec := ch.record(); rec != nil {
			return rec, nil
		}
		return nil, topicErr(kerr.PreferredLeaderNotAvailable, "The preferred replica of %s-%d is not live and in the ISR.", topic, partition)
	}
	if p.Leader >= 0 {
		return nil, topicErr(kerr.ElectionNotNeeded, "%s-%d has a leader.", topic, partition)
	}
	ch.election = electUnclean
	if rec := ch.record(); rec != nil {
		return rec, nil
	}
	return nil, topicErr(kerr.EligibleLeadersNotAvailable, "No replica of %s-%d is live.", topic, partition)
}

// errorIs reports whether err is a *TopicError with code.
func errorIs(err error, code *kerr.Error) bool {
	te, ok := err.(*TopicError)
	return ok && te.Code == code
}
