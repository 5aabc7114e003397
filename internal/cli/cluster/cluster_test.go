package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/cli/clitest"
	"weir/internal/clustertest"
	"weir/internal/testwait"
)

var epochRE = regexp.MustCompile(`Epoch: \d+`)

// The cluster and features tools against a three-node weir cluster,
// compared with testdata/cluster.golden.
func TestClusterAndFeaturesCommands(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	bs := c.Node(0).Addr
	tr := clitest.Transcript{Weir: weir}
	tr.Sub(c.ClusterID(), "<cluster id>")
	tr.Sub(bs, "<bootstrap>")
	tr.Sub(c.Node(1).ControllerAddr, "<controller>")
	cluster := func(args ...string) clitest.Result {
		t.Helper()
		return tr.Run(t, append([]string{"cluster"}, args...)...)
	}
	features := func(args ...string) clitest.Result {
		t.Helper()
		r := tr.Run(t, append([]string{"features", "--bootstrap-server", bs}, args...)...)
		clitest.Settled(t, c)
		return r
	}
	cluster("cluster-id", "--bootstrap-server", bs)
	cluster("cluster-id", "-b", bs)
	cluster("unregister", "--bootstrap-server", bs, "--id", "9")
	cluster("unregister", "--bootstrap-server", bs)
	cluster("cluster-id")
	ctl := c.Node(1).ControllerAddr
	cluster("cluster-id", "--bootstrap-server", bs, "--bootstrap-controller", ctl)
	cluster("cluster-id", "--bootstrap-controller", ctl)
	cluster("unregister", "-C", ctl, "--id", "9")
	props := writeProps(t, "client.id=cluster-tool\n")
	tr.Sub(props, "<props>")
	cluster("cluster-id", "-b", bs, "--config", props)
	cluster("cluster-id", "-b", bs, "--config", props, "--command-config", props)
	subPorts(&tr, c)
	cluster("list-endpoints", "--bootstrap-server", bs)
	cluster("list-endpoints", "-b", bs, "--include-fenced-brokers")
	cluster("list-endpoints", "--bootstrap-controller", ctl)
	cluster("list-endpoints", "--bootstrap-controller", ctl, "--include-fenced-brokers")
	cluster("list-endpoints")

	features("describe")
	features("upgrade", "--feature", "eligible.leader.replicas.version=1", "--dry-run")
	features("upgrade", "--feature", "eligible.leader.replicas.version=1")
	features("describe")
	features("upgrade", "--feature", "eligible.leader.replicas.version=0")
	features("downgrade", "--feature", "eligible.leader.replicas.version=0")
	features("disable", "--feature", "group.version", "--dry-run")
	features("upgrade", "--metadata", "4.0", "--feature", "group.version=1")
	features("upgrade", "--metadata", "3.7-IV4")
	features("upgrade", "--metadata", "9.9")
	features("upgrade", "--feature", "no.such.feature=1")
	features("upgrade", "--feature", "group.version")
	features("upgrade", "--feature", "group.version=x")
	features("upgrade", "--feature", "group.version=1", "--feature", "group.version=0")
	features("upgrade")
	tr.Run(t, "features", "--bootstrap-controller", c.Node(1).ControllerAddr, "describe")
	tr.Run(t, "features", "describe")
	clitest.CheckGolden(t, "cluster.golden", epochRE.ReplaceAllString(tr.String(), "Epoch: <epoch>"))
}

// list-endpoints against a one-node weir cluster, compared with
// testdata/cluster_one_node.golden.
func TestClusterListEndpointsOneNode(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 1})
	tr := clitest.Transcript{Weir: weir}
	tr.Sub(c.Node(0).Addr, "<bootstrap>")
	tr.Sub(c.Node(0).ControllerAddr, "<controller>")
	subPorts(&tr, c)
	tr.Run(t, "cluster", "list-endpoints", "--bootstrap-server", c.Node(0).Addr)
	tr.Run(t, "cluster", "list-endpoints", "-C", c.Node(0).ControllerAddr, "-b", c.Node(0).Addr)
	clitest.CheckGolden(t, "cluster_one_node.golden", tr.String())
}

// subPorts makes the transcript print each node's listener ports (client
// and controller) as placeholders, after the addresses' own placeholders.
func subPorts(tr *clitest.Transcript, c *clustertest.Cluster) {
	for i := range c.Size() {
		_, port, _ := net.SplitHostPort(c.Node(i).Addr)
		tr.Sub(" "+port+" ", fmt.Sprintf(" <port %d> ", i))
		if _, port, err := net.SplitHostPort(c.Node(i).ControllerAddr); err == nil {
			tr.Sub(" "+port+" ", fmt.Sprintf(" <controller port %d> ", i))
		}
	}
}

// writeProps writes a client properties file and returns its path.
func writeProps(t *testing.T, text string) string {
	path := filepath.Join(t.TempDir(), "client.properties")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The same tools against kfake.
func TestClusterAndFeaturesCommandsKfake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID("kfake-cluster"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bs := strings.Join(c.ListenAddrs(), ",")
	tr := clitest.Transcript{Weir: weir}
	tr.Sub(bs, "<bootstrap>")
	tr.Run(t, "cluster", "cluster-id", "--bootstrap-server", bs)
	tr.Run(t, "cluster", "unregister", "--bootstrap-server", bs, "--id", "0")
	tr.Run(t, "features", "--bootstrap-server", bs, "describe")
	clitest.CheckGolden(t, "cluster_kfake.golden", epochRE.ReplaceAllString(tr.String(), "Epoch: <epoch>"))
}

// kafka-cluster.sh unregister of a stopped broker, asked of a broker-only
// node (which forwards it to the active controller): the broker leaves
// DescribeCluster and every ISR, its partitions are led elsewhere, and it
// registers again when it is restarted.
func TestClusterUnregisterStoppedBroker(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 1, Brokers: 2})
	bs := c.Node(1).Addr // node id 2, broker only
	cl := c.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "scale-in", -1, -1
	for i, replicas := range [][]int32{{3, 1}, {3, 2}, {1, 3}} {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(i), replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	req.Topics, req.TimeoutMillis = append(req.Topics, rt), 30000
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatal(err)
	}
	clitest.Settled(t, c)

	c.Stop(2) // node id 3
	r := weir.Run(t, "cluster", "unregister", "--bootstrap-server", bs, "--id", "3")
	if r.Code != 0 || r.Out != "Broker 3 is no longer registered.\n" || r.Err != "" {
		t.Fatalf("unregister: exit %d, stdout %q, stderr %q", r.Code, r.Out, r.Err)
	}
	// The answer waits for the forwarding broker's metadata.
	if ids, err := describeClusterIDs(ctx, cl); err != nil || !slices.Equal(ids, []int32{1, 2}) {
		t.Fatalf("brokers after unregistering 3: %v (%v)", ids, err)
	}
	clitest.Settled(t, c)
	img := c.Node(0).Server.Image()
	if img.Brokers[3] != nil {
		t.Fatal("broker 3 still registered in the image")
	}
	wantLeaders := []int32{1, 2, 1}
	for _, p := range img.Topics.Get("scale-in").SortedPartitions() {
		if p.Leader != wantLeaders[p.ID] || slices.Contains(p.ISR, 3) {
			t.Errorf("partition %d: leader %d ISR %v, want leader %d and broker 3 out of the ISR", p.ID, p.Leader, p.ISR, wantLeaders[p.ID])
		}
	}

	r = weir.Run(t, "cluster", "unregister", "--bootstrap-server", bs, "--id", "3")
	want := "org.apache.kafka.common.errors.BrokerIdNotRegisteredException: The given broker ID was not registered.\n"
	if r.Code != 1 || r.Out != "" || r.Err != want {
		t.Fatalf("unregistering 3 again: exit %d, stdout %q, stderr %q", r.Code, r.Out, r.Err)
	}

	c.Restart(2, true)
	testwait.For(t, time.Minute, "broker 3 registered again", func() error {
		if ids, err := describeClusterIDs(ctx, cl); err != nil || !slices.Equal(ids, []int32{1, 2, 3}) {
			return fmt.Errorf("brokers %v (%v)", ids, err)
		}
		return nil
	})
}

// describeClusterIDs returns the broker ids DescribeCluster lists, sorted.
func describeClusterIDs(ctx context.Context, cl *kgo.Client) ([]int32, error) {
	resp, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	var ids []int32
	for _, b := range resp.Brokers {
		ids = append(ids, b.NodeID)
	}
	slices.Sort(ids)
	return ids, nil
}

// weir is the command line these tests run.
var weir = clitest.Weir{NewCommand, NewFeaturesCommand}
