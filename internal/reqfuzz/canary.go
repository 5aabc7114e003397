package reqfuzz

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The canary's names. The generator never draws them, so fuzzed requests
// can damage canary data only through a broker bug.
const (
	canaryTopic    = "reqfuzz-canary"
	canaryTxnTopic = "reqfuzz-canary-txn"
	canaryGroup    = "reqfuzz-canary-group"
	canaryTxnID    = "reqfuzz-canary-txn"
	canaryParts    = 3
)

// canaryConfigs override every topic setting whose broker default the
// fuzzer may change, so the canary's records stay and stay writable.
var canaryConfigs = map[string]*string{
	"cleanup.policy":                 kadm.StringPtr("delete"),
	"retention.ms":                   kadm.StringPtr("-1"),
	"retention.bytes":                kadm.StringPtr("-1"),
	"segment.bytes":                  kadm.StringPtr("104857600"),
	"max.message.bytes":              kadm.StringPtr("1048588"),
	"unclean.leader.election.enable": kadm.StringPtr("false"),
}

// canary writes through normal clients and checks it reads back what it
// wrote: a few records at every health check, and at the end all of them,
// with a consumer group and transactions.
type canary struct {
	addrs   []string
	nodes   int
	prod    *kgo.Client
	seq     int
	written map[int32][]canaryRec // by partition, in offset order
	// committed is where the canary group has committed, by partition,
	// in __consumer_offsets with id offsetsID: DeleteTopics may remove
	// that topic (as Kafka allows), and the group's offsets with it.
	committed map[int32]int64
	offsetsID [16]byte
	// txnValues are the values committed in transactions, in order.
	txnValues []string
}

type canaryRec struct {
	offset int64
	value  string
}

func newCanary(ctx context.Context, addrs []string) (*canary, error) {
	c := &canary{addrs: addrs, nodes: len(addrs), written: map[int32][]canaryRec{}, committed: map[int32]int64{}}
	cl, err := c.client()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	conf := map[string]*string{"min.insync.replicas": kadm.StringPtr(fmt.Sprint(min(c.nodes, 2)))}
	for k, v := range canaryConfigs {
		conf[k] = v
	}
	if err := createTopics(ctx, cl, []string{canaryTopic}, canaryParts, min(c.nodes, 3), conf); err != nil {
		return nil, err
	}
	if err := createTopics(ctx, cl, []string{canaryTxnTopic}, 1, min(c.nodes, 3), conf); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *canary) client(opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.addrs...)}, opts...)...)
}

func (c *canary) close() {
	if c.prod != nil {
		c.prod.Close()
		c.prod = nil
	}
}

// check produces one record to each partition (acks=all, idempotent)
// and reads them back, and changes a config of the transactional canary
// topic: the controller must still commit metadata.
func (c *canary) check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if c.prod == nil {
		var err error
		if c.prod, err = c.client(kgo.DefaultProduceTopic(canaryTopic), kgo.RecordPartitioner(kgo.ManualPartitioner())); err != nil {
			return err
		}
	}
	alter := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "delete.retention.ms", Value: kadm.StringPtr(fmt.Sprint(86_400_000 + c.seq))}}
	altered, err := kadm.NewClient(c.prod).AlterTopicConfigs(ctx, alter, canaryTxnTopic)
	if err == nil {
		_, err = altered.On(canaryTxnTopic, nil)
	}
	if err != nil {
		return fmt.Errorf("canary config change: %w", err)
	}
	var recs []*kgo.Record
	for p := range int32(canaryParts) {
		c.seq++
		recs = append(recs, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "canary-%d", c.seq)})
	}
	if err := c.prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("canary produce: %w", err)
	}
	from := map[string]map[int32]kgo.Offset{canaryTopic: {}}
	want := map[int32]canaryRec{}
	for _, r := range recs {
		rec := canaryRec{r.Offset, string(r.Value)}
		c.written[r.Partition] = append(c.written[r.Partition], rec)
		want[r.Partition] = rec
		from[canaryTopic][r.Partition] = kgo.NewOffset().At(r.Offset)
	}
	cons, err := c.client(kgo.ConsumePartitions(from))
	if err != nil {
		return err
	}
	defer cons.Close()
	for len(want) > 0 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("canary fetch: records of partitions %v not read back within a minute", slices.Sorted(maps.Keys(want)))
		}
		if err := fetchErr(fs); err != nil {
			return fmt.Errorf("canary fetch: %w", err)
		}
		for _, r := range fs.Records() {
			w, ok := want[r.Partition]
			if !ok || r.Offset != w.offset {
				continue
			}
			if string(r.Value) != w.value {
				return fmt.Errorf("canary fetch: partition %d offset %d holds %q, want %q", r.Partition, r.Offset, r.Value, w.value)
			}
			delete(want, r.Partition)
		}
	}
	return nil
}

// fetchErr returns a fetch error other than the retriable ones a client
// sees while leadership moves.
func fetchErr(fs kgo.Fetches) error {
	var err error
	fs.EachError(func(t string, p int32, e error) {
		if !kerr.IsRetriable(e) && !errors.Is(e, context.DeadlineExceeded) && err == nil {
			err = fmt.Errorf("%s-%d: %w", t, p, e)
		}
	})
	return err
}

// final checks that the canary topic holds exactly what was written,
// that the canary group reads on from where it committed and commits
// again, and that a transaction commits and another aborts.
func (c *canary) final(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := c.check(ctx); err != nil {
		return err
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, canaryTopic)
	if err != nil {
		return fmt.Errorf("end offsets: %w", err)
	}
	end := map[int32]int64{}
	for p := range int32(canaryParts) {
		o, ok := ends.Lookup(canaryTopic, p)
		if !ok || o.Err != nil {
			return fmt.Errorf("end offset of %s-%d: %v", canaryTopic, p, o.Err)
		}
		if w := c.written[p]; o.Offset != w[len(w)-1].offset+1 {
			return fmt.Errorf("%s-%d ends at %d, the canary wrote up to %d", canaryTopic, p, o.Offset, w[len(w)-1].offset)
		}
		end[p] = o.Offset
	}
	if err := c.readAll(ctx); err != nil {
		return err
	}
	if err := c.group(ctx, end); err != nil {
		return err
	}
	return c.transactions(ctx)
}

// readAll reads every canary partition from its start.
func (c *canary) readAll(ctx context.Context) error {
	from := map[string]map[int32]kgo.Offset{canaryTopic: {}}
	for p := range int32(canaryParts) {
		from[canaryTopic][p] = kgo.NewOffset().AtStart()
	}
	cons, err := c.client(kgo.ConsumePartitions(from))
	if err != nil {
		return err
	}
	defer cons.Close()
	next := map[int32]int{} // index into written of the next record expected
	left := 0
	for _, w := range c.written {
		left += len(w)
	}
	for left > 0 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("reading the canary: %d records not read", left)
		}
		if err := fetchErr(fs); err != nil {
			return fmt.Errorf("reading the canary: %w", err)
		}
		for _, r := range fs.Records() {
			w := c.written[r.Partition]
			i := next[r.Partition]
			if i >= len(w) || w[i].offset != r.Offset || w[i].value != string(r.Value) {
				return fmt.Errorf("reading the canary: %s-%d offset %d holds %q, the canary wrote %v next", canaryTopic, r.Partition, r.Offset, r.Value, w[i:min(i+1, len(w))])
			}
			next[r.Partition]++
			left--
		}
	}
	return nil
}

// group consumes the canary topic in the canary group from its committed
// offsets to end, commits, and checks the group's offsets.
func (c *canary) group(ctx context.Context, end map[int32]int64) error {
	cons, err := c.client(kgo.ConsumerGroup(canaryGroup), kgo.ConsumeTopics(canaryTopic),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer cons.Close()
	pos := map[int32]int64{}
	id, err := c.offsetsTopicID(ctx)
	if err != nil {
		return err
	}
	if id == c.offsetsID {
		for p, o := range c.committed {
			pos[p] = o
		}
	}
	done := func() bool {
		for p, e := range end {
			if pos[p] < e {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("canary group: at %v of %v", pos, end)
		}
		if err := fetchErr(fs); err != nil {
			return fmt.Errorf("canary group: %w", err)
		}
		for _, r := range fs.Records() {
			if r.Offset != pos[r.Partition] {
				return fmt.Errorf("canary group: read %s-%d offset %d, want %d (the committed offset or the next)", canaryTopic, r.Partition, r.Offset, pos[r.Partition])
			}
			pos[r.Partition] = r.Offset + 1
		}
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		return fmt.Errorf("canary group commit: %w", err)
	}
	offs, err := kadm.NewClient(cons).FetchOffsets(ctx, canaryGroup)
	if err != nil {
		return fmt.Errorf("canary group offsets: %w", err)
	}
	for p, e := range end {
		o, ok := offs.Lookup(canaryTopic, p)
		if !ok || o.Err != nil || o.At != e {
			return fmt.Errorf("canary group offset of partition %d: %+v, want %d", p, o, e)
		}
		c.committed[p] = e
	}
	c.offsetsID, err = c.offsetsTopicID(ctx)
	return err
}

// offsetsTopicID returns the id of __consumer_offsets, zero while there is
// none. It asks with a client of its own: a client answers a Metadata
// request from what it has cached.
func (c *canary) offsetsTopicID(ctx context.Context) ([16]byte, error) {
	cl, err := c.client()
	if err != nil {
		return [16]byte{}, err
	}
	defer cl.Close()
	ids, err := topicIDs(ctx, cl, []string{"__consumer_offsets"})
	if err != nil || len(ids) == 0 {
		return [16]byte{}, err
	}
	return ids[0], nil
}

// transactions aborts one transaction and commits another, then reads
// the transactional topic read_committed from its start: exactly the
// committed values, in order.
func (c *canary) transactions(ctx context.Context) error {
	prod, err := c.client(kgo.TransactionalID(canaryTxnID), kgo.DefaultProduceTopic(canaryTxnTopic))
	if err != nil {
		return err
	}
	defer prod.Close()
	n := len(c.txnValues)
	for _, commit := range []bool{false, true} {
		if err := prod.BeginTransaction(); err != nil {
			return err
		}
		var recs []*kgo.Record
		for i := range 3 {
			recs = append(recs, kgo.StringRecord(fmt.Sprintf("txn-%d-%v-%d", n, commit, i)))
		}
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return fmt.Errorf("transactional produce: %w", err)
		}
		if err := prod.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			return fmt.Errorf("ending a transaction (commit %v): %w", commit, err)
		}
		if commit {
			for _, r := range recs {
				c.txnValues = append(c.txnValues, string(r.Value))
			}
		}
	}
	cons, err := c.client(kgo.ConsumeTopics(canaryTxnTopic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer cons.Close()
	for i := 0; i < len(c.txnValues); {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("read_committed: %d of %d committed records read", i, len(c.txnValues))
		}
		if err := fetchErr(fs); err != nil {
			return fmt.Errorf("read_committed: %w", err)
		}
		for _, r := range fs.Records() {
			if i >= len(c.txnValues) || string(r.Value) != c.txnValues[i] {
				return fmt.Errorf("read_committed: offset %d holds %q, want %q", r.Offset, r.Value, c.txnValues[min(i, len(c.txnValues)-1)])
			}
			i++
		}
	}
	return nil
}

// createTopics creates topics (an existing one is fine), retrying while
// the cluster is not ready.
func createTopics(ctx context.Context, cl *kgo.Client, names []string, partitions, rf int, conf map[string]*string) error {
	adm := kadm.NewClient(cl)
	for {
		resp, err := adm.CreateTopics(ctx, int32(partitions), int16(rf), conf, names...)
		if err == nil {
			err = resp.Error()
			if errors.Is(err, kerr.TopicAlreadyExists) {
				err = nil
				for _, r := range resp {
					if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
						err = r.Err
					}
				}
			}
		}
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("creating %v: %w", names, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// topicIDs returns the ids of those of the topics that exist.
func topicIDs(ctx context.Context, cl *kgo.Client, names []string) ([][16]byte, error) {
	topics, err := kadm.NewClient(cl).ListTopicsWithInternal(ctx, names...)
	if err != nil {
		return nil, err
	}
	var ids [][16]byte
	for _, name := range names {
		if t, ok := topics[name]; ok && t.Err == nil {
			ids = append(ids, t.ID)
		}
	}
	return ids, nil
}
