package main_test

// Process-level tests of a three-node cluster: real weir processes,
// formatted and started as operators do, then SIGKILLed, SIGSTOPped and
// misconfigured.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/testwait"
)

// clusterNode is one combined broker+controller of a test cluster.
type clusterNode struct {
	id    int32
	props string
	addr  string
	p     *proc
}

// formatCluster writes server.properties for n combined nodes and formats
// their storage; clusterIDs[i] is node i+1's cluster id (one id: all).
func formatCluster(t *testing.T, n int, clusterIDs ...string) []*clusterNode {
	t.Helper()
	return formatClusterConf(t, n, nil, clusterIDs...)
}

// formatClusterConf is formatCluster with extra server.properties keys,
// which replace the defaults of the same name (the listeners, quorum and
// directories are the harness's).
func formatClusterConf(t *testing.T, n int, conf map[string]string, clusterIDs ...string) []*clusterNode {
	t.Helper()
	if len(clusterIDs) == 0 {
		id, _, err := runWeir(t, "storage", "random-uuid")
		if err != nil {
			t.Fatal(err)
		}
		clusterIDs = []string{strings.TrimSpace(id)}
	}
	ports, cports := make([]int, n), make([]int, n)
	var voters []string
	for i := range n {
		ports[i], cports[i] = freePort(t), freePort(t)
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, cports[i]))
	}
	root := t.TempDir()
	nodes := make([]*clusterNode, n)
	for i := range n {
		dir := filepath.Join(root, fmt.Sprint(i+1))
		os.MkdirAll(dir, 0o755)
		props := filepath.Join(dir, "server.properties")
		text := strings.Join([]string{
			"process.roles=broker,controller",
			fmt.Sprintf("node.id=%d", i+1),
			fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", ports[i], cports[i]),
			"controller.quorum.voters=" + strings.Join(voters, ","),
			"log.dirs=" + filepath.Join(dir, "logs"),
			"metadata.log.dir=" + filepath.Join(dir, "meta"),
		}, "\n") + "\n"
		settings := map[string]string{"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "500"}
		maps.Copy(settings, conf)
		for _, k := range slices.Sorted(maps.Keys(settings)) {
			text += k + "=" + settings[k] + "\n"
		}
		if err := os.WriteFile(props, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		cid := clusterIDs[min(i, len(clusterIDs)-1)]
		if _, stderr, err := runWeir(t, "storage", "format", "-t", cid, "-c", props); err != nil {
			t.Fatalf("format node %d: %v\n%s", i+1, err, stderr)
		}
		nodes[i] = &clusterNode{id: int32(i + 1), props: props, addr: fmt.Sprintf("127.0.0.1:%d", ports[i])}
	}
	return nodes
}

func (n *clusterNode) start(t *testing.T) {
	t.Helper()
	n.p = launch(t, n.addr, "server", "-c", n.props)
}

// client is a kgo client that talks to this node only.
func (n *clusterNode) client(t *testing.T) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// ask sends req to this node itself, not to whichever broker kgo picks.
func (n *clusterNode) ask(ctx context.Context, t *testing.T, req kmsg.Request) (kmsg.Response, error) {
	t.Helper()
	return n.client(t).SeedBrokers()[0].Request(ctx, req)
}

// quorumLeader is the active controller as this node reports it.
func (n *clusterNode) quorumLeader(t *testing.T) (int32, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	resp, err := n.ask(ctx, t, req)
	if err != nil {
		return -1, err
	}
	r := resp.(*kmsg.DescribeQuorumResponse)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return -1, err
	}
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return -1, errors.New("malformed DescribeQuorum answer")
	}
	p := r.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return -1, err
	}
	return p.LeaderID, nil
}

// metadata is this node's view: its live brokers and the leader of every
// partition of topic.
func (n *clusterNode) metadata(t *testing.T, topic string) (brokers []int32, leaders []int32, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	if topic != "" {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := n.ask(ctx, t, req)
	if err != nil {
		return nil, nil, err
	}
	r := resp.(*kmsg.MetadataResponse)
	for _, b := range r.Brokers {
		brokers = append(brokers, b.NodeID)
	}
	slices.Sort(brokers)
	for _, tp := range r.Topics {
		if err := kerr.ErrorForCode(tp.ErrorCode); err != nil {
			return brokers, nil, err
		}
		leaders = make([]int32, len(tp.Partitions))
		for _, p := range tp.Partitions {
			leaders[p.Partition] = p.Leader
		}
	}
	return brokers, leaders, nil
}

func createTopic(t *testing.T, n *clusterNode, topic string, partitions int32, rf int16) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(n.client(t)).CreateTopic(ctx, partitions, rf, nil, topic)
	if err != nil {
		return err
	}
	return resp.Err
}

func startedCluster(t *testing.T) []*clusterNode {
	t.Helper()
	nodes := formatCluster(t, 3)
	for _, n := range nodes {
		n.start(t)
	}
	for _, n := range nodes {
		testwait.For(t, 20*time.Second, "all three brokers registered", func() error {
			brokers, _, _ := n.metadata(t, "")
			if len(brokers) != 3 {
				return fmt.Errorf("node %d sees brokers %v", n.id, brokers)
			}
			return nil
		})
	}
	return nodes
}

func others(nodes []*clusterNode, id int32) []*clusterNode {
	var out []*clusterNode
	for _, n := range nodes {
		if n.id != id {
			out = append(out, n)
		}
	}
	return out
}

// leadersAre checks that every partition of topic has a leader in want.
func leadersAre(t *testing.T, n *clusterNode, topic string, want func(int32) bool) error {
	brokers, leaders, err := n.metadata(t, topic)
	if err != nil {
		return err
	}
	for p, l := range leaders {
		if !want(l) {
			return fmt.Errorf("brokers %v, partition %d led by %d", brokers, p, l)
		}
	}
	return nil
}

// SIGKILL of the active controller: the survivors elect another within
// the election timeout, fence the dead broker after its session times
// out, keep serving metadata writes, and the node rejoins on restart with
// every acknowledged record.
func TestClusterSurvivesSIGKILLOfActiveController(t *testing.T) {
	nodes := startedCluster(t)
	if err := createTopic(t, nodes[0], "a", 3, 1); err != nil {
		t.Fatal(err)
	}
	produce(t, nodes[0].addr, "a", 300)

	leader, err := nodes[0].quorumLeader(t)
	if err != nil {
		t.Fatal(err)
	}
	dead := nodes[leader-1]
	dead.p.cmd.Process.Kill()
	dead.p.cmd.Wait()
	survivors := others(nodes, leader)

	for _, n := range survivors {
		testwait.For(t, 15*time.Second, "a new active controller", func() error {
			l, err := n.quorumLeader(t)
			if err == nil && (l < 0 || l == leader) {
				err = fmt.Errorf("leader %d", l)
			}
			return err
		})
	}
	testwait.For(t, 15*time.Second, "the dead broker fenced and its partitions offline", func() error {
		brokers, _, _ := survivors[0].metadata(t, "")
		if slices.Contains(brokers, leader) {
			return fmt.Errorf("brokers %v", brokers)
		}
		return leadersAre(t, survivors[0], "a", func(l int32) bool { return l != leader })
	})
	if err := createTopic(t, survivors[1], "b", 4, 1); err != nil {
		t.Fatalf("creating a topic after failover: %v", err)
	}
	produce(t, survivors[0].addr, "b", 100)
	if got := endOffset(t, survivors[1].addr, "b"); got != 100 {
		t.Fatalf("end offset of b: %d, want 100", got)
	}

	dead.start(t)
	testwait.For(t, 20*time.Second, "the restarted node leads its partitions again", func() error {
		return leadersAre(t, survivors[0], "a", func(l int32) bool { return l > 0 })
	})
	if got := endOffset(t, dead.addr, "a"); got != 300 {
		t.Fatalf("end offset of a after restart: %d, want 300", got)
	}
	if got := endOffset(t, dead.addr, "b"); got != 100 {
		t.Fatalf("the restarted node's view of b: %d, want 100", got)
	}
}

// SIGSTOP of the active controller: while it is paused the others elect a
// new one and fence it; after SIGCONT it steps down, catches up,
// re-registers and leads its partitions again.
func TestClusterRecoversFromSIGSTOPOfActiveController(t *testing.T) {
	nodes := startedCluster(t)
	if err := createTopic(t, nodes[0], "s", 3, 1); err != nil {
		t.Fatal(err)
	}
	leader, err := nodes[0].quorumLeader(t)
	if err != nil {
		t.Fatal(err)
	}
	paused := nodes[leader-1]
	survivors := others(nodes, leader)
	if err := paused.p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 20*time.Second, "the paused controller replaced and fenced", func() error {
		l, err := survivors[0].quorumLeader(t)
		if err != nil || l < 0 || l == leader {
			return fmt.Errorf("leader %d: %v", l, err)
		}
		brokers, _, _ := survivors[1].metadata(t, "")
		if slices.Contains(brokers, leader) {
			return fmt.Errorf("brokers %v", brokers)
		}
		return nil
	})
	if err := createTopic(t, survivors[0], "during-pause", 2, 1); err != nil {
		t.Fatalf("creating a topic while the old controller is paused: %v", err)
	}

	if err := paused.p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 20*time.Second, "the resumed node back in the cluster", func() error {
		for _, n := range nodes {
			brokers, _, _ := n.metadata(t, "")
			if len(brokers) != 3 {
				return fmt.Errorf("node %d sees brokers %v", n.id, brokers)
			}
			if err := leadersAre(t, n, "s", func(l int32) bool { return l > 0 }); err != nil {
				return fmt.Errorf("node %d: %w", n.id, err)
			}
			if _, leaders, err := n.metadata(t, "during-pause"); err != nil || len(leaders) != 2 {
				return fmt.Errorf("node %d has not learned of during-pause: %v", n.id, err)
			}
		}
		return nil
	})
	produce(t, paused.addr, "s", 30)
	if got := endOffset(t, survivors[0].addr, "s"); got != 30 {
		t.Fatalf("end offset of s: %d, want 30", got)
	}
}

// A voter formatted for another cluster never joins: the others refuse
// its Raft messages, run the quorum without it and never count it as a
// broker.
func TestVoterFromAnotherClusterIsRefused(t *testing.T) {
	a, _, _ := runWeir(t, "storage", "random-uuid")
	b, _, _ := runWeir(t, "storage", "random-uuid")
	nodes := formatCluster(t, 3, strings.TrimSpace(a), strings.TrimSpace(a), strings.TrimSpace(b))
	for _, n := range nodes {
		n.start(t)
	}
	testwait.For(t, 40*time.Second, "nodes 1 and 2 form the quorum", func() error {
		// An earlier try may have created it with its answer lost (a
		// timeout while the quorum formed).
		if err := createTopic(t, nodes[0], "two", 2, 2); !errors.Is(err, kerr.TopicAlreadyExists) {
			return err
		}
		return nil
	})
	testwait.For(t, 10*time.Second, "a warning naming the other cluster", func() error {
		for _, n := range nodes[:2] {
			if s := n.p.stderr.String() + n.p.stdout.String(); strings.Contains(s, "refused raft frame") && strings.Contains(s, strings.TrimSpace(b)) {
				return nil
			}
		}
		return errors.New("no warning yet")
	})
	brokers, _, err := nodes[0].metadata(t, "")
	if err != nil || !slices.Equal(brokers, []int32{1, 2}) {
		t.Fatalf("brokers %v (%v), want [1 2]", brokers, err)
	}
	if err := createTopic(t, nodes[1], "three", 1, 3); !errors.Is(err, kerr.InvalidReplicationFactor) {
		t.Fatalf("a topic with three replicas: %v, want INVALID_REPLICATION_FACTOR", err)
	}
}
