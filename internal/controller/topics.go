package controller

import (
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	"weir/internal/metadata"
)

// MaxTopicNameLength is Kafka's limit on topic names.
const MaxTopicNameLength = 249

// ValidateTopicName applies Kafka's rules: 1-249 characters of
// [a-zA-Z0-9._-], and not "." or "..", with the messages of Kafka's
// Topic.validate.
func ValidateTopicName(name string) error {
	invalid := func(reason string) error { return errors.New("Topic name is invalid: " + reason) }
	switch {
	case name == "":
		return invalid("the empty string is not allowed")
	case name == "." || name == "..":
		return invalid("'" + name + "' is not allowed")
	case len(name) > MaxTopicNameLength:
		return invalid(fmt.Sprintf("the length of '%s' is longer than the max allowed length %d", name, MaxTopicNameLength))
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return invalid("'" + name + "' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'")
		}
	}
	return nil
}

// collisionName folds '.' into '_': Kafka refuses topics that differ only
// there, because metric names would collide.
func collisionName(name string) string { return strings.ReplaceAll(name, ".", "_") }

// maxCollisionSeparators bounds the names collidingTopic looks up (2 to
// the number of '.' and '_' in a name); a name with more is compared with
// every topic instead.
const maxCollisionSeparators = 8

// collidingTopic returns a topic of img, other than name itself, whose
// name folds to the same collisionName, or "". It looks up the variants
// of name (each '.' or '_' either way), so its cost does not grow with
// the number of topics unless name has many separators.
func collidingTopic(img *metadata.Image, name string) string {
	var at []int
	for i := 0; i < len(name); i++ {
		if name[i] == '.' || name[i] == '_' {
			at = append(at, i)
		}
	}
	if len(at) == 0 {
		return "" // only name itself folds to name
	}
	if len(at) > maxCollisionSeparators {
		folded := collisionName(name)
		for other := range img.Topics.All() {
			if other != name && collisionName(other) == folded {
				return other
			}
		}
		return ""
	}
	b := []byte(name)
	for mask := 0; mask < 1<<len(at); mask++ {
		for j, i := range at {
			b[i] = "_."[mask>>j&1]
		}
		if v := string(b); v != name && img.Topics.Get(v) != nil {
			return v
		}
	}
	return ""
}

// TopicError is a per-topic (or per-partition) failure with its Kafka
// error code. Its message is formatted only when asked for: a request
// naming millions of partitions of a topic with a long name gets as many
// errors, and an answer renders only the messages it sends. The arguments
// must not change after the error is made.
type TopicError struct {
	Code   *kerr.Error
	format string
	args   []any
}

func (e *TopicError) Error() string { return fmt.Sprintf(e.format, e.args...) }

func topicErr(code *kerr.Error, format string, args ...any) *TopicError {
	return &TopicError{Code: code, format: format, args: args}
}

// CreatedTopic describes a topic CreateTopics made (or would make, when
// validating only).
type CreatedTopic struct {
	ID                metadata.Uuid
	NumPartitions     int32
	ReplicationFactor int16
	Configs           map[string]string
}

// CreateTopicsResult is the answer of CreateTopics: per requested topic
// (by index), what was created or the error.
type CreateTopicsResult struct {
	Committed
	Topics []CreatedTopic
	Errs   []error
}

// CreateTopics creates the topics of a request, each independently.
func (c *Controller) CreateTopics(req *kmsg.CreateTopicsRequest) (CreateTopicsResult, error) {
	return run(c, func(img *metadata.Image) (result[CreateTopicsResult], error) { return c.createTopics(img, req) })
}

// createTopics builds CreateTopics. Nothing is to be waited for (Offset
// -1) unless topics are created.
func (c *Controller) createTopics(img *metadata.Image, req *kmsg.CreateTopicsRequest) (result[CreateTopicsResult], error) {
	res := result[CreateTopicsResult]{Answer: CreateTopicsResult{Committed{-1}, make([]CreatedTopic, len(req.Topics)), make([]error, len(req.Topics))}}
	results, errs := res.Answer.Topics, res.Answer.Errs
	seen := map[string]int{}
	for _, t := range req.Topics {
		seen[t.Topic]++
	}
	// Topics listed twice, and the metadata log's, are refused before
	// the rest of the request is looked at (and do not count in it).
	var partitions int64
	for i, t := range req.Topics {
		switch {
		case seen[t.Topic] > 1:
			errs[i] = topicErr(kerr.InvalidRequest, "topic %q is listed more than once in the request", t.Topic)
		case t.Topic == metadata.LogTopic:
			errs[i] = topicErr(kerr.InvalidRequest, "Creation of internal topic %s is prohibited.", metadata.LogTopic)
		default:
			partitions += newPartitions(t, c.cfg.Static.NumPartitions)
		}
	}
	if partitions > MaxPartitionsPerRequest {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = errTooManyPartitions
			}
		}
		return res, nil
	}
	// Validating only plans the same records, and is refused as large
	// batches are.
	var recs userRecords
	// Topics created earlier in this request count for collisions.
	pending := map[string]bool{}
	for i, t := range req.Topics {
		if errs[i] != nil {
			continue
		}
		trecs, created, err := c.planTopic(img, t, pending)
		if err != nil {
			errs[i] = err
			continue
		}
		results[i] = created
		pending[collisionName(t.Topic)] = true
		// Later topics of the request are placed against an image that
		// has this one, so their leaders spread too.
		if next, _, err := img.Apply(trecs, img.Offset); err == nil {
			img = next
		}
		if err := recs.add(trecs...); err != nil {
			return res, err
		}
	}
	if !req.ValidateOnly {
		res.Records = recs
	}
	return res, nil
}

// newPartitions counts the partitions a topic of CreateTopics asks for, as
// Kafka counts them before looking at anything else: the default count for
// -1, the assignments when given, nothing for an invalid count (refused).
func newPartitions(t kmsg.CreateTopicsRequestTopic, def int32) int64 {
	switch {
	case len(t.ReplicaAssignment) > 0:
		return int64(len(t.ReplicaAssignment))
	case t.NumPartitions == -1:
		return int64(def)
	case t.NumPartitions > 0:
		return int64(t.NumPartitions)
	}
	return 0
}

// planTopic validates one topic creation and returns its records.
func (c *Controller) planTopic(img *metadata.Image, t kmsg.CreateTopicsRequestTopic, pending map[string]bool) ([]metadata.Record, CreatedTopic, error) {
	var res CreatedTopic
	if err := ValidateTopicName(t.Topic); err != nil {
		return nil, res, topicErr(kerr.InvalidTopicException, "%v", err)
	}
	if img.Topics.Get(t.Topic) != nil {
		return nil, res, topicErr(kerr.TopicAlreadyExists, "Topic '%s' already exists.", t.Topic)
	}
	folded := collisionName(t.Topic)
	if pending[folded] {
		return nil, res, topicErr(kerr.InvalidTopicException, "Topic '%s' collides with another topic in the request.", t.Topic)
	}
	if name := collidingTopic(img, t.Topic); name != "" {
		return nil, res, topicErr(kerr.InvalidTopicException, "Topic '%s' collides with existing topic: %s", t.Topic, name)
	}
	cfgs := map[string]string{}
	for _, kv := range t.Configs {
		if kv.Value == nil {
			return nil, res, topicErr(kerr.InvalidConfig, "Null value not supported for topic configs: %s", kv.Name)
		}
		cfgs[kv.Name] = *kv.Value
	}
	if err := config.ValidateTopicConfigs(cfgs); err != nil {
		return nil, res, topicErr(kerr.InvalidConfig, "%v", err)
	}
	brokers := usableBrokers(img)
	var assignment [][]int32
	if len(t.ReplicaAssignment) > 0 {
		if t.NumPartitions != -1 || t.ReplicationFactor != -1 {
			return nil, res, topicErr(kerr.InvalidRequest, "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.")
		}
		var err error
		if assignment, err = manualAssignment(img, t.ReplicaAssignment); err != nil {
			return nil, res, err
		}
	} else {
		n := t.NumPartitions
		if n == -1 {
			n = c.cfg.Static.NumPartitions
		}
		rf := int(t.ReplicationFactor)
		if rf == -1 {
			rf = int(c.cfg.Static.DefaultReplicationFactor)
		}
		if rf <= 0 {
			return nil, res, topicErr(kerr.InvalidReplicationFactor, "Replication factor must be larger than 0, or -1 to use the default value.")
		}
		if n <= 0 {
			return nil, res, topicErr(kerr.InvalidPartitions, "Number of partitions was set to an invalid non-positive value.")
		}
		if rf > len(brokers) {
			return nil, res, topicErr(kerr.InvalidReplicationFactor, "Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered.", rf, rf, len(brokers))
		}
		assignment = placeNew(img, nil, int(n), rf)
	}
	id := newUUID()
	recs := []metadata.Record{&metadata.TopicRecord{Name: t.Topic, TopicId: id}}
	for p, replicas := range assignment {
		pr := metadata.NewPartitionRecord()
		pr.PartitionId, pr.TopicId = int32(p), id
		pr.Replicas, pr.Isr = replicas, liveReplicas(img, replicas)
		pr.Leader, pr.LeaderEpoch, pr.PartitionEpoch = firstOr(pr.Isr, -1), 0, 0
		pr.SetVersion(0) // Directories and ELR are not used yet
		recs = append(recs, pr)
	}
	for _, k := range sortedKeys(cfgs) {
		v := cfgs[k]
		recs = append(recs, &metadata.ConfigRecord{ResourceType: metadata.ResourceTopic, ResourceName: t.Topic, Name: k, Value: &v})
	}
	res = CreatedTopic{ID: id, NumPartitions: int32(len(assignment)), ReplicationFactor: int16(len(assignment[0])), Configs: cfgs}
	return recs, res, nil
}

func manualAssignment(img *metadata.Image, as []kmsg.CreateTopicsRequestTopicReplicaAssignment) ([][]int32, error) {
	out := make([][]int32, len(as))
	rf := -1
	for _, a := range as {
		if a.Partition < 0 || int(a.Partition) >= len(as) || out[a.Partition] != nil {
			return nil, topicErr(kerr.InvalidReplicaAssignment, "Partitions must be numbered 0 to %d without gaps or repeats.", len(as)-1)
		}
		if len(a.Replicas) == 0 {
			return nil, topicErr(kerr.InvalidReplicaAssignment, "Partition %d has no replicas.", a.Partition)
		}
		if rf >= 0 && len(a.Replicas) != rf {
			return nil, topicErr(kerr.InvalidReplicaAssignment, "All partitions should have the same number of replicas.")
		}
		rf = len(a.Replicas)
		seen := map[int32]bool{}
		for _, b := range a.Replicas {
			if seen[b] {
				return nil, topicErr(kerr.InvalidReplicaAssignment, "Duplicate brokers not allowed in replica assignment: %v for partition id %d.", a.Replicas, a.Partition)
			}
			seen[b] = true
			if img.Brokers[b] == nil {
				return nil, topicErr(kerr.InvalidReplicaAssignment, "The manual partition assignment includes broker %d, but no such broker is registered.", b)
			}
		}
		if len(liveReplicas(img, a.Replicas)) == 0 {
			return nil, topicErr(kerr.InvalidReplicaAssignment, "All brokers specified in the manual partition assignment for partition %d are fenced or in controlled shutdown.", a.Partition)
		}
		out[a.Partition] = a.Replicas
	}
	return out, nil
}

// liveReplicas keeps the replicas on active brokers (unfenced and not
// shutting down), in order: a new partition's ISR, as Kafka builds it.
func liveReplicas(img *metadata.Image, replicas []int32) []int32 {
	var out []int32
	for _, r := range replicas {
		if b := img.Brokers[r]; b != nil && !b.Fenced && !b.InControlledShutdown {
			out = append(out, r)
		}
	}
	return out
}

func firstOr(s []int32, def int32) int32 {
	if len(s) == 0 {
		return def
	}
	return s[0]
}

// TopicRef names a topic by name or id, as DeleteTopics does.
type TopicRef struct {
	Name string
	ID   metadata.Uuid
}

// DeleteTopicsResult is the answer of DeleteTopics: per requested topic
// (by index), its name and id (as requested when unknown) and its error
// (nil: deleted).
type DeleteTopicsResult struct {
	Committed
	Topics []TopicRef
	Errs   []error
}

// DeleteTopics removes topics.
func (c *Controller) DeleteTopics(refs []TopicRef) (DeleteTopicsResult, error) {
	return run(c, func(img *metadata.Image) (result[DeleteTopicsResult], error) { return deleteTopics(img, refs) })
}

// deleteTopics builds DeleteTopics.
func deleteTopics(img *metadata.Image, refs []TopicRef) (result[DeleteTopicsResult], error) {
	res := result[DeleteTopicsResult]{Answer: DeleteTopicsResult{Committed{img.Offset}, make([]TopicRef, len(refs)), make([]error, len(refs))}}
	out, errs := res.Answer.Topics, res.Answer.Errs
	var recs userRecords
	removed := map[metadata.Uuid]bool{}
	for i, r := range refs {
		var t *metadata.Topic
		switch {
		case r.Name != "":
			t = img.Topics.Get(r.Name)
		case r.ID != (metadata.Uuid{}):
			t = img.TopicsByID.Get(r.ID)
		}
		if t == nil {
			if r.Name == "" {
				errs[i] = topicErr(kerr.UnknownTopicID, "This server does not host this topic ID.")
			} else {
				errs[i] = topicErr(kerr.UnknownTopicOrPartition, "This server does not host this topic-partition.")
			}
			out[i] = r
			continue
		}
		out[i] = TopicRef{Name: t.Name, ID: t.ID}
		if removed[t.ID] {
			continue
		}
		removed[t.ID] = true
		if err := recs.add(&metadata.RemoveTopicRecord{TopicId: t.ID}); err != nil {
			return res, err
		}
	}
	res.Records = recs
	return res, nil
}

// CreatePartitionsResult is the answer of CreatePartitions: per requested
// topic (by index), its error (nil: done).
type CreatePartitionsResult struct {
	Committed
	Errs []error
}

// CreatePartitions raises partition counts.
func (c *Controller) CreatePartitions(req *kmsg.CreatePartitionsRequest) (CreatePartitionsResult, error) {
	return run(c, func(img *metadata.Image) (result[CreatePartitionsResult], error) { return createPartitions(img, req) })
}

// createPartitions builds CreatePartitions.
func createPartitions(img *metadata.Image, req *kmsg.CreatePartitionsRequest) (result[CreatePartitionsResult], error) {
	res := result[CreatePartitionsResult]{Answer: CreatePartitionsResult{Committed{img.Offset}, make([]error, len(req.Topics))}}
	errs := res.Answer.Errs
	seen := map[string]int{}
	for _, t := range req.Topics {
		seen[t.Topic]++
	}
	// The partitions added over the request are bounded before any is
	// placed, as CreateTopics bounds them.
	var adding int64
	for _, rt := range req.Topics {
		if t := img.Topics.Get(rt.Topic); t != nil && seen[rt.Topic] == 1 && rt.Count > int32(len(t.Partitions)) {
			adding += int64(rt.Count) - int64(len(t.Partitions))
		}
	}
	if adding > MaxPartitionsPerRequest {
		for i := range errs {
			errs[i] = errTooManyPartitions
		}
		res.Answer.Offset = -1
		return res, nil
	}
	var recs userRecords
	brokers := usableBrokers(img)
	for i, rt := range req.Topics {
		if seen[rt.Topic] > 1 {
			errs[i] = topicErr(kerr.InvalidRequest, "Duplicate topic in request.")
			continue
		}
		t := img.Topics.Get(rt.Topic)
		if t == nil {
			errs[i] = topicErr(kerr.UnknownTopicOrPartition, "The topic '%s' does not exist.", rt.Topic)
			continue
		}
		if m := img.Mirrors[t.ID]; m != nil && m.ReadOnly() {
			errs[i] = mirrorErr(img, m, rt.Topic, "its partition count is the source's")
			continue
		}
		cur := int32(len(t.Partitions))
		if rt.Count < cur {
			errs[i] = topicErr(kerr.InvalidPartitions, "The topic %s currently has %d partition(s); %d would not be an increase.", rt.Topic, cur, rt.Count)
			continue
		}
		if rt.Count == cur {
			errs[i] = topicErr(kerr.InvalidPartitions, "Topic already has %d partition(s).", cur)
			continue
		}
		rf := len(t.Partitions[0].Replicas)
		var assignment [][]int32
		if rt.Assignment != nil {
			if int32(len(rt.Assignment)) != rt.Count-cur {
				errs[i] = topicErr(kerr.InvalidReplicaAssignment, "Attempted to add %d additional partition(s), but only %d assignment(s) were specified.", rt.Count-cur, len(rt.Assignment))
				continue
			}
			var bad error
			for j, a := range rt.Assignment {
				if len(a.Replicas) != rf {
					bad = topicErr(kerr.InvalidReplicaAssignment, "The manual partition assignment includes a partition with %d replica(s), but this is not consistent with previous partitions, which have %d replica(s).", len(a.Replicas), rf)
					break
				}
				seen := map[int32]bool{}
				for _, b := range a.Replicas {
					if img.Brokers[b] == nil {
						bad = topicErr(kerr.InvalidReplicaAssignment, "The manual partition assignment includes broker %d, but no such broker is registered.", b)
						break
					}
					if seen[b] {
						bad = topicErr(kerr.InvalidReplicaAssignment, "The manual partition assignment includes the broker %d more than once.", b)
						break
					}
					seen[b] = true
				}
				if bad == nil && len(liveReplicas(img, a.Replicas)) == 0 {
					bad = topicErr(kerr.InvalidReplicaAssignment, "All brokers specified in the manual partition assignment for partition %d are fenced or in controlled shutdown.", cur+int32(j))
				}
				if bad != nil {
					break
				}
				assignment = append(assignment, a.Replicas)
			}
			if bad != nil {
				errs[i] = bad
				continue
			}
		} else {
			if rf > len(brokers) {
				errs[i] = topicErr(kerr.InvalidReplicationFactor, "Unable to replicate the partition %d time(s): only %d broker(s) are usable.", rf, len(brokers))
				continue
			}
			assignment = placeNew(img, t, int(rt.Count-cur), rf)
		}
		if req.ValidateOnly {
			continue
		}
		var trecs []metadata.Record
		for j, replicas := range assignment {
			pr := metadata.NewPartitionRecord()
			pr.PartitionId, pr.TopicId = cur+int32(j), t.ID
			pr.Replicas, pr.Isr = replicas, liveReplicas(img, replicas)
			pr.Leader, pr.LeaderEpoch, pr.PartitionEpoch = firstOr(pr.Isr, -1), 0, 0
			pr.SetVersion(0)
			trecs = append(trecs, pr)
		}
		if err := recs.add(trecs...); err != nil {
			return res, err
		}
		if next, _, err := img.Apply(trecs, img.Offset); err == nil {
			img = next
		}
	}
	res.Records = recs
	return res, nil
}
