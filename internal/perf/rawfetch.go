package perf

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// RawFetchConfig shapes the fetch requests of a RawFetcher.
type RawFetchConfig struct {
	Topic string
	// PartitionMaxBytes is the per-partition byte limit (--fetch-size).
	PartitionMaxBytes int32
	// MaxBytes is the response byte limit (fetch.max.bytes).
	MaxBytes int32
	// MinBytes and MaxWait are how long the broker may hold a request for
	// data to arrive.
	MinBytes int32
	MaxWait  time.Duration
	// ReadCommitted asks for read_committed isolation.
	ReadCommitted bool
	// FromLatest starts at the log end instead of the log start.
	FromLatest bool
	// Dial opens the connections to the leaders (nil: plain TCP).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Streams is how many fetch requests to keep outstanding per partition
	// leader (at least 1). Each leader's partitions are dealt round-robin
	// among its streams, so a leader with fewer partitions gets fewer.
	Streams int
}

// RawFetcher reads a topic by sending Fetch requests itself, straight to the
// partition leaders, and counts records and bytes from the record batch
// headers without decompressing or decoding a single record. It measures how
// fast a broker serves data rather than how fast a client decodes it.
//
// Each stream keeps exactly one request outstanding: it sends the next fetch
// as soon as the previous response's batch headers are walked.
type RawFetcher struct {
	cl  *kgo.Client
	cfg RawFetchConfig

	topicID [16]byte
	streams []*rawStream
	addrs   map[int32]string // broker id -> host:port

	records atomic.Int64
	bytes   atomic.Int64
	batches atomic.Int64
	fetches atomic.Int64

	progress chan struct{}
}

type rawStream struct {
	leader int32
	parts  []rawPart
}

type rawPart struct {
	partition int32
	epoch     int32
	offset    int64
}

// NewRawFetcher prepares a reader over cl, which needs only seed brokers.
func NewRawFetcher(cl *kgo.Client, cfg RawFetchConfig) *RawFetcher {
	if cfg.Streams < 1 {
		cfg.Streams = 1
	}
	if cfg.PartitionMaxBytes <= 0 {
		cfg.PartitionMaxBytes = 1 << 20
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 50 << 20
	}
	if cfg.MinBytes <= 0 {
		cfg.MinBytes = 1
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = 500 * time.Millisecond
	}
	return &RawFetcher{cl: cl, cfg: cfg, progress: make(chan struct{}, 1)}
}

// Progress receives a value (without blocking the fetchers, so values
// coalesce) whenever a response added records.
func (f *RawFetcher) Progress() <-chan struct{} { return f.progress }

// Counts returns the records and bytes counted so far.
func (f *RawFetcher) Counts() (records, bytes int64) {
	return f.records.Load(), f.bytes.Load()
}

// Fetches returns how many fetch responses and batches were handled.
func (f *RawFetcher) Fetches() (responses, batches int64) {
	return f.fetches.Load(), f.batches.Load()
}

// Partitions returns how many partitions the reader covers, and how many
// streams it runs; valid after Prepare.
func (f *RawFetcher) Partitions() (partitions, streams int) {
	for _, s := range f.streams {
		partitions += len(s.parts)
	}
	return partitions, len(f.streams)
}

// Prepare finds the topic's partition leaders and the starting offsets.
func (f *RawFetcher) Prepare(ctx context.Context) error {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(f.cfg.Topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, f.cl)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	if len(resp.Topics) != 1 {
		return fmt.Errorf("metadata: asked for one topic, got %d", len(resp.Topics))
	}
	t := resp.Topics[0]
	if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
		return fmt.Errorf("topic %s: %w", f.cfg.Topic, err)
	}
	if len(t.Partitions) == 0 {
		return fmt.Errorf("topic %s has no partitions", f.cfg.Topic)
	}
	f.topicID = t.TopicID
	f.addrs = map[int32]string{}
	for _, b := range resp.Brokers {
		f.addrs[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
	}

	starts, err := f.listOffsets(ctx, t.Partitions)
	if err != nil {
		return err
	}

	byLeader := map[int32][]rawPart{}
	for _, p := range t.Partitions {
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil && !errors.Is(err, kerr.ReplicaNotAvailable) {
			return fmt.Errorf("topic %s partition %d: %w", f.cfg.Topic, p.Partition, err)
		}
		if p.Leader < 0 {
			return fmt.Errorf("topic %s partition %d has no leader", f.cfg.Topic, p.Partition)
		}
		byLeader[p.Leader] = append(byLeader[p.Leader], rawPart{partition: p.Partition, epoch: p.LeaderEpoch, offset: starts[p.Partition]})
	}
	leaders := make([]int32, 0, len(byLeader))
	for l := range byLeader {
		leaders = append(leaders, l)
	}
	sort.Slice(leaders, func(i, j int) bool { return leaders[i] < leaders[j] })
	f.streams = f.streams[:0]
	for _, l := range leaders {
		parts := byLeader[l]
		sort.Slice(parts, func(i, j int) bool { return parts[i].partition < parts[j].partition })
		n := min(f.cfg.Streams, len(parts))
		group := make([]*rawStream, n)
		for i := range group {
			group[i] = &rawStream{leader: l}
		}
		for i, p := range parts {
			group[i%n].parts = append(group[i%n].parts, p)
		}
		f.streams = append(f.streams, group...)
	}
	return nil
}

// listOffsets asks each leader for the start (or end) offset of its
// partitions.
func (f *RawFetcher) listOffsets(ctx context.Context, parts []kmsg.MetadataResponseTopicPartition) (map[int32]int64, error) {
	ts := int64(-2) // earliest
	if f.cfg.FromLatest {
		ts = -1
	}
	req := kmsg.NewPtrListOffsetsRequest()
	if f.cfg.ReadCommitted {
		req.IsolationLevel = 1
	}
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = f.cfg.Topic
	for _, p := range parts {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = p.Partition
		rp.CurrentLeaderEpoch = p.LeaderEpoch
		rp.Timestamp = ts
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	// The client splits a ListOffsets request per partition leader.
	resp, err := req.RequestWith(ctx, f.cl)
	if err != nil {
		return nil, fmt.Errorf("list offsets: %w", err)
	}
	out := map[int32]int64{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, fmt.Errorf("list offsets for %s partition %d: %w", t.Topic, p.Partition, err)
			}
			out[p.Partition] = p.Offset
		}
	}
	for _, p := range parts {
		if _, ok := out[p.Partition]; !ok {
			return nil, fmt.Errorf("list offsets: no answer for partition %d", p.Partition)
		}
	}
	return out, nil
}

// Run fetches until ctx is done, which is the normal end and returns nil, or
// until a stream fails.
func (f *RawFetcher) Run(ctx context.Context) error {
	if len(f.streams) == 0 {
		return errors.New("raw fetcher: Prepare was not called or found no partitions")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
	)
	for _, s := range f.streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f.stream(ctx, s); err != nil {
				errOnce.Do(func() { first = err; cancel() })
			}
		}()
	}
	wg.Wait()
	return first
}

func (f *RawFetcher) stream(ctx context.Context, s *rawStream) error {
	addr, ok := f.addrs[s.leader]
	if !ok {
		return fmt.Errorf("fetch: no address for broker %d", s.leader)
	}
	dial := f.cfg.Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("fetch: dialing broker %d: %w", s.leader, err)
	}
	conn := &rawConn{nc: nc}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis = int32(f.cfg.MaxWait / time.Millisecond)
	req.MinBytes = f.cfg.MinBytes
	req.MaxBytes = f.cfg.MaxBytes
	if f.cfg.ReadCommitted {
		req.IsolationLevel = 1
	}
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = f.cfg.Topic
	rt.TopicID = f.topicID
	for _, p := range s.parts {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = p.partition
		rp.CurrentLeaderEpoch = p.epoch
		rp.PartitionMaxBytes = f.cfg.PartitionMaxBytes
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	slot := func(partition int32) int {
		for i := range s.parts {
			if s.parts[i].partition == partition {
				return i
			}
		}
		return -1
	}

	failures := 0
	for {
		for i := range s.parts {
			req.Topics[0].Partitions[i].FetchOffset = s.parts[i].offset
		}
		resp, err := conn.fetch(req)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("fetch from broker %d: %w", s.leader, err)
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			if failures++; failures > 50 || !retriable(err) {
				return fmt.Errorf("fetch from broker %d: %w", s.leader, err)
			}
			if !sleepCtx(ctx, 100*time.Millisecond) {
				return nil
			}
			continue
		}
		f.fetches.Add(1)
		var added BatchCount
		backoff := false
		for ti := range resp.Topics {
			t := &resp.Topics[ti]
			for pi := range t.Partitions {
				p := &t.Partitions[pi]
				i := slot(p.Partition)
				if i < 0 {
					continue
				}
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					switch {
					case errors.Is(err, kerr.OffsetOutOfRange):
						if f.cfg.FromLatest || s.parts[i].offset > p.HighWatermark {
							s.parts[i].offset = p.HighWatermark
						} else {
							s.parts[i].offset = p.LogStartOffset
						}
						continue
					case retriable(err):
						backoff = true
						continue
					default:
						return fmt.Errorf("fetch %s partition %d from broker %d: %w", f.cfg.Topic, p.Partition, s.leader, err)
					}
				}
				c, err := CountBatchesFrom(p.RecordBatches, s.parts[i].offset)
				if err != nil {
					return fmt.Errorf("fetch %s partition %d: %w", f.cfg.Topic, p.Partition, err)
				}
				if c.NextOffset > s.parts[i].offset {
					s.parts[i].offset = c.NextOffset
				}
				added.Records += c.Records
				added.Bytes += c.Bytes
				added.Batches += c.Batches
			}
		}
		if backoff {
			if failures++; failures > 50 {
				return errors.New("fetch: partitions keep failing with retriable errors")
			}
			if !sleepCtx(ctx, 100*time.Millisecond) {
				return nil
			}
		} else {
			failures = 0
		}
		if added.Batches > 0 {
			f.batches.Add(added.Batches)
		}
		if added.Records > 0 {
			f.bytes.Add(added.Bytes)
			f.records.Add(added.Records)
			select {
			case f.progress <- struct{}{}:
			default:
			}
		}
	}
}

// rawFetchVersion is the Fetch version the raw reader speaks: flexible,
// with topic names, served by every broker this tool measures.
const rawFetchVersion = 12

// rawConn is one connection sending fetches and reading their responses
// into a buffer it reuses, so that reading costs one copy from the socket
// and no allocation per response: a client that allocated and zeroed a
// buffer for each megabyte it reads would be measured instead of the broker.
type rawConn struct {
	nc   net.Conn
	corr int32
	wbuf []byte
	rbuf []byte
	resp kmsg.FetchResponse
}

// fetch sends req and returns the decoded response; the response's record
// bytes alias the connection's buffer and are valid until the next call.
func (c *rawConn) fetch(req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	req.SetVersion(rawFetchVersion)
	c.corr++
	w := append(c.wbuf[:0], 0, 0, 0, 0)
	w = binary.BigEndian.AppendUint16(w, uint16(req.Key()))
	w = binary.BigEndian.AppendUint16(w, rawFetchVersion)
	w = binary.BigEndian.AppendUint32(w, uint32(c.corr))
	w = binary.BigEndian.AppendUint16(w, uint16(len(rawClientID)))
	w = append(w, rawClientID...)
	w = append(w, 0) // no tagged fields in the request header
	w = req.AppendTo(w)
	binary.BigEndian.PutUint32(w, uint32(len(w)-4))
	c.wbuf = w
	if _, err := c.nc.Write(w); err != nil {
		return nil, err
	}
	var hdr [4]byte
	if _, err := io.ReadFull(c.nc, hdr[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(hdr[:]))
	if n < 5 {
		return nil, fmt.Errorf("fetch response of %d bytes", n)
	}
	if cap(c.rbuf) < n {
		c.rbuf = make([]byte, n+n/4)
	}
	buf := c.rbuf[:n]
	if _, err := io.ReadFull(c.nc, buf); err != nil {
		return nil, err
	}
	if corr := int32(binary.BigEndian.Uint32(buf)); corr != c.corr {
		return nil, fmt.Errorf("fetch response for correlation id %d, want %d", corr, c.corr)
	}
	body := buf[4:]
	// Response header v1: tagged fields, a uvarint count then each field.
	tags, k := binary.Uvarint(body)
	if k <= 0 || tags != 0 {
		return nil, errors.New("fetch response header carries tagged fields")
	}
	c.resp.Default()
	c.resp.SetVersion(rawFetchVersion)
	if err := c.resp.ReadFrom(body[k:]); err != nil {
		return nil, fmt.Errorf("decoding fetch response: %w", err)
	}
	return &c.resp, nil
}

const rawClientID = "weir-perf-raw"

func retriable(err error) bool {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Retriable
	}
	return kgo.IsRetryableBrokerErr(err)
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
