package group

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// The bytes of each consumer group record, worked out by hand from Kafka's
// JSON schemas (keys: int16 type, int16-length strings; values: int16
// version 0, then flexible: compact strings and arrays are varint length+1,
// each struct ends with an empty tagged field section, 00).
func TestConsumerRecordLayouts(t *testing.T) {
	uuidT := "74" + strings.Repeat("00", 15) // topicID("t")
	str := func(s string) string { return hex.EncodeToString([]byte(s)) }
	a01 := assignment{}
	a01.add(topicID("t"), 1)
	a01.add(topicID("t"), 0)
	a2 := assignment{}
	a2.add(topicID("t"), 2)
	for _, c := range []struct {
		name     string
		rec      cgRecord
		key, val string
	}{
		{"group epoch", cgRecord{kind: cgMetadataKey, group: "g", value: int32(5)},
			"0003" + "0001" + str("g"), "0000" + "00000005" + "00"},
		{"subscription metadata", cgRecord{kind: cgPartitionMetadataKey, group: "g",
			value: map[string]topicMeta{"t": {id: topicID("t"), partitions: 4}}},
			"0004" + "0001" + str("g"), "0000" + "02" + uuidT + "02" + str("t") + "00000004" + "01" + "00" + "00"},
		{"member metadata", cgRecord{kind: cgMemberMetadataKey, group: "g", member: "m",
			value: memberMeta{clientID: "c", clientHost: "h", topics: []string{"t"}, rebalanceTimeoutMs: 10}},
			"0005" + "0001" + str("g") + "0001" + str("m"),
			"0000" + "00" + "00" + "02" + str("c") + "02" + str("h") + "02" + "02" + str("t") + "01" + "0000000a" + "00" + "00"},
		{"static member metadata", cgRecord{kind: cgMemberMetadataKey, group: "g", member: "m",
			value: memberMeta{instanceID: ptr("i"), rackID: ptr("r"), topics: []string{}, regex: "x", rebalanceTimeoutMs: -1,
				serverAssignor: ptr("range")}},
			"0005" + "0001" + str("g") + "0001" + str("m"),
			"0000" + "02" + str("i") + "02" + str("r") + "01" + "01" + "01" + "02" + str("x") + "ffffffff" + "06" + str("range") + "00"},
		{"assignment epoch", cgRecord{kind: cgTargetMetadataKey, group: "g", value: int32(5)},
			"0006" + "0001" + str("g"), "0000" + "00000005" + "00"},
		{"target", cgRecord{kind: cgTargetMemberKey, group: "g", member: "m", value: a01},
			"0007" + "0001" + str("g") + "0001" + str("m"),
			"0000" + "02" + uuidT + "03" + "00000000" + "00000001" + "00" + "00"},
		{"current", cgRecord{kind: cgCurrentMemberKey, group: "g", member: "m",
			value: memberAssignment{epoch: 3, prevEpoch: 2, state: memberUnrevoked, assigned: a01, pending: a2}},
			"0008" + "0001" + str("g") + "0001" + str("m"),
			"0000" + "00000003" + "00000002" + "01" + "02" + uuidT + "03" + "00000000" + "00000001" + "00" +
				"02" + uuidT + "02" + "00000002" + "00" + "00"},
		{"regex", cgRecord{kind: cgRegexKey, group: "g", member: "a.*",
			value: resolvedRegex{topics: []string{"t"}, version: 7, timestamp: 9}},
			"0010" + "0001" + str("g") + "0003" + str("a.*"),
			"0000" + "02" + "02" + str("t") + "0000000000000007" + "0000000000000009" + "00"},
		{"member tombstone", cgRecord{kind: cgCurrentMemberKey, group: "g", member: "m"},
			"0008" + "0001" + str("g") + "0001" + str("m"), ""},
	} {
		rec := c.rec.encode()
		if got := hex.EncodeToString(rec.Key); got != c.key {
			t.Errorf("%s key\n got %s\nwant %s", c.name, got, c.key)
		}
		if got := hex.EncodeToString(rec.Value); got != c.val || (c.val == "") != (rec.Value == nil) {
			t.Errorf("%s value\n got %s\nwant %s", c.name, got, c.val)
		}
		back, err := decodeCGRecord(rec)
		if again := back.encode(); err != nil || fmt.Sprint(again) != fmt.Sprint(rec) {
			t.Errorf("%s decodes to %v (%v)", c.name, back, err)
		}
	}
}

func ptr(s string) *string { return &s }

// Values written by later Kafka versions carry tagged fields (the group's
// metadata hash, KIP-1101); they are skipped.
func TestConsumerRecordTaggedFields(t *testing.T) {
	key, _ := hex.DecodeString("0003" + "0001" + "67")
	val, _ := hex.DecodeString("0000" + "00000005" + "01" + "00" + "08" + "0000000000000001")
	r, err := decodeCGRecord(Record{Key: key, Value: val})
	if err != nil || r.value != int32(5) {
		t.Fatalf("decoded %v, %v", r, err)
	}
	// A truncated value is an error: LoadPartition skips the record.
	h := newHarness(t, cgConfig())
	p := h.c.PartitionFor("g")
	_, skipped := h.c.LoadPartition(h.now, p, logRecords(Record{Key: key, Value: val[:5]}))
	if len(skipped) != 1 || !errors.Is(skipped[0], ErrBadRecord) {
		t.Fatalf("truncated record loaded: %v", skipped)
	}
}

// A group id changes protocol in the log: the latest records win, and the
// offsets stay with the id.
func TestConsumerReplayAcrossProtocols(t *testing.T) {
	h := newHarness(t, cgConfig())
	h.setTopics(map[string]int32{"t": 2})
	// A classic group that empties, with a committed offset...
	a, ta := h.joinNew("g", "a", joinOpts{})
	gen := h.stable("g", map[string]uint64{a: ta})
	wantCode(t, "classic commit", h.commitCodes(h.commit("g", a, gen, map[string]int64{"t": 7}))[0], 0)
	h.classicLeave("g", a, "")
	// ...becomes a consumer group...
	m := h.newMember("g")
	h.converge(m)
	if h.fetch("g", "t")["t"] != 7 {
		t.Fatal("offset lost in the conversion")
	}
	c := h.reload()
	if c.groups.byID["g"].consumer == nil || len(committedOf(c.offsets.byGroup["g"])) != 1 {
		t.Fatal("replay did not rebuild the consumer group with its offset")
	}
	// ...and a classic group again once empty.
	h.cgHeartbeat(cgReq{group: "g", member: m.id, epoch: leaveEpoch})
	b, tb := h.joinNew("g", "b", joinOpts{})
	h.stable("g", map[string]uint64{b: tb})
	c = h.reload()
	if c.groups.byID["g"].consumer != nil || len(c.groups.byID["g"].members) != 1 || len(committedOf(c.offsets.byGroup["g"])) != 1 {
		t.Fatalf("replay: consumer %v members %d", c.groups.byID["g"].consumer != nil, len(c.groups.byID["g"].members))
	}
}
