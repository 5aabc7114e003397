package mirror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/testport"
)

// A replication factor larger than a one-broker cluster stops the flow
// with an error naming the topic, the cluster, its brokers and the MM2
// setting to lower (the flow's own key when that is what set it).
func TestReplicationFactorTooLargeNamesTheSetting(t *testing.T) {
	for _, c := range []struct {
		name string
		// set are the properties changed from mirrorProps' (whose
		// factors are all 1); unset are removed (MM2's defaults apply).
		set   map[string]string
		unset []string
		want  string
	}{
		{
			name:  "defaults",
			unset: []string{"replication.factor", "offset-syncs.topic.replication.factor", "heartbeats.topic.replication.factor", "offset.storage.replication.factor", "checkpoints.topic.replication.factor"},
			want:  "creating mm2-offsets.A.internal on cluster B: INVALID_REPLICATION_FACTOR (replication factor 3, the cluster has 1 broker): set A->B.offset.storage.replication.factor or offset.storage.replication.factor to at most 1",
		},
		{
			name: "offset-syncs",
			set:  map[string]string{"offset-syncs.topic.replication.factor": "2"},
			want: "creating mm2-offset-syncs.B.internal on cluster A: INVALID_REPLICATION_FACTOR (replication factor 2, the cluster has 1 broker): set A->B.offset-syncs.topic.replication.factor or offset-syncs.topic.replication.factor to at most 1",
		},
		{
			name: "offset-syncs-on-target-for-the-flow",
			set:  map[string]string{"offset-syncs.topic.location": "target", "A->B.offset-syncs.topic.replication.factor": "3"},
			want: "creating mm2-offset-syncs.A.internal on cluster B: INVALID_REPLICATION_FACTOR (replication factor 3, the cluster has 1 broker): set A->B.offset-syncs.topic.replication.factor to at most 1",
		},
		{
			name: "remote-topic",
			set:  map[string]string{"replication.factor": "2"},
			want: "creating A.orders on cluster B: INVALID_REPLICATION_FACTOR (replication factor 2, the cluster has 1 broker): set A->B.replication.factor or replication.factor to at most 1",
		},
		{
			name: "heartbeats",
			set:  map[string]string{"heartbeats.topic.replication.factor": "3"},
			want: "creating heartbeats on cluster B: INVALID_REPLICATION_FACTOR (replication factor 3, the cluster has 1 broker): set A->B.heartbeats.topic.replication.factor or heartbeats.topic.replication.factor to at most 1",
		},
		{
			name: "checkpoints",
			set:  map[string]string{"emit.checkpoints.enabled": "true", "checkpoints.topic.replication.factor": "3"},
			want: "creating A.checkpoints.internal on cluster B: INVALID_REPLICATION_FACTOR (replication factor 3, the cluster has 1 broker): set A->B.checkpoints.topic.replication.factor or checkpoints.topic.replication.factor to at most 1",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b := startCluster(t), startCluster(t)
			a.create(t, "orders", 1)
			props := mirrorProps(a, b, "A->B")
			for _, k := range c.unset {
				delete(props, k)
			}
			for k, v := range c.set {
				props[k] = v
			}
			cfg, _, err := Parse(props)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			err = Run(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err == nil || ctx.Err() != nil {
				t.Fatalf("the mirror did not stop on the refused topic: %v", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("the mirror stopped with\n  %v\nwant it to say\n  %s", err, c.want)
			}
			if !errors.Is(err, kerr.InvalidReplicationFactor) {
				t.Errorf("the error does not wrap INVALID_REPLICATION_FACTOR: %v", err)
			}
		})
	}
}

// A cluster that does not answer at the start is waited for, as MM2 waits
// to describe it, for its default.api.timeout.ms; then the flow stops
// naming the cluster, its address and the setting.
func TestUnreachableClusterAtStart(t *testing.T) {
	b := startCluster(t)
	ports, err := testport.Free(1)
	if err != nil {
		t.Fatal(err)
	}
	closed := fmt.Sprintf("127.0.0.1:%d", ports[0])
	props := mirrorProps(b, b, "A->B")
	props["A.bootstrap.servers"] = closed
	props["A.default.api.timeout.ms"] = "700"
	cfg, _, err := Parse(props)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Clusters["B"].ConnectTimeout; got != 60*time.Second {
		t.Errorf("B's connect timeout %v, want Kafka's 60 s", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	err = Run(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	took := time.Since(start)
	want := "cluster A (" + closed + "): Failed to connect to and describe Kafka cluster within 700ms (A.default.api.timeout.ms)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("the mirror ended with %v, want %q", err, want)
	}
	if took < 700*time.Millisecond {
		t.Errorf("gave up after %v, before its 700 ms", took)
	}
	if _, _, err := Parse(map[string]string{"clusters": "A, B", "A.bootstrap.servers": closed, "B.bootstrap.servers": closed, "A->B.enabled": "true", "A.default.api.timeout.ms": "soon"}); err == nil {
		t.Error("A.default.api.timeout.ms=soon accepted")
	}
}
