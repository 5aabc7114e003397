// Package metadata implements the records of the KRaft metadata log, the
// internal __cluster_metadata topic, in the same wire format Apache Kafka
// uses, so that logs and snapshots written by weir and by Kafka can be read
// by either.
//
// # Framing
//
// Every metadata record is the value of one record in a __cluster_metadata
// record batch (the record key is null). The value is laid out as:
//
//	offset  size        content
//	0       uvarint     frame version; always 1. Frame version 0 was the
//	                    KRaft preview format of Kafka 2.8 and is rejected.
//	        uvarint     api key of the record type (see the table below).
//	        uvarint     version of the record type's schema.
//	        rest        the record body, in the "flexible" encoding.
//
// A uvarint is an unsigned LEB128 integer of at most five bytes: seven value
// bits per byte, least significant group first, high bit set on every byte
// but the last. For example 1 is 0x01 and 300 is 0xac 0x02. The api key and
// version must fit in an int16.
//
// Every record type is flexible from version 0, so the body is encoded with
// these rules:
//
//	int8, int16, int32, int64   fixed width, big-endian, two's complement
//	uint16                      fixed width, big-endian
//	float64                     IEEE 754 bits, big-endian (8 bytes)
//	bool                        one byte: 0x00 false, 0x01 true (any non-zero
//	                            byte is read as true)
//	uuid                        16 raw bytes
//	string                      uvarint(len+1), then len bytes of UTF-8;
//	                            a nullable string encodes null as uvarint 0.
//	                            At most 32767 bytes.
//	bytes                       uvarint(len+1), then len bytes
//	array                       uvarint(n+1), then n elements; a nullable
//	                            array encodes null as uvarint 0
//	struct                      its fields in schema order, then its own
//	                            tagged-field section (so each element of an
//	                            array of structs ends with one)
//
// The top-level body is itself a struct: the fields that exist at the
// record's version, in schema order, then the tagged-field section:
//
//	uvarint                     number of tagged fields that follow
//	per field, by ascending tag:
//	  uvarint                   tag
//	  uvarint                   size in bytes of the value
//	  size bytes                the value, encoded as above
//
// A tagged field is written only when its value differs from its default
// (null for nullable arrays and strings, empty for other arrays, or the
// schema's default number). Tags this package does not know are kept in the
// UnknownTags field of the struct that carried them and written back
// unchanged, as Kafka does.
//
// A TopicRecord v0 for topic "foo" therefore starts 0x01 0x02 0x00 (frame
// version 1, api key 2, version 0), then 0x04 'f' 'o' 'o', the 16 bytes of
// the topic id, and 0x00 (no tagged fields).
//
// # Record types
//
//	api key  type                             versions
//	0        RegisterBrokerRecord             0-3
//	1        UnregisterBrokerRecord           0
//	2        TopicRecord                      0
//	3        PartitionRecord                  0-2
//	4        ConfigRecord                     0
//	5        PartitionChangeRecord            0-2
//	7        FenceBrokerRecord                0
//	8        UnfenceBrokerRecord              0
//	9        RemoveTopicRecord                0
//	10       DelegationTokenRecord            0
//	11       UserScramCredentialRecord        0
//	12       FeatureLevelRecord               0
//	14       ClientQuotaRecord                0
//	15       ProducerIdsRecord                0
//	17       BrokerRegistrationChangeRecord   0-2
//	18       AccessControlEntryRecord         0
//	19       RemoveAccessControlEntryRecord   0
//	20       NoOpRecord                       0
//	22       RemoveUserScramCredentialRecord  0
//	23       BeginTransactionRecord           0
//	24       EndTransactionRecord             0
//	25       AbortTransactionRecord           0
//	26       RemoveDelegationTokenRecord      0
//	10000    ClusterLinkRecord                0    weir's own (record_links.go)
//	10001    RemoveClusterLinkRecord          0    weir's own
//	10002    MirrorTopicRecord                0    weir's own
//
// Api keys 10000 and above are reserved for weir's own record types,
// which Kafka does not have (cluster links); Kafka's schemas are far
// below that range.
//
// Keys missing from the table (6, 13, 16, 21, and 27 to 9999) belong to
// types Kafka retired or that this package does not implement, such as
// ZkMigrationStateRecord (21), RegisterControllerRecord (27) and
// ClearElrRecord (28); decoding them fails with ErrUnknownAPIKey.
//
// # Versions and defaults
//
// Each record struct carries the version it is (or will be) encoded at in
// its RecordVersion field. A struct literal therefore means version 0;
// NewRecord and the New* constructors return the highest version with
// Kafka's field defaults filled in (for example PartitionChangeRecord's
// Leader is -2, "no change"), which plain struct literals do not have.
//
// Fields that do not exist at the chosen version must hold their default
// value, otherwise AppendRecord fails, mirroring Kafka's
// UnsupportedVersionException. When decoding, such fields are left at their
// defaults. Null and empty are distinct only for nullable arrays: a nil
// slice is null, a non-nil empty slice is empty. Non-nullable empty arrays
// and byte strings decode as nil.
package metadata

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"reflect"

	"github.com/twmb/franz-go/pkg/kbin"
)

// FrameVersion is the only frame version this package reads and writes.
const FrameVersion = 1

// LogTopic is the name of the metadata log's topic. Its one partition is the
// Raft log; no client may create, or write to, a topic of that name.
const LogTopic = "__cluster_metadata"

// API keys of the supported record types (the "apiKey" of Kafka's schemas).
const (
	APIKeyRegisterBrokerRecord            int16 = 0
	APIKeyUnregisterBrokerRecord          int16 = 1
	APIKeyTopicRecord                     int16 = 2
	APIKeyPartitionRecord                 int16 = 3
	APIKeyConfigRecord                    int16 = 4
	APIKeyPartitionChangeRecord           int16 = 5
	APIKeyFenceBrokerRecord               int16 = 7
	APIKeyUnfenceBrokerRecord             int16 = 8
	APIKeyRemoveTopicRecord               int16 = 9
	APIKeyDelegationTokenRecord           int16 = 10
	APIKeyUserScramCredentialRecord       int16 = 11
	APIKeyFeatureLevelRecord              int16 = 12
	APIKeyClientQuotaRecord               int16 = 14
	APIKeyProducerIdsRecord               int16 = 15
	APIKeyBrokerRegistrationChangeRecord  int16 = 17
	APIKeyAccessControlEntryRecord        int16 = 18
	APIKeyRemoveAccessControlEntryRecord  int16 = 19
	APIKeyNoOpRecord                      int16 = 20
	APIKeyRemoveUserScramCredentialRecord int16 = 22
	APIKeyBeginTransactionRecord          int16 = 23
	APIKeyEndTransactionRecord            int16 = 24
	APIKeyAbortTransactionRecord          int16 = 25
	APIKeyRemoveDelegationTokenRecord     int16 = 26
)

// Errors returned (wrapped, with details) by DecodeRecord and AppendRecord.
// Test for them with errors.Is.
var (
	ErrUnknownFrameVersion = errors.New("unknown metadata record frame version")
	ErrUnknownAPIKey       = errors.New("unknown metadata record api key")
	ErrUnsupportedVersion  = errors.New("unsupported metadata record version")
	ErrTruncated           = errors.New("truncated metadata record")
	ErrTrailingBytes       = errors.New("trailing bytes after metadata record")
	ErrMalformed           = errors.New("malformed metadata record")
	ErrNotEncodable        = errors.New("metadata record cannot be encoded at its version")
)

// Record is one metadata record. It is implemented only by the pointer
// types of this package (*TopicRecord, *PartitionRecord, ...).
type Record interface {
	// APIKey is the record type's api key.
	APIKey() int16
	// Version is the schema version the record is encoded at.
	Version() int16
	// SetVersion changes the version the record is encoded at.
	SetVersion(v int16)
	// HighestVersion is the newest version of the type this package
	// supports. The lowest is 0 for every type.
	HighestVersion() int16

	encodeBody(w *writer)
	decodeBody(r *reader)
}

// Uuid is a Kafka UUID (topic ids, incarnation ids, log directory ids...).
type Uuid [16]byte

// String returns the UUID as Kafka prints it: URL-safe base64 without
// padding (22 characters).
func (u Uuid) String() string { return base64.RawURLEncoding.EncodeToString(u[:]) }

// ParseUuid parses the 22-character form produced by String.
func ParseUuid(s string) (Uuid, error) {
	var u Uuid
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return u, fmt.Errorf("metadata: invalid uuid %q: %w", s, err)
	}
	if len(b) != len(u) {
		return u, fmt.Errorf("metadata: invalid uuid %q: %d bytes, want 16", s, len(b))
	}
	copy(u[:], b)
	return u, nil
}

// TaggedField is a tagged field this package does not know, kept verbatim
// so that it survives a decode/encode cycle.
type TaggedField struct {
	Tag  uint32
	Data []byte // the encoded value, without the tag and size prefixes
}

type recordType struct {
	name string
	new  func() Record
}

var recordTypes = map[int16]recordType{
	APIKeyRegisterBrokerRecord:            {"RegisterBrokerRecord", func() Record { return NewRegisterBrokerRecord() }},
	APIKeyUnregisterBrokerRecord:          {"UnregisterBrokerRecord", func() Record { return &UnregisterBrokerRecord{} }},
	APIKeyTopicRecord:                     {"TopicRecord", func() Record { return &TopicRecord{} }},
	APIKeyPartitionRecord:                 {"PartitionRecord", func() Record { return NewPartitionRecord() }},
	APIKeyConfigRecord:                    {"ConfigRecord", func() Record { return &ConfigRecord{} }},
	APIKeyPartitionChangeRecord:           {"PartitionChangeRecord", func() Record { return NewPartitionChangeRecord() }},
	APIKeyFenceBrokerRecord:               {"FenceBrokerRecord", func() Record { return &FenceBrokerRecord{} }},
	APIKeyUnfenceBrokerRecord:             {"UnfenceBrokerRecord", func() Record { return &UnfenceBrokerRecord{} }},
	APIKeyRemoveTopicRecord:               {"RemoveTopicRecord", func() Record { return &RemoveTopicRecord{} }},
	APIKeyDelegationTokenRecord:           {"DelegationTokenRecord", func() Record { return &DelegationTokenRecord{} }},
	APIKeyUserScramCredentialRecord:       {"UserScramCredentialRecord", func() Record { return &UserScramCredentialRecord{} }},
	APIKeyFeatureLevelRecord:              {"FeatureLevelRecord", func() Record { return &FeatureLevelRecord{} }},
	APIKeyClientQuotaRecord:               {"ClientQuotaRecord", func() Record { return &ClientQuotaRecord{} }},
	APIKeyProducerIdsRecord:               {"ProducerIdsRecord", func() Record { return NewProducerIdsRecord() }},
	APIKeyBrokerRegistrationChangeRecord:  {"BrokerRegistrationChangeRecord", func() Record { return &BrokerRegistrationChangeRecord{} }},
	APIKeyAccessControlEntryRecord:        {"AccessControlEntryRecord", func() Record { return &AccessControlEntryRecord{} }},
	APIKeyRemoveAccessControlEntryRecord:  {"RemoveAccessControlEntryRecord", func() Record { return &RemoveAccessControlEntryRecord{} }},
	APIKeyNoOpRecord:                      {"NoOpRecord", func() Record { return &NoOpRecord{} }},
	APIKeyRemoveUserScramCredentialRecord: {"RemoveUserScramCredentialRecord", func() Record { return &RemoveUserScramCredentialRecord{} }},
	APIKeyBeginTransactionRecord:          {"BeginTransactionRecord", func() Record { return &BeginTransactionRecord{} }},
	APIKeyEndTransactionRecord:            {"EndTransactionRecord", func() Record { return &EndTransactionRecord{} }},
	APIKeyAbortTransactionRecord:          {"AbortTransactionRecord", func() Record { return &AbortTransactionRecord{} }},
	APIKeyRemoveDelegationTokenRecord:     {"RemoveDelegationTokenRecord", func() Record { return &RemoveDelegationTokenRecord{} }},
}

// APIKeys returns the api keys of every supported record type, ascending.
func APIKeys() []int16 {
	keys := make([]int16, 0, len(recordTypes))
	for k := int16(0); len(keys) < len(recordTypes); k++ {
		if _, ok := recordTypes[k]; ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// RecordName returns the Kafka name of the record type with the given api
// key ("TopicRecord"), or "" if the key is not supported.
func RecordName(apiKey int16) string { return recordTypes[apiKey].name }

// NewRecord returns an empty record of the given type at its highest
// version, with Kafka's default field values.
func NewRecord(apiKey int16) (Record, error) {
	t, ok := recordTypes[apiKey]
	if !ok {
		return nil, fmt.Errorf("metadata: %w %d", ErrUnknownAPIKey, apiKey)
	}
	r := t.new()
	r.SetVersion(r.HighestVersion())
	return r, nil
}

// EncodeRecord returns the framed value bytes of r at r.Version(): exactly
// what Kafka writes as the value of a __cluster_metadata record. It panics
// if AppendRecord would fail (an unsupported version, a field set that does
// not exist at that version, an over-long string...), which is a
// programming error; use AppendRecord to get an error instead.
func EncodeRecord(r Record) []byte {
	b, err := AppendRecord(nil, r)
	if err != nil {
		panic(err)
	}
	return b
}

// AppendRecord appends the framed value bytes of r at r.Version() to dst.
// On error dst is returned unchanged.
func AppendRecord(dst []byte, r Record) ([]byte, error) {
	if r == nil || reflect.ValueOf(r).IsNil() {
		return dst, fmt.Errorf("metadata: %w: nil record", ErrNotEncodable)
	}
	key, v := r.APIKey(), r.Version()
	name := RecordName(key)
	if v < 0 || v > r.HighestVersion() {
		return dst, fmt.Errorf("metadata: encoding %s: %w %d (supported: 0-%d)",
			name, ErrUnsupportedVersion, v, r.HighestVersion())
	}
	w := writer{b: dst, v: v, name: name}
	w.b = kbin.AppendUvarint(w.b, FrameVersion)
	w.b = kbin.AppendUvarint(w.b, uint32(key))
	w.b = kbin.AppendUvarint(w.b, uint32(v))
	r.encodeBody(&w)
	if w.err != nil {
		return dst, w.err
	}
	return w.b, nil
}

// DecodeRecord parses the framed value bytes of a __cluster_metadata record.
// Every version from 0 to the type's HighestVersion is accepted. The input
// must hold exactly one record; the result does not alias b.
func DecodeRecord(b []byte) (Record, error) {
	r := reader{b: b, name: "record header", v: -1}
	frame := r.uvarint("frame version")
	if r.err != nil {
		return nil, r.err
	}
	switch {
	case frame == 0:
		return nil, fmt.Errorf("metadata: %w 0 (the Kafka 2.8 KRaft preview format is not supported)",
			ErrUnknownFrameVersion)
	case frame != FrameVersion:
		return nil, fmt.Errorf("metadata: %w %d (only %d is supported)", ErrUnknownFrameVersion, frame, FrameVersion)
	}
	key := r.uvarint("api key")
	ver := r.uvarint("version")
	if r.err != nil {
		return nil, r.err
	}
	if key > math.MaxInt16 {
		return nil, fmt.Errorf("metadata: %w %d (does not fit in an int16)", ErrUnknownAPIKey, key)
	}
	t, ok := recordTypes[int16(key)]
	if !ok {
		return nil, fmt.Errorf("metadata: %w %d", ErrUnknownAPIKey, key)
	}
	rec := t.new()
	if ver > uint32(rec.HighestVersion()) {
		return nil, fmt.Errorf("metadata: decoding %s: %w %d (supported: 0-%d)",
			t.name, ErrUnsupportedVersion, ver, rec.HighestVersion())
	}
	rec.SetVersion(int16(ver))
	r.name, r.v = t.name, int16(ver)
	rec.decodeBody(&r)
	if r.err != nil {
		return nil, r.err
	}
	if rest := len(b) - r.off; rest > 0 {
		return nil, fmt.Errorf("metadata: decoding %s v%d: %w: %d byte(s) after the record",
			t.name, ver, ErrTrailingBytes, rest)
	}
	return rec, nil
}
