package metadata

import (
	"fmt"
	"maps"
	"slices"
	"sort"
)

// Config resource types, as Kafka numbers them in ConfigRecord and the
// config APIs.
const (
	ResourceTopic  int8 = 2
	ResourceBroker int8 = 4
	// ResourceGroup holds one group's configs (KIP-848), named by group id.
	ResourceGroup int8 = 32
)

// ConfigResource names a resource with dynamic configs. A broker resource
// with Name "" holds the cluster-wide broker defaults.
type ConfigResource struct {
	Type int8
	Name string
}

// Partition is the replica assignment and leadership of one partition.
type Partition struct {
	ID                  int32
	Replicas            []int32
	ISR                 []int32
	Removing            []int32
	Adding              []int32
	Leader              int32 // -1: offline
	LeaderEpoch         int32
	PartitionEpoch      int32
	LeaderRecoveryState int8
	ELR                 []int32
	LastKnownELR        []int32
}

// HasReplica reports whether broker holds a replica of the partition.
func (p *Partition) HasReplica(broker int32) bool { return slices.Contains(p.Replicas, broker) }

// Topic is one topic and its partitions.
type Topic struct {
	Name       string
	ID         Uuid
	Partitions map[int32]*Partition
}

// SortedPartitions returns the partitions by id.
func (t *Topic) SortedPartitions() []*Partition {
	ps := make([]*Partition, 0, len(t.Partitions))
	for _, p := range t.Partitions {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].ID < ps[j].ID })
	return ps
}

// BrokerLoad is what a broker holds of the image's partitions, all
// topics together: what replica placement balances.
type BrokerLoad struct {
	Replicas       int // partitions whose replicas include it
	PreferredLeads int // partitions whose first replica (preferred leader) it is
}

// Broker is a broker's registration.
type Broker struct {
	ID                   int32
	Epoch                int64
	IncarnationID        Uuid
	Endpoints            []BrokerEndpoint
	Rack                 *string
	Fenced               bool
	InControlledShutdown bool
	LogDirs              []Uuid
}

// Endpoint returns the broker's listener named name.
func (b *Broker) Endpoint(name string) (BrokerEndpoint, bool) {
	for _, e := range b.Endpoints {
		if e.Name == name {
			return e, true
		}
	}
	return BrokerEndpoint{}, false
}

// ELRFeature is the feature whose level 1 enables eligible leader
// replicas (KIP-966): the partitions' ELR fields and the strict
// min.insync.replicas rule for the high watermark.
const ELRFeature = "eligible.leader.replicas.version"

// Image is an immutable view of the cluster metadata as of Offset, the
// metadata log offset of the last record applied. Apply returns a new
// Image sharing everything that did not change; nothing reachable from an
// Image is ever mutated, so readers need no locks.
type Image struct {
	Offset         int64
	Topics         Map[string, *Topic] // persistent: see Map
	TopicsByID     Map[Uuid, *Topic]
	Brokers        map[int32]*Broker
	Configs        map[ConfigResource]map[string]string
	Features       map[string]int16
	NextProducerID int64
	// Links are the cluster links, by id; Mirrors the mirror state of
	// topics, by topic id (image_links.go).
	Links   map[Uuid]*Link
	Mirrors map[Uuid]*Mirror
	// Scram holds the users' SCRAM credentials (image_scram.go).
	Scram map[ScramKey]ScramCredential
	// ACLs are the access control entries, by id (image_acls.go).
	ACLs map[Uuid]ACL
	// ClientQuotas are the client quotas, by entity and key
	// (image_quotas.go).
	ClientQuotas map[QuotaEntity]map[string]float64
	// BrokerLoads are the brokers' loads, by id (registered or not), kept up
	// to date as records apply so that placement reads them without
	// visiting the partitions. A broker holding no replica has no entry,
	// so images of the same topics are equal however they were built.
	BrokerLoads map[int32]BrokerLoad
}

// Empty is the image before any record.
func Empty() *Image {
	return &Image{Offset: -1,
		Brokers: map[int32]*Broker{}, Configs: map[ConfigResource]map[string]string{}, Features: map[string]int16{},
		Links: map[Uuid]*Link{}, Mirrors: map[Uuid]*Mirror{},
		Scram: map[ScramKey]ScramCredential{}, ACLs: map[Uuid]ACL{}, ClientQuotas: map[QuotaEntity]map[string]float64{},
		BrokerLoads: map[int32]BrokerLoad{}}
}

// TopicConfig returns a topic's dynamic config overrides (never nil).
func (im *Image) TopicConfig(topic string) map[string]string {
	if c := im.Configs[ConfigResource{ResourceTopic, topic}]; c != nil {
		return c
	}
	return map[string]string{}
}

// BrokerConfig returns the dynamic configs of broker id ("" for the
// cluster-wide defaults) (never nil).
func (im *Image) BrokerConfig(id string) map[string]string {
	if c := im.Configs[ConfigResource{ResourceBroker, id}]; c != nil {
		return c
	}
	return map[string]string{}
}

// GroupConfig returns a group's dynamic configs (never nil).
func (im *Image) GroupConfig(group string) map[string]string {
	if c := im.Configs[ConfigResource{ResourceGroup, group}]; c != nil {
		return c
	}
	return map[string]string{}
}

// Delta is what one Apply changed.
type Delta struct {
	// Topics created or whose partitions changed, by name (the new state).
	ChangedTopics map[string]*Topic
	// ChangedPartitions lists, per topic id, the partitions created or changed.
	ChangedPartitions map[Uuid]map[int32]bool
	// DeletedTopics are topics removed, with their last state.
	DeletedTopics map[Uuid]*Topic
	// ChangedConfigs are resources whose dynamic configs changed.
	ChangedConfigs map[ConfigResource]bool
	ChangedBrokers map[int32]bool
	// ChangedLinks is set when a cluster link was created, changed or
	// removed. A mirror state change marks its topic changed.
	ChangedLinks bool
	// ChangedACLs is set when an ACL was added or removed.
	ChangedACLs bool
	// ChangedQuotas is set when a client quota changed.
	ChangedQuotas bool
}

func newDelta() *Delta {
	return &Delta{ChangedTopics: map[string]*Topic{}, ChangedPartitions: map[Uuid]map[int32]bool{},
		DeletedTopics: map[Uuid]*Topic{}, ChangedConfigs: map[ConfigResource]bool{}, ChangedBrokers: map[int32]bool{}}
}

// builder copies the parts of an image a batch of records touches.
type builder struct {
	im            Image
	topicsCopied  bool
	topics        mapEdit[string, *Topic]
	topicsByID    mapEdit[Uuid, *Topic]
	brokersCopied bool
	configsCopied bool
	scramCopied   bool
	aclsCopied    bool
	loadsCopied   bool
	ownTopics     map[Uuid]bool // topics already copied in this build
	delta         *Delta
}

// Apply applies records (committed at offsets ending with lastOffset) to
// im and returns the new image and what changed. A record that does not
// make sense against the image (a partition of an unknown topic) is an
// error: the metadata log is the source of truth, so this means a bug.
func (im *Image) Apply(records []Record, lastOffset int64) (*Image, *Delta, error) {
	b := &builder{im: *im, ownTopics: map[Uuid]bool{}, delta: newDelta()}
	for _, r := range records {
		if err := b.apply(r); err != nil {
			return nil, nil, fmt.Errorf("metadata: applying %s: %w", RecordName(r.APIKey()), err)
		}
	}
	if b.topicsCopied {
		b.im.Topics, b.im.TopicsByID = b.topics.done(), b.topicsByID.done()
	}
	b.im.Offset = lastOffset
	return &b.im, b.delta, nil
}

func (b *builder) copyTopics() {
	if !b.topicsCopied {
		b.topics.start(b.im.Topics)
		b.topicsByID.start(b.im.TopicsByID)
		b.im.Topics, b.im.TopicsByID = b.topics.m, b.topicsByID.m
		b.topicsCopied = true
	}
}

// topic returns a private copy of the topic with id, for mutation.
func (b *builder) topic(id Uuid) (*Topic, error) {
	t := b.im.TopicsByID.Get(id)
	if t == nil {
		return nil, fmt.Errorf("unknown topic id %s", id)
	}
	if b.ownTopics[id] {
		return t, nil
	}
	b.copyTopics()
	c := &Topic{Name: t.Name, ID: t.ID, Partitions: maps.Clone(t.Partitions)}
	b.topics.set(c.Name, c)
	b.topicsByID.set(id, c)
	b.ownTopics[id] = true
	return c, nil
}

func (b *builder) changed(t *Topic, partition int32) {
	b.delta.ChangedTopics[t.Name] = t
	if b.delta.ChangedPartitions[t.ID] == nil {
		b.delta.ChangedPartitions[t.ID] = map[int32]bool{}
	}
	if partition >= 0 {
		b.delta.ChangedPartitions[t.ID][partition] = true
	}
}

func (b *builder) apply(r Record) error {
	switch r := r.(type) {
	case *TopicRecord:
		if old := b.im.Topics.Get(r.Name); old != nil {
			return fmt.Errorf("topic %q already exists", r.Name)
		}
		b.copyTopics()
		t := &Topic{Name: r.Name, ID: r.TopicId, Partitions: map[int32]*Partition{}}
		b.topics.set(r.Name, t)
		b.topicsByID.set(r.TopicId, t)
		b.ownTopics[r.TopicId] = true
		b.changed(t, -1)
	case *PartitionRecord:
		t, err := b.topic(r.TopicId)
		if err != nil {
			return err
		}
		if old := t.Partitions[r.PartitionId]; old != nil {
			b.addLoad(old.Replicas, -1)
		}
		b.addLoad(r.Replicas, 1)
		t.Partitions[r.PartitionId] = &Partition{
			ID: r.PartitionId, Replicas: r.Replicas, ISR: r.Isr, Removing: r.RemovingReplicas, Adding: r.AddingReplicas,
			Leader: r.Leader, LeaderEpoch: r.LeaderEpoch, PartitionEpoch: r.PartitionEpoch,
			LeaderRecoveryState: r.LeaderRecoveryState, ELR: r.EligibleLeaderReplicas, LastKnownELR: r.LastKnownElr,
		}
		b.changed(t, r.PartitionId)
	case *PartitionChangeRecord:
		t, err := b.topic(r.TopicId)
		if err != nil {
			return err
		}
		old := t.Partitions[r.PartitionId]
		if old == nil {
			return fmt.Errorf("unknown partition %s-%d", t.Name, r.PartitionId)
		}
		p := *old
		if r.Isr != nil {
			p.ISR = r.Isr
		}
		if r.Replicas != nil {
			b.addLoad(p.Replicas, -1)
			b.addLoad(r.Replicas, 1)
			p.Replicas = r.Replicas
		}
		if r.RemovingReplicas != nil {
			p.Removing = r.RemovingReplicas
		}
		if r.AddingReplicas != nil {
			p.Adding = r.AddingReplicas
		}
		if r.EligibleLeaderReplicas != nil {
			p.ELR = r.EligibleLeaderReplicas
		}
		if r.LastKnownElr != nil {
			p.LastKnownELR = r.LastKnownElr
		}
		if r.LeaderRecoveryState >= 0 {
			p.LeaderRecoveryState = r.LeaderRecoveryState
		}
		// Kafka bumps the leader epoch when the leader changes; the
		// partition epoch on every change.
		if r.Leader != -2 {
			p.Leader = r.Leader
			p.LeaderEpoch++
		}
		p.PartitionEpoch++
		t.Partitions[r.PartitionId] = &p
		b.changed(t, r.PartitionId)
	case *RemoveTopicRecord:
		t := b.im.TopicsByID.Get(r.TopicId)
		if t == nil {
			return fmt.Errorf("unknown topic id %s", r.TopicId)
		}
		for _, p := range t.Partitions {
			b.addLoad(p.Replicas, -1)
		}
		b.copyTopics()
		b.topics.delete(t.Name)
		b.topicsByID.delete(r.TopicId)
		delete(b.delta.ChangedTopics, t.Name)
		delete(b.delta.ChangedPartitions, r.TopicId)
		b.delta.DeletedTopics[r.TopicId] = t
		b.setConfigs(ConfigResource{ResourceTopic, t.Name}, nil)
		b.dropMirror(r.TopicId)
	case *ConfigRecord:
		res := ConfigResource{r.ResourceType, r.ResourceName}
		cur := maps.Clone(b.im.Configs[res])
		if cur == nil {
			cur = map[string]string{}
		}
		if r.Value == nil {
			delete(cur, r.Name)
		} else {
			cur[r.Name] = *r.Value
		}
		b.setConfigs(res, cur)
	case *RegisterBrokerRecord:
		b.setBroker(&Broker{ID: r.BrokerId, Epoch: r.BrokerEpoch, IncarnationID: r.IncarnationId,
			Endpoints: r.EndPoints, Rack: r.Rack, Fenced: r.Fenced, InControlledShutdown: r.InControlledShutdown, LogDirs: r.LogDirs})
	case *UnregisterBrokerRecord:
		if !b.brokersCopied {
			b.im.Brokers = maps.Clone(b.im.Brokers)
			b.brokersCopied = true
		}
		delete(b.im.Brokers, r.BrokerId)
		b.delta.ChangedBrokers[r.BrokerId] = true
	case *FenceBrokerRecord:
		return b.changeBroker(r.Id, r.Epoch, func(br *Broker) { br.Fenced = true })
	case *UnfenceBrokerRecord:
		return b.changeBroker(r.Id, r.Epoch, func(br *Broker) { br.Fenced = false })
	case *BrokerRegistrationChangeRecord:
		return b.changeBroker(r.BrokerId, r.BrokerEpoch, func(br *Broker) {
			switch r.Fenced {
			case 1:
				br.Fenced = true
			case -1:
				br.Fenced = false
			}
			if r.InControlledShutdown == 1 {
				br.InControlledShutdown = true
			}
			if len(r.LogDirs) > 0 {
				br.LogDirs = r.LogDirs
			}
		})
	case *ProducerIdsRecord:
		b.im.NextProducerID = r.NextProducerId
	case *FeatureLevelRecord:
		b.im.Features = maps.Clone(b.im.Features)
		if r.FeatureLevel == 0 {
			delete(b.im.Features, r.Name)
		} else {
			b.im.Features[r.Name] = r.FeatureLevel
		}
	case *UserScramCredentialRecord, *RemoveUserScramCredentialRecord:
		b.applyScram(r)
	case *AccessControlEntryRecord, *RemoveAccessControlEntryRecord:
		return b.applyACL(r)
	case *ClientQuotaRecord:
		b.applyQuota(r)
	case *NoOpRecord:
	default:
		if ok, err := b.applyLinkRecord(r); ok {
			return err
		}
		// Delegation tokens are carried by the log; weir does not act
		// on them yet.
	}
	return nil
}

func (b *builder) setConfigs(res ConfigResource, cfg map[string]string) {
	if !b.configsCopied {
		b.im.Configs = maps.Clone(b.im.Configs)
		b.configsCopied = true
	}
	if len(cfg) == 0 {
		delete(b.im.Configs, res)
	} else {
		b.im.Configs[res] = cfg
	}
	b.delta.ChangedConfigs[res] = true
}

// addLoad adds (sign 1) or takes away (sign -1) a partition of replicas
// to or from its brokers' loads.
func (b *builder) addLoad(replicas []int32, sign int) {
	if len(replicas) == 0 {
		return
	}
	if !b.loadsCopied {
		b.im.BrokerLoads = cloneMap(b.im.BrokerLoads)
		b.loadsCopied = true
	}
	for k, id := range replicas {
		l := b.im.BrokerLoads[id]
		l.Replicas += sign
		if k == 0 {
			l.PreferredLeads += sign
		}
		if l == (BrokerLoad{}) {
			delete(b.im.BrokerLoads, id)
		} else {
			b.im.BrokerLoads[id] = l
		}
	}
}

func (b *builder) setBroker(br *Broker) {
	if !b.brokersCopied {
		b.im.Brokers = maps.Clone(b.im.Brokers)
		b.brokersCopied = true
	}
	b.im.Brokers[br.ID] = br
	b.delta.ChangedBrokers[br.ID] = true
}

func (b *builder) changeBroker(id int32, epoch int64, fn func(*Broker)) error {
	old := b.im.Brokers[id]
	if old == nil {
		return fmt.Errorf("unknown broker %d", id)
	}
	if old.Epoch != epoch {
		return fmt.Errorf("broker %d epoch %d, record has %d", id, old.Epoch, epoch)
	}
	c := *old
	fn(&c)
	b.setBroker(&c)
	return nil
}
