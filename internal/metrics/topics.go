package metrics

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// The counters of kafka.server:type=BrokerTopicMetrics, in TopicCounters.c.
const (
	messagesIn = iota
	bytesIn
	bytesOut
	bytesRejected
	failedProduce
	failedFetch
	totalProduce
	totalFetch
	replicationBytesIn  // all topics only, as Kafka's
	replicationBytesOut // all topics only, as Kafka's
	numTopicCounters
)

// topicMetricNames are the BrokerTopicMetrics names (without PerSec),
// indexed as TopicCounters.c.
var topicMetricNames = [numTopicCounters]string{"MessagesIn", "BytesIn", "BytesOut", "BytesRejected",
	"FailedProduceRequests", "FailedFetchRequests", "TotalProduceRequests", "TotalFetchRequests",
	"ReplicationBytesIn", "ReplicationBytesOut"}

var topicMetricHelp = [numTopicCounters]string{
	"Records appended by Produce requests (Kafka's MessagesInPerSec).",
	"Bytes of the batches appended by Produce requests (Kafka's BytesInPerSec).",
	"Bytes of record batches sent to consumers in Fetch responses, follower fetches not included (Kafka's BytesOutPerSec).",
	"Bytes of produced batches refused as too large (Kafka's BytesRejectedPerSec).",
	"Partitions of Produce requests that failed with an error other than the expected ones: not leader, unknown partition, too large, corrupt, storage (Kafka's FailedProduceRequestsPerSec).",
	"Partitions of Fetch requests that failed with an error other than the expected ones: not leader, unknown partition or epoch, offset out of range, storage (Kafka's FailedFetchRequestsPerSec).",
	"Partitions of Produce requests handed to the log, failed or not (Kafka's TotalProduceRequestsPerSec).",
	"Partitions read for Fetch requests, consumers' and followers' (Kafka's TotalFetchRequestsPerSec).",
	"Bytes of batches a follower replica here appended from its leader (Kafka's ReplicationBytesInPerSec).",
	"Bytes of record batches sent to follower replicas in Fetch responses (Kafka's ReplicationBytesOutPerSec).",
}

// descTopic are the per-topic series; descAllTopics the all-topics ones,
// the same family without the topic label, as Kafka's MBean without its
// topic key.
var descTopic, descAllTopics [numTopicCounters]*prometheus.Desc

func init() {
	for i, n := range topicMetricNames {
		name := "server_brokertopicmetrics_" + strings.ToLower(n) + "_total"
		descTopic[i] = kdesc(name, topicMetricHelp[i], "topic")
		descAllTopics[i] = kdesc(name, topicMetricHelp[i])
	}
}

// TopicCounters are the BrokerTopicMetrics counts of one topic on this
// broker, shared by its local replicas: each holds the pointer
// [BrokerTopicStats.Acquire] gave it, so the produce and fetch paths count
// with an atomic add and no lookup. Its methods are safe for concurrent
// use and do nothing on a nil *TopicCounters.
type TopicCounters struct {
	topic string
	refs  int // under BrokerTopicStats.mu
	c     [numTopicCounters]atomic.Uint64
}

func (t *TopicCounters) add(i int, n int) {
	if t != nil {
		t.c[i].Add(uint64(n))
	}
}

// ProduceRequested counts one partition of a Produce request handed to
// the log, whatever comes of it.
func (t *TopicCounters) ProduceRequested() { t.add(totalProduce, 1) }

// Produced counts a batch appended for a Produce request: its records and
// its size in bytes.
func (t *TopicCounters) Produced(records, bytes int) {
	t.add(messagesIn, records)
	t.add(bytesIn, bytes)
}

// ProduceFailed counts a partition of a Produce request that failed with
// an error Kafka counts as a failure (see the metric's help).
func (t *TopicCounters) ProduceFailed() { t.add(failedProduce, 1) }

// Rejected counts the bytes of a batch refused as too large.
func (t *TopicCounters) Rejected(bytes int) { t.add(bytesRejected, bytes) }

// FetchRequested counts one partition read for a Fetch request.
func (t *TopicCounters) FetchRequested() { t.add(totalFetch, 1) }

// FetchFailed counts a partition of a Fetch request that failed with an
// error Kafka counts as a failure.
func (t *TopicCounters) FetchFailed() { t.add(failedFetch, 1) }

// Sent counts the record bytes of a partition in a Fetch response that
// is sent: to a follower (replication) or a consumer.
func (t *TopicCounters) Sent(bytes int, follower bool) {
	if follower {
		t.add(replicationBytesOut, bytes)
	} else {
		t.add(bytesOut, bytes)
	}
}

// Replicated counts the bytes of batches a follower appended from its
// leader.
func (t *TopicCounters) Replicated(bytes int) { t.add(replicationBytesIn, bytes) }

// BrokerTopicStats holds the TopicCounters of the topics this broker has
// replicas of. The per-topic series exist while it has one (Kafka removes
// a topic's metrics when its last local replica goes); the all-topics
// series sum every topic, those gone included. Its methods are safe for
// concurrent use and on a nil *BrokerTopicStats (Acquire then returns
// nil).
type BrokerTopicStats struct {
	mu     sync.Mutex
	topics map[string]*TopicCounters
	gone   [numTopicCounters]uint64 // counts of topics released
	// other counts what belongs to no local replica (a produce to a
	// partition not hosted here): all topics only.
	other TopicCounters
}

// NewBrokerTopicStats returns an empty set.
func NewBrokerTopicStats() *BrokerTopicStats {
	return &BrokerTopicStats{topics: map[string]*TopicCounters{}}
}

// Acquire returns topic's counters for a new local replica of it; call
// Release when the replica goes.
func (b *BrokerTopicStats) Acquire(topic string) *TopicCounters {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.topics[topic]
	if t == nil {
		t = &TopicCounters{topic: topic}
		b.topics[topic] = t
	}
	t.refs++
	return t
}

// Release gives back a replica's counters. With the topic's last local
// replica its series end, and its counts stay in the all-topics series.
// Counts added after that are lost.
func (b *BrokerTopicStats) Release(t *TopicCounters) {
	if b == nil || t == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if t.refs--; t.refs > 0 {
		return
	}
	delete(b.topics, t.topic)
	for i := range t.c {
		b.gone[i] += t.c[i].Load()
	}
}

// Unattributed counts the events of no local replica: they appear in the
// all-topics series only.
func (b *BrokerTopicStats) Unattributed() *TopicCounters {
	if b == nil {
		return nil
	}
	return &b.other
}

func (b *BrokerTopicStats) collect(ch chan<- prometheus.Metric) {
	b.mu.Lock()
	defer b.mu.Unlock()
	all := b.gone
	for i := range all {
		all[i] += b.other.c[i].Load()
	}
	for name, t := range b.topics {
		for i := range t.c {
			v := t.c[i].Load()
			all[i] += v
			if i != replicationBytesIn && i != replicationBytesOut {
				ch <- prometheus.MustNewConstMetric(descTopic[i], prometheus.CounterValue, float64(v), name)
			}
		}
	}
	for i, v := range all {
		ch <- prometheus.MustNewConstMetric(descAllTopics[i], prometheus.CounterValue, float64(v))
	}
}

// topicCollector reports the BrokerTopicMetrics. It describes nothing
// (an unchecked collector): each family has series with and without the
// topic label, as Kafka's MBeans do, which a checked collector cannot.
type topicCollector struct{ b *BrokerTopicStats }

func (topicCollector) Describe(chan<- *prometheus.Desc) {}

func (c topicCollector) Collect(ch chan<- prometheus.Metric) { c.b.collect(ch) }
