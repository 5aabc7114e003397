package controller

import (
	"errors"
	"io"
	"log/slog"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
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

func TestBuildCreateTopics(t *testing.T) {
	c := builder(t, map[string]string{"num.partitions": "2"})
	img := testImage(t, 3, topicRecords("t", metadata.Uuid{4}, []int32{1})...)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Topics = append(req.Topics, topicReq("u", -1, 2, "retention.ms", "5"), topicReq("t", 1, 1))
	res, err := c.createTopics(img, req)
	if err != nil {
		t.Fatal(err)
	}
	u := res.Answer.Topics[0]
	if res.Answer.Errs[0] != nil || u.ID == (metadata.Uuid{}) || u.NumPartitions != 2 || u.ReplicationFactor != 2 {
		t.Errorf("u: %+v, %v", u, res.Answer.Errs[0])
	}
	wantCode(t, "t exists", res.Answer.Errs[1], kerr.TopicAlreadyExists)
	// The topic, its partitions, its config; each partition led by its
	// first replica with all of them in the ISR.
	if len(res.Records) != 4 {
		t.Fatalf("records %v", res.Records)
	}
	if tr, ok := res.Records[0].(*metadata.TopicRecord); !ok || tr.Name != "u" || tr.TopicId != u.ID {
		t.Errorf("first record %+v", res.Records[0])
	}
	for _, r := range res.Records[1:3] {
		pr, ok := r.(*metadata.PartitionRecord)
		if !ok || pr.TopicId != u.ID || len(pr.Replicas) != 2 || pr.Leader != pr.Replicas[0] || !reflect.DeepEqual(pr.Isr, pr.Replicas) {
			t.Errorf("partition record %+v", r)
		}
	}
	if cr, ok := res.Records[3].(*metadata.ConfigRecord); !ok || cr.ResourceName != "u" || cr.Name != "retention.ms" || *cr.Value != "5" {
		t.Errorf("config record %+v", res.Records[3])
	}
	if res.Answer.Offset != -1 {
		t.Errorf("offset %d before the commit", res.Answer.Offset)
	}
	// Validating only answers the same and commits nothing.
	req.ValidateOnly = true
	if res, err = c.createTopics(img, req); err != nil || len(res.Records) != 0 || res.Answer.Errs[0] != nil || res.Answer.Offset != -1 {
		t.Errorf("validating only: records %v, answer %+v, %v", res.Records, res.Answer, err)
	}
}

func TestBuildDeleteTopics(t *testing.T) {
	id := metadata.Uuid{5}
	img := testImage(t, 1, topicRecords("t", id, []int32{1})...)
	res, err := deleteTopics(img, []TopicRef{{Name: "t"}, {ID: id}, {Name: "nope"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []metadata.Record{&metadata.RemoveTopicRecord{TopicId: id}}
	if !reflect.DeepEqual(res.Records, want) {
		t.Errorf("records %v, want one removal", res.Records)
	}
	wantCode(t, "by name", res.Answer.Errs[0], nil)
	wantCode(t, "by id", res.Answer.Errs[1], nil)
	wantCode(t, "unknown", res.Answer.Errs[2], kerr.UnknownTopicOrPartition)
	if res.Answer.Topics[1] != (TopicRef{Name: "t", ID: id}) {
		t.Errorf("by id answered as %+v", res.Answer.Topics[1])
	}
}

func TestBuildElectLeaders(t *testing.T) {
	c := builder(t, nil)
	id := metadata.Uuid{6}
	recs := topicRecords("t", id, []int32{1, 2}, []int32{2, 1})
	recs[1].(*metadata.PartitionRecord).Leader = 2 // not its preferred replica
	img := testImage(t, 2, recs...)
	res, err := c.electLeaders(img, electReq(preferredElection, "t", 0, 1, 2))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != 1 {
		t.Fatalf("records %v", res.Records)
	}
	if pc := res.Records[0].(*metadata.PartitionChangeRecord); pc.TopicId != id || pc.PartitionId != 0 || pc.Leader != 1 {
		t.Errorf("election %+v, want t-0 led by 1", pc)
	}
	ps := res.Answer.Topics[0].Partitions
	wantCode(t, "t-0", ps[0].Err, nil)
	wantCode(t, "t-1", ps[1].Err, kerr.ElectionNotNeeded)
	wantCode(t, "t-2", ps[2].Err, kerr.UnknownTopicOrPartition)
	if _, err := c.electLeaders(img, electReq(7, "t", 0)); errorCode(err) != kerr.InvalidRequest {
		t.Errorf("unknown election type: %v", err)
	}
}

func TestBuildAllocateProducerIDs(t *testing.T) {
	img := testImage(t, 2, &metadata.ProducerIdsRecord{BrokerId: 1, BrokerEpoch: 1, NextProducerId: 5000})
	res, err := allocateProducerIDs(img, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []metadata.Record{&metadata.ProducerIdsRecord{BrokerId: 2, BrokerEpoch: 2, NextProducerId: 5000 + ProducerIDBlockSize}}
	if !reflect.DeepEqual(res.Records, want) || res.Answer != (ProducerIDBlock{First: 5000, Size: ProducerIDBlockSize}) {
		t.Errorf("records %v, answer %+v", res.Records, res.Answer)
	}
	if _, err := allocateProducerIDs(img, 2, 1); !errors.Is(err, kerr.StaleBrokerEpoch) {
		t.Errorf("stale epoch: %v", err)
	}
}

// A broker asking to shut down has its leaderships moved and, once it
// leads nothing, is fenced in the same batch and told to shut down.
func TestBuildBrokerHeartbeatShutdown(t *testing.T) {
	c := builder(t, nil)
	id := metadata.Uuid{7}
	img := testImage(t, 2, topicRecords("t", id, []int32{1, 2})...)
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset, hb.WantShutdown = 1, 1, 100, true
	res, err := c.brokerHeartbeat(img, hb)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != 3 {
		t.Fatalf("records %v", res.Records)
	}
	if r, ok := res.Records[0].(*metadata.BrokerRegistrationChangeRecord); !ok || r.InControlledShutdown != 1 {
		t.Errorf("first record %+v, want controlled shutdown", res.Records[0])
	}
	if pc, ok := res.Records[1].(*metadata.PartitionChangeRecord); !ok || pc.Leader != 2 || !reflect.DeepEqual(pc.Isr, []int32{2}) {
		t.Errorf("second record %+v, want t-0 led by 2 alone", res.Records[1])
	}
	if f, ok := res.Records[2].(*metadata.FenceBrokerRecord); !ok || f.Id != 1 {
		t.Errorf("third record %+v, want broker 1 fenced", res.Records[2])
	}
	if a := res.Answer; !a.ShouldShutdown || !a.IsFenced || !a.IsCaughtUp {
		t.Errorf("answer %+v", a)
	}
	hb.BrokerEpoch = 2
	if _, err := c.brokerHeartbeat(img, hb); !errors.Is(err, kerr.StaleBrokerEpoch) {
		t.Errorf("stale epoch: %v", err)
	}
}

func TestBuildFenceBrokers(t *testing.T) {
	c := builder(t, nil)
	id := metadata.Uuid{8}
	img := testImage(t, 3, topicRecords("t", id, []int32{1, 2, 3})...)
	res, err := c.fenceBrokers(img, []int32{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Answer, []int32{1, 2}) || len(res.Records) != 4 {
		t.Fatalf("answer %v, records %v", res.Answer, res.Records)
	}
	after, _, err := img.Apply(res.Records, img.Offset)
	if err != nil {
		t.Fatal(err)
	}
	if p := after.Topics.Get("t").Partitions[0]; p.Leader != 3 || !reflect.DeepEqual(p.ISR, []int32{3}) || !after.Brokers[1].Fenced || !after.Brokers[2].Fenced {
		t.Errorf("after fencing: leader %d, ISR %v", p.Leader, p.ISR)
	}
	if res, err := c.fenceBrokers(img, nil); err != nil || len(res.Records) != 0 {
		t.Errorf("fencing none: %v, %v", res.Records, err)
	}
}

// run commits what the build returns, as one batch, and answers with the
// offset of its last record.
func TestRunCommitsTheBuildsRecords(t *testing.T) {
	h := newCluster(t, 1, nil)
	from := len(h.q.batches)
	res, err := h.c.CreateTopics(&kmsg.CreateTopicsRequest{Topics: []kmsg.CreateTopicsRequestTopic{topicReq("t", 3, 1)}})
	if err != nil || res.Errs[0] != nil {
		t.Fatal(err, res.Errs)
	}
	if len(h.q.batches) != from+1 || len(h.q.batches[from].Records) != 4 || res.Offset != h.q.end-1 {
		t.Errorf("%d batches, offset %d, end %d", len(h.q.batches)-from, res.Offset, h.q.end)
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
		"CreateTopics": func() error {
			req := kmsg.NewPtrCreateTopicsRequest()
			req.Topics = append(req.Topics, topicReq("u", 1, 1))
			_, err := h.c.CreateTopics(req)
			return err
		},
		"DeleteTopics": func() error { _, err := h.c.DeleteTopics([]TopicRef{{Name: "t"}}); return err },
		"CreatePartitions": func() error {
			_, err := h.c.CreatePartitions(partsReq(false, partsTopic("t", 2)))
			return err
		},
		"CreateClusterLink": func() error {
			_, err := h.c.CreateClusterLink("dr", map[string]string{"bootstrap.servers": "s:1"}, false)
			return err
		},
		"DeleteClusterLink": func() error { _, err := h.c.DeleteClusterLink("dr"); return err },
		"CreateMirrorTopic": func() error {
			_, err := h.c.CreateMirrorTopic(MirrorTopic{Topic: "m", Link: "dr", SourceTopic: "m", Partitions: 1, ReplicationFactor: 1})
			return err
		},
		"SetMirrorState": func() error { _, err := h.c.SetMirrorState("t", metadata.MirrorPaused); return err },
		"StopMirror": func() error {
			_, err := h.c.StopMirror("t", metadata.MirrorPromoted, nil, nil)
			return err
		},
		"ElectLeaders": func() error {
			_, err := h.c.ElectLeaders(electReq(preferredElection, "t", 0))
			return err
		},
		"AlterPartitionReassignments": func() error {
			_, err := h.c.AlterPartitionReassignments(reassignReq("t", 0, []int32{2}))
			return err
		},
		"ListPartitionReassignments": func() error { _, err := h.c.ListPartitionReassignments(nil); return err },
		"AlterUserScramCredentials": func() error {
			_, err := h.c.AlterUserScramCredentials(kmsg.NewPtrAlterUserSCRAMCredentialsRequest())
			return err
		},
		"AllocateProducerIDs": func() error { _, err := h.c.AllocateProducerIDs(1, h.epochs[1]); return err },
		"Bootstrap":           func() error { return h.c.Bootstrap(nil) },
		"RebalanceLeaders":    func() error { _, err := h.c.RebalanceLeaders(); return err },
		"RegisterBroker": func() error {
			req := kmsg.NewPtrBrokerRegistrationRequest()
			req.BrokerID, req.ClusterID = 9, testClusterID
			_, err := h.c.RegisterBroker(req, testNow)
			return err
		},
		"BrokerHeartbeat": func() error {
			hb := kmsg.NewPtrBrokerHeartbeatRequest()
			hb.BrokerID, hb.BrokerEpoch = 1, h.epochs[1]
			_, err := h.c.BrokerHeartbeat(hb, at(testNow))
			return err
		},
		"FenceStaleBrokers": func() error { _, err := h.c.FenceStaleBrokers(testNow); return err },
		"FenceUnreachable":  func() error { _, err := h.c.FenceUnreachable(1, h.epochs[1], testNow); return err },
		"AlterPartition": func() error {
			_, err := h.alterPartition(3, 1, "t", h.isrEntry("t", 0, 1))
			return err
		},
		"UnregisterBroker": func() error { _, err := h.c.UnregisterBroker(1); return err },
		"CreateAcls": func() error {
			_, err := h.c.CreateAcls([]acl.Binding{{ResourceType: acl.ResourceTopic, ResourceName: "t", PatternType: acl.PatternLiteral,
				Principal: "User:a", Host: "*", Operation: acl.OpRead, PermissionType: acl.PermAllow}})
			return err
		},
		"DeleteAcls": func() error { _, err := h.c.DeleteAcls(nil); return err },
		"AlterClientQuotas": func() error {
			_, err := h.c.AlterClientQuotas(kmsg.NewPtrAlterClientQuotasRequest())
			return err
		},
		"AssignReplicasToDirs": func() error {
			req := kmsg.NewPtrAssignReplicasToDirsRequest()
			req.BrokerID, req.BrokerEpoch = 1, h.epochs[1]
			_, err := h.c.AssignReplicasToDirs(req)
			return err
		},
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
