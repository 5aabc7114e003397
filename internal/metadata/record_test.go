package metadata

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"
)

func strp(s string) *string { return &s }

// testUuid returns a UUID whose bytes count up from first.
func testUuid(first byte) Uuid {
	var u Uuid
	for i := range u {
		u[i] = first + byte(i)
	}
	return u
}

// samples builds, for every supported api key, a record at version v with
// every field that exists at v set to a non-default value (and every field
// that does not exist left at its default).
var samples = map[int16]func(v int16) Record{
	APIKeyRegisterBrokerRecord: func(v int16) Record {
		r := &RegisterBrokerRecord{
			RecordVersion: v,
			BrokerId:      1,
			IncarnationId: testUuid(0x10),
			BrokerEpoch:   1 << 40,
			EndPoints: []BrokerEndpoint{
				{Name: "PLAINTEXT", Host: "broker-1.example", Port: 9092, SecurityProtocol: 0},
				{Name: "SSL", Host: "broker-1.example", Port: 65535, SecurityProtocol: 1},
			},
			Features: []BrokerFeature{
				{Name: "metadata.version", MinSupportedVersion: 7, MaxSupportedVersion: 21},
				{Name: "kraft.version", MinSupportedVersion: 0, MaxSupportedVersion: 1},
			},
			Rack:   strp("rack-a"),
			Fenced: true,
		}
		if v >= 1 {
			r.InControlledShutdown = true
		}
		if v >= 2 {
			r.IsMigratingZkBroker = true
		}
		if v >= 3 {
			r.LogDirs = []Uuid{testUuid(0x20), testUuid(0x30)}
		}
		return r
	},
	APIKeyUnregisterBrokerRecord: func(v int16) Record {
		return &UnregisterBrokerRecord{RecordVersion: v, BrokerId: 3, BrokerEpoch: -7}
	},
	APIKeyTopicRecord: func(v int16) Record {
		return &TopicRecord{RecordVersion: v, Name: "orders", TopicId: testUuid(0x40)}
	},
	APIKeyPartitionRecord: func(v int16) Record {
		r := &PartitionRecord{
			RecordVersion:       v,
			PartitionId:         12,
			TopicId:             testUuid(0x40),
			Replicas:            []int32{1, 2, 3, 4},
			Isr:                 []int32{1, 2},
			RemovingReplicas:    []int32{3},
			AddingReplicas:      []int32{4},
			Leader:              2,
			LeaderRecoveryState: 1,
			LeaderEpoch:         17,
			PartitionEpoch:      99,
		}
		if v >= 1 {
			r.Directories = []Uuid{testUuid(1), testUuid(2), testUuid(3), testUuid(4)}
		}
		if v >= 2 {
			r.EligibleLeaderReplicas = []int32{3}
			r.LastKnownElr = []int32{}
		}
		return r
	},
	APIKeyConfigRecord: func(v int16) Record {
		return &ConfigRecord{RecordVersion: v, ResourceType: 2, ResourceName: "orders", Name: "retention.ms", Value: strp("86400000")}
	},
	APIKeyPartitionChangeRecord: func(v int16) Record {
		r := &PartitionChangeRecord{
			RecordVersion:       v,
			PartitionId:         5,
			TopicId:             testUuid(0x40),
			Isr:                 []int32{1, 3},
			Leader:              -1,
			Replicas:            []int32{1, 3, 5},
			RemovingReplicas:    []int32{},
			AddingReplicas:      []int32{5},
			LeaderRecoveryState: 0,
		}
		if v >= 1 {
			r.Directories = []Uuid{testUuid(7), testUuid(8), testUuid(9)}
		}
		if v >= 2 {
			r.EligibleLeaderReplicas = []int32{5}
			r.LastKnownElr = []int32{1}
		}
		return r
	},
	APIKeyFenceBrokerRecord: func(v int16) Record {
		return &FenceBrokerRecord{RecordVersion: v, Id: 4, Epoch: 1234}
	},
	APIKeyUnfenceBrokerRecord: func(v int16) Record {
		return &UnfenceBrokerRecord{RecordVersion: v, Id: 4, Epoch: 1235}
	},
	APIKeyRemoveTopicRecord: func(v int16) Record {
		return &RemoveTopicRecord{RecordVersion: v, TopicId: testUuid(0x40)}
	},
	APIKeyDelegationTokenRecord: func(v int16) Record {
		return &DelegationTokenRecord{
			RecordVersion:       v,
			Owner:               "User:alice",
			Requester:           "User:bob",
			Renewers:            []string{"User:carol", ""},
			IssueTimestamp:      1700000000000,
			MaxTimestamp:        1700600000000,
			ExpirationTimestamp: 1700086400000,
			TokenId:             "tok-1",
		}
	},
	APIKeyUserScramCredentialRecord: func(v int16) Record {
		return &UserScramCredentialRecord{
			RecordVersion: v,
			Name:          "alice",
			Mechanism:     2,
			Salt:          []byte{1, 2, 3},
			StoredKey:     []byte{4, 5, 6, 7},
			ServerKey:     []byte{8},
			Iterations:    8192,
		}
	},
	APIKeyFeatureLevelRecord: func(v int16) Record {
		return &FeatureLevelRecord{RecordVersion: v, Name: "metadata.version", FeatureLevel: 21}
	},
	APIKeyClientQuotaRecord: func(v int16) Record {
		return &ClientQuotaRecord{
			RecordVersion: v,
			Entity: []EntityData{
				{EntityType: "user", EntityName: strp("alice")},
				{EntityType: "client-id", EntityName: nil},
			},
			Key:    "producer_byte_rate",
			Value:  1048576.5,
			Remove: true,
		}
	},
	APIKeyProducerIdsRecord: func(v int16) Record {
		return &ProducerIdsRecord{RecordVersion: v, BrokerId: 2, BrokerEpoch: 10, NextProducerId: 5000}
	},
	APIKeyBrokerRegistrationChangeRecord: func(v int16) Record {
		r := &BrokerRegistrationChangeRecord{RecordVersion: v, BrokerId: 6, BrokerEpoch: 77, Fenced: -1}
		if v >= 1 {
			r.InControlledShutdown = 1
		}
		if v >= 2 {
			r.LogDirs = []Uuid{testUuid(0x50)}
		}
		return r
	},
	APIKeyAccessControlEntryRecord: func(v int16) Record {
		return &AccessControlEntryRecord{
			RecordVersion:  v,
			Id:             testUuid(0x60),
			ResourceType:   2,
			ResourceName:   "orders",
			PatternType:    3,
			Principal:      "User:alice",
			Host:           "*",
			Operation:      3,
			PermissionType: 3,
		}
	},
	APIKeyRemoveAccessControlEntryRecord: func(v int16) Record {
		return &RemoveAccessControlEntryRecord{RecordVersion: v, Id: testUuid(0x60)}
	},
	APIKeyNoOpRecord: func(v int16) Record { return &NoOpRecord{RecordVersion: v} },
	APIKeyRemoveUserScramCredentialRecord: func(v int16) Record {
		return &RemoveUserScramCredentialRecord{RecordVersion: v, Name: "alice", Mechanism: 1}
	},
	APIKeyBeginTransactionRecord: func(v int16) Record {
		return &BeginTransactionRecord{RecordVersion: v, Name: strp("create topic orders")}
	},
	APIKeyEndTransactionRecord: func(v int16) Record { return &EndTransactionRecord{RecordVersion: v} },
	APIKeyAbortTransactionRecord: func(v int16) Record {
		return &AbortTransactionRecord{RecordVersion: v, Reason: strp("controller failover")}
	},
	APIKeyRemoveDelegationTokenRecord: func(v int16) Record {
		return &RemoveDelegationTokenRecord{RecordVersion: v, TokenId: "tok-1"}
	},
}

// allSamples returns one populated record per type and version.
func allSamples(t testing.TB) []Record {
	var out []Record
	for _, key := range APIKeys() {
		mk, ok := samples[key]
		if !ok {
			t.Fatalf("no sample for api key %d (%s)", key, RecordName(key))
		}
		r, _ := NewRecord(key)
		for v := int16(0); v <= r.HighestVersion(); v++ {
			out = append(out, mk(v))
		}
	}
	return out
}

func TestAPIKeys(t *testing.T) {
	keys := APIKeys()
	if len(keys) != 26 || len(samples) != len(keys) {
		t.Fatalf("APIKeys() = %v (%d), samples: %d", keys, len(keys), len(samples))
	}
	for _, k := range keys {
		r, err := NewRecord(k)
		if err != nil {
			t.Fatal(err)
		}
		if r.APIKey() != k || r.Version() != r.HighestVersion() {
			t.Errorf("NewRecord(%d): key %d version %d", k, r.APIKey(), r.Version())
		}
		if name := RecordName(k); !strings.HasSuffix(name, "Record") ||
			reflect.TypeOf(r).Elem().Name() != name {
			t.Errorf("RecordName(%d) = %q for %T", k, name, r)
		}
	}
	if _, err := NewRecord(6); !errors.Is(err, ErrUnknownAPIKey) {
		t.Errorf("NewRecord(6) error = %v", err)
	}
}

func roundTrip(t *testing.T, r Record) {
	t.Helper()
	b, err := AppendRecord(nil, r)
	if err != nil {
		t.Fatalf("AppendRecord(%T v%d): %v", r, r.Version(), err)
	}
	if h := kbin.AppendUvarint(kbin.AppendUvarint([]byte{1}, uint32(r.APIKey())), uint32(r.Version())); !bytes.HasPrefix(b, h) {
		t.Fatalf("%T v%d: header % x, want % x", r, r.Version(), b[:len(h)], h)
	}
	got, err := DecodeRecord(b)
	if err != nil {
		t.Fatalf("DecodeRecord(%T v%d): %v\n% x", r, r.Version(), err, b)
	}
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("%T v%d round trip:\n got %+v\nwant %+v", r, r.Version(), got, r)
	}
	if b2 := EncodeRecord(got); !bytes.Equal(b, b2) {
		t.Fatalf("%T v%d: re-encoding differs:\n% x\n% x", r, r.Version(), b, b2)
	}
}

func TestRoundTripEveryTypeAndVersion(t *testing.T) {
	for _, r := range allSamples(t) {
		roundTrip(t, r)
	}
}

// TestRoundTripUnknownTags adds tagged fields this package does not know,
// at the top level and in nested structs; they must survive unchanged.
func TestRoundTripUnknownTags(t *testing.T) {
	unknown := []TaggedField{{Tag: 40, Data: []byte{0xde, 0xad}}, {Tag: 1000, Data: []byte{}}}
	for _, r := range allSamples(t) {
		reflect.ValueOf(r).Elem().FieldByName("UnknownTags").Set(reflect.ValueOf(unknown))
		switch x := r.(type) {
		case *RegisterBrokerRecord:
			x.EndPoints[1].UnknownTags = unknown[:1]
			x.Features[0].UnknownTags = unknown[1:]
		case *ClientQuotaRecord:
			x.Entity[1].UnknownTags = unknown
		}
		roundTrip(t, r)
	}
}

func TestNewRecordRoundTrip(t *testing.T) {
	for _, k := range APIKeys() {
		r, _ := NewRecord(k)
		roundTrip(t, r)
	}
}

// TestDecodeDefaults checks that fields absent from the bytes (tagged
// fields not written, fields of later versions) decode to Kafka's defaults.
func TestDecodeDefaults(t *testing.T) {
	id := testUuid(0)
	// PartitionChangeRecord v2 with only the ids: nothing changes.
	b := append([]byte{1, 5, 2, 0, 0, 0, 4}, id[:]...)
	b = append(b, 0)
	got, err := DecodeRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	want := NewPartitionChangeRecord()
	want.PartitionId, want.TopicId = 4, id
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}

	// RegisterBrokerRecord v0 knows neither InControlledShutdown nor
	// IsMigratingZkBroker nor LogDirs; re-encoding at v0 works.
	r0 := samples[APIKeyRegisterBrokerRecord](0)
	got, err = DecodeRecord(EncodeRecord(r0))
	if err != nil {
		t.Fatal(err)
	}
	rb := got.(*RegisterBrokerRecord)
	if rb.InControlledShutdown || rb.IsMigratingZkBroker || rb.LogDirs != nil || !rb.Fenced {
		t.Errorf("v0 defaults: %+v", rb)
	}
}

func TestUnknownTagsMergeWithKnown(t *testing.T) {
	// At v1 tags 6 and 7 of PartitionChangeRecord are not defined yet, so
	// they are unknown and must be written between known tags 5 and 8.
	r := NewPartitionChangeRecord()
	r.RecordVersion = 1
	r.LeaderRecoveryState = 1
	r.Directories = []Uuid{}
	r.UnknownTags = []TaggedField{{Tag: 6, Data: []byte{0}}, {Tag: 7, Data: []byte{1}}}
	b := EncodeRecord(r)
	id := r.TopicId
	want := append([]byte{1, 5, 1, 0xff, 0xff, 0xff, 0xff}, id[:]...)
	want = append(want,
		4,       // four tagged fields
		5, 1, 1, // tag 5 LeaderRecoveryState = 1
		6, 1, 0, // unknown tag 6
		7, 1, 1, // unknown tag 7
		8, 1, 1, // tag 8 Directories = [] (compact length 0+1)
	)
	if !bytes.Equal(b, want) {
		t.Fatalf("got  % x\nwant % x", b, want)
	}
	roundTrip(t, r)
}

func TestDecodeErrors(t *testing.T) {
	id := testUuid(0)
	topic := func(tail ...byte) []byte { // TopicRecord v0 "a", then tail
		b := append([]byte{1, 2, 0, 2, 'a'}, id[:]...)
		return append(b, tail...)
	}
	partition := func(tail ...byte) []byte { // PartitionRecord v0, partition 0, then tail
		b := append([]byte{1, 3, 0, 0, 0, 0, 0}, id[:]...)
		return append(b, tail...)
	}
	change := func(tags ...byte) []byte { // PartitionChangeRecord v0, partition 0
		b := append([]byte{1, 5, 0, 0, 0, 0, 0}, id[:]...)
		return append(b, tags...)
	}
	longString := append([]byte{1, 2, 0, 0x81, 0x80, 0x02}, make([]byte, 0x8000)...)
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"frame version 0", []byte{0, 2, 0}, ErrUnknownFrameVersion},
		{"frame version 2", []byte{2, 2, 0}, ErrUnknownFrameVersion},
		{"header cut after frame", []byte{1}, ErrTruncated},
		{"header cut in version", []byte{1, 2}, ErrTruncated},
		{"unterminated uvarint", []byte{1, 0x80}, ErrTruncated},
		{"uvarint over 32 bits", []byte{1, 0xff, 0xff, 0xff, 0xff, 0x7f, 0}, ErrMalformed},
		{"retired api key 6", []byte{1, 6, 0, 0}, ErrUnknownAPIKey},
		{"zk migration key 21", []byte{1, 21, 0, 0, 0}, ErrUnknownAPIKey},
		{"api key too large", []byte{1, 0x80, 0x80, 0x02, 0}, ErrUnknownAPIKey},
		{"TopicRecord v1", []byte{1, 2, 1}, ErrUnsupportedVersion},
		{"PartitionRecord v3", []byte{1, 3, 3}, ErrUnsupportedVersion},
		{"huge version", []byte{1, 3, 0xff, 0xff, 0x03}, ErrUnsupportedVersion},
		{"body missing", []byte{1, 2, 0}, ErrTruncated},
		{"uuid cut", topic()[:10], ErrTruncated},
		{"tag section missing", topic(), ErrTruncated},
		{"trailing byte", topic(0, 0), ErrTrailingBytes},
		{"null non-nullable string", append([]byte{1, 2, 0, 0}, id[:]...), ErrMalformed},
		{"string too long", longString, ErrMalformed},
		{"string past end", []byte{1, 2, 0, 10, 'a'}, ErrTruncated},
		{"array past end", partition(0xff, 0xff, 0xff, 0xff, 0x0f), ErrTruncated},
		{"array one element short", partition(3, 0, 0, 0, 1, 0, 0, 0), ErrTruncated},
		{"null non-nullable array", partition(0), ErrMalformed},
		{"tags out of order", topic(2, 5, 0, 3, 0), ErrMalformed},
		{"duplicate tag", topic(2, 5, 0, 5, 0), ErrMalformed},
		{"tag size past end", topic(1, 5, 9, 1), ErrTruncated},
		{"tag count past end", topic(3, 5, 0), ErrTruncated},
		{"known tag too long", change(1, 5, 2, 1, 0), ErrMalformed},
		{"known tag too short", change(1, 1, 2, 0, 0), ErrTruncated},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeRecord(tt.in)
			if !errors.Is(err, tt.want) || got != nil {
				t.Fatalf("DecodeRecord(% x) = %v, %v; want error %v", tt.in, got, err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "metadata: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
			t.Log(err)
		})
	}
}

// TestDecodeEveryPrefix cuts every sample at every length: each strict
// prefix must fail cleanly.
func TestDecodeEveryPrefix(t *testing.T) {
	for _, r := range allSamples(t) {
		b := EncodeRecord(r)
		for n := 0; n < len(b); n++ {
			if got, err := DecodeRecord(b[:n]); err == nil {
				t.Fatalf("%T v%d cut to %d/%d bytes decoded to %+v", r, r.Version(), n, len(b), got)
			}
		}
	}
}

func TestEncodeErrors(t *testing.T) {
	long := strings.Repeat("x", 0x8000)
	pr := func(v int16, f func(*PartitionRecord)) Record {
		r := NewPartitionRecord()
		r.RecordVersion = v
		f(r)
		return r
	}
	var nilTopic *TopicRecord
	tests := []struct {
		name string
		r    Record
		want error
	}{
		{"nil", nil, ErrNotEncodable},
		{"typed nil", nilTopic, ErrNotEncodable},
		{"version too high", &TopicRecord{RecordVersion: 1}, ErrUnsupportedVersion},
		{"negative version", &PartitionRecord{RecordVersion: -1}, ErrUnsupportedVersion},
		{"Directories at v0", pr(0, func(r *PartitionRecord) { r.Directories = []Uuid{{}} }), ErrNotEncodable},
		{"ELR at v1", pr(1, func(r *PartitionRecord) { r.EligibleLeaderReplicas = []int32{} }), ErrNotEncodable},
		{"LastKnownElr at v1", pr(1, func(r *PartitionRecord) { r.LastKnownElr = []int32{1} }), ErrNotEncodable},
		{"change Directories at v0", &PartitionChangeRecord{Leader: -2, LeaderRecoveryState: -1, Directories: []Uuid{}}, ErrNotEncodable},
		{"change ELR at v1", &PartitionChangeRecord{RecordVersion: 1, EligibleLeaderReplicas: []int32{1}}, ErrNotEncodable},
		{"InControlledShutdown at v0", &RegisterBrokerRecord{InControlledShutdown: true}, ErrNotEncodable},
		{"IsMigratingZkBroker at v1", &RegisterBrokerRecord{RecordVersion: 1, IsMigratingZkBroker: true}, ErrNotEncodable},
		{"LogDirs at v2", &RegisterBrokerRecord{RecordVersion: 2, LogDirs: []Uuid{{}}}, ErrNotEncodable},
		{"change InControlledShutdown at v0", &BrokerRegistrationChangeRecord{InControlledShutdown: 1}, ErrNotEncodable},
		{"change LogDirs at v1", &BrokerRegistrationChangeRecord{RecordVersion: 1, LogDirs: []Uuid{{}}}, ErrNotEncodable},
		{"string too long", &TopicRecord{Name: long}, ErrNotEncodable},
		{"nested string too long", &ClientQuotaRecord{Entity: []EntityData{{EntityType: long}}}, ErrNotEncodable},
		{"tagged string too long", &AbortTransactionRecord{Reason: &long}, ErrNotEncodable},
		{"unknown tag shadows known", pr(0, func(r *PartitionRecord) { r.UnknownTags = []TaggedField{{Tag: 0}} }), ErrNotEncodable},
		{"unknown tags unordered", &NoOpRecord{UnknownTags: []TaggedField{{Tag: 2}, {Tag: 1}}}, ErrNotEncodable},
		{"unknown tags duplicated", &NoOpRecord{UnknownTags: []TaggedField{{Tag: 2}, {Tag: 2}}}, ErrNotEncodable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []byte{0xaa}
			got, err := AppendRecord(dst, tt.r)
			if !errors.Is(err, tt.want) {
				t.Fatalf("AppendRecord error = %v, want %v", err, tt.want)
			}
			if !bytes.Equal(got, dst) {
				t.Errorf("dst changed on error: % x", got)
			}
			defer func() {
				if recover() == nil {
					t.Errorf("EncodeRecord did not panic")
				}
			}()
			EncodeRecord(tt.r)
		})
	}
	// A tag the version does not define may travel as an unknown tag.
	r := pr(0, func(r *PartitionRecord) { r.UnknownTags = []TaggedField{{Tag: 1, Data: []byte{1}}} })
	roundTrip(t, r)
}

func TestAppendRecordAppends(t *testing.T) {
	a := EncodeRecord(samples[APIKeyTopicRecord](0))
	b := EncodeRecord(samples[APIKeyNoOpRecord](0))
	got, err := AppendRecord(append([]byte(nil), a...), samples[APIKeyNoOpRecord](0))
	if err != nil || !bytes.Equal(got, append(a, b...)) {
		t.Fatalf("AppendRecord = % x, %v", got, err)
	}
}

func TestDecodeDoesNotAlias(t *testing.T) {
	in := EncodeRecord(samples[APIKeyUserScramCredentialRecord](0))
	r, err := DecodeRecord(in)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i] = 0xee
	}
	if !reflect.DeepEqual(r, samples[APIKeyUserScramCredentialRecord](0)) {
		t.Fatalf("decoded record changed with its input: %+v", r)
	}
}

func TestUuidString(t *testing.T) {
	u := testUuid(0)
	s := u.String()
	if len(s) != 22 {
		t.Fatalf("String() = %q", s)
	}
	back, err := ParseUuid(s)
	if err != nil || back != u {
		t.Fatalf("ParseUuid(%q) = %v, %v", s, back, err)
	}
	if _, err := ParseUuid("AAAA"); err == nil {
		t.Error("short uuid parsed")
	}
	if _, err := ParseUuid("!!!!!!!!!!!!!!!!!!!!!!"); err == nil {
		t.Error("invalid base64 parsed")
	}
}
