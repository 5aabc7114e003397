package mirror

import "testing"

func TestPolicy(t *testing.T) {
	def, _ := NewPolicy("DefaultReplicationPolicy", ".", true, "A")
	under, _ := NewPolicy("org.apache.kafka.connect.mirror.DefaultReplicationPolicy", "_", true, "A")
	underDot, _ := NewPolicy("DefaultReplicationPolicy", "_", false, "A")
	id, _ := NewPolicy("org.apache.kafka.connect.mirror.IdentityReplicationPolicy", ".", true, "A")
	cases := []struct {
		name              string
		p                 Policy
		topic             string
		source, upstream  string
		original          string
		internal, isHeart bool
	}{
		{"local", def, "orders", "", "", "orders", false, false},
		{"remote", def, "A.orders", "A", "orders", "orders", false, false},
		{"two hops", def, "B.A.orders", "B", "A.orders", "orders", false, false},
		{"trailing separator", def, "A.", "", "", "A.", false, false},
		{"heartbeats", def, "heartbeats", "", "", "heartbeats", false, true},
		{"remote heartbeats", def, "B.A.heartbeats", "B", "A.heartbeats", "heartbeats", false, true},
		{"kafka internal", def, "__consumer_offsets", "", "", "__consumer_offsets", true, false},
		// Java's split gives source "" here; weir calls it local: either way
		// the name is internal and never mirrored.
		{"dot internal", def, ".hidden", "", "", ".hidden", true, false},
		{"connect internal", def, "connect-offsets-internal", "", "", "connect-offsets-internal", true, false},
		{"offset syncs", def, "mm2-offset-syncs.B.internal", "mm2-offset-syncs", "B.internal", "internal", true, false},
		{"underscore remote", under, "A_orders", "A", "orders", "orders", false, false},
		{"underscore dots are local", under, "a.b", "", "", "a.b", false, false},
		{"underscore internal", under, "mm2-offset-syncs_B_internal", "mm2-offset-syncs", "B_internal", "internal", true, false},
		{"identity", id, "orders", "A", "orders", "orders", false, false},
		{"identity heartbeats", id, "B.heartbeats", "B", "heartbeats", "heartbeats", false, true},
		{"underscore, dot internals", underDot, "x.internal", "", "", "x.internal", true, false},
	}
	for _, c := range cases {
		if got := c.p.TopicSource(c.topic); got != c.source {
			t.Errorf("%s: TopicSource(%q) = %q, want %q", c.name, c.topic, got, c.source)
		}
		if got := c.p.UpstreamTopic(c.topic); got != c.upstream {
			t.Errorf("%s: UpstreamTopic(%q) = %q, want %q", c.name, c.topic, got, c.upstream)
		}
		if got := c.p.OriginalTopic(c.topic); got != c.original {
			t.Errorf("%s: OriginalTopic(%q) = %q, want %q", c.name, c.topic, got, c.original)
		}
		if got := c.p.IsInternalTopic(c.topic); got != c.internal {
			t.Errorf("%s: IsInternalTopic(%q) = %v", c.name, c.topic, got)
		}
		if got := c.p.IsHeartbeatsTopic(c.topic); got != c.isHeart {
			t.Errorf("%s: IsHeartbeatsTopic(%q) = %v", c.name, c.topic, got)
		}
	}
	names := []struct{ got, want string }{
		{def.FormatRemoteTopic("A", "t"), "A.t"},
		{def.FormatRemoteTopic("B", "A.t"), "B.A.t"},
		{under.FormatRemoteTopic("A", "t"), "A_t"},
		{id.FormatRemoteTopic("A", "t"), "t"},
		{id.FormatRemoteTopic("A", "heartbeats"), "A.heartbeats"},
		{def.OffsetSyncsTopic("B"), "mm2-offset-syncs.B.internal"},
		{def.CheckpointsTopic("A"), "A.checkpoints.internal"},
		{under.OffsetSyncsTopic("B"), "mm2-offset-syncs_B_internal"},
		{under.CheckpointsTopic("A"), "A_checkpoints_internal"},
		{underDot.OffsetSyncsTopic("B"), "mm2-offset-syncs.B.internal"},
		{underDot.CheckpointsTopic("A"), "A.checkpoints.internal"},
	}
	for _, n := range names {
		if n.got != n.want {
			t.Errorf("name %q, want %q", n.got, n.want)
		}
	}
	if !def.IsCheckpointsTopic("A.checkpoints.internal") || def.IsCheckpointsTopic("A.checkpoints") {
		t.Error("IsCheckpointsTopic")
	}
	if _, err := NewPolicy("com.example.MyPolicy", ".", true, "A"); err == nil {
		t.Error("an unknown policy class was accepted")
	}
}

func TestShouldReplicate(t *testing.T) {
	flow := func(class string, heartbeats bool) *FlowConfig {
		p, err := NewPolicy(class, ".", true, "A")
		if err != nil {
			t.Fatal(err)
		}
		in, _ := compileList(DefaultTopics)
		ex, _ := compileList(DefaultTopicsExclude)
		return &FlowConfig{Source: "A", Target: "B", Policy: p, Topics: &Filter{in, ex}, HeartbeatsReplication: heartbeats}
	}
	ab := flow("DefaultReplicationPolicy", true)
	noHB := flow("DefaultReplicationPolicy", false)
	noHB.Topics.include, _ = compileList("orders")
	cases := []struct {
		f     *FlowConfig
		topic string
		want  bool
	}{
		{ab, "orders", true},
		{ab, "C.orders", true},      // forwarding C->A->B
		{ab, "B.orders", false},     // came from B: a cycle
		{ab, "C.B.orders", false},   // came from B two hops up
		{ab, "heartbeats", true},    // matches .*
		{ab, "B.heartbeats", false}, // a cycle still
		{ab, "__consumer_offsets", false},
		{ab, "mm2-offset-syncs.B.internal", false},
		{ab, "A.checkpoints.internal", false},
		{ab, "x.replica", false}, // topics.exclude
		{noHB, "orders", true},
		{noHB, "orders2", false}, // whole-name match
		{noHB, "heartbeats", false},
		{flow("DefaultReplicationPolicy", true), "C.heartbeats", true},
		{flow("IdentityReplicationPolicy", true), "B.orders", true}, // identity cannot see the cycle
	}
	for _, c := range cases {
		if got := c.f.ShouldReplicate(c.topic); got != c.want {
			t.Errorf("%s policy identity=%v: ShouldReplicate(%q) = %v, want %v", c.f.Name(), c.f.Policy.Identity(), c.topic, got, c.want)
		}
	}
}
