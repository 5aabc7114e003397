package server

import (
	"errors"
	"fmt"

	"weir/internal/log"
	"weir/internal/record"
)

// scanRecords calls fn, in log order, with every record of l from its log
// start up to end (control records included) and the batch holding it.
// The coordinators load their partitions with it. name is the partition's
// name for errors.
func scanRecords(name string, l *log.Log, end int64, fn func(b record.Batch, r *record.Record) error) error {
	for offset := l.LogStartOffset(); offset < end; {
		data, err := l.ReadBytes(offset, 1<<20, end)
		if err != nil {
			return err
		}
		if len(data) == 0 {
			return nil
		}
		progressed := false
		for len(data) > 0 {
			b, rest, err := record.Next(data)
			if errors.Is(err, record.ErrShort) {
				break
			}
			if err != nil {
				return err
			}
			data, progressed = rest, true
			offset = b.NextOffset()
			raw, err := b.Decoded(nil, 1<<30)
			if err != nil {
				return err
			}
			it := record.NewRecords(raw, b.NumRecords())
			for r, ok := it.Next(); ok; r, ok = it.Next() {
				if b.BaseOffset()+int64(r.OffsetDelta) < l.LogStartOffset() {
					continue
				}
				if err := fn(b, r); err != nil {
					return err
				}
			}
			if err := it.Err(); err != nil {
				return err
			}
		}
		if !progressed {
			return fmt.Errorf("%s: no whole batch at offset %d", name, offset)
		}
	}
	return nil
}
