package kafka_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/clustertest"
	"weir/internal/servertest"
	"weir/internal/testport"
	"weir/internal/testwait"
)

// DescribeCluster for controller endpoints (an admin client bootstrapped
// with --bootstrap-controller): a controller listener lists the voters
// with the quorum leader as the controller id; a broker listener refuses
// the endpoint type, as Kafka's do.
func TestDescribeClusterControllers(t *testing.T) {
	ports, err := testport.Free(1)
	if err != nil {
		t.Fatal(err)
	}
	ctrl := fmt.Sprintf("127.0.0.1:%d", ports[0])
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{
		"listeners":                "PLAINTEXT://127.0.0.1:0,CONTROLLER://" + ctrl,
		"controller.quorum.voters": "1@" + ctrl,
	}})
	ctx := cliCtx(t)
	req := kmsg.NewPtrDescribeClusterRequest()
	req.Version, req.EndpointType = 1, 2
	resp, err := cliFranz(t, ctrl).SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	dc := resp.(*kmsg.DescribeClusterResponse)
	if dc.ErrorCode != 0 || dc.EndpointType != 2 || dc.ControllerID != 1 || len(dc.Brokers) != 1 ||
		fmt.Sprintf("%s:%d", dc.Brokers[0].Host, dc.Brokers[0].Port) != ctrl || dc.Brokers[0].NodeID != 1 {
		t.Fatalf("controllers from the controller listener: %+v", dc)
	}
	resp, err = cliFranz(t, n.Addr).SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if dc := resp.(*kmsg.DescribeClusterResponse); dc.ErrorCode != kerr.UnsupportedEndpointType.Code {
		t.Fatalf("controllers from a broker listener: %v, want UNSUPPORTED_ENDPOINT_TYPE", kerr.ErrorForCode(dc.ErrorCode))
	}
}

// DescribeCluster v2 (KIP-1073): IncludeFencedBrokers lists a fenced
// broker too, marked IsFenced; without it, and before v2, only the
// unfenced brokers are listed.
func TestDescribeClusterIncludesFencedBrokers(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	ctx := cliCtx(t)
	describe := func(version int16, withFenced bool) *kmsg.DescribeClusterResponse {
		t.Helper()
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version, req.EndpointType, req.IncludeFencedBrokers = version, 1, withFenced
		resp, err := cliFranz(t, c.Node(0).Addr).SeedBrokers()[0].Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		dc := resp.(*kmsg.DescribeClusterResponse)
		if dc.ErrorCode != 0 {
			t.Fatalf("v%d: %v", version, kerr.ErrorForCode(dc.ErrorCode))
		}
		return dc
	}
	type node struct {
		id     int32
		fenced bool
	}
	nodes := func(dc *kmsg.DescribeClusterResponse) []node {
		var out []node
		for _, b := range dc.Brokers {
			out = append(out, node{b.NodeID, b.IsFenced})
		}
		return out
	}
	c.Kill(2)
	want := []node{{1, false}, {2, false}, {3, true}}
	testwait.Until(t, 60*time.Second, "node 3 listed as fenced", func() bool {
		return slices.Equal(nodes(describe(2, true)), want)
	})
	for _, v := range []int16{0, 1, 2} {
		if got := nodes(describe(v, false)); !slices.Equal(got, want[:2]) {
			t.Errorf("v%d without fenced brokers: %+v, want %+v", v, got, want[:2])
		}
	}
}
