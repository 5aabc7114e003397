package quorum

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"weir/internal/cli/clitest"
	"weir/internal/server"
	"weir/internal/servertest"
)

// quorumNode is a single-voter node whose voter entry names
// CONTROLLER://localhost:29093.
func quorumNode(t *testing.T) *servertest.Node {
	t.Helper()
	return servertest.Start(t, servertest.Options{Overrides: map[string]string{
		"controller.quorum.voters": "1@localhost:29093",
	}})
}

// directQuorum asks the node for DescribeQuorum itself, to compare with
// what the command printed.
func directQuorum(t *testing.T, addr string) kmsg.DescribeQuorumResponseTopicPartition {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestMetadataQuorumStatus(t *testing.T) {
	n := quorumNode(t)
	before := directQuorum(t, n.Addr)
	ctrl := n.Addr
	if a := n.Server.Addr("CONTROLLER"); a != nil {
		ctrl = a.String()
	}
	for _, args := range [][]string{
		{"metadata-quorum", "--bootstrap-server", n.Addr, "describe", "--status"},
		{"metadata-quorum", "describe", "--status", "--bootstrap-server", n.Addr},
		{"metadata-quorum", "--bootstrap-controller", ctrl, "describe", "--status"},
	} {
		out, errOut, err := weir.Execute(t, args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, errOut)
		}
		m := clitest.MatchLines(t, out,
			`ClusterId:              `+regexp.QuoteMeta(n.Server.ClusterID()),
			`LeaderId:               1`,
			`LeaderEpoch:            (\d+)`,
			`HighWatermark:          (\d+)`,
			`MaxFollowerLag:         0`,
			`MaxFollowerLagTimeMs:   0`,
			regexp.QuoteMeta(`CurrentVoters:          [{"id": 1, "endpoints": ["CONTROLLER://localhost:29093"]}]`),
			regexp.QuoteMeta(`CurrentObservers:       []`),
		)
		after := directQuorum(t, n.Addr)
		if e := atoi(t, m[2][1]); e != int64(before.LeaderEpoch) || e != int64(after.LeaderEpoch) {
			t.Errorf("%v: LeaderEpoch %d, the node says %d", args, e, after.LeaderEpoch)
		}
		if hw := atoi(t, m[3][1]); hw < before.HighWatermark || hw > after.HighWatermark || hw < 1 {
			t.Errorf("%v: HighWatermark %d, the node says %d then %d", args, hw, before.HighWatermark, after.HighWatermark)
		}
	}
}

// The replication table: Kafka pads each cell to its column and ends it
// with a tab.
func TestMetadataQuorumReplication(t *testing.T) {
	n := quorumNode(t)
	header := "NodeId\tDirectoryId           \tLogEndOffset\tLag\tLastFetchTimestamp\tLastCaughtUpTimestamp\tStatus\t"

	before := time.Now().UnixMilli()
	out, errOut, err := weir.Execute(t, "metadata-quorum", "--bootstrap-server", n.Addr, "describe", "--replication")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	after := time.Now().UnixMilli()
	m := clitest.MatchLines(t, out, regexp.QuoteMeta(header),
		`1     \tAAAAAAAAAAAAAAAAAAAAAA\t((\d+) *)\t0  \t(\d{13})     \t(\d{13})        \tLeader\t`)
	if len(m[1][1]) != len("LogEndOffset") {
		t.Errorf("LogEndOffset cell %q is not padded to the header's width", m[1][1])
	}
	if leo, hw := atoi(t, m[1][2]), directQuorum(t, n.Addr).HighWatermark; leo < 1 || leo > hw {
		t.Errorf("LogEndOffset %d, the node's high watermark is %d", leo, hw)
	}
	for _, ts := range m[1][3:5] {
		if v := atoi(t, ts); v < before || v > after {
			t.Errorf("timestamp %d is not the time of the answer [%d, %d]", v, before, after)
		}
	}

	out, errOut, err = weir.Execute(t, "metadata-quorum", "--bootstrap-server", n.Addr, "describe", "--replication", "--human-readable")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	m = clitest.MatchLines(t, out, regexp.QuoteMeta(header),
		`1     \tAAAAAAAAAAAAAAAAAAAAAA\t\d+ *\t0  \t((\d+) ms ago *)\t((\d+) ms ago *)\tLeader\t`)
	if len(m[1][1]) != len("LastFetchTimestamp") || len(m[1][3]) != len("LastCaughtUpTimestamp") {
		t.Errorf("relative times %q %q are not padded to the headers' widths", m[1][1], m[1][3])
	}
	for _, ago := range []string{m[1][2], m[1][4]} {
		if v := atoi(t, ago); v > 10000 {
			t.Errorf("the leader's times are %d ms ago", v)
		}
	}
}

// A node that answers DescribeQuorum v1 sends no directory ids or
// endpoints; v0 no timestamps either. The tool prints what Kafka's prints
// for such answers.
func TestMetadataQuorumOlderVersions(t *testing.T) {
	n := quorumNode(t)
	for _, c := range []struct {
		version int16
		times   string // the two timestamp cells, padded
	}{
		{1, `\d{13}     \t\d{13}        `},
		{0, `-1                \t-1                   `},
	} {
		vs := kversion.Stable()
		vs.SetMaxKeyVersion(55, c.version)
		quorumClientOpts = []kgo.Opt{kgo.MaxVersions(vs)}
		status, errOut, err := weir.Execute(t, "metadata-quorum", "--bootstrap-server", n.Addr, "describe", "--status")
		if err != nil {
			t.Fatalf("v%d: %v\n%s", c.version, err, errOut)
		}
		repl, errOut, err := weir.Execute(t, "metadata-quorum", "--bootstrap-server", n.Addr, "describe", "--replication")
		quorumClientOpts = nil
		if err != nil {
			t.Fatalf("v%d: %v\n%s", c.version, err, errOut)
		}
		clitest.MatchLines(t, status,
			`ClusterId:              `+regexp.QuoteMeta(n.Server.ClusterID()),
			`LeaderId:               1`,
			`LeaderEpoch:            \d+`,
			`HighWatermark:          \d+`,
			`MaxFollowerLag:         0`,
			`MaxFollowerLagTimeMs:   0`,
			regexp.QuoteMeta(`CurrentVoters:          [{"id": 1}]`),
			regexp.QuoteMeta(`CurrentObservers:       []`),
		)
		clitest.MatchLines(t, repl,
			regexp.QuoteMeta("NodeId\tDirectoryId           \tLogEndOffset\tLag\tLastFetchTimestamp\tLastCaughtUpTimestamp\tStatus\t"),
			`1     \tAAAAAAAAAAAAAAAAAAAAAA\t\d+ *\t0  \t`+c.times+`\tLeader\t`)
	}
}

func TestMetadataQuorumUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"describe", "--status"}, "one of --bootstrap-server or --bootstrap-controller is required"},
		{[]string{"--bootstrap-server", "a:1", "--bootstrap-controller", "b:2", "describe", "--status"}, "--bootstrap-server and --bootstrap-controller cannot be used together"},
		{[]string{"--bootstrap-server", "a:1", "describe"}, "One of --status or --replication must be specified with describe sub-command"},
		{[]string{"--bootstrap-server", "a:1", "describe", "--status", "--replication"}, "Only one of --status or --replication should be specified with describe sub-command"},
		{[]string{"--bootstrap-server", "a:1", "describe", "--status", "--human-readable"}, "The option --human-readable is only supported along with --replication"},
		{[]string{"--bootstrap-server", "a:1", "describe", "--status", "extra"}, `unknown command "extra"`},
	} {
		_, _, err := weir.Execute(t, append([]string{"metadata-quorum"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}

func TestMetadataQuorumHelp(t *testing.T) {
	out, _, err := weir.Execute(t, "metadata-quorum", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kafka-metadata-quorum.sh", "--bootstrap-server", "--bootstrap-controller",
		"MaxFollowerLagTimeMs", "LastCaughtUpTimestamp", "Examples:", "describe --replication --human-readable"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help does not mention %q:\n%s", want, out)
		}
	}
	out, _, err = weir.Execute(t, "metadata-quorum", "describe", "--help")
	if err != nil || !strings.Contains(out, "--status") || !strings.Contains(out, "--human-readable") || !strings.Contains(out, "Examples:") {
		t.Errorf("describe --help: %v\n%s", err, out)
	}
}

// threeVoters is a v2 answer from leader 2 of three voters with a broker
// observing: voter 3 lags by 40 offsets and caught up 1500 ms before the
// leader; the observer was never heard from.
func threeVoters() *kmsg.DescribeQuorumResponse {
	rs := func(id int32, dir byte, leo, fetch, caught int64) kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
		r := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		r.ReplicaID, r.LogEndOffset, r.LastFetchTimestamp, r.LastCaughtUpTimestamp = id, leo, fetch, caught
		if dir != 0 {
			r.ReplicaDirectoryID = [16]byte{15: dir}
		}
		return r
	}
	p := kmsg.NewDescribeQuorumResponseTopicPartition()
	p.LeaderID, p.LeaderEpoch, p.HighWatermark = 2, 12, 1234
	p.CurrentVoters = []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{
		rs(1, 1, 1240, 1_700_000_000_900, 1_700_000_000_900),
		rs(2, 2, 1240, 1_700_000_001_000, 1_700_000_001_000),
		rs(3, 0, 1200, 1_700_000_000_950, 1_699_999_999_500),
	}
	p.Observers = []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{rs(10, 0, -1, -1, -1)}
	t := kmsg.NewDescribeQuorumResponseTopic()
	t.Topic = "__cluster_metadata"
	t.Partitions = append(t.Partitions, p)
	resp := kmsg.NewPtrDescribeQuorumResponse()
	resp.SetVersion(2)
	resp.Topics = append(resp.Topics, t)
	node := func(id int32, ls ...kmsg.DescribeQuorumResponseNodeListener) kmsg.DescribeQuorumResponseNode {
		n := kmsg.NewDescribeQuorumResponseNode()
		n.NodeID, n.Listeners = id, ls
		return n
	}
	l := func(name, host string, port uint16) kmsg.DescribeQuorumResponseNodeListener {
		return kmsg.DescribeQuorumResponseNodeListener{Name: name, Host: host, Port: port}
	}
	resp.Nodes = []kmsg.DescribeQuorumResponseNode{
		node(1, l("CONTROLLER", "c1", 9093), l("SSL", "c1", 9094)),
		node(2, l("CONTROLLER", "c2", 9093)),
		node(3, l("CONTROLLER", "::1", 9093)),
	}
	return resp
}

func TestMetadataQuorumFormats(t *testing.T) {
	q, err := readQuorum(threeVoters())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := writeQuorumStatus(&b, "MkU3OEVBNTcwNTJENDM2Qg", q); err != nil {
		t.Fatal(err)
	}
	want := `ClusterId:              MkU3OEVBNTcwNTJENDM2Qg
LeaderId:               2
LeaderEpoch:            12
HighWatermark:          1234
MaxFollowerLag:         40
MaxFollowerLagTimeMs:   1500
CurrentVoters:          [{"id": 1, "directoryId": "AAAAAAAAAAAAAAAAAAAAAQ", "endpoints": ["CONTROLLER://c1:9093", "SSL://c1:9094"]}, {"id": 2, "directoryId": "AAAAAAAAAAAAAAAAAAAAAg", "endpoints": ["CONTROLLER://c2:9093"]}, {"id": 3, "endpoints": ["CONTROLLER://[::1]:9093"]}]
CurrentObservers:       [{"id": 10}]
`
	if b.String() != want {
		t.Errorf("status:\n%s\nwant:\n%s", b.String(), want)
	}

	b.Reset()
	if err := writeQuorumReplication(&b, q, false, time.UnixMilli(1_700_000_002_000)); err != nil {
		t.Fatal(err)
	}
	// The observer's lag (Kafka subtracts its unknown -1) widens Lag, its
	// status Status.
	want = "NodeId\tDirectoryId           \tLogEndOffset\tLag \tLastFetchTimestamp\tLastCaughtUpTimestamp\tStatus  \t\n" +
		"2     \tAAAAAAAAAAAAAAAAAAAAAg\t1240        \t0   \t1700000001000     \t1700000001000        \tLeader  \t\n" +
		"1     \tAAAAAAAAAAAAAAAAAAAAAQ\t1240        \t0   \t1700000000900     \t1700000000900        \tFollower\t\n" +
		"3     \tAAAAAAAAAAAAAAAAAAAAAA\t1200        \t40  \t1700000000950     \t1699999999500        \tFollower\t\n" +
		"10    \tAAAAAAAAAAAAAAAAAAAAAA\t-1          \t1241\t-1                \t-1                   \tObserver\t\n"
	if b.String() != want {
		t.Errorf("replication:\n%q\nwant:\n%q", b.String(), want)
	}

	b.Reset()
	if err := writeQuorumReplication(&b, q, true, time.UnixMilli(1_700_000_002_000)); err != nil {
		t.Fatal(err)
	}
	want = "NodeId\tDirectoryId           \tLogEndOffset\tLag \tLastFetchTimestamp\tLastCaughtUpTimestamp\tStatus  \t\n" +
		"2     \tAAAAAAAAAAAAAAAAAAAAAg\t1240        \t0   \t1000 ms ago       \t1000 ms ago          \tLeader  \t\n" +
		"1     \tAAAAAAAAAAAAAAAAAAAAAQ\t1240        \t0   \t1100 ms ago       \t1100 ms ago          \tFollower\t\n" +
		"3     \tAAAAAAAAAAAAAAAAAAAAAA\t1200        \t40  \t1050 ms ago       \t2500 ms ago          \tFollower\t\n" +
		"10    \tAAAAAAAAAAAAAAAAAAAAAA\t-1          \t1241\t-1                \t-1                   \tObserver\t\n"
	if b.String() != want {
		t.Errorf("human-readable replication:\n%q\nwant:\n%q", b.String(), want)
	}

	// A time after now is clock drift, an error as in Kafka.
	err = writeQuorumReplication(&b, q, true, time.UnixMilli(1_700_000_000_000))
	if err == nil || !strings.Contains(err.Error(), "possible drift in system clock") ||
		!strings.Contains(err.Error(), "Current timestamp is 1700000000000, last fetch timestamp is 1700000001000") {
		t.Errorf("clock drift: %v", err)
	}
}

// MaxFollowerLagTimeMs is -1 when the furthest-behind voter's catch-up
// time is unknown, and the furthest-behind is the first of equals.
func TestMetadataQuorumLagTime(t *testing.T) {
	resp := threeVoters()
	p := &resp.Topics[0].Partitions[0]
	p.CurrentVoters[2].LastCaughtUpTimestamp = -1
	q, err := readQuorum(resp)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	writeQuorumStatus(&b, "id", q)
	if !strings.Contains(b.String(), "\nMaxFollowerLag:         40\nMaxFollowerLagTimeMs:   -1\n") {
		t.Errorf("unknown catch-up time:\n%s", b.String())
	}

	// All at the same offset: voter 1 comes first, so its catch-up time
	// counts although it does not lag.
	p.CurrentVoters[2].LogEndOffset = 1240
	q, _ = readQuorum(resp)
	b.Reset()
	writeQuorumStatus(&b, "id", q)
	if !strings.Contains(b.String(), "\nMaxFollowerLag:         0\nMaxFollowerLagTimeMs:   100\n") {
		t.Errorf("no lag:\n%s", b.String())
	}
}

func TestMetadataQuorumAnswerErrors(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(*kmsg.DescribeQuorumResponse)
		want   string
	}{
		{"not the leader", func(r *kmsg.DescribeQuorumResponse) {
			p := &r.Topics[0].Partitions[0]
			*p = kmsg.NewDescribeQuorumResponseTopicPartition()
			p.ErrorCode, p.LeaderID, p.LeaderEpoch = 6, 3, 8
		}, "NOT_LEADER_OR_FOLLOWER: the node asked is not the leader of the quorum; the leader is node 3 (epoch 8)"},
		{"no leader", func(r *kmsg.DescribeQuorumResponse) {
			p := &r.Topics[0].Partitions[0]
			p.ErrorCode, p.LeaderID = 6, -1
		}, "no leader is known"},
		{"top-level error", func(r *kmsg.DescribeQuorumResponse) {
			msg := "go away"
			r.ErrorCode, r.ErrorMessage = 31, &msg
		}, "CLUSTER_AUTHORIZATION_FAILED"},
		{"top-level message", func(r *kmsg.DescribeQuorumResponse) {
			msg := "go away"
			r.ErrorCode, r.ErrorMessage = 31, &msg
		}, ": go away"},
		{"another partition", func(r *kmsg.DescribeQuorumResponse) { r.Topics[0].Partitions[0].Partition = 1 }, "not about __cluster_metadata-0"},
		{"unknown partition", func(r *kmsg.DescribeQuorumResponse) { r.Topics[0].Partitions[0].ErrorCode = 3 }, "UNKNOWN_TOPIC_OR_PARTITION"},
		{"leader not a voter", func(r *kmsg.DescribeQuorumResponse) { r.Topics[0].Partitions[0].LeaderID = 7 }, "the leader, node 7, is not among the voters"},
	} {
		resp := threeVoters()
		c.change(resp)
		if _, err := readQuorum(resp); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// weir's quorum has a static voter set: add-controller and
// remove-controller fail against it with Kafka's message and say why; their
// dry runs and bad input behave as Kafka's tool.
func TestMetadataQuorumAddRemoveController(t *testing.T) {
	n := quorumNode(t)
	metaDir := filepath.Join(n.Dir, "metadata")
	mp, _, err := server.ReadMetaProperties(metaDir)
	if err != nil || mp.DirectoryID == "" {
		t.Fatalf("meta.properties of %s: %+v, %v", metaDir, mp, err)
	}
	props := filepath.Join(t.TempDir(), "controller-4.properties")
	write := func(content string) {
		if err := os.WriteFile(props, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("node.id=4\nprocess.roles=controller\nmetadata.log.dir=" + metaDir + "\ncontroller.listener.names=CONTROLLER\nlisteners=CONTROLLER://:29094\nadvertised.listeners=CONTROLLER://c4:29094\n")
	tr := clitest.Transcript{Weir: weir}
	tr.Sub(mp.DirectoryID, "<directory id>")
	tr.Sub(props, "<props>")
	tr.Sub(n.Dir, "<dir>")
	q := func(args ...string) clitest.Result {
		return tr.Run(t, append([]string{"metadata-quorum", "--bootstrap-server", n.Addr}, args...)...)
	}
	q("--command-config", props, "add-controller", "--dry-run")
	q("--command-config", props, "add-controller")
	q("remove-controller", "--controller-id", "1", "--controller-directory-id", mp.DirectoryID, "--dry-run")
	q("remove-controller", "-i", "1", "-d", mp.DirectoryID)

	q("add-controller")
	q("remove-controller", "--controller-id", "1")
	q("remove-controller", "--controller-id", "-1", "--controller-directory-id", mp.DirectoryID)
	q("remove-controller", "--controller-id", "1", "--controller-directory-id", "nope")
	write("process.roles=controller\n")
	q("--command-config", props, "add-controller")
	write("node.id=4\nprocess.roles=broker\n")
	q("--command-config", props, "add-controller")
	write("node.id=4\nprocess.roles=controller\nmetadata.log.dir=" + metaDir + "\ncontroller.listener.names=CONTROLLER\n")
	q("--command-config", props, "add-controller")
	clitest.CheckGolden(t, "metadata_quorum_voters.txt", tr.String())
}

// weir is the command line these tests run.
var weir = clitest.Weir{NewCommand}
