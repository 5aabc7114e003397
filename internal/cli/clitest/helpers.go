package clitest

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/clustertest"
	"weir/internal/testwait"
)

// Helpers the tests of several commands use: a settled cluster, keyed and
// transactional records, matching output lines.

// Settled waits until every live node has applied the same metadata, so
// that a command's next request sees an earlier one's change whichever
// broker it goes to (each answers once its own metadata has the change).
func Settled(t *testing.T, c *clustertest.Cluster) {
	t.Helper()
	testwait.For(t, 30*time.Second, "metadata applied on every node", func() error {
		var offsets []int64
		for _, i := range c.Live() {
			offsets = append(offsets, c.Node(i).Server.Image().Offset)
		}
		for _, o := range offsets {
			if o != offsets[0] {
				return fmt.Errorf("metadata offsets %v", offsets)
			}
		}
		return nil
	})
}

// ProduceKeyed writes records with keys to a topic.
func ProduceKeyed(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		r := &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte("v")}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// TxnTestClient is a plain client of the node, closed with the test.
func TxnTestClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// MatchLines checks out line by line against patterns (anchored regular
// expressions) and returns each line's submatches.
func MatchLines(t *testing.T, out string, patterns ...string) [][]string {
	t.Helper()
	if !strings.HasSuffix(out, "\n") {
		t.Fatalf("output does not end with a newline:\n%q", out)
	}
	ls := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(ls) != len(patterns) {
		t.Fatalf("%d lines, want %d:\n%s", len(ls), len(patterns), out)
	}
	var subs [][]string
	for i, p := range patterns {
		m := regexp.MustCompile("^" + p + "$").FindStringSubmatch(ls[i])
		if m == nil {
			t.Fatalf("line %d = %q, want %q\nfull output:\n%s", i+1, ls[i], p, out)
		}
		subs = append(subs, m)
	}
	return subs
}
