package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"weir/internal/cli/tool"
	"weir/internal/clusterhealth"
	"weir/internal/clustertest"
	"weir/internal/testwait"
)

// weir cluster health on a three-node cluster: healthy, then with a node
// stopped (fenced: down; its partitions under-replicated, and under
// min.insync.replicas where that is 3), the same report as the nodes'
// /v1/cluster/health, and exit code 1 while unhealthy.
func TestClusterHealth(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3, Overrides: map[string]string{"weir.metrics.listener": "http://127.0.0.1:0"}})
	adm := kadm.NewClient(c.Client(t))
	ctx := context.Background()
	for topic, minISR := range map[string]string{"strict": "3", "relaxed": "2"} {
		if _, err := adm.CreateTopic(ctx, 2, 3, map[string]*string{"min.insync.replicas": &minISR}, topic); err != nil {
			t.Fatal(err)
		}
	}
	health := func(args ...string) (clusterhealth.Report, string, error) {
		t.Helper()
		out, stderr, err := weir.Execute(t, append([]string{"cluster", "health", "--bootstrap-server", c.Node(0).Addr}, args...)...)
		var r clusterhealth.Report
		if strings.Contains(strings.Join(args, " "), "json") {
			if jerr := json.Unmarshal([]byte(out), &r); jerr != nil && err == nil {
				err = fmt.Errorf("output %q: %v (stderr %s)", out, jerr, stderr)
			}
		}
		return r, out + stderr, err
	}
	served := func(i int) clusterhealth.Report {
		t.Helper()
		resp, err := http.Get("http://" + c.Node(i).Server.MetricsAddr().String() + "/v1/cluster/health")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var r clusterhealth.Report
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatalf("/v1/cluster/health: %s: %v", body, err)
		}
		return r
	}

	testwait.For(t, 30*time.Second, "a healthy cluster", func() error {
		r, out, err := health("--output", "json")
		if err != nil || !r.Healthy {
			return fmt.Errorf("not healthy: %v\n%s", err, out)
		}
		return nil
	})
	r, _, _ := health("--output", "json")
	if !reflect.DeepEqual(r.AllNodes, []int32{1, 2, 3}) || r.Controller < 1 || len(r.UnhealthyReasons) != 0 {
		t.Errorf("healthy report %+v", r)
	}
	if got := served(1); !reflect.DeepEqual(got, r) {
		t.Errorf("/v1/cluster/health %+v, the tool %+v", got, r)
	}
	if _, out, err := health(); err != nil || !strings.Contains(out, "Healthy:                          true\n") {
		t.Errorf("text: %v\n%s", err, out)
	}

	// Stop a node that is not the active controller.
	down := 2
	if c.Leader() == down {
		down = 1
	}
	c.Stop(down)
	downID := c.Node(down).ID
	live := (down + 1) % 3
	testwait.For(t, 30*time.Second, "the stopped node fenced and its replicas out of the ISRs", func() error {
		r, out, err := health("--output", "json")
		var code tool.ExitCode
		if !errors.As(err, &code) || code != 1 {
			return fmt.Errorf("exit %v\n%s", err, out)
		}
		if !reflect.DeepEqual(r.NodesDown, []int32{downID}) || r.UnderReplicatedCount != 4 || r.UnderMinISRCount != 2 {
			return fmt.Errorf("report %+v", r)
		}
		return nil
	})
	r, _, _ = health("--output", "json")
	want := []string{clusterhealth.NodesDown, clusterhealth.UnderReplicated, clusterhealth.UnderMinISR}
	if r.Healthy || !reflect.DeepEqual(r.UnhealthyReasons, want) {
		t.Errorf("reasons %v, want %v", r.UnhealthyReasons, want)
	}
	if !reflect.DeepEqual(r.UnderMinISRPartitions, []string{"strict-0", "strict-1"}) || r.LeaderlessCount != 0 {
		t.Errorf("report %+v", r)
	}
	if got := served(live); !reflect.DeepEqual(got, r) {
		t.Errorf("/v1/cluster/health %+v, the tool %+v", got, r)
	}
	_, out, _ := health()
	if !strings.Contains(out, "Under-min-ISR partitions (2):     [strict-0 strict-1]\n") {
		t.Errorf("text:\n%s", out)
	}
}
