package kafka_test

// DescribeQuorum: a single-voter node answering at every version, the
// requests Kafka refuses, and (on a protocol server with a stand-in
// quorum) a quorum of three seen from its leader and from a follower.

import (
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/kafka"
	"weir/internal/quorum"
	"weir/internal/servertest"
)

const describeQuorumKey = 55

func describeQuorumReq(version int16, topic string, partitions ...int32) *kmsg.DescribeQuorumRequest {
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.SetVersion(version)
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = topic
	for _, p := range partitions {
		rp := kmsg.NewDescribeQuorumRequestTopicPartition()
		rp.Partition = p
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// describeQuorum asks for __cluster_metadata-0 at version and returns the
// partition, after checking the envelope around it.
func (w *wire) describeQuorum(version int16) (*kmsg.DescribeQuorumResponse, kmsg.DescribeQuorumResponseTopicPartition) {
	w.t.Helper()
	resp := w.do(describeQuorumReq(version, "__cluster_metadata", 0)).(*kmsg.DescribeQuorumResponse)
	if resp.ErrorCode != 0 || resp.ErrorMessage != nil {
		w.t.Fatalf("v%d: top-level error %d %q", version, resp.ErrorCode, str(resp.ErrorMessage))
	}
	if len(resp.Topics) != 1 || resp.Topics[0].Topic != "__cluster_metadata" || len(resp.Topics[0].Partitions) != 1 {
		w.t.Fatalf("v%d: topics %+v, want __cluster_metadata with one partition", version, resp.Topics)
	}
	p := resp.Topics[0].Partitions[0]
	if p.Partition != 0 || p.ErrorMessage != nil {
		w.t.Fatalf("v%d: partition %d, message %q", version, p.Partition, str(p.ErrorMessage))
	}
	return resp, p
}

func TestDescribeQuorumSingleVoter(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{
		"controller.quorum.voters": "1@localhost:29093",
		"listeners":                "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
	}})
	w := dial(t, n.Addr)

	var epoch int32
	var hw int64
	for v := int16(0); v <= 2; v++ {
		before := time.Now().UnixMilli()
		resp, p := w.describeQuorum(v)
		after := time.Now().UnixMilli()
		if p.ErrorCode != 0 {
			t.Fatalf("v%d: %v", v, kerr.ErrorForCode(p.ErrorCode))
		}
		if p.LeaderID != 1 {
			t.Errorf("v%d: leader %d, want node 1", v, p.LeaderID)
		}
		if p.LeaderEpoch < 1 || (epoch != 0 && p.LeaderEpoch != epoch) {
			t.Errorf("v%d: leader epoch %d (earlier %d)", v, p.LeaderEpoch, epoch)
		}
		epoch = p.LeaderEpoch
		// The log holds at least the bootstrap records and the leader's
		// LeaderChange; a single voter commits all it has. The node keeps
		// appending (its registration, heartbeats that change state), so
		// the high watermark may only grow between the answers.
		if p.HighWatermark < 2 || p.HighWatermark < hw {
			t.Errorf("v%d: high watermark %d (earlier %d)", v, p.HighWatermark, hw)
		}
		hw = p.HighWatermark
		if len(p.CurrentVoters) != 1 {
			t.Fatalf("v%d: voters %+v, want one", v, p.CurrentVoters)
		}
		voter := p.CurrentVoters[0]
		if voter.ReplicaID != 1 || voter.LogEndOffset < p.HighWatermark || voter.ReplicaDirectoryID != [16]byte{} {
			t.Errorf("v%d: voter %+v, want node 1 at or past the high watermark %d with no directory id", v, voter, p.HighWatermark)
		}
		if v == 0 {
			// Not in v0: the decoder leaves the defaults.
			if voter.LastFetchTimestamp != -1 || voter.LastCaughtUpTimestamp != -1 {
				t.Errorf("v0: timestamps %d %d", voter.LastFetchTimestamp, voter.LastCaughtUpTimestamp)
			}
		} else {
			// The leader's own are the time of the answer.
			for _, ts := range []int64{voter.LastFetchTimestamp, voter.LastCaughtUpTimestamp} {
				if ts < before || ts > after {
					t.Errorf("v%d: leader timestamp %d outside [%d, %d]", v, ts, before, after)
				}
			}
		}
		if len(p.Observers) != 0 {
			t.Errorf("v%d: observers %+v", v, p.Observers)
		}
		if v < 2 {
			if len(resp.Nodes) != 0 {
				t.Errorf("v%d: nodes %+v", v, resp.Nodes)
			}
			continue
		}
		if len(resp.Nodes) != 1 || resp.Nodes[0].NodeID != 1 || len(resp.Nodes[0].Listeners) != 1 {
			t.Fatalf("v2: nodes %+v, want node 1 with one listener", resp.Nodes)
		}
		if l := resp.Nodes[0].Listeners[0]; l.Name != "CONTROLLER" || l.Host != "localhost" || l.Port != 29093 {
			t.Errorf("v2: listener %+v, want CONTROLLER://localhost:29093 from controller.quorum.voters", l)
		}
	}

	// Each committed batch moves the high watermark and the leader's end.
	// The quorum's status is refreshed after the batch is delivered, so
	// CreateTopics may answer a moment before DescribeQuorum shows it.
	w.createTopic("quorum-moves", 1, nil)
	_, p := w.describeQuorum(2)
	for deadline := time.Now().Add(10 * time.Second); p.HighWatermark <= hw && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		_, p = w.describeQuorum(2)
	}
	if p.HighWatermark <= hw || p.CurrentVoters[0].LogEndOffset < p.HighWatermark || p.LeaderEpoch != epoch {
		t.Errorf("after a commit: high watermark %d (was %d), voter end %d, epoch %d (was %d)",
			p.HighWatermark, hw, p.CurrentVoters[0].LogEndOffset, p.LeaderEpoch, epoch)
	}
	hw = p.HighWatermark

	// A restart elects the node again in a new epoch, whose LeaderChange
	// entry is one more offset.
	n.Restart()
	w = dial(t, n.Addr)
	_, p = w.describeQuorum(2)
	for deadline := time.Now().Add(10 * time.Second); (p.LeaderEpoch <= epoch || p.HighWatermark <= hw) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		_, p = w.describeQuorum(2)
	}
	if p.LeaderID != 1 || p.LeaderEpoch <= epoch || p.HighWatermark <= hw {
		t.Errorf("after a restart: leader %d epoch %d (was %d), high watermark %d (was %d)", p.LeaderID, p.LeaderEpoch, epoch, p.HighWatermark, hw)
	}

	// ApiVersions lists the API, v0-v2.
	av := kmsg.NewPtrApiVersionsRequest()
	listed := false
	for _, k := range w.do(av).(*kmsg.ApiVersionsResponse).ApiKeys {
		if k.ApiKey == describeQuorumKey {
			listed = k.MinVersion == 0 && k.MaxVersion == 2
		}
	}
	if !listed {
		t.Error("ApiVersions does not list DescribeQuorum v0-2")
	}
}

// Anything but exactly __cluster_metadata partition 0 is
// UNKNOWN_TOPIC_OR_PARTITION for each partition named, as in Kafka.
func TestDescribeQuorumWrongPartition(t *testing.T) {
	n := servertest.Start(t, servertest.Options{})
	w := dial(t, n.Addr)
	two := describeQuorumReq(2, "__cluster_metadata", 0)
	two.Topics = append(two.Topics, describeQuorumReq(2, "other", 3, 4).Topics[0])
	for _, c := range []struct {
		name string
		req  *kmsg.DescribeQuorumRequest
	}{
		{"partition 1", describeQuorumReq(1, "__cluster_metadata", 1)},
		{"another topic", describeQuorumReq(2, "events", 0)},
		{"two partitions", describeQuorumReq(0, "__cluster_metadata", 0, 1)},
		{"no partition", describeQuorumReq(2, "__cluster_metadata")},
		{"two topics", two},
	} {
		resp := w.do(c.req).(*kmsg.DescribeQuorumResponse)
		if resp.ErrorCode != 0 || len(resp.Topics) != len(c.req.Topics) || len(resp.Nodes) != 0 {
			t.Fatalf("%s: error %d, %d topics, %d nodes", c.name, resp.ErrorCode, len(resp.Topics), len(resp.Nodes))
		}
		for i, rt := range c.req.Topics {
			got := resp.Topics[i]
			if got.Topic != rt.Topic || len(got.Partitions) != len(rt.Partitions) {
				t.Fatalf("%s: topic %+v for %+v", c.name, got, rt)
			}
			for j, p := range got.Partitions {
				if p.Partition != rt.Partitions[j].Partition || p.ErrorCode != kerr.UnknownTopicOrPartition.Code ||
					p.LeaderID != 0 || p.HighWatermark != 0 || len(p.CurrentVoters) != 0 || len(p.Observers) != 0 {
					t.Errorf("%s: partition %+v, want UNKNOWN_TOPIC_OR_PARTITION for %d", c.name, p, rt.Partitions[j].Partition)
				}
			}
		}
	}
	w.ping()
}

// fakeQuorum stands in for a node of a larger quorum.
type fakeQuorum struct{ st quorum.Status }

func (f *fakeQuorum) Status() quorum.Status { return f.st }

// quorumServer serves the protocol on a loopback port for node 1 of a
// three-voter quorum whose state is q (nil: a node without a quorum).
func quorumServer(t *testing.T, q kafka.Quorum, now time.Time) string {
	t.Helper()
	cfg, err := servertest.Config(t.TempDir(), map[string]string{
		"controller.quorum.voters":       "1@c1.example:9093,2@c2.example:9094,3@[::1]:9095",
		"controller.listener.names":      "RAFT,CONTROLLER",
		"listeners":                      "PLAINTEXT://127.0.0.1:0,RAFT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,RAFT:PLAINTEXT,CONTROLLER:PLAINTEXT",
	})
	if err != nil {
		t.Fatal(err)
	}
	deps := kafka.Deps{Quorum: q, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: func() time.Time { return now }}
	srv := kafka.New(kafka.Config{Broker: cfg, ClusterID: "test", ListenerName: "PLAINTEXT", MaxRequestSize: 1 << 20}, deps)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(srv.Close)
	return ln.Addr().String()
}

// The leader of three voters: one follower caught up a while ago, one
// never heard from.
func TestDescribeQuorumThreeVoters(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_123)
	q := &fakeQuorum{quorum.Status{Leader: 1, Term: 7, HighWatermark: 90, LogEndOffset: 100, Active: true, Voters: []quorum.VoterStatus{
		{NodeID: 1, LogEndOffset: 100, LastFetch: now.Add(-time.Second), LastCaughtUp: now.Add(-time.Second)},
		{NodeID: 2, LogEndOffset: 90, LastFetch: time.UnixMilli(1_699_999_999_500), LastCaughtUp: time.UnixMilli(1_699_999_998_000)},
		{NodeID: 3, LogEndOffset: -1},
	}}}
	w := dial(t, quorumServer(t, q, now))
	for v := int16(0); v <= 2; v++ {
		resp, p := w.describeQuorum(v)
		if p.ErrorCode != 0 || p.LeaderID != 1 || p.LeaderEpoch != 7 || p.HighWatermark != 90 || len(p.Observers) != 0 {
			t.Fatalf("v%d: %+v", v, p)
		}
		want := []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{
			{ReplicaID: 1, LogEndOffset: 100, LastFetchTimestamp: now.UnixMilli(), LastCaughtUpTimestamp: now.UnixMilli()},
			{ReplicaID: 2, LogEndOffset: 90, LastFetchTimestamp: 1_699_999_999_500, LastCaughtUpTimestamp: 1_699_999_998_000},
			{ReplicaID: 3, LogEndOffset: -1, LastFetchTimestamp: -1, LastCaughtUpTimestamp: -1},
		}
		if len(p.CurrentVoters) != len(want) {
			t.Fatalf("v%d: voters %+v", v, p.CurrentVoters)
		}
		for i, got := range p.CurrentVoters {
			if v == 0 {
				want[i].LastFetchTimestamp, want[i].LastCaughtUpTimestamp = -1, -1
			}
			if got.ReplicaID != want[i].ReplicaID || got.ReplicaDirectoryID != want[i].ReplicaDirectoryID || got.LogEndOffset != want[i].LogEndOffset ||
				got.LastFetchTimestamp != want[i].LastFetchTimestamp || got.LastCaughtUpTimestamp != want[i].LastCaughtUpTimestamp {
				t.Errorf("v%d: voter %d = %+v, want %+v", v, i, got, want[i])
			}
		}
		if v < 2 {
			continue
		}
		wantNodes := []struct {
			id   int32
			host string
			port uint16
		}{{1, "c1.example", 9093}, {2, "c2.example", 9094}, {3, "::1", 9095}}
		if len(resp.Nodes) != len(wantNodes) {
			t.Fatalf("v2: nodes %+v", resp.Nodes)
		}
		for i, wn := range wantNodes {
			got := resp.Nodes[i]
			if got.NodeID != wn.id || len(got.Listeners) != 1 {
				t.Fatalf("v2: node %d = %+v", i, got)
			}
			// The first of controller.listener.names.
			if l := got.Listeners[0]; l.Name != "RAFT" || l.Host != wn.host || l.Port != wn.port {
				t.Errorf("v2: node %d listener %+v, want RAFT://%s:%d", wn.id, l, wn.host, wn.port)
			}
		}
	}
}

// A node that is not the leader answers NOT_LEADER_OR_FOLLOWER for
// __cluster_metadata-0, naming the leader it knows and the epoch.
func TestDescribeQuorumNotLeader(t *testing.T) {
	q := &fakeQuorum{}
	w := dial(t, quorumServer(t, q, time.Now()))
	for _, st := range []quorum.Status{
		{Leader: 2, Term: 9, HighWatermark: 40, LogEndOffset: 41, Voters: []quorum.VoterStatus{{NodeID: 1, LogEndOffset: 41}, {NodeID: 2, LogEndOffset: -1}, {NodeID: 3, LogEndOffset: -1}}},
		{Leader: -1, Term: 10, HighWatermark: 40, LogEndOffset: 41},
	} {
		q.st = st
		for v := int16(0); v <= 2; v++ {
			resp, p := w.describeQuorum(v)
			if p.ErrorCode != kerr.NotLeaderForPartition.Code || p.LeaderID != st.Leader || p.LeaderEpoch != int32(st.Term) ||
				p.HighWatermark != 0 || len(p.CurrentVoters) != 0 || len(p.Observers) != 0 || len(resp.Nodes) != 0 {
				t.Errorf("v%d, leader %d: %+v nodes %+v, want NOT_LEADER_OR_FOLLOWER naming the leader and epoch %d", v, st.Leader, p, resp.Nodes, st.Term)
			}
		}
		// The topic is checked first.
		resp := w.do(describeQuorumReq(2, "__cluster_metadata", 1)).(*kmsg.DescribeQuorumResponse)
		if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.UnknownTopicOrPartition.Code || p.Partition != 1 {
			t.Errorf("wrong partition on a follower: %+v", p)
		}
	}
}

// A node without a quorum (a broker-only node) lists the API (it forwards
// it to the leader) and, when it cannot, answers NOT_LEADER_OR_FOLLOWER.
func TestDescribeQuorumWithoutAQuorum(t *testing.T) {
	w := dial(t, quorumServer(t, nil, time.Now()))
	listed := false
	for _, k := range w.do(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse).ApiKeys {
		listed = listed || k.ApiKey == describeQuorumKey
	}
	if !listed {
		t.Fatal("ApiVersions does not list DescribeQuorum")
	}
	resp := w.do(describeQuorumReq(0, "__cluster_metadata", 0)).(*kmsg.DescribeQuorumResponse)
	if resp.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("error %d, want NOT_LEADER_OR_FOLLOWER", resp.ErrorCode)
	}
}
