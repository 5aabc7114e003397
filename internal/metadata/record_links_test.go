package metadata

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
)

func init() {
	samples[APIKeyClusterLinkRecord] = func(v int16) Record {
		return &ClusterLinkRecord{RecordVersion: v, LinkName: "dr", LinkId: testUuid(0x40),
			Configs: []LinkConfig{{Name: "bootstrap.servers", Value: "src:9092"}, {Name: "client.id", Value: "x"}}}
	}
	samples[APIKeyRemoveClusterLinkRecord] = func(v int16) Record {
		return &RemoveClusterLinkRecord{RecordVersion: v, LinkId: testUuid(0x40)}
	}
	samples[APIKeyMirrorTopicRecord] = func(v int16) Record {
		return &MirrorTopicRecord{RecordVersion: v, TopicId: testUuid(0x50), LinkId: testUuid(0x40),
			SourceTopic: "orders", State: MirrorPromoted, StopEpochs: []int32{3, 7}}
	}
}

// weir's record types sit in their reserved range, with a two-byte api
// key in the frame.
func TestLinkRecordFraming(t *testing.T) {
	for _, k := range []int16{APIKeyClusterLinkRecord, APIKeyRemoveClusterLinkRecord, APIKeyMirrorTopicRecord} {
		if k < APIKeyWeirFirst || !strings.HasSuffix(RecordName(k), "Record") {
			t.Fatalf("api key %d (%q) outside weir's range", k, RecordName(k))
		}
	}
	b := EncodeRecord(&RemoveClusterLinkRecord{LinkId: testUuid(1)})
	// frame 1, api key 10001 as uvarint (0x91 0x4e), version 0, uuid, no tags.
	want := append([]byte{0x01, 0x91, 0x4e, 0x00}, testUuid(1).bytes()...)
	want = append(want, 0x00)
	if !bytes.Equal(b, want) {
		t.Fatalf("RemoveClusterLinkRecord = % x, want % x", b, want)
	}
	if _, err := DecodeRecord([]byte{0x01, 0x93, 0x4e, 0x00}); !errors.Is(err, ErrUnknownAPIKey) {
		t.Fatalf("api key 10003: %v", err)
	}
}

func (u Uuid) bytes() []byte { return u[:] }

func TestApplyLinksAndMirrors(t *testing.T) {
	link, other, topic := imgID(7), imgID(8), imgID(1)
	im, d := mustApply(t, Empty(), 0,
		&ClusterLinkRecord{LinkName: "dr", LinkId: link, Configs: []LinkConfig{{Name: "bootstrap.servers", Value: "a:1"}}})
	if !d.ChangedLinks || im.LinkByName("dr") == nil || im.Links[link].Configs["bootstrap.servers"] != "a:1" {
		t.Fatalf("link not applied: %+v", im.Links)
	}
	mustFail(t, im, "exists with another id", &ClusterLinkRecord{LinkName: "dr", LinkId: other})
	mustFail(t, im, "unknown topic id", &MirrorTopicRecord{TopicId: topic, LinkId: link, SourceTopic: "s", State: MirrorActive})
	recs := append(topicRecs("orders", topic, 2, 1), &MirrorTopicRecord{TopicId: topic, LinkId: link, SourceTopic: "src", State: MirrorActive})
	im, d = mustApply(t, im, 3, recs...)
	if m := im.MirrorOf("orders"); m == nil || m.SourceTopic != "src" || !m.ReadOnly() {
		t.Fatalf("mirror = %+v", m)
	}
	mustFail(t, im, "unknown mirror state", &MirrorTopicRecord{TopicId: topic, LinkId: link, State: 9})
	before := im
	im, d = mustApply(t, im, 4, &MirrorTopicRecord{TopicId: topic, LinkId: link, SourceTopic: "src", State: MirrorPromoted})
	if im.MirrorOf("orders").ReadOnly() || !before.MirrorOf("orders").ReadOnly() || d.ChangedTopics["orders"] == nil {
		t.Fatalf("promotion: new %+v old %+v delta %+v", im.MirrorOf("orders"), before.MirrorOf("orders"), d)
	}
	im, _ = mustApply(t, im, 5, &RemoveClusterLinkRecord{LinkId: link})
	if len(im.Links) != 0 || len(before.Links) != 1 {
		t.Fatal("link removal")
	}
	mustFail(t, im, "unknown link id", &RemoveClusterLinkRecord{LinkId: link})
	im, _ = mustApply(t, im, 6, &RemoveTopicRecord{TopicId: topic})
	if len(im.Mirrors) != 0 {
		t.Fatal("a deleted topic keeps its mirror state")
	}
}

func TestImageRecordsRebuildLinks(t *testing.T) {
	link, topic := imgID(7), imgID(1)
	recs := append([]Record{&ClusterLinkRecord{LinkName: "dr", LinkId: link,
		Configs: []LinkConfig{{Name: "b", Value: "2"}, {Name: "a", Value: "1"}}}}, topicRecs("orders", topic, 1, 1)...)
	recs = append(recs, &MirrorTopicRecord{TopicId: topic, LinkId: link, SourceTopic: "src", State: MirrorPromoted, StopEpochs: []int32{4}})
	want, _ := mustApply(t, Empty(), 9, recs...)
	got, _ := mustApply(t, Empty(), 9, want.Records()...)
	if !equalLinks(got, want) {
		t.Fatalf("rebuilt: %+v %+v, want %+v %+v", got.Links, got.Mirrors, want.Links, want.Mirrors)
	}
}

func equalLinks(a, b *Image) bool {
	if len(a.Links) != len(b.Links) || len(a.Mirrors) != len(b.Mirrors) {
		return false
	}
	for id, l := range a.Links {
		o := b.Links[id]
		if o == nil || o.Name != l.Name || len(o.Configs) != len(l.Configs) {
			return false
		}
		for k, v := range l.Configs {
			if o.Configs[k] != v {
				return false
			}
		}
	}
	for id, m := range a.Mirrors {
		if o := b.Mirrors[id]; o == nil || o.TopicID != m.TopicID || o.LinkID != m.LinkID || o.SourceTopic != m.SourceTopic ||
			o.State != m.State || !slices.Equal(o.StopEpochs, m.StopEpochs) {
			return false
		}
	}
	return true
}
