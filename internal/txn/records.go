package txn

// The __transaction_state records (layout in the package comment).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record is one __transaction_state record. A nil Value is a tombstone.
type Record struct {
	Key   []byte
	Value []byte
}

// ErrBadRecord reports a record of __transaction_state that cannot be
// decoded.
var ErrBadRecord = errors.New("txn: bad __transaction_state record")

// keyVersion is the key version of transaction metadata records (Kafka's
// CoordinatorRecordType TRANSACTION_LOG); other versions are skipped.
const keyVersion = 0

func encodeKey(id string) []byte {
	k := kmsg.TxnMetadataKey{Version: keyVersion, TransactionalID: id}
	return k.AppendTo(nil)
}

// encodeTransit is the record of a transaction's metadata after t: value
// version 0, topics in name order, partitions ascending, and no topics
// (null) in state Empty, as Kafka writes it. Dead is a tombstone.
func encodeTransit(id string, t *transit) Record {
	if t.state == Dead {
		return Record{Key: encodeKey(id)}
	}
	v := kmsg.NewTxnMetadataValue()
	v.Version = 0
	v.ProducerID, v.ProducerEpoch, v.TimeoutMillis = t.producerID, t.epoch, t.timeoutMs
	v.State = kmsg.TransactionState(t.state)
	v.LastUpdateTimestamp, v.StartTimestamp = t.updateMs, t.startMs
	if t.state != Empty {
		v.Topics = []kmsg.TxnMetadataValueTopic{}
		for _, tp := range t.partitions.sorted() {
			if n := len(v.Topics); n == 0 || v.Topics[n-1].Topic != tp.Topic {
				v.Topics = append(v.Topics, kmsg.TxnMetadataValueTopic{Topic: tp.Topic})
			}
			last := &v.Topics[len(v.Topics)-1]
			last.Partitions = append(last.Partitions, tp.Partition)
		}
	}
	return Record{Key: encodeKey(id), Value: v.AppendTo(nil)}
}

// decodeRecord reads a record: ok is false for keys of other versions,
// meta is nil for a tombstone.
func decodeRecord(r Record) (id string, meta *txnMeta, ok bool, err error) {
	if len(r.Key) < 2 {
		return "", nil, false, fmt.Errorf("%w: key of %d bytes", ErrBadRecord, len(r.Key))
	}
	if v := int16(binary.BigEndian.Uint16(r.Key)); v != keyVersion {
		return "", nil, false, nil
	}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(r.Key); err != nil {
		return "", nil, false, fmt.Errorf("%w: key: %v", ErrBadRecord, err)
	}
	if r.Value == nil {
		return k.TransactionalID, nil, true, nil
	}
	v := kmsg.NewTxnMetadataValue()
	if err := v.ReadFrom(r.Value); err != nil {
		return "", nil, false, fmt.Errorf("%w: value of %q: %v", ErrBadRecord, k.TransactionalID, err)
	}
	if v.Version < 0 || v.Version > 1 {
		return "", nil, false, fmt.Errorf("%w: value version %d of %q", ErrBadRecord, v.Version, k.TransactionalID)
	}
	state := State(v.State)
	if state < Empty || state > PrepareEpochFence {
		return "", nil, false, fmt.Errorf("%w: state %d of %q", ErrBadRecord, v.State, k.TransactionalID)
	}
	m := &txnMeta{id: k.TransactionalID, producerID: v.ProducerID, prevProducerID: v.PreviousProducerID,
		epoch: v.ProducerEpoch, lastEpoch: noEpoch, timeoutMs: v.TimeoutMillis, state: state,
		partitions: partitionSet{}, startMs: v.StartTimestamp, updateMs: v.LastUpdateTimestamp}
	if state != Empty {
		for _, t := range v.Topics {
			for _, p := range t.Partitions {
				m.partitions[TopicPartition{t.Topic, p}] = struct{}{}
			}
		}
	}
	return k.TransactionalID, m, true, nil
}

// sortedIDs returns the ids of m in order, for deterministic sweeps.
func sortedIDs[V any](m map[string]V) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Described is a __transaction_state record decoded for display, in the
// JSON form of Kafka's TransactionLogKey and TransactionLogValue
// converters: the key's version and fields, the value's version and fields
// (nil for a tombstone). ok is false for a key of another version, which
// Kafka's tool reports as unknown.
type Described struct {
	KeyVersion   int16
	Key          any
	ValueVersion int16
	Value        any
}

// Describe decodes a record of __transaction_state with the coordinator's
// decoders, for offline tools (weir dump-log --transaction-log-decoder).
func Describe(r Record) (d Described, ok bool, err error) {
	if len(r.Key) < 2 {
		return d, false, fmt.Errorf("%w: key of %d bytes", ErrBadRecord, len(r.Key))
	}
	d.KeyVersion = int16(binary.BigEndian.Uint16(r.Key))
	if r.Value != nil && len(r.Value) >= 2 {
		d.ValueVersion = int16(binary.BigEndian.Uint16(r.Value))
	}
	id, meta, ok, err := decodeRecord(r)
	if err != nil || !ok {
		return d, ok, err
	}
	d.Key = struct {
		TransactionalID string `json:"transactionalId"`
	}{id}
	if meta == nil {
		return d, true, nil
	}
	v := kmsg.NewTxnMetadataValue()
	if err := v.ReadFrom(r.Value); err != nil {
		return d, true, err
	}
	type partitions struct {
		Topic        string  `json:"topic"`
		PartitionIDs []int32 `json:"partitionIds"`
	}
	var parts []partitions // null in state Empty, as written
	if v.Topics != nil {
		parts = []partitions{}
		for _, t := range v.Topics {
			parts = append(parts, partitions{t.Topic, t.Partitions})
		}
	}
	out := struct {
		ProducerID         int64        `json:"producerId"`
		PreviousProducerID *int64       `json:"previousProducerId,omitempty"` // v1+
		NextProducerID     *int64       `json:"nextProducerId,omitempty"`     // v1+
		ProducerEpoch      int16        `json:"producerEpoch"`
		NextProducerEpoch  *int16       `json:"nextProducerEpoch,omitempty"` // v1+
		TimeoutMs          int32        `json:"transactionTimeoutMs"`
		Status             string       `json:"transactionStatus"`
		Partitions         []partitions `json:"transactionPartitions"`
		LastUpdateMs       int64        `json:"transactionLastUpdateTimestampMs"`
		StartMs            int64        `json:"transactionStartTimestampMs"`
		ClientTxnVersion   *int16       `json:"clientTransactionVersion,omitempty"` // v1+
	}{ProducerID: v.ProducerID, ProducerEpoch: v.ProducerEpoch, TimeoutMs: v.TimeoutMillis, Status: State(v.State).String(),
		Partitions: parts, LastUpdateMs: v.LastUpdateTimestamp, StartMs: v.StartTimestamp}
	if v.Version >= 1 {
		out.PreviousProducerID, out.NextProducerID = &v.PreviousProducerID, &v.NextProducerID
		out.NextProducerEpoch, out.ClientTxnVersion = &v.NextProducerEpoch, &v.ClientTransactionVersion
	}
	d.Value = out
	return d, true, nil
}
