package kafka_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/servertest"
	"weir/internal/testport"
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
