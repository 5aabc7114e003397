package cli

// weir doctor's checks: topic settings, partitions, brokers' balance,
// consumer groups and transactions.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// logOverhead is what message.max.bytes allows above max.request.size in
// Kafka's defaults (1048588 and 1048576): a log entry's offset and size.
const logOverhead = 12

func (d *doctor) topicChecks(ctx context.Context) error {
	ceilings, err := d.brokerCeilings(ctx)
	if err != nil {
		return err
	}
	for _, t := range d.topics() {
		rf := replicationOf(t)
		name := t.Topic
		configs := d.tool("configs") + " --entity-type topics --entity-name " + name + " --alter --add-config "
		if minISR := d.intConfig(name, "min.insync.replicas", 1); rf > 1 && minISR <= 1 {
			problem := fmt.Sprintf("replication factor %d with min.insync.replicas=%d: a write acknowledged with acks=all may be on the leader only, and is lost with it", rf, minISR)
			if rf == 2 {
				problem += " (with 2 replicas, min.insync.replicas=2 stops acks=all writes while one is down: a replication factor of 3 is better)"
			}
			d.add("min-insync-replicas", "topic "+name, problem, configs+"min.insync.replicas=2")
		}
		if rf > 1 && d.configs[name]["unclean.leader.election.enable"] == "true" {
			d.add("unclean-leader-election", "topic "+name,
				"unclean.leader.election.enable=true: when no in-sync replica is left, an out-of-sync one may lead and acknowledged writes are lost",
				configs+"unclean.leader.election.enable=false")
		}
		mmb := d.intConfig(name, "max.message.bytes", -1)
		var over []string
		limit := mmb
		check := func(what string, ceiling, slack int64) {
			if ceiling > 0 && mmb > ceiling+slack {
				over = append(over, fmt.Sprintf("%s=%d", what, ceiling))
				limit = min(limit, ceiling+slack)
			}
		}
		check("the brokers' replica.fetch.max.bytes", ceilings["replica.fetch.max.bytes"], logOverhead)
		check("the brokers' message.max.bytes", ceilings["message.max.bytes"], 0)
		check("the producers' max.request.size", d.f.producerMaxRequest, logOverhead)
		if len(over) > 0 {
			d.add("max-message-bytes", "topic "+name,
				fmt.Sprintf("max.message.bytes=%d is above %s: producers with default settings fail on batches the topic accepts, and followers replicate such batches one at a time; lower the topic's limit, or raise the others together with it", mmb, strings.Join(over, " and ")),
				configs+"max.message.bytes="+strconv.FormatInt(limit, 10))
		}
	}
	return nil
}

// brokerCeilings are the lowest replica.fetch.max.bytes and
// message.max.bytes of the live brokers.
func (d *doctor) brokerCeilings(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	if len(d.brokers) == 0 {
		return out, nil
	}
	rcs, err := d.tc.adm.DescribeBrokerConfigs(ctx, d.brokers...)
	if err != nil {
		return nil, fmt.Errorf("describing broker configs: %w", err)
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			return nil, fmt.Errorf("describing the configs of broker %s: %w", rc.Name, rc.Err)
		}
		m := configMap(rc)
		for _, k := range []string{"replica.fetch.max.bytes", "message.max.bytes"} {
			if v, err := strconv.ParseInt(m[k], 10, 64); err == nil && (out[k] == 0 || v < out[k]) {
				out[k] = v
			}
		}
	}
	return out, nil
}

// partitionsText names a topic's partitions in a finding.
func partitionsText(topic string, ps []int32) string {
	if len(ps) == 1 {
		return fmt.Sprintf("partition %s-%d", topic, ps[0])
	}
	return fmt.Sprintf("topic %s, partitions %s", topic, joinInts(ps))
}

// partitionsJSON is a --path-to-json-file of leader-election for ps.
func partitionsJSON(topic string, ps []int32) string {
	var parts []string
	for _, p := range ps {
		parts = append(parts, fmt.Sprintf(`{"topic":%q,"partition":%d}`, topic, p))
	}
	return `{"partitions":[` + strings.Join(parts, ",") + `]}`
}

// moveTopics is the command that proposes new replicas for topics over the
// live brokers (Kafka's rack-aware assignment).
func (d *doctor) moveTopics(topics ...string) string {
	var ts []string
	for _, t := range topics {
		ts = append(ts, fmt.Sprintf(`{"topic":%q}`, t))
	}
	return fmt.Sprintf(`echo '{"version":1,"topics":[%s]}' > move.json && %s --generate --topics-to-move-json-file move.json --broker-list %s (then --execute the proposed assignment)`,
		strings.Join(ts, ","), d.tool("reassign-partitions"), joinInts(d.brokers))
}

func (d *doctor) partitionChecks(context.Context) error {
	live := map[int32]bool{}
	racks := map[int32]string{}
	rackSet := map[string]bool{}
	for _, b := range d.md.Brokers {
		live[b.NodeID] = true
		if b.Rack != nil {
			racks[b.NodeID] = *b.Rack
		}
		rackSet[racks[b.NodeID]] = true
	}
	for _, t := range d.topics() {
		name := t.Topic
		minISR := d.intConfig(name, "min.insync.replicas", 1)
		var offline, urp, atMin, oneRack, notPreferred []int32
		dead := map[int32]bool{}
		for _, p := range t.Partitions.Sorted() {
			switch {
			case p.Leader < 0:
				offline = append(offline, p.Partition)
			case len(p.ISR) < len(p.Replicas):
				urp = append(urp, p.Partition)
			}
			if p.Leader >= 0 && int64(len(p.ISR)) == minISR && len(p.ISR) < len(p.Replicas) {
				atMin = append(atMin, p.Partition)
			}
			for _, r := range p.Replicas {
				if !live[r] {
					dead[r] = true
				}
			}
			if len(rackSet) > 1 && len(p.Replicas) > 1 {
				same := true
				for _, r := range p.Replicas[1:] {
					same = same && racks[r] == racks[p.Replicas[0]]
				}
				if same {
					oneRack = append(oneRack, p.Partition)
				}
			}
			if p.Leader >= 0 && len(p.Replicas) > 0 && p.Leader != p.Replicas[0] && slices.Contains(p.ISR, p.Replicas[0]) {
				notPreferred = append(notPreferred, p.Partition)
			}
		}
		deadIDs := slices.Sorted(maps.Keys(dead))
		restart := ""
		if len(deadIDs) > 0 {
			restart = fmt.Sprintf("start broker %s again, or move the replicas off it: ", joinInts(deadIDs))
		}
		if len(offline) > 0 {
			d.add("offline-partition", partitionsText(name, offline),
				"no leader: the partition takes no writes and serves no reads",
				restart+d.tool("leader-election")+" --election-type UNCLEAN --topic "+name+" --partition "+strconv.Itoa(int(offline[0]))+
					" (elects an out-of-sync replica if one is up: writes it lacks are lost)")
		}
		fixURP := restart + d.moveTopics(name)
		if restart == "" {
			fixURP = "followers are catching up; watch them with " + d.tool("topics") + " --describe --under-replicated-partitions --topic " + name
		}
		if len(urp) > 0 {
			d.add("under-replicated", partitionsText(name, urp), "fewer in-sync replicas than replicas", fixURP)
		}
		if len(atMin) > 0 {
			d.add("at-min-isr", partitionsText(name, atMin),
				fmt.Sprintf("exactly min.insync.replicas=%d replicas in sync: one more failure stops acks=all writes", minISR), fixURP)
		}
		if len(oneRack) > 0 {
			d.add("single-rack", partitionsText(name, oneRack), "every replica is in one rack: losing that rack loses the partition", d.moveTopics(name))
		}
		if len(notPreferred) > 0 {
			fix := d.tool("leader-election") + " --election-type PREFERRED --topic " + name + " --partition " + strconv.Itoa(int(notPreferred[0]))
			if len(notPreferred) > 1 {
				fix = fmt.Sprintf("echo '%s' > elect.json && %s --election-type PREFERRED --path-to-json-file elect.json", partitionsJSON(name, notPreferred), d.tool("leader-election"))
			}
			d.add("preferred-leader", partitionsText(name, notPreferred), "the preferred leader (first replica) is in sync but does not lead", fix)
		}
	}
	return nil
}

// imbalanceChecks compares the live brokers' leaders and bytes with their
// mean.
func (d *doctor) imbalanceChecks(ctx context.Context) error {
	if len(d.brokers) < 2 {
		return nil
	}
	leaders := map[int32]int64{}
	leaderTopics := map[int32]map[string]int{}
	for _, t := range d.topics() {
		for _, p := range t.Partitions {
			if p.Leader >= 0 {
				leaders[p.Leader]++
				if leaderTopics[p.Leader] == nil {
					leaderTopics[p.Leader] = map[string]int{}
				}
				leaderTopics[p.Leader][t.Topic]++
			}
		}
	}
	dirs, err := d.tc.adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		return fmt.Errorf("describing log dirs: %w", err)
	}
	bytes := map[int32]int64{}
	topicBytes := map[int32]map[string]int{}
	for broker, ds := range dirs {
		topicBytes[broker] = map[string]int{}
		for _, dir := range ds {
			if dir.Err != nil {
				continue
			}
			dir.Topics.Each(func(p kadm.DescribedLogDirPartition) {
				bytes[broker] += p.Size
				topicBytes[broker][p.Topic] += int(min(p.Size, 1<<40))
			})
		}
	}
	var totalLeaders, totalBytes int64
	for _, b := range d.brokers {
		totalLeaders += leaders[b]
		totalBytes += bytes[b]
	}
	n := float64(len(d.brokers))
	meanLeaders, meanBytes := float64(totalLeaders)/n, float64(totalBytes)/n
	for _, b := range d.brokers {
		if l := float64(leaders[b]); l > d.f.imbalanceRatio*meanLeaders && l-meanLeaders > 2 {
			d.add("leader-imbalance", "broker "+strconv.Itoa(int(b)),
				fmt.Sprintf("leads %d partitions, %.1f times the brokers' mean of %.1f: it does most of the work", leaders[b], l/meanLeaders, meanLeaders),
				d.moveTopics(topTopics(leaderTopics[b])...))
		}
		if s := float64(bytes[b]); s > d.f.imbalanceRatio*meanBytes && s-meanBytes >= float64(d.f.imbalanceMinBytes) {
			d.add("bytes-imbalance", "broker "+strconv.Itoa(int(b)),
				fmt.Sprintf("holds %d bytes, %.1f times the brokers' mean of %.0f: it fills its disks first", bytes[b], s/meanBytes, meanBytes),
				d.moveTopics(topTopics(topicBytes[b])...))
		}
	}
	return nil
}

// topTopics are the (at most five) topics with the most of something, most
// first.
func topTopics(counts map[string]int) []string {
	names := slices.Sorted(maps.Keys(counts))
	slices.SortStableFunc(names, func(a, b string) int { return counts[b] - counts[a] })
	return names[:min(len(names), 5)]
}

// groupSample is a consumer group's committed offsets and their lag.
type groupSample struct {
	committed map[kadm.Partition]int64
	lag       int64
}

func (d *doctor) sampleGroups(ctx context.Context, groups []string) (map[string]groupSample, error) {
	out := map[string]groupSample{}
	topics := map[string]bool{}
	committed := map[string]kadm.OffsetResponses{}
	for _, g := range groups {
		c, err := d.tc.adm.FetchOffsets(ctx, g)
		if err != nil {
			return nil, fmt.Errorf("fetching the offsets of group %s: %w", g, err)
		}
		committed[g] = c
		c.Each(func(o kadm.OffsetResponse) { topics[o.Topic] = true })
	}
	ends := kadm.ListedOffsets{}
	if len(topics) > 0 {
		var err error
		if ends, err = d.tc.adm.ListEndOffsets(ctx, slices.Sorted(maps.Keys(topics))...); err != nil {
			return nil, fmt.Errorf("listing end offsets: %w", err)
		}
	}
	for _, g := range groups {
		s := groupSample{committed: map[kadm.Partition]int64{}}
		committed[g].Each(func(o kadm.OffsetResponse) {
			if o.Err != nil || o.At < 0 {
				return
			}
			s.committed[kadm.Partition{Topic: o.Topic, Partition: o.Partition}] = o.At
			if e, ok := ends.Lookup(o.Topic, o.Partition); ok && e.Err == nil && e.Offset > o.At {
				s.lag += e.Offset - o.At
			}
		})
		out[g] = s
	}
	return out, nil
}

func (d *doctor) groupChecks(ctx context.Context) error {
	listed, err := d.tc.adm.ListGroups(ctx)
	if err != nil {
		return fmt.Errorf("listing groups: %w", err)
	}
	var groups []string
	for _, g := range listed.Sorted() {
		if g.ProtocolType == "consumer" || g.ProtocolType == "" {
			groups = append(groups, g.Group)
		}
	}
	if len(groups) == 0 {
		return nil
	}
	descs, err := describeConsumerGroups(ctx, d.tc, groups)
	if err != nil {
		return fmt.Errorf("describing groups: %w", err)
	}
	first, err := d.sampleGroups(ctx, groups)
	if err != nil {
		return err
	}
	var second map[string]groupSample
	if d.f.lagInterval > 0 {
		select {
		case <-time.After(d.f.lagInterval):
		case <-ctx.Done():
			return ctx.Err()
		}
		if second, err = d.sampleGroups(ctx, groups); err != nil {
			return err
		}
	}
	for _, g := range groups {
		desc := descs[g]
		if len(desc.members) > 0 && len(first[g].committed) == 0 && (second == nil || len(second[g].committed) == 0) {
			d.add("group-no-commits", "group "+g,
				fmt.Sprintf("%d member%s and no committed offset: after a restart or rebalance its consumers start over from auto.offset.reset", len(desc.members), plural(len(desc.members))),
				"make the consumers commit (enable.auto.commit, or commitSync after processing); see what they consume with "+d.tool("consumer-groups")+" --describe --group "+g+" --members --verbose")
		}
		if second == nil {
			continue
		}
		a, b := first[g], second[g]
		if b.lag > a.lag && maps.Equal(a.committed, b.committed) {
			fix := "its consumers are stuck: see them with " + d.tool("consumer-groups") + " --describe --group " + g + " --members --verbose, and restart them"
			if len(desc.members) == 0 {
				fix = "no consumer of the group is running: start its consumers, or delete the group if it is no longer used: " + d.tool("consumer-groups") + " --delete --group " + g
			}
			d.add("group-lag-growing", "group "+g,
				fmt.Sprintf("lag grew from %d to %d in %s while its committed offsets did not move", a.lag, b.lag, d.f.lagInterval), fix)
		}
	}
	return nil
}

func (d *doctor) transactionChecks(ctx context.Context) error {
	if len(d.topics()) == 0 {
		return nil
	}
	hanging, err := findHanging(ctx, d.tc.cl, d.tc.adm, "", false, 0, -1, time.Duration(d.f.maxTxnTimeoutMin)*time.Minute, true)
	if err != nil {
		return fmt.Errorf("looking for hanging transactions: %w", err)
	}
	for _, h := range hanging {
		d.add("hanging-transaction", fmt.Sprintf("partition %s-%d, producer %d", h.Topic, h.Partition, h.ProducerID),
			fmt.Sprintf("a transaction open since offset %d that no coordinator will end: read_committed consumers stop there and the log cannot be compacted or cleaned past it", h.CurrentTxnStartOffset),
			fmt.Sprintf("%s abort --topic %s --partition %d --start-offset %d", d.tool("transactions"), h.Topic, h.Partition, h.CurrentTxnStartOffset))
	}
	return nil
}
