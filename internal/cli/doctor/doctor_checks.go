package doctor

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
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/cli/groups"
	"weir/internal/cli/tool"
	"weir/internal/txnadmin"
)

// logOverhead is what message.max.bytes allows above max.request.size in
// Kafka's defaults (1048588 and 1048576): a log entry's offset and size.
const logOverhead = 12

// brokerCause is a risk that topics take from a broker setting: they do
// not set the topic key themselves.
type brokerCause struct {
	check, key, value string // the broker key and its value
	source            kmsg.ConfigSource
	topics            []string
	rf2               bool // a topic has two replicas (min-insync-replicas)
	over              string
	limit             int64
}

// inheritedFrom is the broker key from which topic has its value of key,
// and where that value is set; "" when the topic sets it itself (or the
// cluster does not say where values come from).
func (d *doctor) inheritedFrom(topic, key string) (string, kmsg.ConfigSource) {
	c, ok := d.sources[topic][key]
	if !ok || c.Source == kmsg.ConfigSourceDynamicTopicConfig || c.Source == kmsg.ConfigSourceUnknown {
		return "", c.Source
	}
	for _, s := range c.Synonyms {
		if s.Source != kmsg.ConfigSourceDynamicTopicConfig {
			return s.Key, c.Source
		}
	}
	if key == "max.message.bytes" {
		return "message.max.bytes", c.Source
	}
	return key, c.Source
}

func (d *doctor) topicChecks(context.Context) error {
	fetchMax := d.brokerMin("replica.fetch.max.bytes")
	causes := map[[3]string]*brokerCause{}
	inherit := func(check, topic, key, value string) (*brokerCause, bool) {
		bk, src := d.inheritedFrom(topic, key)
		if bk == "" {
			return nil, false
		}
		k := [3]string{check, bk, value}
		if causes[k] == nil {
			causes[k] = &brokerCause{check: check, key: bk, value: value, source: src}
		}
		causes[k].topics = append(causes[k].topics, topic)
		return causes[k], true
	}
	for _, t := range d.topics() {
		rf := replicationOf(t)
		name := t.Topic
		configs := d.tool("configs") + " --entity-type topics --entity-name " + name + " --alter --add-config "
		if minISR := d.intConfig(name, "min.insync.replicas", 1); rf > 1 && minISR <= 1 {
			if c, ok := inherit("min-insync-replicas", name, "min.insync.replicas", strconv.FormatInt(minISR, 10)); ok {
				c.rf2 = c.rf2 || rf == 2
			} else {
				problem := fmt.Sprintf("replication factor %d with min.insync.replicas=%d: a write acknowledged with acks=all may be on the leader only, and is lost with it", rf, minISR)
				if rf == 2 {
					problem += " (with 2 replicas, min.insync.replicas=2 stops acks=all writes while one is down: a replication factor of 3 is better)"
				}
				d.add("min-insync-replicas", "topic "+name, problem, configs+"min.insync.replicas=2")
			}
		}
		if rf > 1 && d.configs[name]["unclean.leader.election.enable"] == "true" {
			if _, ok := inherit("unclean-leader-election", name, "unclean.leader.election.enable", "true"); !ok {
				d.add("unclean-leader-election", "topic "+name,
					"unclean.leader.election.enable=true: when no in-sync replica is left, an out-of-sync one may lead and acknowledged writes are lost",
					configs+"unclean.leader.election.enable=false")
			}
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
		check("the brokers' replica.fetch.max.bytes", fetchMax, logOverhead)
		check("the producers' max.request.size", d.f.producerMaxRequest, logOverhead)
		if len(over) == 0 {
			continue
		}
		if c, ok := inherit("max-message-bytes", name, "max.message.bytes", strconv.FormatInt(mmb, 10)); ok {
			c.over, c.limit = strings.Join(over, " and "), limit
			continue
		}
		d.add("max-message-bytes", "topic "+name,
			fmt.Sprintf("max.message.bytes=%d is above %s: producers with default settings fail on batches the topic accepts, and followers replicate such batches one at a time; lower the topic's limit, or raise the others together with it", mmb, strings.Join(over, " and ")),
			configs+"max.message.bytes="+strconv.FormatInt(limit, 10))
	}
	keys := slices.SortedFunc(maps.Keys(causes), func(a, b [3]string) int { return slices.Compare(a[:], b[:]) })
	for _, k := range keys {
		c := causes[k]
		set := fmt.Sprintf("%s=%s %s", c.key, c.value, sourceText(c.source))
		var problem, fix string
		switch c.check {
		case "min-insync-replicas":
			problem = fmt.Sprintf("%s, and %s %s it: a write acknowledged with acks=all may be on the leader only, and is lost with it", set, topicsText("replicated topic", c.topics), takes(c.topics))
			if c.rf2 {
				problem += " (with 2 replicas, min.insync.replicas=2 stops acks=all writes while one is down: a replication factor of 3 is better)"
			}
			fix = d.brokerDefaultFix(c.key, "2")
		case "unclean-leader-election":
			problem = fmt.Sprintf("%s, and %s %s it: when no in-sync replica is left, an out-of-sync one may lead and acknowledged writes are lost", set, topicsText("replicated topic", c.topics), takes(c.topics))
			fix = d.brokerDefaultFix(c.key, "false")
		case "max-message-bytes":
			problem = fmt.Sprintf("%s is above %s, and %s %s it as max.message.bytes: producers with default settings fail on batches these topics accept, and followers replicate such batches one at a time; lower it, or raise the others with it (replica.fetch.max.bytes in every broker's server.properties, restarting them one at a time, and the producers' max.request.size)", set, c.over, topicsText("topic", c.topics), takes(c.topics))
			fix = d.brokerDefaultFix(c.key, strconv.FormatInt(c.limit, 10))
		}
		if c.source == kmsg.ConfigSourceStaticBrokerConfig {
			problem += "; the fix sets the cluster-wide dynamic default, which overrides server.properties: change it there too"
		}
		d.add(c.check, "broker setting "+c.key, problem, fix)
	}
	return nil
}

// sourceText says where a broker setting's value is set.
func sourceText(s kmsg.ConfigSource) string {
	switch s {
	case kmsg.ConfigSourceDynamicBrokerConfig:
		return "(a broker's dynamic setting)"
	case kmsg.ConfigSourceDynamicDefaultBrokerConfig:
		return "(the cluster-wide dynamic default)"
	case kmsg.ConfigSourceStaticBrokerConfig:
		return "(set in the brokers' server.properties)"
	default:
		return "(the default: no broker sets it)"
	}
}

// topicsText names the topics of a broker finding, the first ten by name.
func topicsText(what string, topics []string) string {
	if len(topics) == 1 {
		return what + " " + topics[0]
	}
	s := what + "s " + strings.Join(topics[:min(len(topics), 10)], ", ")
	if len(topics) > 10 {
		s += fmt.Sprintf(" and %d more", len(topics)-10)
	}
	return s
}

func takes(topics []string) string {
	if len(topics) == 1 {
		return "takes"
	}
	return "take"
}

// brokerDefaultFix sets key's cluster-wide dynamic default, and removes
// the per-broker dynamic values that would override it.
func (d *doctor) brokerDefaultFix(key, value string) string {
	fix := d.tool("configs") + " --entity-type brokers --entity-default --alter --add-config " + key + "=" + value
	for _, b := range d.brokers {
		if c, ok := d.brokerConfigs[b][key]; ok && c.Source == kmsg.ConfigSourceDynamicBrokerConfig {
			fix += fmt.Sprintf(" && %s --entity-type brokers --entity-name %d --alter --delete-config %s", d.tool("configs"), b, key)
		}
	}
	return fix
}

// brokerMin is the lowest value of an integer key of the live brokers
// (0 when none says).
func (d *doctor) brokerMin(key string) int64 {
	var out int64
	for _, b := range d.brokers {
		if c, ok := d.brokerConfigs[b][key]; ok && c.Value != nil {
			if v, err := strconv.ParseInt(*c.Value, 10, 64); err == nil && (out == 0 || v < out) {
				out = v
			}
		}
	}
	return out
}

// brokersWith are the live brokers whose key has value.
func (d *doctor) brokersWith(key, value string) []int32 {
	var out []int32
	for _, b := range d.brokers {
		if c, ok := d.brokerConfigs[b][key]; ok && c.Value != nil && *c.Value == value {
			out = append(out, b)
		}
	}
	return out
}

// brokerChecks are the broker settings with no topic counterpart.
func (d *doctor) brokerChecks(context.Context) error {
	if off := d.brokersWith("auto.leader.rebalance.enable", "false"); len(off) > 0 {
		d.add("auto-leader-rebalance", "broker setting auto.leader.rebalance.enable",
			fmt.Sprintf("false on broker%s %s: after a broker fails or restarts, leadership stays on the brokers it moved to instead of going back to the preferred replicas, and a few brokers do most of the work", tool.Plural(len(off)), tool.JoinInts(off)),
			fmt.Sprintf("set auto.leader.rebalance.enable=true in the server.properties of broker%s %s and restart them one at a time; meanwhile move leaders back with %s --election-type PREFERRED --all-topic-partitions", tool.Plural(len(off)), tool.JoinInts(off), d.tool("leader-election")))
	}
	return nil
}

// partitionsText names a topic's partitions in a finding.
func partitionsText(topic string, ps []int32) string {
	if len(ps) == 1 {
		return fmt.Sprintf("partition %s-%d", topic, ps[0])
	}
	return fmt.Sprintf("topic %s, partitions %s", topic, tool.JoinInts(ps))
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
		strings.Join(ts, ","), d.tool("reassign-partitions"), tool.JoinInts(d.brokers))
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
		var offline, urp, atMin, oneRack, notPreferred, single []int32
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
			if len(p.Replicas) == 1 && len(d.brokers) > 1 {
				single = append(single, p.Partition)
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
			restart = fmt.Sprintf("start broker %s again, or move the replicas off it: ", tool.JoinInts(deadIDs))
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
		if len(single) > 0 {
			subject := partitionsText(name, single)
			if len(single) == len(t.Partitions) {
				subject = "topic " + name
			}
			d.add("single-replica", subject, d.singleReplicaProblem(t), d.addReplicas(t, single))
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

// singleReplicaProblem says what one replica risks, and which broker
// setting made it so when one did.
func (d *doctor) singleReplicaProblem(t kadm.TopicDetail) string {
	problem := fmt.Sprintf("one replica on a cluster of %d brokers: while its broker is down the partition is offline, and the loss of that broker's disk loses its records", len(d.brokers))
	key := map[string]string{"__consumer_offsets": "offsets.topic.replication.factor", "__transaction_state": "transaction.state.log.replication.factor"}[t.Topic]
	if key != "" {
		return problem + fmt.Sprintf("; it was created with the brokers' %s=1 (change it in server.properties too, for a cluster set up again)", key)
	}
	if t.IsInternal {
		return problem
	}
	if off := d.brokersWith("default.replication.factor", "1"); len(off) > 0 {
		problem += "; topics created without --replication-factor, and auto-created ones, get the brokers' default.replication.factor=1: set it to 3 in their server.properties"
	}
	return problem
}

// addReplicas is the reassignment that gives partitions ps of t
// min(3, brokers) replicas: the current one first, then the live brokers
// that follow it.
func (d *doctor) addReplicas(t kadm.TopicDetail, ps []int32) string {
	want := min(3, len(d.brokers))
	var parts []string
	for _, p := range ps {
		r := t.Partitions[p].Replicas[0]
		replicas := []int32{r}
		at, _ := slices.BinarySearch(d.brokers, r)
		for i := 0; len(replicas) < want && i < len(d.brokers); i++ {
			if b := d.brokers[(at+i)%len(d.brokers)]; b != r {
				replicas = append(replicas, b)
			}
		}
		var rs []string
		for _, b := range replicas {
			rs = append(rs, strconv.Itoa(int(b)))
		}
		parts = append(parts, fmt.Sprintf(`{"topic":%q,"partition":%d,"replicas":[%s]}`, t.Topic, p, strings.Join(rs, ",")))
	}
	return fmt.Sprintf(`echo '{"version":1,"partitions":[%s]}' > replicas.json && %s --execute --reassignment-json-file replicas.json`,
		strings.Join(parts, ","), d.tool("reassign-partitions"))
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
	dirs, err := d.tc.Admin.DescribeAllLogDirs(ctx, nil)
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
		c, err := d.tc.Admin.FetchOffsets(ctx, g)
		if err != nil {
			return nil, fmt.Errorf("fetching the offsets of group %s: %w", g, err)
		}
		committed[g] = c
		c.Each(func(o kadm.OffsetResponse) { topics[o.Topic] = true })
	}
	ends := kadm.ListedOffsets{}
	if len(topics) > 0 {
		var err error
		if ends, err = d.tc.Admin.ListEndOffsets(ctx, slices.Sorted(maps.Keys(topics))...); err != nil {
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
	listed, err := d.tc.Admin.ListGroups(ctx)
	if err != nil {
		return fmt.Errorf("listing groups: %w", err)
	}
	var ids []string
	for _, g := range listed.Sorted() {
		if g.ProtocolType == "consumer" || g.ProtocolType == "" {
			ids = append(ids, g.Group)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	descs, err := groups.DescribeConsumerGroups(ctx, d.tc, ids)
	if err != nil {
		return fmt.Errorf("describing groups: %w", err)
	}
	first, err := d.sampleGroups(ctx, ids)
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
		if second, err = d.sampleGroups(ctx, ids); err != nil {
			return err
		}
	}
	for _, g := range ids {
		desc := descs[g]
		if len(desc.Members) > 0 && len(first[g].committed) == 0 && (second == nil || len(second[g].committed) == 0) {
			d.add("group-no-commits", "group "+g,
				fmt.Sprintf("%d member%s and no committed offset: after a restart or rebalance its consumers start over from auto.offset.reset", len(desc.Members), tool.Plural(len(desc.Members))),
				"make the consumers commit (enable.auto.commit, or commitSync after processing); see what they consume with "+d.tool("consumer-groups")+" --describe --group "+g+" --members --verbose")
		}
		if second == nil {
			continue
		}
		a, b := first[g], second[g]
		if b.lag > a.lag && maps.Equal(a.committed, b.committed) {
			fix := "its consumers are stuck: see them with " + d.tool("consumer-groups") + " --describe --group " + g + " --members --verbose, and restart them"
			if len(desc.Members) == 0 {
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
	hanging, err := txnadmin.FindHanging(ctx, d.tc.Kgo, d.tc.Admin, txnadmin.Scope{Broker: -1, SkipOffline: true},
		time.Duration(d.f.maxTxnTimeoutMin)*time.Minute, time.Now())
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
