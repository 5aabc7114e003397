package doctor

// weir doctor's partitions-grown check: keyed records that sit where
// Kafka's default partitioner puts their keys over fewer partitions than
// the topic has now.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/cli/tool"
	"weir/internal/cli/topics"
)

const (
	// minMisplacedKeys is how many distinct keys must sit off the current
	// count's partitions before a smaller count is believed: a few keys of
	// another partitioner may fit a smaller count by chance, five hardly.
	minMisplacedKeys = 5
	// maxEarlierCounts is how many successive increases are looked for.
	maxEarlierCounts = 3
)

// keyedRecord is where a record with a key was found.
type keyedRecord struct {
	key       string
	partition int32
}

// earlierCounts are the partition counts below n over which Kafka's
// default partitioner (murmur2 of the key, made positive, modulo the
// count) put the keys that sit in partitions the count n does not give
// them, smallest first, and the partitions holding those keys. It is nil
// when every key is where n puts it, when fewer than minMisplacedKeys
// distinct keys are misplaced, or when no maxEarlierCounts counts explain
// every misplaced key (another partitioner placed them).
func earlierCounts(n int, records []keyedRecord) (counts []int, partitions []int32) {
	part := kgo.StickyKeyPartitioner(nil).ForTopic("")
	at := func(key string, count int) int32 {
		return int32(part.Partition(&kgo.Record{Key: []byte(key)}, count))
	}
	misplaced := map[keyedRecord]bool{}
	keys := map[string]bool{}
	for _, r := range records {
		if at(r.key, n) != r.partition {
			misplaced[r] = true
			keys[r.key] = true
		}
	}
	if len(keys) < minMisplacedKeys {
		return nil, nil
	}
	held := map[int32]bool{}
	for r := range misplaced {
		held[r.partition] = true
	}
	for len(misplaced) > 0 && len(counts) < maxEarlierCounts {
		best, explained := 0, 0
		for c := n - 1; c >= 1; c-- {
			k := 0
			for r := range misplaced {
				if at(r.key, c) == r.partition {
					k++
				}
			}
			if k > explained {
				best, explained = c, k
			}
		}
		if best == 0 {
			break
		}
		counts = append(counts, best)
		for r := range misplaced {
			if at(r.key, best) == r.partition {
				delete(misplaced, r)
			}
		}
	}
	if len(misplaced) > 0 {
		return nil, nil
	}
	slices.Sort(counts)
	return counts, slices.Sorted(maps.Keys(held))
}

// keyChecks samples the latest records of the first --sample-topics topics
// with two partitions or more, each within --sample-bytes and
// --sample-timeout.
func (d *doctor) keyChecks(ctx context.Context) error {
	sampled := 0
	for _, t := range d.topics() {
		if sampled >= d.f.sampleTopics {
			break
		}
		if t.IsInternal || strings.HasPrefix(t.Topic, "__") || len(t.Partitions) < 2 {
			continue
		}
		sampled++
		var records []keyedRecord
		tctx, cancel := context.WithTimeout(ctx, d.f.sampleTimeout)
		err := topics.SampleRecords(tctx, d.tc, t, d.f.sampleRecords, d.f.sampleBytes, func(r *kgo.Record) bool {
			if r.Key != nil {
				records = append(records, keyedRecord{string(r.Key), r.Partition})
			}
			return false
		})
		cancel()
		// Out of time for this topic: what was read is the sample.
		if err != nil && !(errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil) {
			return fmt.Errorf("reading the records of %s: %w", t.Topic, err)
		}
		counts, held := earlierCounts(len(t.Partitions), records)
		if counts == nil {
			continue
		}
		var over []string
		for _, c := range counts {
			over = append(over, strconv.Itoa(c))
		}
		n := len(t.Partitions)
		d.add("partitions-grown", "topic "+t.Topic,
			fmt.Sprintf("keyed records in partition%s %s were partitioned over %s partitions (Kafka's default partitioner); the topic now has %d: keys written after the increase go to other partitions than their earlier records, so per-key order broke at the increase (consumers may apply a key's later record before its earlier ones)",
				tool.Plural(len(held)), tool.JoinInts(held), strings.Join(over, ", then "), n),
			fmt.Sprintf("partitions cannot be removed. Where consumers depend on per-key order: let them finish the records written before the increase (lag 0 on the old partitions: %s --describe --all-groups) before the new partitions' records of the same keys, and make them drop a record older than the state they hold (a version per key); or move to a topic created with its final count (%s --create --topic %s.v2 --partitions %d --replication-factor %d), writing to both and then reading the new one",
				d.tool("consumer-groups"), d.tool("topics"), t.Topic, n, max(replicationOf(t), 1)))
	}
	return nil
}
