package mirror

// One flow A->B: source partition N is copied to partition N of its remote
// topic, record for record, at least once, for the partitions of the tasks
// this process holds (tasks.go). After each polled batch is
// acknowledged by the target, the flow writes its source positions to the
// target, then its offset syncs. A restart resumes one past the stored
// position of each partition (the earliest offset when there is none).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// pollTimeout bounds one poll of the source, as MM2's
// consumer.poll.timeout.ms default.
const pollTimeout = time.Second

// maxBatch bounds the records of one batch: the records a killed process
// copied but did not store the positions of are copied again.
const maxBatch = 50000

// txnTimeout is the transaction timeout of exactly-once mode: a process
// that dies mid-transaction holds the last stable offset of what it wrote
// at most this long, unless its task is taken over first.
const txnTimeout = 20 * time.Second

// pendingPoll bounds a poll while a batch is in flight, so that its
// positions are stored soon when no more records come.
const pendingPoll = 20 * time.Millisecond

// batchGrace bounds the copy of a batch polled before the flow stopped.
const batchGrace = 30 * time.Second

// metadataPoll is how often the source's metadata is polled for new
// topics and partitions, when refresh.topics.enabled.
const metadataPoll = 2 * time.Second

// connectorName names the flow's positions in the target's offset store,
// as MM2's source connector.
const connectorName = "MirrorSourceConnector"

type flow struct {
	cfg *FlowConfig
	log *slog.Logger
	// src consumes the source (and writes offset syncs there by default);
	// dst writes to the target; out writes the mirrored records, a client
	// of its own, made anew when a remote topic grows (a producer refuses
	// a partition its metadata does not know yet).
	src, dst, out  *kgo.Client
	srcAdm, dstAdm *kadm.Client
	// clusters are the configurations of the flow's source and target
	// (and of the mirror's other clusters), by alias.
	clusters map[string]*ClusterConfig
	newOut   func() (*kgo.Client, error)
	newGroup func() (*kgo.Client, error)
	// txn are the transactional producers of the tasks held, in
	// exactly-once mode (guarded by own.mu).
	txn    map[int32]*kgo.Client
	newTxn func(task int32) (*kgo.Client, error)

	// next is the next source offset to copy of each assigned partition.
	next map[topicPartition]int64
	// stored are the positions read when tasks were last taken.
	stored map[topicPartition]int64
	// remote is the partition count of each remote topic created.
	remote map[string]int32
	// positionsPartitions is the partition count of the positions topic,
	// read at start: Connect's offset store may have several (MM2 creates
	// 25), and a position goes where Connect's producer puts its key.
	positionsPartitions int

	// rule decides the offset syncs; remoteNames are the remote topic
	// names met; pending is the batch in flight, at least once (all of
	// the copy loop, under own.mu).
	rule        *syncRule
	remoteNames map[string]string
	pending     *inflight
	// copied is what this process copied since it took each partition,
	// for the checkpoints (runs.go); it has its own lock.
	copied *copiedRuns

	// grp is the client in the flow's group on the target; own is what
	// it holds. runCtx is the flow's context, ended by fail.
	grp *kgo.Client
	own ownership
	// metrics are the flow's MM2 metrics.
	metrics *flowMetrics
	runCtx  context.Context
	fail    func(error)
}

func newFlow(cfg *FlowConfig, clusters map[string]*ClusterConfig, log *slog.Logger, extra []kgo.Opt) (*flow, error) {
	client := func(c *ClusterConfig, opts ...kgo.Opt) (*kgo.Client, error) {
		id := c.ClientID
		if id == "" {
			id = "weir-mirror-" + cfg.Source + "-" + cfg.Target
		}
		opts = append(append([]kgo.Opt{kgo.SeedBrokers(c.Bootstrap...), kgo.ClientID(id)}, c.security...), opts...)
		return kgo.NewClient(append(opts, extra...)...)
	}
	f := &flow{cfg: cfg, clusters: clusters, log: log.With("flow", cfg.Name()), next: map[topicPartition]int64{},
		remote: map[string]int32{}, rule: newSyncRule(cfg.OffsetLagMax), copied: newCopiedRuns(), own: ownership{tasks: map[int32]bool{}}, txn: map[int32]*kgo.Client{}, remoteNames: map[string]string{},
		metrics: (&metrics{}).flow(cfg.Source, cfg.Target)}
	var err error
	srcOpts := []kgo.Opt{kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(pollTimeout / 2), kgo.RecordPartitioner(kgo.ManualPartitioner())}
	if cfg.ExactlyOnce {
		srcOpts = append(srcOpts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	if f.src, err = client(clusters[cfg.Source], srcOpts...); err != nil {
		return nil, err
	}
	if f.dst, err = client(clusters[cfg.Target], kgo.RecordPartitioner(kgo.ManualPartitioner())); err != nil {
		f.src.Close()
		return nil, err
	}
	f.newOut = func() (*kgo.Client, error) {
		return client(clusters[cfg.Target], kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
	}
	if f.out, err = f.newOut(); err != nil {
		f.src.Close()
		f.dst.Close()
		return nil, err
	}
	f.srcAdm, f.dstAdm = kadm.NewClient(f.src), kadm.NewClient(f.dst)
	f.newGroup = func() (*kgo.Client, error) { return client(clusters[cfg.Target], f.groupOpts()...) }
	f.newTxn = func(task int32) (*kgo.Client, error) {
		return client(clusters[cfg.Target], kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond),
			kgo.TransactionalID(cfg.TransactionalID(task)), kgo.TransactionTimeout(txnTimeout))
	}
	return f, nil
}

// awaitCluster waits until one of the cluster's brokers answers, for up
// to its ConnectTimeout, retrying a refused connection with Kafka's
// reconnect backoff (50 ms doubling to 1 s), as MM2 waits to describe each
// cluster at its start; the clients' hooks warn of the brokers they
// cannot reach meanwhile. It fails with MM2's message when none answered,
// and returns at once on any other error (the flow's requests report it).
func awaitCluster(ctx context.Context, cl *kgo.Client, c *ClusterConfig) error {
	ctx, cancel := context.WithTimeout(ctx, c.ConnectTimeout)
	defer cancel()
	backoff := 50 * time.Millisecond
	for {
		err := cl.Ping(ctx)
		var op *net.OpError
		if err == nil || !errors.As(err, &op) || op.Op != "dial" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster %s (%s): Failed to connect to and describe Kafka cluster within %s (%s.default.api.timeout.ms). Check the cluster's bootstrap servers and security properties: %w",
				c.Alias, strings.Join(c.Bootstrap, ","), c.ConnectTimeout, c.Alias, err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

func (f *flow) close() {
	f.closeTxn(nil)
	f.src.Close()
	f.dst.Close()
	f.out.Close()
}

// syncClient writes to the cluster holding the offset-syncs topic.
func (f *flow) syncClient() (*kgo.Client, *kadm.Client) {
	if f.cfg.OffsetSyncsOnTarget {
		return f.dst, f.dstAdm
	}
	return f.src, f.srcAdm
}

// run copies until ctx ends; an error stops the flow.
func (f *flow) run(ctx context.Context) error {
	for _, c := range []struct {
		cl  *kgo.Client
		cfg *ClusterConfig
	}{{f.src, f.clusters[f.cfg.Source]}, {f.dst, f.clusters[f.cfg.Target]}} {
		if err := awaitCluster(ctx, c.cl, c.cfg); err != nil {
			return err
		}
	}
	compact := map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}
	if err := f.ensureTopic(ctx, f.cfg.Target, f.cfg.PositionsTopic(), 1, f.cfg.PositionsReplicationFactor, "offset.storage.replication.factor", compact); err != nil {
		return err
	}
	if f.cfg.EmitOffsetSyncs {
		on := f.cfg.Source
		if f.cfg.OffsetSyncsOnTarget {
			on = f.cfg.Target
		}
		if err := f.ensureTopic(ctx, on, f.cfg.OffsetSyncsTopic(), 1, f.cfg.OffsetSyncsReplicationFactor, "offset-syncs.topic.replication.factor", compact); err != nil {
			return err
		}
	}
	if err := f.ensureTopic(ctx, f.cfg.Target, f.cfg.TasksTopic(), int32(f.cfg.Tasks), f.cfg.PositionsReplicationFactor, "offset.storage.replication.factor", nil); err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	f.runCtx, f.fail = ctx, cancel
	defer f.stopDuties()
	grp, err := f.newGroup()
	if err != nil {
		return err
	}
	f.grp = grp
	// Closing the group client (leaving the group) gives up every task;
	// the copy loop has stopped by then.
	defer grp.Close()
	go func() {
		for ctx.Err() == nil {
			fs := grp.PollFetches(ctx)
			if err := fs.Err0(); err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
				f.log.Warn("the flow's group client", "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
		}
	}()
	// Topics are refreshed at refresh.topics.interval.seconds, and sooner:
	// a poll of the source's metadata every metadataPoll picks up new
	// topics and partitions.
	every := min(f.cfg.RefreshTopicsInterval, metadataPoll)
	var lastRefresh time.Time
	for ctx.Err() == nil {
		f.own.mu.Lock()
		reassigned := f.own.reassigned
		f.own.mu.Unlock()
		if reassigned || lastRefresh.IsZero() || (every > 0 && time.Since(lastRefresh) >= every) {
			if err := f.refresh(ctx); err != nil {
				cancel(err)
				break
			}
			lastRefresh = time.Now()
		}
		if err := f.copyBatch(ctx); err != nil {
			cancel(err)
		}
	}
	f.own.mu.Lock()
	if err := f.finishWithin(ctx); err != nil {
		cancel(err)
	}
	f.own.mu.Unlock()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("flow %s: %w", f.cfg.Name(), err)
	}
	return nil
}

// ensureTopic creates a topic on cluster on (the flow's source or
// target), or adds partitions up to n when it has fewer; it returns
// without change when it has as many or more. rfKey is the MM2 setting of
// rf, which a refused replication factor names.
func (f *flow) ensureTopic(ctx context.Context, on, topic string, n int32, rf int16, rfKey string, configs map[string]*string) error {
	adm := f.dstAdm
	if on == f.cfg.Source {
		adm = f.srcAdm
	}
	resp, err := adm.CreateTopic(ctx, n, rf, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err == nil {
		return nil
	}
	if errors.Is(err, kerr.InvalidReplicationFactor) {
		return f.replicationFactorError(ctx, adm, on, topic, rf, rfKey, err)
	}
	if !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating topic %s: %w", topic, err)
	}
	details, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return fmt.Errorf("describing topic %s: %w", topic, err)
	}
	d, ok := details[topic]
	if !ok || d.Err != nil {
		return fmt.Errorf("describing topic %s: %v", topic, d.Err)
	}
	if have := int32(len(d.Partitions)); have < n {
		r, err := adm.UpdatePartitions(ctx, int(n), topic)
		if err == nil {
			err = r.Error()
		}
		// Grown meanwhile by another process of the flow.
		if err != nil && !errors.Is(err, kerr.InvalidPartitions) {
			return fmt.Errorf("adding partitions to %s: %w", topic, err)
		}
	}
	return nil
}

// replicationFactorError explains INVALID_REPLICATION_FACTOR for topic on
// cluster on: how many brokers the cluster has, and the MM2 setting that
// sets the topic's replication factor rf.
func (f *flow) replicationFactorError(ctx context.Context, adm *kadm.Client, on, topic string, rf int16, rfKey string, err error) error {
	settings := f.cfg.rfSettings(rfKey)
	meta, merr := adm.BrokerMetadata(ctx)
	if merr != nil {
		return &explainedError{fmt.Sprintf("creating %s on cluster %s: INVALID_REPLICATION_FACTOR (replication factor %d): set %s to at most the number of the cluster's brokers", topic, on, rf, settings), err}
	}
	n, brokers := len(meta.Brokers), "brokers"
	if n == 1 {
		brokers = "broker"
	}
	return &explainedError{fmt.Sprintf("creating %s on cluster %s: INVALID_REPLICATION_FACTOR (replication factor %d, the cluster has %d %s): set %s to at most %d", topic, on, rf, n, brokers, settings, n), err}
}

// An explainedError says what to do about its cause, which errors.Is
// still finds.
type explainedError struct {
	msg   string
	cause error
}

func (e *explainedError) Error() string { return e.msg }
func (e *explainedError) Unwrap() error { return e.cause }

// ensureRemote creates a remote topic with configs, or grows it to n
// partitions. A target refusing a config gets the topic without the
// source's configs (the config sync then says which it refuses), rather
// than no topic at all.
func (f *flow) ensureRemote(ctx context.Context, remote string, n int32, configs map[string]*string) error {
	err := f.ensureTopic(ctx, f.cfg.Target, remote, n, f.cfg.ReplicationFactor, "replication.factor", configs)
	if len(configs) > 0 && (errors.Is(err, kerr.InvalidConfig) || errors.Is(err, kerr.PolicyViolation)) {
		f.log.Warn("the target refused the source's configs: remote topic created with the target's defaults", "topic", remote, "err", err)
		err = f.ensureTopic(ctx, f.cfg.Target, remote, n, f.cfg.ReplicationFactor, "replication.factor", nil)
	}
	return err
}

// refresh finds the source topics to mirror, creates or grows their remote
// topics and starts consuming the new partitions of the tasks held. When
// tasks were taken since the last refresh, the positions are read anew
// first: their partitions resume from those stored by whoever held them.
func (f *flow) refresh(ctx context.Context) error {
	f.own.mu.Lock()
	defer f.own.mu.Unlock()
	// The batch in flight is stored first: the producer may be replaced.
	if err := f.finishWithin(ctx); err != nil {
		return err
	}
	if f.own.reassigned {
		if f.cfg.ExactlyOnce {
			// The transactions a former holder left open are aborted
			// before the positions are read.
			for _, t := range f.own.fresh {
				if err := f.fence(ctx, t); err != nil {
					return err
				}
			}
		}
		f.own.fresh = nil
		stored, err := f.loadPositions(ctx)
		if err != nil {
			return err
		}
		f.stored = stored
		f.own.reassigned = false
	}
	stored := f.stored
	topics, err := f.srcAdm.ListTopics(ctx)
	if err != nil {
		return fmt.Errorf("listing the source's topics: %w", err)
	}
	add := map[string]map[int32]kgo.Offset{}
	grown := false
	var fresh []string // topics with no remote topic yet in this process
	for _, d := range topics.Sorted() {
		if d.Err == nil && f.cfg.ShouldReplicate(d.Topic) && f.remote[f.cfg.Policy.FormatRemoteTopic(f.cfg.Source, d.Topic)] == 0 {
			fresh = append(fresh, d.Topic)
		}
	}
	configs := map[string][]kmsg.DescribeConfigsResponseResourceConfig{}
	if len(fresh) > 0 {
		if configs, err = f.describeConfigs(ctx, fresh); err != nil {
			return err
		}
	}
	for _, d := range topics.Sorted() {
		if d.Err != nil || !f.cfg.ShouldReplicate(d.Topic) {
			continue
		}
		n := int32(len(d.Partitions))
		remote := f.cfg.Policy.FormatRemoteTopic(f.cfg.Source, d.Topic)
		if f.remote[remote] < n {
			if err := f.ensureRemote(ctx, remote, n, f.createConfigs(configs[d.Topic])); err != nil {
				return err
			}
			f.log.Info("mirroring topic", "topic", d.Topic, "remote", remote, "partitions", n)
			grown = grown || f.remote[remote] > 0
			f.remote[remote] = n
		}
		for p := range n {
			tp := topicPartition{d.Topic, p}
			if _, ok := f.next[tp]; ok || !f.own.tasks[f.cfg.TaskOf(tp.topic, tp.partition)] {
				continue
			}
			o := kgo.NewOffset().AtStart()
			f.next[tp] = 0
			f.copied.reset(tp)
			if at, ok := stored[tp]; ok {
				o = kgo.NewOffset().At(at + 1)
				f.next[tp] = at + 1
			}
			if add[d.Topic] == nil {
				add[d.Topic] = map[int32]kgo.Offset{}
			}
			add[d.Topic][p] = o
		}
	}
	if grown {
		out, err := f.newOut()
		if err != nil {
			return err
		}
		f.out.Close()
		f.out = out
		f.closeTxn(nil) // made anew, with the new partitions
	}
	if len(add) > 0 {
		f.src.AddConsumePartitions(add)
		// The client's metadata may not show the new partitions yet.
		f.src.ForceMetadataRefresh()
	}
	return nil
}

// copyBatch copies one poll of the source. At least once, a batch is sent
// while the one before is still awaited (pipelined): a batch's positions
// and offset syncs are stored once it is acknowledged, before the next
// one's. In exactly-once mode each batch is committed before the next poll.
func (f *flow) copyBatch(ctx context.Context) error {
	timeout := pollTimeout
	f.own.mu.Lock()
	if f.pending != nil {
		timeout = pendingPoll
	}
	f.own.mu.Unlock()
	pctx, cancel := context.WithTimeout(ctx, timeout)
	fetches := f.src.PollRecords(pctx, maxBatch)
	cancel()
	if ctx.Err() != nil {
		return nil
	}
	var ferr error
	fetches.EachError(func(t string, p int32, err error) {
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && ferr == nil {
			ferr = fmt.Errorf("fetching %s-%d: %w", t, p, err)
		}
	})
	if ferr != nil {
		return ferr
	}
	// Held until the batch is sent (and, in exactly-once mode, committed):
	// a task is given up between batches, once what was sent is stored.
	f.own.mu.Lock()
	defer f.own.mu.Unlock()
	// A batch polled is copied and stored even when the flow is stopping,
	// within batchGrace.
	ctx, cancelBatch := context.WithTimeout(context.WithoutCancel(ctx), batchGrace)
	defer cancelBatch()
	// The records of the partitions held, by task in exactly-once mode.
	byTask := map[int32][]part{}
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		tp := topicPartition{p.Topic, p.Partition}
		next, ok := f.next[tp]
		if !ok {
			return // a partition given up
		}
		recs := p.Records
		for len(recs) > 0 && recs[0].Offset < next {
			recs = recs[1:] // fetched before it was given up and taken again
		}
		if len(recs) == 0 {
			return
		}
		task := int32(0)
		if f.cfg.ExactlyOnce {
			task = f.cfg.TaskOf(p.Topic, p.Partition)
		}
		byTask[task] = append(byTask[task], part{tp, f.remoteName(p.Topic), recs})
	})
	if len(byTask) == 0 {
		f.noteLag(fetches)
		return f.finish(ctx)
	}
	if !f.cfg.ExactlyOnce {
		b := f.send(ctx, f.out, byTask[0])
		b.fetches = fetches
		if err := f.finish(ctx); err != nil {
			return err
		}
		f.pending = b
		return nil
	}
	last := map[topicPartition]int64{}
	for task, parts := range byTask {
		if err := f.copyTxn(ctx, task, parts, last); err != nil {
			return err
		}
	}
	return f.advance(ctx, last, fetches)
}

// finish waits for the batch in flight (at least once), then stores its
// positions and offset syncs. Call it with f.own.mu held.
func (f *flow) finish(ctx context.Context) error {
	b := f.pending
	if b == nil {
		return nil
	}
	f.pending = nil
	last := map[topicPartition]int64{}
	if err := b.wait(f, last); err != nil {
		return err
	}
	if err := f.storePositions(ctx, f.dst, last); err != nil {
		return err
	}
	return f.advance(ctx, last, b.fetches)
}

// finishWithin is finish, even when ctx has ended, within batchGrace.
func (f *flow) finishWithin(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), batchGrace)
	defer cancel()
	return f.finish(ctx)
}

// advance moves the partitions copied past last, and writes the offset
// syncs due.
func (f *flow) advance(ctx context.Context, last map[topicPartition]int64, fetches kgo.Fetches) error {
	for tp, o := range last {
		f.next[tp] = o + 1
	}
	f.noteLag(fetches)
	return f.writeSyncs(ctx)
}

// copyTxn copies the records of one task and stores their positions in one
// transaction of the task's transactional producer.
func (f *flow) copyTxn(ctx context.Context, task int32, parts []part, last map[topicPartition]int64) error {
	cl, err := f.txnClient(task)
	if err != nil {
		return err
	}
	if err := cl.BeginTransaction(); err != nil {
		return fmt.Errorf("task %d: beginning a transaction: %w", task, err)
	}
	mine := map[topicPartition]int64{}
	err = f.copy(ctx, cl, parts, mine)
	if err == nil {
		err = f.storePositions(ctx, cl, mine)
	}
	commit := kgo.TryCommit
	if err != nil {
		commit = kgo.TryAbort
	}
	if eerr := cl.EndTransaction(ctx, commit); eerr != nil && err == nil {
		// Fenced: another process took the task (this one was thought
		// dead); stopping loses nothing, the batch was not committed.
		err = fmt.Errorf("task %d: committing: %w", task, eerr)
	}
	if err != nil {
		return err
	}
	maps.Copy(last, mine)
	return nil
}

// txnClient returns the transactional producer of a task held, made on
// first use. Its transactional id is the task's, so the process taking a
// task over fences the one that held it.
func (f *flow) txnClient(task int32) (*kgo.Client, error) {
	if cl, ok := f.txn[task]; ok {
		return cl, nil
	}
	cl, err := f.newTxn(task)
	if err != nil {
		return nil, err
	}
	f.txn[task] = cl
	return cl, nil
}

// closeTxn closes the transactional producers of tasks (all when nil).
func (f *flow) closeTxn(tasks []int32) {
	for t, cl := range f.txn {
		if tasks == nil || slices.Contains(tasks, t) {
			cl.Close()
			delete(f.txn, t)
		}
	}
}

// part is the records of one source partition in a batch, in order.
type part struct {
	tp     topicPartition
	remote string
	recs   []*kgo.Record
}

// inflight is a batch sent to the target and not yet awaited.
type inflight struct {
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	errOnce sync.Once
	perr    error
	parts   []part
	outs    []kgo.Record // the records sent, in the order of parts
	polled  time.Time
	// fetches is the poll it came from, for the lag.
	fetches kgo.Fetches
}

// send starts writing the records of parts to their remote partitions with
// cl, within batchGrace. Call it with f.own.mu held.
func (f *flow) send(ctx context.Context, cl *kgo.Client, parts []part) *inflight {
	n := 0
	for _, p := range parts {
		n += len(p.recs)
	}
	b := &inflight{parts: parts, outs: make([]kgo.Record, n), polled: time.Now()}
	b.ctx, b.cancel = context.WithTimeout(context.WithoutCancel(ctx), batchGrace)
	done := func(out *kgo.Record, err error) {
		if err != nil {
			b.errOnce.Do(func() { b.perr = fmt.Errorf("producing to %s-%d: %w", out.Topic, out.Partition, err) })
		}
		b.wg.Done()
	}
	b.wg.Add(n)
	i := 0
	for _, p := range parts {
		for _, r := range p.recs {
			o := &b.outs[i]
			i++
			*o = kgo.Record{Topic: p.remote, Partition: r.Partition, Key: r.Key, Value: r.Value,
				Headers: r.Headers, Timestamp: r.Timestamp}
			cl.Produce(b.ctx, o, done)
		}
	}
	return b
}

// wait waits for the batch to be acknowledged, then notes its metrics and
// offset syncs, and the last offset copied of each source partition in
// last.
func (b *inflight) wait(f *flow, last map[topicPartition]int64) error {
	b.wg.Wait()
	b.cancel()
	if b.perr != nil {
		return b.perr
	}
	acked := time.Now()
	outs := b.outs
	for _, p := range b.parts {
		mine := outs[:len(p.recs)]
		outs = outs[len(p.recs):]
		f.metrics.batch(topicPartition{p.remote, p.tp.partition}, mine, b.polled, acked)
		last[p.tp] = p.recs[len(p.recs)-1].Offset
		if f.cfg.EmitOffsetSyncs {
			st := f.rule.state(p.tp.topic, p.tp.partition)
			for i, r := range p.recs {
				f.rule.note(st, p.tp.topic, p.tp.partition, r.Offset, mine[i].Offset)
			}
		}
		if f.cfg.CheckpointsInterval > 0 {
			f.copied.note(p.tp, len(p.recs), func(i int) (int64, int64) { return p.recs[i].Offset, mine[i].Offset })
		}
	}
	return nil
}

// copy writes the records of parts to their remote partitions with cl and
// waits for them; see wait. Call it with f.own.mu held.
func (f *flow) copy(ctx context.Context, cl *kgo.Client, parts []part, last map[topicPartition]int64) error {
	return f.send(ctx, cl, parts).wait(f, last)
}

// remoteName is the remote topic of a source topic, remembered. Call it
// with f.own.mu held.
func (f *flow) remoteName(topic string) string {
	r, ok := f.remoteNames[topic]
	if !ok {
		r = f.cfg.Policy.FormatRemoteTopic(f.cfg.Source, topic)
		f.remoteNames[topic] = r
	}
	return r
}

// noteLag sets the lag of each partition fetched from its high watermark.
// Call it with f.own.mu held.
func (f *flow) noteLag(fetches kgo.Fetches) {
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		next, ok := f.next[topicPartition{p.Topic, p.Partition}]
		if ok && p.Err == nil && p.HighWatermark >= 0 {
			f.metrics.lagged(topicPartition{f.remoteName(p.Topic), p.Partition}, p.HighWatermark-next)
		}
	})
}

// writeSyncs writes the offset syncs due now and those delayed until this
// flush.
func (f *flow) writeSyncs(ctx context.Context) error {
	if !f.cfg.EmitOffsetSyncs {
		return nil
	}
	f.rule.flush()
	syncs := f.rule.take()
	if len(syncs) == 0 {
		return nil
	}
	cl, _ := f.syncClient()
	recs := make([]*kgo.Record, len(syncs))
	for i, s := range syncs {
		recs[i] = &kgo.Record{Topic: f.cfg.OffsetSyncsTopic(), Partition: 0, Key: s.Key(), Value: s.Value()}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("writing offset syncs: %w", err)
	}
	return nil
}

// positionKey is the Connect offset store's key of a source partition:
// the connector name and MM2's partition map, in Connect's JSON.
func (f *flow) positionKey(tp topicPartition) []byte {
	b, _ := json.Marshal([]any{connectorName, struct {
		Cluster   string `json:"cluster"`
		Partition int32  `json:"partition"`
		Topic     string `json:"topic"`
	}{f.cfg.Source, tp.partition, tp.topic}})
	return b
}

// positionRecord is the record of source position o of tp: on the
// partition of the positions topic that Kafka's default partitioner
// (murmur2 of the key) gives, as Connect's offset store does, so that a key
// MM2 wrote stays on one partition, where reading in order and compaction
// both keep the newest position.
func (f *flow) positionRecord(tp topicPartition, o int64) *kgo.Record {
	v, _ := json.Marshal(map[string]int64{"offset": o})
	r := &kgo.Record{Topic: f.cfg.PositionsTopic(), Key: f.positionKey(tp), Value: v}
	r.Partition = int32(kgo.StickyKeyPartitioner(nil).ForTopic(r.Topic).Partition(r, f.positionsPartitions))
	return r
}

// storePositions writes the last copied source offset of each partition
// with cl, a client of the target.
func (f *flow) storePositions(ctx context.Context, cl *kgo.Client, last map[topicPartition]int64) error {
	recs := make([]*kgo.Record, 0, len(last))
	for tp, o := range last {
		recs = append(recs, f.positionRecord(tp, o))
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("storing positions in %s: %w", f.cfg.PositionsTopic(), err)
	}
	return nil
}

// loadPositions reads the positions topic to its end: the last copied
// source offset of each partition of this flow.
func (f *flow) loadPositions(ctx context.Context) (map[topicPartition]int64, error) {
	out := map[topicPartition]int64{}
	topic := f.cfg.PositionsTopic()
	if err := f.settle(ctx, topic); err != nil {
		return nil, err
	}
	ends, err := readTopic(ctx, f.dst, f.dstAdm, topic, nil, func(r *kgo.Record) {
		var key []json.RawMessage
		var name string
		var part struct {
			Cluster   string `json:"cluster"`
			Partition int32  `json:"partition"`
			Topic     string `json:"topic"`
		}
		if json.Unmarshal(r.Key, &key) != nil || len(key) != 2 || json.Unmarshal(key[0], &name) != nil ||
			name != connectorName || json.Unmarshal(key[1], &part) != nil || part.Cluster != f.cfg.Source {
			return // another connector's, or not an offset record
		}
		tp := topicPartition{part.Topic, part.Partition}
		if r.Value == nil {
			delete(out, tp)
			return
		}
		var v struct {
			Offset *int64 `json:"offset"`
		}
		if json.Unmarshal(r.Value, &v) != nil || v.Offset == nil {
			f.log.Warn("unreadable position skipped", "topic", topic, "offset", r.Offset)
			return
		}
		out[tp] = *v.Offset
	})
	if err != nil {
		return nil, err
	}
	f.positionsPartitions = max(len(ends), 1)
	f.log.Info("positions loaded", "partitions", len(out))
	return out, nil
}

// settle waits until the transactions open on topic are over: on every
// partition the last stable offset reaches the high watermark of the moment.
// Those of live processes end with their batch, those of dead ones when
// their tasks are fenced or at the transaction timeout.
func (f *flow) settle(ctx context.Context, topic string) error {
	hw, err := f.dstAdm.ListEndOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("reading %s: %w", topic, err)
	}
	for {
		lso, err := f.dstAdm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			return fmt.Errorf("reading %s: %w", topic, err)
		}
		settled := true
		for _, h := range hw[topic] {
			l, _ := lso.Lookup(topic, h.Partition)
			if l.Err != nil {
				return l.Err
			}
			settled = settled && l.Offset >= h.Offset
		}
		if settled {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// fence bumps the epoch of a task's transactional id, which aborts the
// transaction its former holder left open and fences that holder.
func (f *flow) fence(ctx context.Context, task int32) error {
	req := kmsg.NewPtrInitProducerIDRequest()
	id := f.cfg.TransactionalID(task)
	req.TransactionalID = &id
	req.TransactionTimeoutMillis = int32(txnTimeout.Milliseconds())
	req.ProducerID, req.ProducerEpoch = -1, -1
	for {
		resp, err := req.RequestWith(ctx, f.dst)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		// The coordinator is still completing the former holder's
		// transaction: ask again.
		if errors.Is(err, kerr.ConcurrentTransactions) || errors.Is(err, kerr.CoordinatorLoadInProgress) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("fencing task %d (%s): %w", task, id, err)
		}
		return nil
	}
}

// readTopic reads the committed records of every partition of topic from
// the offsets in from (the start for a partition not in it) to the last
// stable offsets of the moment, in order, and returns where it stopped. cl
// gives the connection options.
func readTopic(ctx context.Context, cl *kgo.Client, adm *kadm.Client, topic string, from map[int32]int64, fn func(*kgo.Record)) (map[int32]int64, error) {
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", topic, err)
	}
	next := map[int32]int64{}
	want := map[int32]kgo.Offset{}
	endOf := map[int32]int64{}
	var ferr error
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			ferr = fmt.Errorf("reading %s-%d: %w", topic, o.Partition, o.Err)
			return
		}
		next[o.Partition] = from[o.Partition]
		endOf[o.Partition] = o.Offset
		if o.Offset > from[o.Partition] {
			want[o.Partition] = kgo.NewOffset().At(from[o.Partition])
		}
	})
	if ferr != nil {
		return nil, ferr
	}
	if len(want) == 0 {
		return next, nil
	}
	// Control records are kept so that the offset before the end is always
	// seen (a transaction's marker); aborted records are not returned.
	c, err := kgo.NewClient(append(cl.Opts(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: want}),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())...)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	for len(want) > 0 {
		fetches := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := fetches.Err(); err != nil {
			return nil, fmt.Errorf("reading %s: %w", topic, err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if _, ok := want[r.Partition]; !ok {
				return
			}
			if !r.Attrs.IsControl() {
				fn(r)
			}
			next[r.Partition] = r.Offset + 1
			if r.Offset+1 >= endOf[r.Partition] {
				delete(want, r.Partition)
			}
		})
	}
	return next, nil
}

// heartbeats writes a heartbeat to the target at each interval.
func (f *flow) heartbeats(ctx context.Context) error {
	compact := map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}
	if err := f.ensureTopic(ctx, f.cfg.Target, HeartbeatsTopic, 1, f.cfg.HeartbeatsReplicationFactor, "heartbeats.topic.replication.factor", compact); err != nil {
		return err
	}
	t := time.NewTicker(f.cfg.HeartbeatsInterval)
	defer t.Stop()
	for {
		h := Heartbeat{Source: f.cfg.Source, Target: f.cfg.Target, Timestamp: time.Now().UnixMilli()}
		err := f.dst.ProduceSync(ctx, &kgo.Record{Topic: HeartbeatsTopic, Partition: 0, Key: h.Key(), Value: h.Value()}).FirstErr()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("writing a heartbeat: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
