package controller

import (
	"math"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

// updateFeature sets one feature's level with UpdateFeatures v1.
func (h *harness) updateFeature(name string, level int16, typ int8) error {
	h.t.Helper()
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.SetVersion(1)
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = name, level, typ
	req.FeatureUpdates = append(req.FeatureUpdates, u)
	res, err := h.c.UpdateFeatures(req)
	if err != nil {
		h.t.Fatal(err)
	}
	return res.Errs[0]
}

// reregister registers broker id again with previousEpoch, as a broker
// restarting after a clean (its last epoch) or unclean (-1) shutdown, and
// unfences it.
func (h *harness) reregister(id int32, previousEpoch int64) {
	h.t.Helper()
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.ClusterID, req.IncarnationID = id, testClusterID, [16]byte{byte(id), 2}
	req.Listeners = []kmsg.BrokerRegistrationRequestListener{{Name: "PLAINTEXT", Host: "localhost", Port: uint16(9092 + id)}}
	req.PreviousBrokerEpoch = previousEpoch
	epoch, err := h.c.RegisterBroker(req, testNow.Add(h.c.sessionTimeout()))
	if err != nil {
		h.t.Fatal(err)
	}
	h.epochs[id] = epoch
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = id, epoch, math.MaxInt64
	if _, err := h.c.BrokerHeartbeat(hb, at(testNow.Add(h.c.sessionTimeout()))); err != nil {
		h.t.Fatal(err)
	}
}

func wantELR(t *testing.T, h *harness, topic string, id int32, leader int32, isr, elr []int32) {
	t.Helper()
	p := h.part(topic, id)
	if p.Leader != leader || !slices.Equal(p.ISR, isr) || !slices.Equal(p.ELR, elr) {
		t.Fatalf("%s-%d: leader %d ISR %v ELR %v, want %d %v %v", topic, id, p.Leader, p.ISR, p.ELR, leader, isr, elr)
	}
}

func TestUpdateFeaturesValidates(t *testing.T) {
	h := newCluster(t, 1, nil)
	for _, tc := range []struct {
		name  string
		level int16
		typ   int8
		want  *kerr.Error
	}{
		{"no.such.feature", 1, upgrade, kerr.InvalidUpdateVersion},
		{metadata.ELRFeature, 2, upgrade, kerr.InvalidUpdateVersion},
		{"metadata.version", MetadataVersion + 1, upgrade, kerr.InvalidUpdateVersion},
		{"metadata.version", 0, safeDowngrade, kerr.InvalidUpdateVersion},
		{metadata.ELRFeature, 1, safeDowngrade, kerr.InvalidUpdateVersion}, // a downgrade type to go up
		{metadata.ELRFeature, 1, upgrade, nil},
		{metadata.ELRFeature, 0, upgrade, kerr.InvalidUpdateVersion}, // down without a downgrade type
		{metadata.ELRFeature, 0, safeDowngrade, nil},
	} {
		err := h.updateFeature(tc.name, tc.level, tc.typ)
		if tc.want == nil && err != nil || tc.want != nil && !errorIs(err, tc.want) {
			t.Errorf("%s=%d (type %d): %v, want %v", tc.name, tc.level, tc.typ, err, tc.want)
		}
	}
	if _, ok := h.c.Image().Features[metadata.ELRFeature]; ok {
		t.Error("eligible.leader.replicas.version still finalized after its downgrade to 0")
	}
}

// With eligible leader replicas, the replicas that leave an ISR below
// min.insync.replicas become eligible leaders: when every ISR member is
// gone, one of them leads, without an unclean election.
func TestEligibleLeaderReplicas(t *testing.T) {
	h := newCluster(t, 3, nil)
	if err := h.updateFeature(metadata.ELRFeature, 1, upgrade); err != nil {
		t.Fatal(err)
	}
	h.mustCreate(manualReq("t", []int32{1, 2, 3}))
	h.setTopicConfig("t", "min.insync.replicas", "2")
	// Down to min.insync.replicas: no ELR yet.
	h.alterISR("t", 0, 1, 2)
	wantELR(t, h, "t", 0, 1, []int32{1, 2}, nil)
	// Below: the replica that left is eligible.
	h.alterISR("t", 0, 1)
	wantELR(t, h, "t", 0, 1, []int32{1}, []int32{2})
	// The last ISR member is fenced: the ISR empties, the leader goes
	// into the ELR, and the live ELR member leads alone.
	h.fence(1)
	wantELR(t, h, "t", 0, 2, []int32{2}, []int32{1})
	if p := h.part("t", 0); p.LeaderRecoveryState != recovered {
		t.Errorf("leader recovery state %d after an ELR election", p.LeaderRecoveryState)
	}
	// Back at min.insync.replicas, the ELR is cleared.
	h.alterISR("t", 0, 2, 3)
	wantELR(t, h, "t", 0, 2, []int32{2, 3}, nil)

	// Turning the feature off clears what is left.
	h.alterISR("t", 0, 2)
	wantELR(t, h, "t", 0, 2, []int32{2}, []int32{3})
	if err := h.updateFeature(metadata.ELRFeature, 0, safeDowngrade); err != nil {
		t.Fatal(err)
	}
	wantELR(t, h, "t", 0, 2, []int32{2}, nil)
}

// With every replica fenced the ISR is empty and the partition offline; the
// first ELR member to come back leads, unless it crashed: a broker that
// registers without having shut down cleanly leaves the ELR.
func TestELRAfterAllReplicasFail(t *testing.T) {
	for _, clean := range []bool{true, false} {
		h := newCluster(t, 2, nil)
		if err := h.updateFeature(metadata.ELRFeature, 1, upgrade); err != nil {
			t.Fatal(err)
		}
		h.mustCreate(manualReq("t", []int32{1, 2}))
		h.setTopicConfig("t", "min.insync.replicas", "2")
		h.fence(2)
		wantELR(t, h, "t", 0, 1, []int32{1}, []int32{2})
		h.fence(1)
		wantELR(t, h, "t", 0, -1, []int32{}, []int32{1, 2})
		prev := h.epochs[2]
		if !clean {
			prev = -1
		}
		h.reregister(2, prev)
		if clean {
			wantELR(t, h, "t", 0, 2, []int32{2}, []int32{1})
		} else {
			wantELR(t, h, "t", 0, -1, []int32{}, []int32{1})
			if p := h.part("t", 0); slices.Contains(p.LastKnownELR, 2) {
				t.Errorf("last known ELR %v keeps the broker that crashed", p.LastKnownELR)
			}
		}
	}
}
