package metadata

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
)

// The golden values below were worked out by hand from Kafka's JSON
// schemas and the framing of AbstractApiMessageSerde, not produced by this
// package. Whitespace and comments in the hex are ignored.

// unhex decodes hex written with spaces, newlines and "#" comments.
func unhex(t *testing.T, s string) []byte {
	t.Helper()
	var clean strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		clean.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(clean.String())
	if err != nil {
		t.Fatalf("bad golden hex: %v", err)
	}
	return b
}

func checkGolden(t *testing.T, r Record, golden string) {
	t.Helper()
	want := unhex(t, golden)
	if got := EncodeRecord(r); !bytes.Equal(got, want) {
		t.Errorf("EncodeRecord(%T v%d):\n got % x\nwant % x", r, r.Version(), got, want)
	}
	got, err := DecodeRecord(want)
	if err != nil {
		t.Fatalf("DecodeRecord(golden %T): %v", r, err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Errorf("DecodeRecord(golden):\n got %+v\nwant %+v", got, r)
	}
}

// idBytes is the hex of testUuid(0): bytes 00 01 02 ... 0f.
const idBytes = "00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f"

func TestGoldenTopicRecordV0(t *testing.T) {
	r := &TopicRecord{Name: "foo", TopicId: testUuid(0)}
	checkGolden(t, r, `
		01            # frame version 1 (uvarint)
		02            # api key 2, TopicRecord (uvarint)
		00            # version 0 (uvarint)
		04 66 6f 6f   # Name: compact string, uvarint(3+1), "foo"
		`+idBytes+`   # TopicId: 16 raw bytes
		00            # tagged fields: none
	`)
}

func TestGoldenPartitionRecordV0(t *testing.T) {
	r := &PartitionRecord{
		PartitionId:         7,
		TopicId:             testUuid(0),
		Replicas:            []int32{1, 2, 3},
		Isr:                 []int32{1, 2},
		RemovingReplicas:    nil, // empty; non-nullable empty arrays decode as nil
		AddingReplicas:      []int32{3},
		Leader:              1,
		LeaderRecoveryState: 1,
		LeaderEpoch:         5,
		PartitionEpoch:      9,
	}
	checkGolden(t, r, `
		01 03 00                      # frame 1, api key 3 (PartitionRecord), version 0
		00 00 00 07                   # PartitionId int32 7
		`+idBytes+`                   # TopicId
		04 00000001 00000002 00000003 # Replicas: compact array, uvarint(3+1), three int32
		03 00000001 00000002          # Isr: uvarint(2+1), two int32
		01                            # RemovingReplicas: empty, uvarint(0+1)
		02 00000003                   # AddingReplicas: uvarint(1+1), [3]
		00 00 00 01                   # Leader 1
		00 00 00 05                   # LeaderEpoch 5 (LeaderRecoveryState is tagged, below)
		00 00 00 09                   # PartitionEpoch 9
		                              # (Directories only exists from v1)
		01                            # one tagged field
		00 01 01                      # tag 0 LeaderRecoveryState, size 1, int8 1
	`)

	// With LeaderRecoveryState at its default 0 the tag is not written.
	r.LeaderRecoveryState = 0
	b := EncodeRecord(r)
	if b[len(b)-1] != 0 || len(b) != 3+4+16+13+9+1+5+12+1 {
		t.Errorf("default LeaderRecoveryState still written: % x", b)
	}
}

func TestGoldenPartitionRecordV2(t *testing.T) {
	r := &PartitionRecord{
		RecordVersion:          2,
		PartitionId:            0,
		TopicId:                testUuid(0),
		Replicas:               []int32{1},
		Isr:                    []int32{1},
		Leader:                 1,
		LeaderEpoch:            0,
		PartitionEpoch:         0,
		Directories:            []Uuid{testUuid(0x10)},
		EligibleLeaderReplicas: []int32{},
	}
	checkGolden(t, r, `
		01 03 02                # frame 1, PartitionRecord, version 2
		00000000                # PartitionId 0
		`+idBytes+`             # TopicId
		02 00000001             # Replicas [1]
		02 00000001             # Isr [1]
		01 01                   # RemovingReplicas [], AddingReplicas []
		00000001                # Leader 1
		00000000 00000000       # LeaderEpoch 0, PartitionEpoch 0
		02 101112131415161718191a1b1c1d1e1f # Directories (v1+, not tagged): [one uuid]
		01                      # one tagged field: LeaderRecoveryState 0 and
		                        # LastKnownElr null are defaults and omitted
		01 01 01                # tag 1 EligibleLeaderReplicas, size 1, empty
		                        # (non-null) compact array
	`)
}

func TestGoldenPartitionChangeRecordV0(t *testing.T) {
	r := NewPartitionChangeRecord()
	r.RecordVersion = 0
	r.PartitionId = 2
	r.TopicId = testUuid(0)
	r.Isr = []int32{3}
	r.Leader = 3
	checkGolden(t, r, `
		01 05 00         # frame 1, api key 5 (PartitionChangeRecord), version 0
		00000002         # PartitionId 2
		`+idBytes+`      # TopicId
		02               # two tagged fields (everything else is "unchanged")
		00 05 02 00000003 # tag 0 Isr, size 5: compact array [3]
		01 04 00000003    # tag 1 Leader, size 4: int32 3
	`)
}

func TestGoldenRegisterBrokerRecordV3(t *testing.T) {
	r := &RegisterBrokerRecord{
		RecordVersion: 3,
		BrokerId:      1,
		IncarnationId: testUuid(0),
		BrokerEpoch:   5,
		EndPoints:     []BrokerEndpoint{{Name: "PLAINTEXT", Host: "localhost", Port: 9092, SecurityProtocol: 0}},
		Features:      []BrokerFeature{{Name: "metadata.version", MinSupportedVersion: 1, MaxSupportedVersion: 21}},
		Rack:          strp("r1"),
		Fenced:        true,
		LogDirs:       []Uuid{testUuid(0x10)},
	}
	checkGolden(t, r, `
		01 00 03                        # frame 1, api key 0 (RegisterBrokerRecord), version 3
		00000001                        # BrokerId 1
		00                              # IsMigratingZkBroker false (v2+, sits after BrokerId)
		`+idBytes+`                     # IncarnationId
		00000000 00000005               # BrokerEpoch int64 5
		02                              # EndPoints: one element
		  0a 504c41494e54455854         #   Name: uvarint(9+1), "PLAINTEXT"
		  0a 6c6f63616c686f7374         #   Host: uvarint(9+1), "localhost"
		  23 84                         #   Port uint16 9092
		  00 00                         #   SecurityProtocol int16 0
		  00                            #   element's tagged fields: none
		02                              # Features: one element
		  11 6d657461646174612e76657273696f6e # Name: uvarint(16+1), "metadata.version"
		  00 01                         #   MinSupportedVersion 1
		  00 15                         #   MaxSupportedVersion 21
		  00                            #   element's tagged fields: none
		03 7231                         # Rack: uvarint(2+1), "r1"
		01                              # Fenced true
		00                              # InControlledShutdown false (v1+)
		01                              # one tagged field
		00 11                           # tag 0 LogDirs, size 17
		02 101112131415161718191a1b1c1d1e1f # compact array of one uuid
	`)
}

func TestGoldenBrokerRegistrationChangeRecordV2(t *testing.T) {
	r := &BrokerRegistrationChangeRecord{RecordVersion: 2, BrokerId: 1, BrokerEpoch: 5, Fenced: -1}
	checkGolden(t, r, `
		01 11 02          # frame 1, api key 17, version 2
		00000001          # BrokerId 1
		0000000000000005  # BrokerEpoch 5
		01                # one tagged field
		00 01 ff          # tag 0 Fenced, size 1, int8 -1 (unfenced)
	`)
}
