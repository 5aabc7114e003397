package controller

import (
	"errors"
	"io"
	"log/slog"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	"weir/internal/metadata"
	"weir/internal/quorum"
)

// The build functions are tested here on their own: an image made of
// records, no quorum, and the records and answer they return.

// builder returns a controller without a quorum, for calling build
// functions (which read only its static config).
func builder(t *testing.T, props map[string]string) *Controller {
	t.Helper()
	cfg, _, err := config.LoadBroker(props)
	if err != nil {
		t.Fatal(err)
	}
	return New(Config{Static: cfg, ClusterID: testClusterID}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// testImage is an image at offset 100 with metadata.version, live brokers
// 1..brokers and then recs.
func testImage(t *testing.T, brokers int32, recs ...metadata.Record) *metadata.Image {
	t.Helper()
	all := []metadata.Record{&metadata.FeatureLevelRecord{Name: "metadata.version", FeatureLevel: MetadataVersion}}
	for id := int32(1); id <= brokers; id++ {
		r := metadata.NewRegisterBrokerRecord()
		r.BrokerId, r.BrokerEpoch, r.Fenced = id, int64(id), true
		all = append(all, r, &metadata.UnfenceBrokerRecord{Id: id, Epoch: int64(id)})
	}
	img, _, err := metadata.Empty().Apply(append(all, recs...), 100)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// topicRecords are the records of a topic with one partition per
// replica list, led by its first replica, the ISR all replicas.
func topicRecords(name string, id metadata.Uuid, replicas ...[]int32) []metadata.Record {
	recs := []metadata.Record{&metadata.TopicRecord{Name: name, TopicId: id}}
	for p, rs := range replicas {
		pr := metadata.NewPartitionRecord()
		pr.PartitionId, pr.TopicId, pr.Replicas, pr.Isr, pr.Leader = int32(p), id, rs, rs, rs[0]
		recs = append(recs, pr)
	}
	return recs
}

func TestBuildAlterConfigs(t *testing.T) {
	c := builder(t, nil)
	id := metadata.Uuid{1}
	img := testImage(t, 3, topicRecords("t", id, []int32{1, 2})...)

	res, err := c.alterConfigs(img, []ConfigChange{
		configChange(metadata.ResourceTopic, "t", "retention.ms", "1000"),
		configChange(metadata.ResourceTopic, "missing", "retention.ms", "1000"),
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	v := "1000"
	want := []metadata.Record{&metadata.ConfigRecord{ResourceType: metadata.ResourceTopic, ResourceName: "t", Name: "retention.ms", Value: &v}}
	if !reflect.DeepEqual(res.Records, want) {
		t.Errorf("records %v, want %v", res.Records, want)
	}
	wantCode(t, "t", res.Answer.Errs[0], nil)
	wantCode(t, "missing", res.Answer.Errs[1], kerr.UnknownTopicOrPartition)
	if res.Answer.Offset != img.Offset {
		t.Errorf("offset %d before the commit, want the image's %d", res.Answer.Offset, img.Offset)
	}

	// Validating only plans and checks the same, and commits nothing.
	res, err = c.alterConfigs(img, []ConfigChange{configChange(metadata.ResourceTopic, "t", "retention.ms", "x")}, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != 0 {
		t.Errorf("validating only: records %v", res.Records)
	}
	wantCode(t, "invalid value", res.Answer.Errs[0], kerr.InvalidConfig)
}

// Turning unclean.leader.election.enable on elects an offline partition
// in the same batch as the config record.
func TestBuildAlterConfigsElectsOffline(t *testing.T) {
	c := builder(t, nil)
	id := metadata.Uuid{2}
	recs := topicRecords("t", id, []int32{1, 2})
	pr := recs[1].(*metadata.PartitionRecord)
	pr.Leader, pr.Isr = -1, []int32{3} // its last ISR member is gone
	img := testImage(t, 2, recs...)

	res, err := c.alterConfigs(img, []ConfigChange{configChange(metadata.ResourceTopic, "t", "unclean.leader.election.enable", "true")}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != 2 {
		t.Fatalf("records %v, want the config and an election", res.Records)
	}
	if _, ok := res.Records[0].(*metadata.ConfigRecord); !ok {
		t.Errorf("first record %v", res.Records[0])
	}
	pc, ok := res.Records[1].(*metadata.PartitionChangeRecord)
	if !ok || pc.Leader != 1 || pc.LeaderRecoveryState != recovering {
		t.Errorf("election %+v, want broker 1 leading, recovering", res.Records[1])
	}
}

func TestBuildUpdateFeatures(t *testing.T) {
	req := func(validateOnly bool, name string, level int16) *kmsg.UpdateFeaturesRequest {
		r := kmsg.NewPtrUpdateFeaturesRequest()
		r.SetVersion(1)
		r.ValidateOnly = validateOnly
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature, u.MaxVersionLevel, u.UpgradeType = name, level, upgrade
		r.FeatureUpdates = append(r.FeatureUpdates, u)
		return r
	}
	img := testImage(t, 1)
	res, err := updateFeatures(img, req(false, metadata.ELRFeature, 1))
	if err != nil {
		t.Fatal(err)
	}
	want := []metadata.Record{&metadata.FeatureLevelRecord{Name: metadata.ELRFeature, FeatureLevel: 1}}
	if !reflect.DeepEqual(res.Records, want) || res.Answer.Errs[0] != nil {
		t.Errorf("records %v, errors %v", res.Records, res.Answer.Errs)
	}
	// Nothing to wait for unless something is committed.
	if res.Answer.Offset != -1 {
		t.Errorf("offset %d before the commit", res.Answer.Offset)
	}
	res, err = updateFeatures(img, req(true, metadata.ELRFeature, 1))
	if err != nil || len(res.Records) != 0 || res.Answer.Errs[0] != nil {
		t.Errorf("validating only: records %v, errors %v, %v", res.Records, res.Answer.Errs, err)
	}
	res, err = updateFeatures(img, req(false, "no.such.feature", 1))
	if err != nil || len(res.Records) != 0 {
		t.Fatalf("unknown feature: records %v, %v", res.Records, err)
	}
	wantCode(t, "unknown feature", res.Answer.Errs[0], kerr.InvalidUpdateVersion)

	// Turning ELR off clears the partitions' ELR in the same batch.
	id := metadata.Uuid{3}
	recs := topicRecords("t", id, []int32{1, 2})
	recs[1].(*metadata.PartitionRecord).EligibleLeaderReplicas = []int32{2}
	img = testImage(t, 2, append(recs, &metadata.FeatureLevelRecord{Name: metadata.ELRFeature, FeatureLevel: 1})...)
	down := req(false, metadata.ELRFeature, 0)
	down.FeatureUpdates[0].UpgradeType = safeDowngrade
	res, err = updateFeatures(img, down)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != 2 {
		t.Fatalf("records %v", res.Records)
	}
	if pc, ok := res.Records[1].(*metadata.PartitionChangeRecord); !ok || pc.TopicId != id || len(pc.EligibleLeaderReplicas) != 0 || pc.EligibleLeaderReplicas == nil {
		t.Errorf("second record %+v, want the ELR cleared", res.Records[1])
	}
}

// A controller that is not the active one refuses every operation with
// NOT_CONTROLLER and commits nothing, whatever its image says.
func TestInactiveControllerRefusesEveryOperation(t *testing.T) {
	h := newCluster(t, 3, nil)
	h.mustCreate(topicReq("t", 1, 1))
	h.q.inactive = true
	batches := len(h.q.batches)
	features := kmsg.NewPtrUpdateFeaturesRequest()
	ops := map[string]func() error{
		"AlterConfigs": func() error {
			_, err := h.c.AlterConfigs([]ConfigChange{configChange(metadata.ResourceTopic, "t", "retention.ms", "1")}, false)
			return err
		},
		"AlterConfigs validating only": func() error {
			_, err := h.c.AlterConfigs([]ConfigChange{configChange(metadata.ResourceTopic, "t", "retention.ms", "1")}, true)
			return err
		},
		"UpdateFeatures": func() error { _, err := h.c.UpdateFeatures(features); return err },
	}
	for name, op := range ops {
		if err := op(); !errors.Is(err, quorum.ErrNotLeader) {
			t.Errorf("%s: %v, want NOT_CONTROLLER", name, err)
		}
	}
	if len(h.q.batches) != batches {
		t.Errorf("%d batches committed", len(h.q.batches)-batches)
	}
}
