package group

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"
)

// ConsumerConfig holds the settings of consumer groups (KIP-848). Kafka's
// key for each field is in its comment; zero fields take Kafka's defaults
// (DefaultConsumerConfig).
type ConsumerConfig struct {
	// SessionTimeout is group.consumer.session.timeout.ms: a member that
	// does not heartbeat for this long is removed.
	SessionTimeout time.Duration
	// HeartbeatInterval is group.consumer.heartbeat.interval.ms, returned
	// to members in every ConsumerGroupHeartbeat response.
	HeartbeatInterval time.Duration
	// MaxSize is group.consumer.max.size.
	MaxSize int
	// Assignors is group.consumer.assignors: the server assignors members
	// may name ("uniform", "range"); the first is the default.
	Assignors []string
	// NewMemberID returns the member id of a version 0 join without one
	// (from version 1 the client chooses it). Nil uses a random Kafka Uuid
	// in its base64 form, as Kafka does; tests pass a deterministic one.
	NewMemberID func() string
}

// DefaultConsumerConfig returns Kafka's defaults.
func DefaultConsumerConfig() ConsumerConfig {
	return ConsumerConfig{
		SessionTimeout:    45 * time.Second,
		HeartbeatInterval: 5 * time.Second,
		MaxSize:           math.MaxInt32,
		Assignors:         []string{UniformAssignor, RangeAssignor},
	}
}

// withDefaults fills zero fields with Kafka's defaults. It panics on an
// assignor it does not know: that is a configuration bug.
func (cc ConsumerConfig) withDefaults() ConsumerConfig {
	def := DefaultConsumerConfig()
	if cc.SessionTimeout <= 0 {
		cc.SessionTimeout = def.SessionTimeout
	}
	if cc.HeartbeatInterval <= 0 {
		cc.HeartbeatInterval = def.HeartbeatInterval
	}
	if cc.MaxSize <= 0 {
		cc.MaxSize = def.MaxSize
	}
	if len(cc.Assignors) == 0 {
		cc.Assignors = def.Assignors
	}
	for _, a := range cc.Assignors {
		if assignorFunc(a) == nil {
			panic(fmt.Sprintf("group: unknown consumer group assignor %q", a))
		}
	}
	if cc.NewMemberID == nil {
		cc.NewMemberID = kafkaUUID
	}
	return cc
}

// kafkaUUID is Kafka's Uuid.randomUuid().toString(): 16 random bytes in
// unpadded URL-safe base64, never starting with '-'.
func kafkaUUID() string {
	for {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			panic(fmt.Sprintf("group: reading random bytes: %v", err))
		}
		if s := base64.RawURLEncoding.EncodeToString(b[:]); s[0] != '-' {
			return s
		}
	}
}

// GroupSettings are one consumer group's own settings, its GROUP configs
// (KIP-848); a zero field takes the ConsumerConfig's.
type GroupSettings struct {
	// SessionTimeout is the group's consumer.session.timeout.ms.
	SessionTimeout time.Duration
	// HeartbeatInterval is the group's consumer.heartbeat.interval.ms.
	HeartbeatInterval time.Duration
}

// SetGroupSettings tells the coordinator the groups' own settings: all
// of them when whole (a metadata snapshot), else those a metadata change
// changed, where a zero GroupSettings means the group has none left. A
// member gets its group's settings from its next heartbeat on: the
// interval in the answer, the session timeout in its expiry.
func (c *Coordinator) SetGroupSettings(now time.Time, settings map[string]GroupSettings, whole bool) Ready {
	c.out.Begin(now)
	gm := c.groups
	if whole || gm.settings == nil {
		gm.settings = map[string]GroupSettings{}
	}
	for id, s := range settings {
		if s == (GroupSettings{}) {
			delete(gm.settings, id)
		} else {
			gm.settings[id] = s
		}
	}
	return c.out.End()
}

// consumerTimeouts are a consumer group's session timeout and heartbeat
// interval: its own settings, else the broker's.
func (gm *groupManager) consumerTimeouts(id string) (session, heartbeat time.Duration) {
	s := gm.settings[id]
	session, heartbeat = gm.cfg.Consumer.SessionTimeout, gm.cfg.Consumer.HeartbeatInterval
	if s.SessionTimeout > 0 {
		session = s.SessionTimeout
	}
	if s.HeartbeatInterval > 0 {
		heartbeat = s.HeartbeatInterval
	}
	return session, heartbeat
}

// TopicInfo is what consumer groups need to know of a topic.
type TopicInfo struct {
	ID         [16]byte
	Partitions int32
}

// topicImage is the coordinator's copy of the broker's topics, changed in
// place by SetTopics and UpdateTopics.
type topicImage struct {
	byName  map[string]TopicInfo
	byID    map[[16]byte]string
	names   []string // sorted; nil when a change made it stale (sortedNames)
	version int64    // bumped by every change (and the first SetTopics)
}

// sortedNames returns every topic name, sorted.
func (t *topicImage) sortedNames() []string {
	if t.names == nil && len(t.byName) > 0 {
		t.names = make([]string, 0, len(t.byName))
		for name := range t.byName {
			t.names = append(t.names, name)
		}
		sort.Strings(t.names)
	}
	return t.names
}

// SetTopics tells the coordinator the topics that exist now (name -> id
// and partition count); the driver calls it at start-up, before serving,
// and with each whole metadata image (a snapshot). Consumer groups
// subscribed to a topic that appeared, went or changed are marked for a
// metadata refresh, as Kafka's onNewMetadataImage does: the next heartbeat
// of one of their members records the new subscription metadata, bumps the
// group epoch and recomputes the assignment (regex subscriptions are
// resolved again).
func (c *Coordinator) SetTopics(now time.Time, topics map[string]TopicInfo) Ready {
	c.out.Begin(now)
	var removed []string
	for name := range c.groups.topics.byName {
		if _, ok := topics[name]; !ok {
			removed = append(removed, name)
		}
	}
	c.groups.updateTopics(topics, removed)
	return c.out.End()
}

// UpdateTopics tells the coordinator what a metadata change did to the
// topics: changed holds those created or changed (their new id and
// partition count), removed those deleted. Its cost follows the change,
// not the number of topics; groups are marked as by SetTopics.
func (c *Coordinator) UpdateTopics(now time.Time, changed map[string]TopicInfo, removed []string) Ready {
	c.out.Begin(now)
	c.groups.updateTopics(changed, removed)
	return c.out.End()
}

func (gm *groupManager) updateTopics(changed map[string]TopicInfo, removed []string) {
	img := &gm.topics
	if img.byName == nil {
		img.byName, img.byID = map[string]TopicInfo{}, map[[16]byte]string{}
	}
	diff := map[string]bool{}
	for name, t := range changed {
		o, had := img.byName[name]
		if had && o == t {
			continue
		}
		if had && img.byID[o.ID] == name {
			delete(img.byID, o.ID)
		}
		if !had {
			img.names = nil
		}
		img.byName[name], img.byID[t.ID] = t, name
		diff[name] = true
	}
	for _, name := range removed {
		o, had := img.byName[name]
		if !had {
			continue
		}
		delete(img.byName, name)
		if img.byID[o.ID] == name {
			delete(img.byID, o.ID)
		}
		img.names = nil
		diff[name] = true
	}
	if len(diff) > 0 || img.version == 0 {
		img.version++ // 1 at the first: the topics are known from then on
	}
	if len(diff) > 0 {
		for _, g := range gm.sortedGroups(func(g *group) bool { return g.consumer != nil }) {
			cg := g.consumer
			if len(cg.regexSubs) > 0 || slices.ContainsFunc(cg.subscribedTopics(), func(t string) bool { return diff[t] }) {
				cg.refresh = true
			}
		}
	}
}

// subscriptionMetadata is what the group's subscribed topics are now.
// Until the first SetTopics the coordinator knows no topics: it keeps the
// recorded metadata rather than conclude every topic is gone.
func (gm *groupManager) subscriptionMetadata(cg *consumerGroup) map[string]topicMeta {
	if gm.topics.version == 0 {
		return cg.subMeta
	}
	m := make(map[string]topicMeta)
	for _, name := range cg.subscribedTopics() {
		if t, ok := gm.topics.byName[name]; ok {
			m[name] = topicMeta{id: t.ID, partitions: t.Partitions}
		}
	}
	return m
}

func equalTopicMeta(a, b map[string]topicMeta) bool {
	if len(a) != len(b) {
		return false
	}
	for name, t := range a {
		if u, ok := b[name]; !ok || u != t {
			return false
		}
	}
	return true
}
