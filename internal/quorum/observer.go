package quorum

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/log"
	"weir/internal/metadata"
	"weir/internal/nodeclient"
	"weir/internal/record"
	"weir/internal/vfs"
)

// Observer follows the committed metadata log as a broker that is not a
// voter does: it fetches __cluster_metadata-0 from the active controller
// (Fetch, and FetchSnapshot when its offset is older than the leader's
// log start), keeps a copy in its metadata.log.dir, and delivers every
// batch to its subscribers in order. Only committed batches are ever
// served to it, so its copy never diverges.
type Observer struct {
	cfg  ObserverConfig
	lg   *slog.Logger
	log  *log.Log
	dir  string
	subs []func(Committed) error

	leader atomic.Int32
	conns  map[int32]*nodeclient.Conn

	mu      sync.Mutex
	changed chan struct{} // closed and replaced when the leader changes
}

// ObserverConfig configures an Observer.
type ObserverConfig struct {
	NodeID       int32
	Voters       map[int32]string // node.id -> controller listener host:port
	MetadataDir  string
	SegmentBytes int64
	ClusterID    string
	FS           vfs.FS
	Dial         nodeclient.Dialer
	Logger       *slog.Logger
}

// OpenObserver opens the local copy of the metadata log.
func OpenObserver(cfg ObserverConfig) (*Observer, error) {
	if cfg.FS == nil {
		cfg.FS = vfs.OS
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	dir := filepath.Join(cfg.MetadataDir, DirName)
	lc := log.DefaultConfig()
	lc.SegmentBytes = cfg.SegmentBytes
	lc.SegmentMs = math.MaxInt64
	lc.Delete, lc.RetentionMs = false, -1
	l, err := log.Open(dir, log.TopicPartition{Topic: metadata.LogTopic, Partition: 0}, lc, log.Options{FS: cfg.FS, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	l.SetHighWatermark(l.LogEndOffset())
	o := &Observer{cfg: cfg, lg: cfg.Logger, log: l, dir: dir, conns: map[int32]*nodeclient.Conn{}, changed: make(chan struct{})}
	o.leader.Store(-1)
	for id, addr := range cfg.Voters {
		o.conns[id] = nodeclient.New(addr, fmt.Sprintf("weir-observer-%d", cfg.NodeID), cfg.Dial)
	}
	return o, nil
}

// Subscribe registers fn for every batch; register before Replay.
func (o *Observer) Subscribe(fn func(Committed) error) { o.subs = append(o.subs, fn) }

// Leader is the node id of the active controller, as last learned (-1).
func (o *Observer) Leader() int32 { return o.leader.Load() }

// EndOffset is the offset after the last batch this observer holds.
func (o *Observer) EndOffset() int64 { return o.log.LogEndOffset() }

func (o *Observer) deliver(c Committed) error {
	for _, fn := range o.subs {
		if err := fn(c); err != nil {
			return err
		}
	}
	return nil
}

// Replay delivers the local copy: the newest local snapshot, then the
// batches after it.
func (o *Observer) Replay() error {
	s, _, err := loadNewestSnapshot(o.cfg.FS, o.dir, func(name string, err error) {
		o.lg.Error("skipping unreadable metadata snapshot", "file", name, "err", err)
	})
	if err != nil {
		return err
	}
	from := o.log.LogStartOffset()
	if s != nil {
		if err := o.deliver(Committed{Records: s.Records, LastOffset: s.EndOffset - 1, Snapshot: true}); err != nil {
			return err
		}
		from = max(from, s.EndOffset)
	}
	return o.replayFrom(from)
}

func (o *Observer) replayFrom(offset int64) error {
	end := o.log.LogEndOffset()
	for offset < end {
		data, err := o.log.ReadBytes(offset, 4<<20, end)
		if err != nil {
			return err
		}
		next, err := o.deliverBatches(data)
		if err != nil {
			return err
		}
		if next <= offset {
			return fmt.Errorf("metadata log: no whole batch at offset %d", offset)
		}
		offset = next
	}
	return nil
}

// deliverBatches delivers the whole batches of data and returns the
// offset after the last.
func (o *Observer) deliverBatches(data []byte) (int64, error) {
	next := int64(-1)
	for len(data) > 0 {
		b, rest, err := record.Next(data)
		if errors.Is(err, record.ErrShort) {
			break
		}
		if err != nil {
			return next, err
		}
		data, next = rest, b.NextOffset()
		if b.Attributes().Control() {
			continue
		}
		c, err := DecodeBatch(b)
		if err != nil {
			return next, err
		}
		if err := o.deliver(c); err != nil {
			return next, err
		}
	}
	return next, nil
}

// Run fetches from the active controller until ctx ends.
func (o *Observer) Run(ctx context.Context) {
	defer func() {
		for _, c := range o.conns {
			c.Close()
		}
		o.log.Close()
	}()
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		err := o.fetchOnce(ctx)
		if err == nil {
			backoff = 50 * time.Millisecond
			continue
		}
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, kerr.InconsistentClusterID) {
			// Not transient: this node's storage was formatted for
			// another cluster. Say so loudly, and keep trying in case
			// the controllers are the ones that are wrong.
			o.lg.Error("the controllers belong to another cluster", "cluster_id", o.cfg.ClusterID, "err", err)
			backoff = 30 * time.Second
		} else {
			o.lg.Debug("metadata fetch failed", "leader", o.Leader(), "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// target is the connection to the known leader, or a random voter.
func (o *Observer) target() (int32, *nodeclient.Conn) {
	if l := o.Leader(); l >= 0 {
		if c := o.conns[l]; c != nil {
			return l, c
		}
	}
	ids := make([]int32, 0, len(o.conns))
	for id := range o.conns {
		ids = append(ids, id)
	}
	id := ids[rand.IntN(len(ids))]
	return id, o.conns[id]
}

func (o *Observer) setLeader(id int32) {
	if o.leader.Swap(id) != id {
		o.mu.Lock()
		close(o.changed)
		o.changed = make(chan struct{})
		o.mu.Unlock()
	}
}

// WaitLeader blocks until a leader is known or ctx ends.
func (o *Observer) WaitLeader(ctx context.Context) error {
	for {
		o.mu.Lock()
		ch := o.changed
		o.mu.Unlock()
		if o.Leader() >= 0 {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (o *Observer) fetchOnce(ctx context.Context) error {
	id, c := o.target()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = o.cfg.NodeID, 500, 1, 8<<20
	cid := o.cfg.ClusterID
	req.ClusterID = &cid
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = metadata.LogTopic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 0, o.log.LogEndOffset(), 8<<20
	rp.LastFetchedEpoch = o.log.LatestEpoch()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := c.Call(fctx, req)
	if err != nil {
		o.setLeader(-1)
		return err
	}
	fr := resp.(*kmsg.FetchResponse)
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		return kerr.ErrorForCode(fr.ErrorCode)
	}
	p := fr.Topics[0].Partitions[0]
	switch err := kerr.ErrorForCode(p.ErrorCode); {
	case errors.Is(err, kerr.NotLeaderForPartition):
		o.setLeader(p.CurrentLeader.LeaderID)
		if p.CurrentLeader.LeaderID < 0 {
			return err
		}
		return nil
	case err != nil:
		return err
	}
	o.setLeader(id)
	if p.SnapshotID.EndOffset >= 0 {
		return o.loadSnapshot(ctx, c, p.SnapshotID.EndOffset, p.SnapshotID.Epoch)
	}
	if len(p.RecordBatches) == 0 {
		return nil
	}
	// Append whole batches as the leader stamped them; deliver after.
	whole := p.RecordBatches
	for off := 0; off < len(whole); {
		n, ok := record.PeekSize(whole[off:])
		if !ok || n <= 0 || off+n > len(whole) {
			whole = whole[:off]
			break
		}
		off += n
	}
	if len(whole) == 0 {
		return nil
	}
	start := o.log.LogEndOffset()
	if _, err := o.log.AppendAsFollower(whole); err != nil {
		return err
	}
	o.log.SetHighWatermark(o.log.LogEndOffset())
	_, err = o.deliverBatches(whole)
	if err != nil {
		return fmt.Errorf("metadata log from %d: %w", start, err)
	}
	return nil
}

// loadSnapshot fetches the leader's snapshot, installs it and delivers it.
func (o *Observer) loadSnapshot(ctx context.Context, c *nodeclient.Conn, endOffset int64, epoch int32) error {
	var data []byte
	for {
		req := kmsg.NewPtrFetchSnapshotRequest()
		req.SetVersion(0)
		req.ReplicaID, req.MaxBytes = o.cfg.NodeID, 8<<20
		cid := o.cfg.ClusterID
		req.ClusterID = &cid
		rt := kmsg.NewFetchSnapshotRequestTopic()
		rt.Topic = metadata.LogTopic
		rp := kmsg.NewFetchSnapshotRequestTopicPartition()
		rp.Partition, rp.SnapshotID.EndOffset, rp.SnapshotID.Epoch, rp.Position = 0, endOffset, epoch, int64(len(data))
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := c.Call(ctx, req)
		if err != nil {
			return err
		}
		fr := resp.(*kmsg.FetchSnapshotResponse)
		if err := kerr.ErrorForCode(fr.ErrorCode); err != nil {
			return err
		}
		if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
			return errors.New("fetch snapshot: malformed answer")
		}
		p := fr.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			return err
		}
		data = append(data, p.Bytes...)
		if int64(len(data)) >= p.Size || len(p.Bytes) == 0 {
			break
		}
	}
	s, err := decodeSnapshot(data)
	if err != nil {
		return err
	}
	if err := writeSnapshotFile(o.cfg.FS, o.dir, s, data); err != nil {
		return err
	}
	if err := o.log.TruncateFullyAndStartAt(s.EndOffset); err != nil {
		return err
	}
	if err := removeSnapshotsBefore(o.cfg.FS, o.dir, s.EndOffset); err != nil {
		return err
	}
	o.lg.Info("loaded metadata snapshot from the controller", "end_offset", s.EndOffset)
	return o.deliver(Committed{Records: s.Records, LastOffset: s.EndOffset - 1, Snapshot: true})
}
