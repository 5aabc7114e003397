package link

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A request to the source partition's leader that gets no answer (the
// leader's process died) makes the next LeaderEpoch ask the source's
// metadata again instead of trying the same broker forever.
func TestClientSourceForgetsAnUnreachableLeader(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var metadata atomic.Int32
	c.ControlKey(kmsg.Metadata.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		metadata.Add(1)
		return nil, nil, false
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()[0]), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	src := &clientSource{cl: cl, topics: map[string]*sourceTopic{}}
	defer src.Close()
	ctx := context.Background()
	epoch, err := src.LeaderEpoch(ctx, "t", 0, true)
	if err != nil {
		t.Fatal(err)
	}
	asked := metadata.Load()
	if _, err := src.LeaderEpoch(ctx, "t", 0, false); err != nil || metadata.Load() != asked {
		t.Fatalf("a known leader was asked for again (%d Metadata requests, were %d): %v", metadata.Load(), asked, err)
	}
	c.ControlKey(kmsg.Fetch.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		return nil, errors.New("connection dropped"), true
	})
	if _, err := src.Fetch(ctx, "t", 0, epoch, 0, 1<<20); err == nil {
		t.Fatal("a fetch whose connection was dropped succeeded")
	}
	if _, err := src.LeaderEpoch(ctx, "t", 0, false); err != nil || metadata.Load() == asked {
		t.Fatalf("after a fetch without an answer the leader was not looked up again (%d Metadata requests): %v", metadata.Load(), err)
	}
}
