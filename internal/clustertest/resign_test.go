package clustertest

import (
	"fmt"
	"testing"
	"time"

	"weir/internal/testwait"
)

// The active controller stopped cleanly hands the quorum over before it
// goes: another node is active well within one election timeout (here
// 3 s, so a plain election would take longer than the test waits).
func TestStoppedActiveControllerHandsOver(t *testing.T) {
	c := New(t, Options{Nodes: 3, Overrides: map[string]string{"controller.quorum.election.timeout.ms": "3000"}})
	old := c.Leader()
	c.Stop(old)
	stopped := time.Now()
	testwait.For(t, 2*time.Second, "another active controller", func() error {
		for _, i := range c.Live() {
			if c.Node(i).Server.QuorumStatus().Active {
				return nil
			}
		}
		return fmt.Errorf("none of %v is active", c.Live())
	})
	t.Logf("a new active controller %v after the old one stopped", time.Since(stopped).Round(time.Millisecond))
}
