// Package metalog is the cluster metadata log, __cluster_metadata-0: an
// ordered log of metadata records (see package metadata) that every image
// is built from. Records are stored as record batches, one metadata record
// per record value with a null key, exactly as Kafka stores them.
//
// Local is the log of a single-voter quorum: an append is committed once
// it is fsynced, and committed batches are delivered to subscribers in
// order before Append returns. The Raft quorum replaces the commit rule,
// not the storage or the delivery contract.
package metalog

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"sync"
	"time"

	"weir/internal/log"
	"weir/internal/metadata"
	"weir/internal/record"
	"weir/internal/vfs"
)

// DirName is the metadata log's partition directory.
const DirName = "__cluster_metadata-0"

// Committed is a batch of records committed together; LastOffset is the
// offset of its last record. A Snapshot batch holds the whole state as of
// LastOffset: whoever applies it starts from an empty image.
type Committed struct {
	Records    []metadata.Record
	LastOffset int64
	Snapshot   bool
}

// Local is a single-voter metadata log. See the package comment.
type Local struct {
	mu   sync.Mutex
	log  *log.Log
	subs []func(Committed) error
	lg   *slog.Logger
}

// OpenLocal opens (or creates) the metadata log under metadataDir.
func OpenLocal(metadataDir string, segmentBytes int64, fsys vfs.FS, lg *slog.Logger) (*Local, error) {
	cfg := log.DefaultConfig()
	cfg.SegmentBytes = segmentBytes
	cfg.SegmentMs = math.MaxInt64
	cfg.Delete = false
	cfg.RetentionMs = -1
	cfg.FlushMessages = 1
	l, err := log.Open(filepath.Join(metadataDir, DirName), log.TopicPartition{Topic: "__cluster_metadata", Partition: 0}, cfg,
		log.Options{FS: fsys, Logger: lg})
	if err != nil {
		return nil, err
	}
	l.SetHighWatermark(l.LogEndOffset())
	return &Local{log: l, lg: lg}, nil
}

// Subscribe registers fn to receive every batch committed from now on.
func (m *Local) Subscribe(fn func(Committed) error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.subs = append(m.subs, fn)
}

// EndOffset is the offset the next record will get.
func (m *Local) EndOffset() int64 { return m.log.LogEndOffset() }

// Replay calls fn with every committed batch from the start of the log.
func (m *Local) Replay(fn func(Committed) error) error {
	offset := m.log.LogStartOffset()
	end := m.log.LogEndOffset()
	for offset < end {
		data, err := m.log.ReadBytes(offset, 1<<20, end)
		if err != nil {
			return err
		}
		if len(data) == 0 {
			return fmt.Errorf("metalog: no data at offset %d below end %d", offset, end)
		}
		for read := offset; len(data) > 0; {
			b, rest, err := record.Next(data)
			if err != nil {
				if errors.Is(err, record.ErrShort) && offset > read {
					break // a batch cut by the read size: read again from it
				}
				// Not even the first batch of the read is whole: reading
				// again from it would loop forever.
				return fmt.Errorf("metalog: batch at offset %d: %w", offset, err)
			}
			c, err := DecodeBatch(b)
			if err != nil {
				return err
			}
			if err := fn(c); err != nil {
				return err
			}
			offset = b.NextOffset()
			data = rest
		}
	}
	return nil
}

// Append commits records as one batch and delivers them to subscribers;
// it returns the offset of the last record.
func (m *Local) Append(recs []metadata.Record) (int64, error) {
	if len(recs) == 0 {
		return m.log.LogEndOffset() - 1, nil
	}
	b, err := EncodeBatch(recs, time.Now().UnixMilli())
	if err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	info, err := m.log.AppendAsLeader(b, 0)
	if err != nil {
		return 0, err
	}
	m.log.SetHighWatermark(info.LastOffset + 1)
	c := Committed{Records: recs, LastOffset: info.LastOffset}
	for _, fn := range m.subs {
		if err := fn(c); err != nil {
			return info.LastOffset, err
		}
	}
	return info.LastOffset, nil
}

// Close flushes and closes the log.
func (m *Local) Close() error { return m.log.Close() }

// EncodeBatch builds the record batch holding recs, one metadata record
// per record value with a null key, as the metadata log stores them.
func EncodeBatch(recs []metadata.Record, now int64) (record.Batch, error) {
	rs := make([]record.Record, len(recs))
	for i, r := range recs {
		v, err := metadata.AppendRecord(nil, r)
		if err != nil {
			return nil, err
		}
		rs[i] = record.Record{OffsetDelta: int32(i), Value: v}
	}
	h := record.NewBatchHeader()
	h.BaseTimestamp, h.MaxTimestamp = now, now
	return record.Build(h, rs, 0)
}

// DecodeBatch returns the metadata records of a batch written by
// EncodeBatch, with LastOffset the batch's last offset.
func DecodeBatch(b record.Batch) (Committed, error) {
	raw, err := b.Decoded(nil, 1<<30)
	if err != nil {
		return Committed{}, err
	}
	c := Committed{LastOffset: b.LastOffset()}
	it := record.NewRecords(raw, b.NumRecords())
	for r, ok := it.Next(); ok; r, ok = it.Next() {
		rec, err := metadata.DecodeRecord(r.Value)
		if err != nil {
			return Committed{}, fmt.Errorf("metalog: offset %d: %w", b.BaseOffset()+int64(r.OffsetDelta), err)
		}
		c.Records = append(c.Records, rec)
	}
	return c, it.Err()
}
