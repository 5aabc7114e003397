package cli

import (
	"regexp"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"weir/internal/clustertest"
)

var epochRE = regexp.MustCompile(`Epoch: \d+`)

// The cluster and features tools against a three-node weir cluster,
// compared with testdata/cluster.golden.
func TestClusterAndFeaturesCommands(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	bs := c.Node(0).Addr
	var tr transcript
	tr.sub(c.ClusterID(), "<cluster id>")
	tr.sub(bs, "<bootstrap>")
	tr.sub(c.Node(1).ControllerAddr, "<controller>")
	cluster := func(args ...string) toolRun {
		t.Helper()
		return tr.run(t, append([]string{"cluster"}, args...)...)
	}
	features := func(args ...string) toolRun {
		t.Helper()
		r := tr.run(t, append([]string{"features", "--bootstrap-server", bs}, args...)...)
		settled(t, c)
		return r
	}
	cluster("cluster-id", "--bootstrap-server", bs)
	cluster("cluster-id", "-b", bs)
	cluster("unregister", "--bootstrap-server", bs, "--id", "3")
	cluster("unregister", "--bootstrap-server", bs)
	cluster("cluster-id")

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
	tr.run(t, "features", "--bootstrap-controller", c.Node(1).ControllerAddr, "describe")
	tr.run(t, "features", "describe")
	checkGolden(t, "cluster.golden", epochRE.ReplaceAllString(tr.String(), "Epoch: <epoch>"))
}

// The same tools against kfake.
func TestClusterAndFeaturesCommandsKfake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID("kfake-cluster"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bs := strings.Join(c.ListenAddrs(), ",")
	var tr transcript
	tr.sub(bs, "<bootstrap>")
	tr.run(t, "cluster", "cluster-id", "--bootstrap-server", bs)
	tr.run(t, "cluster", "unregister", "--bootstrap-server", bs, "--id", "0")
	tr.run(t, "features", "--bootstrap-server", bs, "describe")
	checkGolden(t, "cluster_kfake.golden", epochRE.ReplaceAllString(tr.String(), "Epoch: <epoch>"))
}
