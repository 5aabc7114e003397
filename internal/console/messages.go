package console

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Bounds of one read of the message browser.
const (
	defaultRecords = 20
	maxRecords     = 500
	maxReadBytes   = 4 << 20 // the records' keys, values and headers together
	readWait       = 3 * time.Second
)

type messageRow struct {
	Offset    int64
	Timestamp string
	Key       string
	Value     string
	Headers   []field
	Note      string // e.g. "not JSON: shown as text"
}

type messagesData struct {
	Topic      string
	Partitions []int32
	Partition  int32
	From       string // "offset" or "timestamp"
	Offset     string
	Timestamp  string
	Format     string // text, json or hex
	Committed  bool   // read_committed
	Max        int
	Read       bool // a read was asked for
	Rows       []messageRow
	Truncated  string // why the read stopped before Max records
	NextOffset int64
	Bytes      int
}

// messages is the message browser: a bounded read of one partition from
// an offset or a timestamp, by a consumer with the session's
// credentials (so the broker checks READ on the topic).
func (c *Console) messages(w http.ResponseWriter, r *http.Request, s *session) {
	ctx, cancel := reqCtx(r)
	defer cancel()
	name := r.PathValue("topic")
	q := r.URL.Query()
	d := &messagesData{Topic: name, From: q.Get("from"), Offset: q.Get("offset"), Timestamp: q.Get("timestamp"),
		Format: q.Get("format"), Committed: q.Get("isolation") == "read_committed", Read: q.Has("partition")}
	if d.From != "timestamp" {
		d.From = "offset"
	}
	if d.Format != "json" && d.Format != "hex" {
		d.Format = "text"
	}
	d.Max = defaultRecords
	if n, err := strconv.Atoi(q.Get("max")); err == nil {
		d.Max = min(max(n, 1), maxRecords)
	}
	meta, err := s.cl.adm.Metadata(ctx, name)
	if err == nil {
		err = meta.Topics[name].Err
	}
	if err != nil {
		c.renderErr(w, s, "messages", http.StatusBadGateway, fmt.Errorf("topic %s: %w", name, err), d)
		return
	}
	for _, p := range meta.Topics[name].Partitions.Sorted() {
		d.Partitions = append(d.Partitions, p.Partition)
	}
	if !d.Read {
		c.render(w, s, "messages", http.StatusOK, d)
		return
	}
	p, err := strconv.ParseInt(q.Get("partition"), 10, 32)
	if err != nil || p < 0 || int(p) >= len(d.Partitions) {
		c.renderErr(w, s, "messages", http.StatusBadRequest, fmt.Errorf("partition %q is not one of the topic's", q.Get("partition")), d)
		return
	}
	d.Partition = int32(p)
	start := kgo.NewOffset().AtStart()
	switch {
	case d.From == "timestamp" && d.Timestamp != "":
		t, err := time.Parse("2006-01-02T15:04", d.Timestamp)
		if err != nil {
			if t, err = time.Parse(time.RFC3339, d.Timestamp); err != nil {
				c.renderErr(w, s, "messages", http.StatusBadRequest, fmt.Errorf("timestamp %q: %v", d.Timestamp, err), d)
				return
			}
		}
		start = kgo.NewOffset().AfterMilli(t.UnixMilli())
	case d.From == "offset" && d.Offset != "":
		o, err := strconv.ParseInt(d.Offset, 10, 64)
		if err != nil || o < 0 {
			c.renderErr(w, s, "messages", http.StatusBadRequest, fmt.Errorf("offset %q is not a number", d.Offset), d)
			return
		}
		start = kgo.NewOffset().At(o)
	}
	if err := c.read(ctx, s.cl, d, start); err != nil {
		c.renderErr(w, s, "messages", http.StatusBadGateway, err, d)
		return
	}
	c.render(w, s, "messages", http.StatusOK, d)
}

// read fetches up to d.Max records and maxReadBytes of d.Partition from
// start with a consumer of its own (no group). It stops at the
// partition's end as ListOffsets gives it when the read starts (the high
// watermark, or the last stable offset for read_committed), and waits at
// most readWait for records that are not there yet.
func (c *Console) read(ctx context.Context, cl *client, d *messagesData, start kgo.Offset) error {
	iso := kgo.ReadUncommitted()
	if d.Committed {
		iso = kgo.ReadCommitted()
	}
	end, err := endOffset(ctx, cl, d.Topic, d.Partition, d.Committed)
	if err != nil {
		return err
	}
	opts := append(append([]kgo.Opt(nil), cl.opts...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{d.Topic: {d.Partition: start}}),
		kgo.FetchIsolationLevel(iso), kgo.FetchMaxBytes(maxReadBytes), kgo.FetchMaxPartitionBytes(maxReadBytes),
		kgo.MaxConcurrentFetches(1))
	cons, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cons.Close()
	if end == 0 {
		d.NextOffset, d.Truncated = -1, "the partition is empty"
		return nil
	}
	deadline, cancel := context.WithTimeout(ctx, readWait)
	defer cancel()
	d.NextOffset = -1
	for len(d.Rows) < d.Max {
		fs := cons.PollRecords(deadline, d.Max-len(d.Rows))
		if deadline.Err() != nil && fs.Empty() {
			if len(d.Rows) < d.Max {
				d.Truncated = fmt.Sprintf("no more records within %s", readWait)
			}
			return nil
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if ferr == nil && err != context.DeadlineExceeded && err != context.Canceled {
				ferr = err
			}
		})
		if ferr != nil {
			return ferr
		}
		for _, rec := range fs.Records() {
			d.Rows = append(d.Rows, formatRecord(rec, d.Format))
			d.NextOffset = rec.Offset + 1
			d.Bytes += len(rec.Key) + len(rec.Value)
			for _, h := range rec.Headers {
				d.Bytes += len(h.Key) + len(h.Value)
			}
			if d.Bytes >= maxReadBytes {
				d.Truncated = fmt.Sprintf("stopped at %s of record data", humanBytes(maxReadBytes))
				return nil
			}
			if rec.Offset+1 >= end && len(d.Rows) < d.Max {
				d.Truncated = "at the end of the partition"
				return nil
			}
		}
	}
	return nil
}

// endOffset is the partition's high watermark, or its last stable offset
// when committed.
func endOffset(ctx context.Context, cl *client, topic string, partition int32, committed bool) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	if committed {
		req.IsolationLevel = 1
	}
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = partition, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.kgo)
	if err != nil {
		return 0, fmt.Errorf("ListOffsets: %w", err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if t.Topic == topic && p.Partition == partition {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return 0, fmt.Errorf("ListOffsets: %w", err)
				}
				return p.Offset, nil
			}
		}
	}
	return 0, fmt.Errorf("ListOffsets: no answer for %s-%d", topic, partition)
}

// formatRecord shows a record's key, value and headers in format.
func formatRecord(rec *kgo.Record, format string) messageRow {
	m := messageRow{Offset: rec.Offset, Timestamp: rec.Timestamp.UTC().Format("2006-01-02 15:04:05.000Z")}
	var notes []string
	show := func(b []byte, what string) string {
		if b == nil {
			return "(null)"
		}
		switch format {
		case "hex":
			return hex.Dump(b)
		case "json":
			var out bytes.Buffer
			if err := json.Indent(&out, b, "", "  "); err == nil {
				return out.String()
			}
			notes = append(notes, what+" is not JSON: shown as text")
		}
		if !utf8.Valid(b) {
			notes = append(notes, what+" is not UTF-8: invalid bytes shown as \uFFFD")
			return strings.ToValidUTF8(string(b), "\uFFFD")
		}
		return string(b)
	}
	m.Key, m.Value = show(rec.Key, "key"), show(rec.Value, "value")
	for _, h := range rec.Headers {
		m.Headers = append(m.Headers, field{h.Key, show(h.Value, "header "+h.Key)})
	}
	m.Note = strings.Join(notes, "; ")
	return m
}
