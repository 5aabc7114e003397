package group

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/coordinator"
)

// Request is one group request and what the connection knows of its sender.
type Request struct {
	// Token identifies the request to the caller; its Response carries it.
	Token uint64
	// ClientID is the client id of the request header.
	ClientID string
	// ClientHost is the peer address as Kafka shows it ("/127.0.0.1").
	ClientHost string
	// Body is the decoded request, Version set.
	Body kmsg.Request
	// VerifyTxn and Guard go with a TxnOffsetCommit's write (KIP-890).
	VerifyTxn bool
	Guard     uint64
}

// Response is the answer to the Request with the same Token. Body has the
// request's version.
type Response = coordinator.Response

// Record is one __consumer_offsets record. A nil Value is a tombstone.
type Record struct {
	Key   []byte
	Value []byte
}

// Write asks the driver to append Records to __consumer_offsets-Partition, as
// one batch, and to report the outcome with Persisted(ID, offset, err).
type Write struct {
	ID        uint64
	Partition int32
	Records   []Record
	// Transactional writes (a TxnOffsetCommit's) are appended as a
	// transactional batch of ProducerID and ProducerEpoch, without a
	// sequence number, as Kafka's coordinator appends them; the log fences
	// a stale epoch. ProducerID and ProducerEpoch are unused otherwise.
	Transactional bool
	ProducerID    int64
	ProducerEpoch int16
	// VerifyTxn, for a transactional write, asks the log to refuse the
	// batch if it would open the producer's transaction without Guard
	// being the producer's current verification guard (KIP-890: the
	// driver checked with the transaction coordinator that the partition
	// is in the transaction). Both come from the Request.
	VerifyTxn bool
	Guard     uint64
}

// Target is the write's id and partition, for the runtime.
func (w Write) Target() (id uint64, partition int32) { return w.ID, w.Partition }

// Ready is what one input produced. See the package comment.
type Ready = coordinator.Ready[Write]

// Coordinator is the group coordinator shard: it holds the groups and
// offsets of the __consumer_offsets partitions this broker leads, as two
// managers in the manner of Kafka's GroupCoordinatorShard: groups (classic
// and consumer protocol, groupManager) and offsets (plain and
// transactional, offsetManager). The shard routes each input to them,
// runs what spans both (loading and unloading a partition, deleting
// groups, retention), and shares with them the partitions, the writes in
// flight, the timers and the Ready being built (base).
type Coordinator struct {
	*base
	groups  *groupManager
	offsets *offsetManager
}

// base is the shard's state that both managers use.
type base struct {
	cfg Config

	// parts are the partitions led here; loading ones are not yet served.
	parts map[int32]*offsetsPartition

	// writes are the Writes not yet reported by Persisted.
	writes    map[uint64]*pendingWrite
	lastWrite uint64

	timers  coordinator.Timers[*timer]
	lastSeq uint64 // timer and waiter identities; never reused
	// nextCleanup is when offsets retention runs next; zero while no
	// partition is led.
	nextCleanup time.Time

	now time.Time
	out Ready

	// dirty are the groups whose gauges the input being handled may have
	// changed, counted what each group last added to them (stats.go);
	// both empty without cfg.Stats.
	dirty   map[string]struct{}
	counted map[string]groupCount
}

type offsetsPartition struct {
	loading bool
	// txnGroups are, per producer id, the groups that may hold pending
	// transactional offsets of that producer (entries whose offsets went
	// otherwise are dropped at the producer's next marker).
	txnGroups map[int64]map[string]struct{}
	// earlyMarkers are the markers reported while loading, applied after
	// the load to what the load did not already see.
	earlyMarkers []txnMarker
}

type pendingWrite struct {
	partition int32
	// done is called once with the outcome: 0 and the log offset of the
	// write's first record, or the Kafka error code of the failed append
	// (before translation into a group error) and -1.
	done func(code int16, offset int64)
}

// New returns a Coordinator that leads no partition yet.
func New(cfg Config) *Coordinator {
	if cfg.OffsetsTopicPartitions < 1 {
		panic("group: OffsetsTopicPartitions must be positive")
	}
	if cfg.NewUUID == nil {
		cfg.NewUUID = randomUUID
	}
	cfg.Consumer = cfg.Consumer.withDefaults()
	b := &base{cfg: cfg, parts: make(map[int32]*offsetsPartition), writes: make(map[uint64]*pendingWrite),
		dirty: make(map[string]struct{}), counted: make(map[string]groupCount)}
	groups := newGroupManager(b)
	offsets := newOffsetManager(b, groups)
	groups.offsets = offsets
	return &Coordinator{base: b, groups: groups, offsets: offsets}
}

// PartitionFor is the __consumer_offsets partition of groupID under this
// coordinator's configuration.
func (b *base) PartitionFor(groupID string) int32 {
	return coordinator.PartitionFor(groupID, b.cfg.OffsetsTopicPartitions)
}

// Handle processes one request. It panics if Body is not one of the
// thirteen group APIs served here.
func (c *Coordinator) Handle(now time.Time, req Request) Ready {
	c.begin(now)
	switch r := req.Body.(type) {
	case *kmsg.JoinGroupRequest:
		c.groups.joinGroup(req, r)
	case *kmsg.SyncGroupRequest:
		c.groups.syncGroup(req, r)
	case *kmsg.HeartbeatRequest:
		c.groups.heartbeat(req, r)
	case *kmsg.LeaveGroupRequest:
		c.groups.leaveGroup(req, r)
	case *kmsg.OffsetCommitRequest:
		c.offsets.offsetCommit(req, r)
	case *kmsg.TxnOffsetCommitRequest:
		c.offsets.txnOffsetCommit(req, r)
	case *kmsg.OffsetFetchRequest:
		c.offsets.offsetFetch(req, r)
	case *kmsg.DescribeGroupsRequest:
		c.groups.describeGroups(req, r)
	case *kmsg.ListGroupsRequest:
		c.groups.listGroups(req, r)
	case *kmsg.DeleteGroupsRequest:
		c.deleteGroups(req, r)
	case *kmsg.OffsetDeleteRequest:
		c.offsets.offsetDelete(req, r)
	case *kmsg.ConsumerGroupHeartbeatRequest:
		c.groups.consumerGroupHeartbeat(req, r)
	case *kmsg.ConsumerGroupDescribeRequest:
		c.groups.consumerGroupDescribe(req, r)
	default:
		panic(fmt.Sprintf("group: Handle of %T", req.Body))
	}
	return c.end()
}

// Tick fires every timer due at now. Timers that firing schedules for now or
// earlier wait for the next Tick, so a call always returns.
func (c *Coordinator) Tick(now time.Time) Ready {
	c.begin(now)
	last := c.lastSeq
	for t, ok := c.timers.PopDue(now, last); ok; t, ok = c.timers.PopDue(now, last) {
		c.groups.fire(t)
	}
	if !c.nextCleanup.IsZero() && !now.Before(c.nextCleanup) {
		c.cleanupGroupMetadata()
		c.nextCleanup = now.Add(c.cfg.OffsetsRetentionCheckInterval)
	}
	return c.end()
}

// Persisted reports the outcome of the Write with this id: nil once its
// records are durable, with offset the log offset of its first record (the
// others follow it one by one), else the append error (ideally wrapping a
// *kerr.Error; offset is then unused). Unknown ids, such as writes of an
// unloaded partition, are ignored.
func (c *Coordinator) Persisted(now time.Time, id uint64, offset int64, err error) Ready {
	c.begin(now)
	if w, ok := c.writes[id]; ok {
		delete(c.writes, id)
		if code := appendErrorCode(err); code != 0 {
			w.done(code, -1)
		} else {
			w.done(0, offset)
		}
	}
	return c.end()
}

func (c *Coordinator) begin(now time.Time) {
	c.now = now
	c.out = Ready{}
}

func (c *Coordinator) end() Ready {
	c.recount()
	out := c.out
	c.out = Ready{}
	out.Deadline = c.deadline()
	return out
}

func (b *base) nowMs() int64 { return b.now.UnixMilli() }

func (b *base) respond(token uint64, body kmsg.Response) {
	b.out.Responses = append(b.out.Responses, Response{Token: token, Body: body})
}

// write emits records for partition p; done runs when Persisted reports
// them (nil done: nothing waits). Writes for a partition not served here
// fail at once with NOT_COORDINATOR.
func (b *base) write(p int32, recs []Record, done func(code int16)) {
	if done == nil {
		done = func(int16) {}
	}
	b.emit(Write{Partition: p, Records: recs}, func(code int16, _ int64) { done(code) })
}

// emit is write for a Write with its batch fields set; done also learns
// the log offset of the first record.
func (b *base) emit(w Write, done func(code int16, offset int64)) {
	if ps, ok := b.parts[w.Partition]; !ok || ps.loading {
		done(kerr.NotCoordinator.Code, -1)
		return
	}
	b.lastWrite++
	w.ID = b.lastWrite
	b.writes[w.ID] = &pendingWrite{partition: w.Partition, done: done}
	b.out.Writes = append(b.out.Writes, w)
}

// route returns the partition of a group and the error to answer if this
// broker does not serve it now.
func (b *base) route(groupID string) (int32, int16) {
	p := b.PartitionFor(groupID)
	ps, ok := b.parts[p]
	switch {
	case !ok:
		return p, kerr.NotCoordinator.Code
	case ps.loading:
		return p, kerr.CoordinatorLoadInProgress.Code
	}
	return p, 0
}

// appendErrorCode is the Kafka code of an append failure.
func appendErrorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// CommitErrorCode translates an append failure of offset commit records,
// or a failed KIP-890 check of a transactional one, into the error the
// committer sees, as Kafka does (maybeConvertOffsetCommitError).
func CommitErrorCode(code int16) int16 { return commitErrorCode(code) }

func commitErrorCode(code int16) int16 {
	switch code {
	case kerr.NetworkException.Code:
		return kerr.CoordinatorLoadInProgress.Code
	case kerr.UnknownTopicOrPartition.Code, kerr.NotEnoughReplicas.Code,
		kerr.NotEnoughReplicasAfterAppend.Code, kerr.RequestTimedOut.Code:
		return kerr.CoordinatorNotAvailable.Code
	case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
		return kerr.NotCoordinator.Code
	case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code, kerr.InvalidFetchSize.Code:
		return kerr.InvalidCommitOffsetSize.Code
	}
	return code
}

// groupErrorCode translates an append failure of group metadata records
// (and tombstones) into the error the member sees, as Kafka does.
func groupErrorCode(code int16) int16 {
	switch code {
	case kerr.UnknownTopicOrPartition.Code, kerr.NotEnoughReplicas.Code,
		kerr.NotEnoughReplicasAfterAppend.Code, kerr.RequestTimedOut.Code:
		return kerr.CoordinatorNotAvailable.Code
	case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
		return kerr.NotCoordinator.Code
	case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code, kerr.InvalidFetchSize.Code:
		return kerr.UnknownServerError.Code
	}
	return code
}
