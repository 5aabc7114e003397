package quorum

import (
	"fmt"

	"weir/internal/metadata"
	"weir/internal/record"
)

// Committed is a batch of metadata records committed together; LastOffset
// is the offset of its last record. A Snapshot batch holds the whole state
// as of LastOffset: whoever applies it starts from an empty image.
type Committed struct {
	Records    []metadata.Record
	LastOffset int64
	Snapshot   bool
}

// EncodeBatch builds the record batch holding recs, one metadata record
// per record value with a null key, as Kafka stores them in
// __cluster_metadata.
func EncodeBatch(recs []metadata.Record, now int64) (record.Batch, error) {
	rs, err := metadataRecords(recs)
	if err != nil {
		return nil, err
	}
	h := record.NewBatchHeader()
	h.BaseTimestamp, h.MaxTimestamp = now, now
	return record.Build(h, rs, 0)
}

// metadataRecords are the records of a batch holding recs.
func metadataRecords(recs []metadata.Record) ([]record.Record, error) {
	rs := make([]record.Record, len(recs))
	for i, r := range recs {
		v, err := metadata.AppendRecord(nil, r)
		if err != nil {
			return nil, err
		}
		rs[i] = record.Record{OffsetDelta: int32(i), Value: v}
	}
	return rs, nil
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
			return Committed{}, fmt.Errorf("metadata log offset %d: %w", b.BaseOffset()+int64(r.OffsetDelta), err)
		}
		c.Records = append(c.Records, rec)
	}
	return c, it.Err()
}
