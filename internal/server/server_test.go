package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/servertest"
)

// A topic, its records and its dynamic config survive a clean restart.
func TestRestartKeepsTopicsRecordsAndConfigs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n := servertest.Start(t, servertest.Options{})
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr), kgo.DefaultProduceTopic("orders"))
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"retention.ms": kadm.StringPtr("123456")}, "orders"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		if err := cl.ProduceSync(ctx, kgo.StringRecord("v")).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()

	n.Restart()
	cl, err = kgo.NewClient(kgo.SeedBrokers(n.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm = kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total != 50 {
		t.Fatalf("end offsets sum to %d after restart, want 50", total)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("orders", nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range rc.Configs {
		if c.Key == "retention.ms" {
			found = true
			if c.MaybeValue() != "123456" || c.Source.String() != "DYNAMIC_TOPIC_CONFIG" {
				t.Fatalf("retention.ms after restart = %q from %s", c.MaybeValue(), c.Source)
			}
		}
	}
	if !found {
		t.Fatal("retention.ms not described")
	}
}
