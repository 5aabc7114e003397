package quota

import (
	"testing"
	"time"

	"weir/internal/metadata"
)

func TestResolvePrecedence(t *testing.T) {
	u, c, d := metadata.Named("alice"), metadata.Named("app"), metadata.DefaultName
	// Each level, from the most specific: with it and every level below
	// set, it wins.
	levels := []struct {
		e    metadata.QuotaEntity
		tags Tags
	}{
		{metadata.QuotaEntity{User: u, ClientID: c}, Tags{"alice", "app"}},
		{metadata.QuotaEntity{User: u, ClientID: d}, Tags{"alice", "app"}},
		{metadata.QuotaEntity{User: u}, Tags{"alice", ""}},
		{metadata.QuotaEntity{User: d, ClientID: c}, Tags{"alice", "app"}},
		{metadata.QuotaEntity{User: d, ClientID: d}, Tags{"alice", "app"}},
		{metadata.QuotaEntity{User: d}, Tags{"alice", ""}},
		{metadata.QuotaEntity{ClientID: c}, Tags{"", "app"}},
		{metadata.QuotaEntity{ClientID: d}, Tags{"", "app"}},
	}
	for i, want := range levels {
		q := map[metadata.QuotaEntity]map[string]float64{}
		for j := i; j < len(levels); j++ {
			q[levels[j].e] = map[string]float64{"producer_byte_rate": float64(100 + j)}
		}
		// Another key at a more specific level does not count.
		if i > 0 {
			q[levels[0].e] = map[string]float64{"consumer_byte_rate": 1}
		}
		v, tags, ok := Resolve(q, "producer_byte_rate", "alice", "app")
		if !ok || v != float64(100+i) || tags != want.tags {
			t.Errorf("level %d (%v): got %v %+v %v, want %d %+v", i+1, want.e, v, tags, ok, 100+i, want.tags)
		}
	}
	// Other users and client ids do not match named entities.
	q := map[metadata.QuotaEntity]map[string]float64{
		{User: u}:     {"producer_byte_rate": 1},
		{ClientID: c}: {"producer_byte_rate": 2},
	}
	if _, _, ok := Resolve(q, "producer_byte_rate", "bob", "other"); ok {
		t.Error("bob/other matched alice's or app's quota")
	}
	if v, tags, _ := Resolve(q, "producer_byte_rate", "bob", "app"); v != 2 || tags != (Tags{"", "app"}) {
		t.Errorf("bob/app: %v %+v", v, tags)
	}
}

type fakeClock struct{ now time.Time }

func (f *fakeClock) Now() time.Time { return f.now }

func newTestClients(q map[metadata.QuotaEntity]map[string]float64) (*Clients, *fakeClock) {
	img := metadata.Empty()
	img.ClientQuotas = q
	clk := &fakeClock{now: time.Unix(1000, 0)}
	c := NewClients(11, time.Second, func() *metadata.Image { return img })
	c.Now = clk.Now
	return c, clk
}

func TestRecordThrottle(t *testing.T) {
	c, clk := newTestClients(map[metadata.QuotaEntity]map[string]float64{
		{ClientID: metadata.DefaultName}: {"producer_byte_rate": 1000},
	})
	// 10 windows of span counted from the first sample: 10,000 bytes are
	// exactly the quota.
	if d := c.Record(Produce, "ANONYMOUS", "a", 10_000); d != 0 {
		t.Fatalf("at the quota: throttled %v", d)
	}
	// 20,000 bytes over 10 s is twice the quota: 10 s more bring it back.
	if d := c.Record(Produce, "ANONYMOUS", "a", 10_000); d != 10*time.Second {
		t.Fatalf("twice the quota: throttled %v, want 10s", d)
	}
	// Another client id has its own sensor (the default client id's quota
	// is per client id).
	if d := c.Record(Produce, "ANONYMOUS", "b", 10_000); d != 0 {
		t.Fatalf("client b throttled %v", d)
	}
	// The fetch quota is not set: never throttled.
	if d := c.Record(Fetch, "ANONYMOUS", "a", 1<<30); d != 0 {
		t.Fatalf("fetch throttled %v", d)
	}
	// Once the samples age out, the client is within its quota again.
	clk.now = clk.now.Add(12 * time.Second)
	if d := c.Record(Produce, "ANONYMOUS", "a", 100); d != 0 {
		t.Fatalf("after the window: throttled %v", d)
	}
	if m := c.MaxInWindow(Produce, "x", "y"); m != 10_000 {
		t.Fatalf("max in window %d, want 10000", m)
	}
}

func TestRequestPercentage(t *testing.T) {
	c, _ := newTestClients(map[metadata.QuotaEntity]map[string]float64{
		{User: metadata.Named("alice")}: {"request_percentage": 10},
	})
	// 10% of one thread over a 10 s span is 1 s of handler time; 3 s is
	// three times over, throttled at most one window.
	if d := c.Record(Request, "alice", "x", int64(time.Second)); d != 0 {
		t.Fatalf("at the quota: %v", d)
	}
	if d := c.Record(Request, "alice", "y", int64(2*time.Second)); d != time.Second {
		t.Fatalf("over: %v, want the 1 s bound", d)
	}
}

func TestMutationTokenBucket(t *testing.T) {
	c, clk := newTestClients(map[metadata.QuotaEntity]map[string]float64{
		{User: metadata.DefaultName}: {"controller_mutation_rate": 10},
	})
	// The burst is 10/s x 11 windows = 110 tokens.
	if d, refused := c.Mutate("alice", "", 100, true); d != 0 || refused {
		t.Fatalf("first: %v %v", d, refused)
	}
	// Strict: accepted while tokens are not below zero, even past it.
	if d, refused := c.Mutate("alice", "", 30, true); d != 0 || refused {
		t.Fatalf("second: %v %v", d, refused)
	}
	// Now 20 tokens below zero: refused, 2 s to refill.
	if d, refused := c.Mutate("alice", "", 1, true); !refused || d != 2*time.Second {
		t.Fatalf("third: %v %v", d, refused)
	}
	// Permissive: charged anyway and throttled.
	if d, refused := c.Mutate("alice", "", 10, false); refused || d != 3*time.Second {
		t.Fatalf("permissive: %v %v", d, refused)
	}
	c.Refund("alice", "", 10)
	clk.now = clk.now.Add(2 * time.Second)
	if d, refused := c.Mutate("alice", "", 1, true); d != 0 || refused {
		t.Fatalf("after refilling: %v %v", d, refused)
	}
	// Bob has his own bucket.
	if _, refused := c.Mutate("bob", "", 110, true); refused {
		t.Fatal("bob refused")
	}
}

// Stats report each sensor in use with the throttle time it gave, in
// total, and its rate; a client no quota applies to has none.
func TestStats(t *testing.T) {
	c, _ := newTestClients(map[metadata.QuotaEntity]map[string]float64{
		{User: metadata.Named("alice")}:  {"producer_byte_rate": 100},
		{ClientID: metadata.DefaultName}: {"controller_mutation_rate": 10},
	})
	var produced time.Duration
	for range 3 {
		produced += c.Record(Produce, "alice", "app", 1000)
	}
	c.Record(Produce, "bob", "", 1000) // no quota
	c.Mutate("bob", "tool", 130, true)
	refused, _ := c.Mutate("bob", "tool", 1, true)
	permissive, _ := c.Mutate("bob", "tool", 10, false)
	c.Refund("bob", "tool", 10)
	stats := c.Stats()
	if len(stats) != 2 {
		t.Fatalf("stats %+v: want alice's produce and tool's mutations", stats)
	}
	for _, st := range stats {
		switch st.Kind {
		case Produce:
			if st.Tags != (Tags{"alice", ""}) || produced <= 0 || st.Throttled != produced || st.Rate <= 100 {
				t.Errorf("produce %+v: want throttled %v and a rate over 100", st, produced)
			}
		case Mutation:
			if st.Tags != (Tags{"", "tool"}) || refused <= 0 || permissive <= 0 || st.Throttled != refused+permissive || st.Rate <= 0 {
				t.Errorf("mutation %+v: want throttled %v and a rate", st, refused+permissive)
			}
		default:
			t.Errorf("unexpected %+v", st)
		}
	}
}
