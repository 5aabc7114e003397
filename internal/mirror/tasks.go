package mirror

// Work sharing. The processes running flow A->B with the same file share its
// tasks.max tasks through a consumer group on B: each task is a partition of
// the tasks topic mm2-tasks.A.internal on B (it holds no records), assigned
// by the cooperative-sticky balancer, and source partition p of topic t
// belongs to task (fnv32a(t) + p) mod tasks.max. Adding a topic changes no
// task, so it never rebalances the group nor stops the copying of other
// partitions. A process that dies stops heartbeating and its tasks go to
// the others after session.timeout.ms; they resume from the positions in
// mm2-offsets.A.internal. A task is given up only after its batch in
// flight is acknowledged and its positions stored.
//
// The process owning task 0 also runs the flow's duties: heartbeats,
// checkpoints (and group offset sync) and the topic config and ACL syncs.

import (
	"context"
	"hash/fnv"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TasksTopic is the flow's tasks topic, on the target.
func (f *FlowConfig) TasksTopic() string { return "mm2-tasks." + f.Source + ".internal" }

// TransactionalID is the transactional id of a task in exactly-once mode.
func (f *FlowConfig) TransactionalID(task int32) string {
	return "weir-mirror." + f.Name() + "." + strconv.Itoa(int(task))
}

// GroupID is the consumer group of the processes running the flow, on the
// target.
func (f *FlowConfig) GroupID() string { return "weir-mirror." + f.Name() }

// TaskOf is the task a source partition belongs to.
func (f *FlowConfig) TaskOf(topic string, partition int32) int32 {
	h := fnv.New32a()
	h.Write([]byte(topic))
	return int32((uint64(h.Sum32()) + uint64(partition)) % uint64(f.Tasks))
}

// ownership is what tasks a process holds, changed by the group's
// callbacks and read by the copy loop.
type ownership struct {
	mu sync.Mutex // held by the copy loop for a whole batch
	// tasks are the tasks held; reassigned is set when tasks were added
	// since the copy loop last looked.
	tasks      map[int32]bool
	reassigned bool
	// fresh are the tasks taken since the copy loop last looked.
	fresh []int32

	dutyMu   sync.Mutex
	dutyStop func()
}

// groupOpts are the options of the flow's group client.
func (f *flow) groupOpts() []kgo.Opt {
	topic := f.cfg.TasksTopic()
	return []kgo.Opt{
		kgo.ConsumerGroup(f.cfg.GroupID()),
		kgo.ConsumeTopics(topic),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.DisableAutoCommit(),
		kgo.SessionTimeout(f.cfg.SessionTimeout),
		kgo.HeartbeatInterval(f.cfg.HeartbeatInterval),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { f.assign(m[topic]) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { f.revoke(m[topic]) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { f.revoke(m[topic]) }),
	}
}

// assign takes tasks: the copy loop reloads the positions and starts their
// partitions.
func (f *flow) assign(tasks []int32) {
	if len(tasks) == 0 {
		return
	}
	o := &f.own
	o.mu.Lock()
	duties := false
	for _, t := range tasks {
		o.tasks[t] = true
		duties = duties || t == 0
	}
	o.fresh = append(o.fresh, tasks...)
	o.reassigned = true
	o.mu.Unlock()
	f.log.Info("tasks assigned", "tasks", tasks)
	if duties {
		f.startDuties()
	}
}

// revoke gives tasks up once the batch in flight is stored: their
// partitions are no longer consumed.
func (f *flow) revoke(tasks []int32) {
	if len(tasks) == 0 {
		return
	}
	o := &f.own
	o.mu.Lock()
	if err := f.finishWithin(f.runCtx); err != nil {
		f.fail(err)
	}
	duties := false
	for _, t := range tasks {
		delete(o.tasks, t)
		duties = duties || t == 0
	}
	drop := map[string][]int32{}
	for tp := range f.next {
		if !o.tasks[f.cfg.TaskOf(tp.topic, tp.partition)] {
			delete(f.next, tp)
			f.copied.reset(tp)
			drop[tp.topic] = append(drop[tp.topic], tp.partition)
		}
	}
	f.src.RemoveConsumePartitions(drop)
	f.closeTxn(tasks)
	var gone []topicPartition
	for t, ps := range drop {
		for _, p := range ps {
			gone = append(gone, topicPartition{f.cfg.Policy.FormatRemoteTopic(f.cfg.Source, t), p})
		}
	}
	f.metrics.forget(gone)
	o.mu.Unlock()
	f.log.Info("tasks revoked", "tasks", tasks)
	if duties {
		f.stopDuties()
	}
}

// startDuties starts the flow's duties, once.
func (f *flow) startDuties() {
	o := &f.own
	o.dutyMu.Lock()
	defer o.dutyMu.Unlock()
	if o.dutyStop != nil {
		return
	}
	ctx, cancel := context.WithCancel(f.runCtx)
	var wg sync.WaitGroup
	run := func(fn func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(ctx); err != nil {
				f.fail(err)
			}
		}()
	}
	if f.cfg.HeartbeatsInterval > 0 {
		run(f.heartbeats)
	}
	if f.cfg.CheckpointsInterval > 0 {
		run(f.checkpoints)
	}
	if f.cfg.SyncTopicConfigsInterval > 0 || f.cfg.SyncTopicACLsInterval > 0 {
		run(func(ctx context.Context) error { f.topicSync(ctx); return nil })
	}
	o.dutyStop = func() {
		cancel()
		wg.Wait()
	}
}

// stopDuties stops the flow's duties and waits for them.
func (f *flow) stopDuties() {
	o := &f.own
	o.dutyMu.Lock()
	defer o.dutyMu.Unlock()
	if o.dutyStop != nil {
		o.dutyStop()
		o.dutyStop = nil
		f.metrics.forgetCheckpoints()
	}
}
