package mirror

// MM2's internal records, serialized as Kafka's protocol.types.Schema does:
// fields in order, big-endian integers, a STRING as an int16 length and its
// UTF-8 bytes (never null). Checkpoint and heartbeat values start with an
// INT16 version (0).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// OffsetSync says that upstream offset UpstreamOffset of a source
// partition was written at DownstreamOffset of its remote partition. Topic
// is the source topic.
type OffsetSync struct {
	Topic            string
	Partition        int32
	UpstreamOffset   int64
	DownstreamOffset int64
}

// Checkpoint is a group's position translated to the target: Topic is the
// remote topic.
type Checkpoint struct {
	Group            string
	Topic            string
	Partition        int32
	UpstreamOffset   int64
	DownstreamOffset int64
	Metadata         string
}

// Heartbeat is one heartbeat of flow Source->Target.
type Heartbeat struct {
	Source, Target string
	// Timestamp is in milliseconds since the epoch.
	Timestamp int64
}

// errShort is returned for a record too short for its schema.
var errShort = errors.New("record too short for its schema")

type writer []byte

func (w writer) str(s string) writer {
	if len(s) > math.MaxInt16 {
		panic("mirror: string longer than an INT16 length") // callers bound their names
	}
	return append(binary.BigEndian.AppendUint16(w, uint16(len(s))), s...)
}
func (w writer) i16(v int16) writer { return binary.BigEndian.AppendUint16(w, uint16(v)) }
func (w writer) i32(v int32) writer { return binary.BigEndian.AppendUint32(w, uint32(v)) }
func (w writer) i64(v int64) writer { return binary.BigEndian.AppendUint64(w, uint64(v)) }

type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil || n < 0 || len(r.b) < n {
		r.err = errShort
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}
func (r *reader) i16() int16 {
	if b := r.take(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}
func (r *reader) i32() int32 {
	if b := r.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}
func (r *reader) i64() int64 {
	if b := r.take(8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}
func (r *reader) str() string {
	n := r.i16()
	if n < 0 && r.err == nil {
		r.err = fmt.Errorf("negative STRING length %d", n)
	}
	return string(r.take(int(n)))
}

// done ends a read: the error, if any. Trailing bytes are allowed, as the
// Java Schema.read ignores them.
func (r *reader) done(what string) error {
	if r.err != nil {
		return fmt.Errorf("%s: %w", what, r.err)
	}
	return nil
}

// Key is the offset sync's record key.
func (s OffsetSync) Key() []byte { return writer(nil).str(s.Topic).i32(s.Partition) }

// Value is the offset sync's record value.
func (s OffsetSync) Value() []byte { return writer(nil).i64(s.UpstreamOffset).i64(s.DownstreamOffset) }

// DecodeOffsetSync reads an offset-syncs record.
func DecodeOffsetSync(key, value []byte) (OffsetSync, error) {
	k := reader{b: key}
	s := OffsetSync{Topic: k.str(), Partition: k.i32()}
	if err := k.done("offset sync key"); err != nil {
		return OffsetSync{}, err
	}
	v := reader{b: value}
	s.UpstreamOffset, s.DownstreamOffset = v.i64(), v.i64()
	return s, v.done("offset sync value")
}

// Key is the checkpoint's record key.
func (c Checkpoint) Key() []byte { return writer(nil).str(c.Group).str(c.Topic).i32(c.Partition) }

// Value is the checkpoint's record value, version 0.
func (c Checkpoint) Value() []byte {
	return writer(nil).i16(0).i64(c.UpstreamOffset).i64(c.DownstreamOffset).str(c.Metadata)
}

// DecodeCheckpoint reads a checkpoints record.
func DecodeCheckpoint(key, value []byte) (Checkpoint, error) {
	k := reader{b: key}
	c := Checkpoint{Group: k.str(), Topic: k.str(), Partition: k.i32()}
	if err := k.done("checkpoint key"); err != nil {
		return Checkpoint{}, err
	}
	v := reader{b: value}
	if ver := v.i16(); v.err == nil && ver != 0 {
		return Checkpoint{}, fmt.Errorf("checkpoint value: unknown version %d", ver)
	}
	c.UpstreamOffset, c.DownstreamOffset, c.Metadata = v.i64(), v.i64(), v.str()
	return c, v.done("checkpoint value")
}

// Key is the heartbeat's record key.
func (h Heartbeat) Key() []byte { return writer(nil).str(h.Source).str(h.Target) }

// Value is the heartbeat's record value, version 0.
func (h Heartbeat) Value() []byte { return writer(nil).i16(0).i64(h.Timestamp) }

// DecodeHeartbeat reads a heartbeats record.
func DecodeHeartbeat(key, value []byte) (Heartbeat, error) {
	k := reader{b: key}
	h := Heartbeat{Source: k.str(), Target: k.str()}
	if err := k.done("heartbeat key"); err != nil {
		return Heartbeat{}, err
	}
	v := reader{b: value}
	if ver := v.i16(); v.err == nil && ver != 0 {
		return Heartbeat{}, fmt.Errorf("heartbeat value: unknown version %d", ver)
	}
	h.Timestamp = v.i64()
	return h, v.done("heartbeat value")
}
