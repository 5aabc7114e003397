package kafka_test

// The replication admin APIs on one node: ElectLeaders,
// AlterPartitionReassignments and ListPartitionReassignments through kadm
// and the wire, AlterPartition on the controller listener, and
// NOT_CONTROLLER when the active controller cannot be reached. The
// elections and reassignments themselves are tested in the controller.

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/kafka"
	"weir/internal/servertest"
)

func TestElectLeadersOneNode(t *testing.T) {
	ctx := cliCtx(t)
	n := cliNode(t, nil)
	adm := cliAdmin(t, n.Addr)
	cliCreateTopic(t, ctx, adm, "el", 2, nil)

	for _, how := range []kadm.ElectLeadersHow{kadm.ElectPreferredReplica, kadm.ElectLiveReplica} {
		res, err := adm.ElectLeaders(ctx, how, kadm.TopicsSet{"el": {0: {}, 1: {}, 9: {}}})
		if err != nil {
			t.Fatal(err)
		}
		for p, want := range map[int32]error{0: kerr.ElectionNotNeeded, 1: kerr.ElectionNotNeeded, 9: kerr.UnknownTopicOrPartition} {
			if got := res["el"][p].Err; !errors.Is(got, want) {
				t.Errorf("type %d partition %d: %v, want %v", how, p, got, want)
			}
		}
	}

	// Every partition: those needing no election are left out.
	w := dial(t, n.Addr)
	for v := int16(0); v <= 2; v++ {
		req := kmsg.NewPtrElectLeadersRequest()
		req.SetVersion(v)
		resp := w.do(req).(*kmsg.ElectLeadersResponse)
		wantOK(t, "ElectLeaders of every partition", resp.ErrorCode)
		for _, rt := range resp.Topics {
			if len(rt.Partitions) != 0 {
				t.Errorf("v%d: %s lists %+v", v, rt.Topic, rt.Partitions)
			}
		}
	}
	req := kmsg.NewPtrElectLeadersRequest()
	req.SetVersion(1)
	req.ElectionType = 5
	wantCode(t, "unknown election type", w.do(req).(*kmsg.ElectLeadersResponse).ErrorCode, kerr.InvalidRequest)
}

func TestPartitionReassignmentsOneNode(t *testing.T) {
	ctx := cliCtx(t)
	n := cliNode(t, nil)
	adm := cliAdmin(t, n.Addr)
	cliCreateTopic(t, ctx, adm, "ra", 1, nil)

	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("ra", 0, []int32{1})
	req.Assign("ra", 1, []int32{1})
	req.Assign("nope", 0, []int32{1})
	resps, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		topic     string
		partition int32
		want      error
	}{{"ra", 0, nil}, {"ra", 1, kerr.UnknownTopicOrPartition}, {"nope", 0, kerr.UnknownTopicOrPartition}} {
		if got := resps[c.topic][c.partition].Err; !errors.Is(got, c.want) {
			t.Errorf("%s-%d: %v, want %v", c.topic, c.partition, got, c.want)
		}
	}

	req = nil
	req.Assign("ra", 0, []int32{1, 2})
	resps, err = adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := resps["ra"][0].Err; !errors.Is(got, kerr.InvalidReplicaAssignment) || resps["ra"][0].ErrMessage == "" {
		t.Errorf("unregistered broker: %v %q", got, resps["ra"][0].ErrMessage)
	}
	req = nil
	req.CancelAssign("ra", 0)
	if resps, err = adm.AlterPartitionAssignments(ctx, req); err != nil || !errors.Is(resps["ra"][0].Err, kerr.NoReassignmentInProgress) {
		t.Errorf("cancelling none: %v, %v", resps, err)
	}

	listed, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"ra": {0: {}}, "nope": {0: {}}})
	if err != nil || len(listed) != 0 {
		t.Errorf("listing named partitions: %v, %v", listed, err)
	}
	all := dial(t, n.Addr).do(kmsg.NewPtrListPartitionReassignmentsRequest()).(*kmsg.ListPartitionReassignmentsResponse)
	if all.ErrorCode != 0 || len(all.Topics) != 0 {
		t.Errorf("listing all: %+v", all)
	}
	if p := n.Server.Image().Topics.Get("ra").Partitions[0]; !slices.Equal(p.Replicas, []int32{1}) || p.Leader != 1 {
		t.Errorf("partition after the requests: %+v", p)
	}
}

func TestAlterPartitionOnTheControllerListener(t *testing.T) {
	ctx := cliCtx(t)
	n := cliNode(t, nil)
	cliCreateTopic(t, ctx, cliAdmin(t, n.Addr), "ap", 1, nil)
	img := n.Server.Image()
	topic, epoch := img.Topics.Get("ap"), img.Brokers[1].Epoch
	p := topic.Partitions[0]

	ctl := dial(t, n.Server.Addr("CONTROLLER").String())
	var served bool
	for _, k := range ctl.do(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse).ApiKeys {
		if k.ApiKey == 56 {
			served = k.MinVersion == 2 && k.MaxVersion == 3
		}
	}
	if !served {
		t.Fatal("the controller listener does not serve AlterPartition 2-3")
	}
	for _, k := range dial(t, n.Addr).do(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse).ApiKeys {
		if k.ApiKey == 56 {
			t.Error("a broker listener serves AlterPartition")
		}
	}

	alter := func(brokerEpoch int64) *kmsg.AlterPartitionResponse {
		req := kmsg.NewPtrAlterPartitionRequest()
		req.SetVersion(3)
		req.BrokerID, req.BrokerEpoch = 1, brokerEpoch
		rt := kmsg.NewAlterPartitionRequestTopic()
		rt.TopicID = topic.ID
		rp := kmsg.NewAlterPartitionRequestTopicPartition()
		rp.LeaderEpoch, rp.PartitionEpoch = p.LeaderEpoch, p.PartitionEpoch
		isr := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
		isr.BrokerID, isr.BrokerEpoch = 1, brokerEpoch
		rp.NewEpochISR = append(rp.NewEpochISR, isr)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return ctl.do(req).(*kmsg.AlterPartitionResponse)
	}
	wantCode(t, "stale broker epoch", alter(epoch+1).ErrorCode, kerr.StaleBrokerEpoch)
	resp := alter(epoch)
	wantOK(t, "AlterPartition", resp.ErrorCode)
	if len(resp.Topics) != 1 || resp.Topics[0].TopidID != topic.ID || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("answer %+v", resp)
	}
	got := resp.Topics[0].Partitions[0]
	wantOK(t, "AlterPartition ap-0", got.ErrorCode)
	if got.LeaderID != 1 || got.LeaderEpoch != p.LeaderEpoch || got.PartitionEpoch != p.PartitionEpoch || !slices.Equal(got.ISR, []int32{1}) {
		t.Errorf("answer %+v for %+v", got, p)
	}
}

// unreachable is a Forwarder whose active controller cannot be reached.
type unreachable struct{}

func (unreachable) Local() bool { return false }
func (unreachable) Forward(context.Context, []byte) ([]byte, error) {
	return nil, errors.New("no route to the active controller")
}

// A node that cannot reach the active controller answers NOT_CONTROLLER.
func TestReplicationAdminNotController(t *testing.T) {
	cfg, err := servertest.Config(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := kafka.New(kafka.Config{Broker: cfg, ClusterID: "test", ListenerName: "PLAINTEXT", MaxRequestSize: 1 << 20},
		kafka.Deps{Forward: unreachable{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(srv.Close)
	w := dial(t, ln.Addr().String())

	el := kmsg.NewPtrElectLeadersRequest()
	el.SetVersion(2)
	el.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "t", Partitions: []int32{0, 1}}}
	er := w.do(el).(*kmsg.ElectLeadersResponse)
	wantCode(t, "ElectLeaders", er.ErrorCode, kerr.NotController)
	if len(er.Topics) != 1 || len(er.Topics[0].Partitions) != 2 || er.Topics[0].Partitions[1].ErrorCode != kerr.NotController.Code {
		t.Errorf("ElectLeaders partitions %+v", er.Topics)
	}
	ar := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	wantCode(t, "AlterPartitionReassignments", w.do(ar).(*kmsg.AlterPartitionAssignmentsResponse).ErrorCode, kerr.NotController)
	lr := kmsg.NewPtrListPartitionReassignmentsRequest()
	wantCode(t, "ListPartitionReassignments", w.do(lr).(*kmsg.ListPartitionReassignmentsResponse).ErrorCode, kerr.NotController)
	uf := kmsg.NewPtrUpdateFeaturesRequest()
	uf.SetVersion(1)
	uf.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{{Feature: "eligible.leader.replicas.version", MaxVersionLevel: 1, UpgradeType: 1}}
	wantCode(t, "UpdateFeatures", w.do(uf).(*kmsg.UpdateFeaturesResponse).ErrorCode, kerr.NotController)
}
