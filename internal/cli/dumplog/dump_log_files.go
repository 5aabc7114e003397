package dumplog

// dump-log's record decoders (--offsets-decoder, --transaction-log-decoder,
// --cluster-metadata-decoder) and its dumps of indexes and snapshots.

import (
	"bufio"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"unicode"

	"weir/internal/cli/tool"
	"weir/internal/group"
	"weir/internal/log"
	"weir/internal/metadata"
	"weir/internal/quorum"
	"weir/internal/record"
	"weir/internal/txn"
)

// parseOffsetsRecord decodes a __consumer_offsets record with the group
// coordinator's decoders.
func parseOffsetsRecord(offset int64, r *record.Record) (key, payload *string) {
	if r.Key == nil {
		return errDecode(offset, errors.New("Failed to decode message using offset topic decoder (message had a missing key)"))
	}
	d, err := group.Describe(group.Record{Key: r.Key, Value: r.Value})
	var unknown group.ErrUnknownRecordType
	if errors.As(err, &unknown) {
		return ptr(fmt.Sprintf("Unknown record type %d at offset %d, skipping.", int16(unknown), offset)), nil
	}
	if err != nil {
		return errDecode(offset, err)
	}
	key = ptr(typedKey(d.KeyType, d.Key))
	if d.Value == nil {
		return key, ptr("<DELETE>")
	}
	return key, ptr(versionedValue(d.ValueVersion, d.Value))
}

// parseTxnRecord decodes a __transaction_state record with the transaction
// coordinator's decoders.
func parseTxnRecord(offset int64, r *record.Record) (key, payload *string) {
	d, ok, err := txn.Describe(txn.Record{Key: r.Key, Value: r.Value})
	switch {
	case err != nil:
		return errDecode(offset, err)
	case !ok:
		return ptr(fmt.Sprintf("Unknown record type %d at offset %d, skipping.", d.KeyVersion, offset)), nil
	}
	key = ptr(typedKey(d.KeyVersion, d.Key))
	if d.Value == nil {
		return key, ptr("<DELETE>")
	}
	return key, ptr(versionedValue(d.ValueVersion, d.Value))
}

// parseMetadataRecord decodes a __cluster_metadata record: Kafka prints
// {"type":"TOPIC_RECORD","version":0,"data":{...}} and no key.
func parseMetadataRecord(offset int64, r *record.Record) (key, payload *string) {
	rec, err := metadata.DecodeRecord(r.Value)
	if err != nil {
		return nil, ptr(fmt.Sprintf("Error at %d, skipping. %v", offset, err))
	}
	return nil, ptr(jsonText(struct {
		Type    string `json:"type"`
		Version int16  `json:"version"`
		Data    any    `json:"data"`
	}{recordTypeName(rec.APIKey()), rec.Version(), metadataJSON(reflect.ValueOf(rec), rec.Version())}))
}

// recordTypeName is Kafka's MetadataRecordType name: TopicRecord is
// TOPIC_RECORD.
func recordTypeName(apiKey int16) string {
	var sb strings.Builder
	for i, c := range metadata.RecordName(apiKey) {
		if i > 0 && unicode.IsUpper(c) {
			sb.WriteByte('_')
		}
		sb.WriteRune(unicode.ToUpper(c))
	}
	return sb.String()
}

// nullableArrays are the metadata record fields whose nil is null; other
// nil arrays are empty.
var nullableArrays = map[string]bool{"EligibleLeaderReplicas": true, "LastKnownElr": true}

// fieldRule is when Kafka's JSON converter writes a metadata record field
// that not every version has or that is tagged: from version since, and
// for a tagged field only when it is not its default (omit).
type fieldRule struct {
	since int16
	omit  func(reflect.Value) bool
}

var (
	omitNil   = func(v reflect.Value) bool { return v.IsNil() }
	omitEmpty = func(v reflect.Value) bool { return v.Len() == 0 }
	omitInt   = func(def int64) func(reflect.Value) bool { return func(v reflect.Value) bool { return v.Int() == def } }
)

// metadataFieldRules are the fields of metadata records that are tagged or
// not in every version, by record type.
var metadataFieldRules = map[string]map[string]fieldRule{
	"RegisterBrokerRecord": {"InControlledShutdown": {since: 1}, "IsMigratingZkBroker": {since: 2}, "LogDirs": {since: 3, omit: omitEmpty}},
	"PartitionRecord": {"Directories": {since: 1}, "LeaderRecoveryState": {omit: omitInt(0)},
		"EligibleLeaderReplicas": {since: 2, omit: omitNil}, "LastKnownElr": {since: 2, omit: omitNil}},
	"PartitionChangeRecord": {"Isr": {omit: omitNil}, "Leader": {omit: omitInt(-2)}, "Replicas": {omit: omitNil},
		"RemovingReplicas": {omit: omitNil}, "AddingReplicas": {omit: omitNil}, "LeaderRecoveryState": {omit: omitInt(-1)},
		"EligibleLeaderReplicas": {since: 2, omit: omitNil}, "LastKnownElr": {since: 2, omit: omitNil}, "Directories": {since: 1, omit: omitNil}},
	"BrokerRegistrationChangeRecord": {"Fenced": {omit: omitInt(0)}, "InControlledShutdown": {since: 1, omit: omitInt(0)},
		"LogDirs": {since: 2, omit: omitEmpty}},
	"BeginTransactionRecord": {"Name": {omit: omitNil}},
	"AbortTransactionRecord": {"Reason": {omit: omitNil}},
}

// metadataJSON is a metadata record of version as Kafka's
// MetadataJsonConverters writes it: the version's fields, named as in
// Kafka (weir's field names are the schema's), tagged ones only when not
// at their default, uuids in Kafka's base64 form, bytes in standard base64.
func metadataJSON(v reflect.Value, version int16) any {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return metadataJSON(v.Elem(), version)
	case reflect.Struct:
		obj := tool.JSONObject{}
		t := v.Type()
		rules := metadataFieldRules[t.Name()]
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() || f.Name == "RecordVersion" || f.Name == "UnknownTags" {
				continue
			}
			fv := v.Field(i)
			if r, ok := rules[f.Name]; ok && (version < r.since || r.omit != nil && r.omit(fv)) {
				continue
			}
			var val any
			if fv.Kind() == reflect.Slice && fv.IsNil() && f.Type.Elem().Kind() != reflect.Uint8 && !nullableArrays[f.Name] {
				val = []any{}
			} else {
				val = metadataJSON(fv, version)
			}
			obj = append(obj, tool.JSONField{Key: strings.ToLower(f.Name[:1]) + f.Name[1:], Val: val})
		}
		return obj
	case reflect.Array:
		if u, ok := v.Interface().(metadata.Uuid); ok {
			return u.String()
		}
	case reflect.Slice:
		if v.IsNil() {
			return nil
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return base64.StdEncoding.EncodeToString(v.Bytes())
		}
		arr := make([]any, v.Len())
		for i := range arr {
			arr[i] = metadataJSON(v.Index(i), version)
		}
		return arr
	}
	return v.Interface()
}

// dumpSnapshotHeader is a SnapshotHeaderRecord as Kafka's JSON converter
// writes it (weir's tagged field is not one of its fields).
func dumpSnapshotHeader(v []byte) (string, error) {
	h, err := quorum.DecodeSnapshotHeader(v, -1)
	if err != nil {
		return "", err
	}
	return jsonText(struct {
		Version                   int   `json:"version"`
		LastContainedLogTimestamp int64 `json:"lastContainedLogTimestamp"`
	}{0, h.LastContainedLogTimestamp}), nil
}

// segmentLog opens the segment file beside an index file.
func segmentLog(indexPath string, base int64) (*batchReader, error) {
	return openBatches(filepath.Join(filepath.Dir(indexPath), log.MakeFilename(log.FileLog, base)), 1<<62)
}

func dumpIndex(out *bufio.Writer, path string, base int64, o dumpOpts, errs *dumpErrors) error {
	buf, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	ents, err := log.DecodeOffsetIndex(buf, base)
	if err != nil {
		return err
	}
	segment, err := segmentLog(path, base)
	if err != nil {
		return err
	}
	defer segment.f.Close()
	if len(ents) == 0 {
		fmt.Fprintf(out, "%s is empty.\n", path)
		return nil
	}
	abs, _ := filepath.Abs(path)
	for i, e := range ents {
		if e.Offset == base && i > 0 {
			break // zeroes of a preallocated file
		}
		logOffset := int64(-1)
		// An unreadable batch is a mismatch (-1), as one that is not there.
		if b, ok, _ := segment.at(e.Position); ok {
			logOffset = b.LastOffset()
		}
		if logOffset != e.Offset {
			errs.add(&errs.indexMismatches, abs, e.Offset, logOffset)
		}
		if !o.verifyOnly {
			fmt.Fprintf(out, "offset: %d position: %d\n", e.Offset, e.Position)
		}
	}
	return nil
}

func dumpTimeIndex(out *bufio.Writer, path string, base int64, o dumpOpts, errs *dumpErrors) error {
	buf, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	ents, err := log.DecodeTimeIndex(buf, base)
	if err != nil {
		return err
	}
	segment, err := segmentLog(path, base)
	if err != nil {
		return err
	}
	defer segment.f.Close()
	abs, _ := filepath.Abs(path)
	prev := int64(-1)
	var pos int64
	for i, e := range ents {
		if e.Offset == base && i > 0 {
			break
		}
		// The batch ending at the indexed offset, scanning on from the last.
		var found record.Batch
		for p := pos; ; {
			b, ok, _ := segment.at(p) // unreadable: not found, as for the end
			if !ok {
				break
			}
			if b.LastOffset() >= e.Offset {
				found, pos = b, p
				break
			}
			p += int64(len(b))
		}
		switch {
		case found == nil:
			errs.add(&errs.timeNotFound, abs, e.Offset, -1)
		case found.LastOffset() != e.Offset:
			errs.add(&errs.timeNotFound, abs, e.Offset, found.LastOffset())
		default:
			if found.MaxTimestamp() != e.Timestamp {
				errs.add(&errs.timeMismatches, abs, e.Timestamp, found.MaxTimestamp())
			}
			if prev >= e.Timestamp {
				errs.add(&errs.timeOutOfOrder, abs, e.Timestamp, prev)
			}
		}
		if !o.verifyOnly {
			fmt.Fprintf(out, "timestamp: %d offset: %d\n", e.Timestamp, e.Offset)
		}
		prev = e.Timestamp
	}
	return nil
}

func dumpTxnIndex(out *bufio.Writer, path string) error {
	buf, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	ents, n := log.DecodeTxnIndex(buf)
	for _, e := range ents {
		fmt.Fprintf(out, "version: 0 producerId: %d firstOffset: %d lastOffset: %d lastStableOffset: %d\n",
			e.ProducerID, e.FirstOffset, e.LastOffset, e.LastStableOffset)
	}
	if n != len(buf) {
		return fmt.Errorf("%d bytes after the last valid entry", len(buf)-n)
	}
	return nil
}

func dumpProducerSnapshot(out *bufio.Writer, stderr io.Writer, path string) error {
	buf, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	ents, err := log.DecodeProducerSnapshot(buf)
	if err != nil {
		out.Flush()
		fmt.Fprintln(stderr, err) // Kafka prints a corrupt snapshot's message and goes on
		return nil
	}
	for _, e := range ents {
		txnFirst := "OptionalLong.empty"
		if e.CurrentTxnFirstOffset >= 0 {
			txnFirst = fmt.Sprintf("OptionalLong[%d]", e.CurrentTxnFirstOffset)
		}
		fmt.Fprintf(out, "producerId: %d producerEpoch: %d coordinatorEpoch: %d currentTxnFirstOffset: %s lastTimestamp: %d ",
			e.ProducerID, e.ProducerEpoch, e.CoordinatorEpoch, txnFirst, e.LastTimestamp)
		if e.HasBatch {
			fmt.Fprintf(out, "firstSequence: %d lastSequence: %d lastOffset: %d offsetDelta: %d timestamp: %d",
				e.FirstSeq, e.LastSeq, e.LastOffset, e.OffsetDelta, e.BatchTimestamp)
		}
		out.WriteByte('\n')
	}
	return nil
}
