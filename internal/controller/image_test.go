package controller

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	"weir/internal/metadata"
	"weir/internal/quorum"
)

// memQuorum is an in-memory Quorum that commits every batch at once and
// delivers it to the controller before Append returns, as metalog.Local
// does. Records go through their wire encoding on the way, so a record
// the real log could not store fails here too.
type memQuorum struct {
	end     int64
	batches []quorum.Committed
	publish func(quorum.Committed) error
	// inactive makes the node a controller that is not the active one;
	// term is the quorum term.
	inactive bool
	term     uint64
}

func (q *memQuorum) Append(recs []metadata.Record) (int64, error) {
	if len(recs) == 0 {
		return q.end - 1, nil
	}
	if q.inactive {
		return 0, quorum.ErrNotLeader
	}
	c := quorum.Committed{LastOffset: q.end + int64(len(recs)) - 1}
	for _, r := range recs {
		b, err := metadata.AppendRecord(nil, r)
		if err != nil {
			return 0, err
		}
		d, err := metadata.DecodeRecord(b)
		if err != nil {
			return 0, err
		}
		c.Records = append(c.Records, d)
	}
	q.end = c.LastOffset + 1
	q.batches = append(q.batches, c)
	return c.LastOffset, q.publish(c)
}

func (q *memQuorum) EndOffset() int64 { return q.end }

func (q *memQuorum) Status() quorum.Status {
	return quorum.Status{Leader: 1, Active: !q.inactive, Term: q.term}
}

// records returns every record committed since batch index from.
func (q *memQuorum) recordsSince(from int) []metadata.Record {
	var out []metadata.Record
	for _, b := range q.batches[from:] {
		out = append(out, b.Records...)
	}
	return out
}

type harness struct {
	t *testing.T
	c *Controller
	q *memQuorum
	// epochs of the brokers registered by addBroker.
	epochs map[int32]int64
}

func newHarness(t *testing.T, props map[string]string) *harness {
	t.Helper()
	cfg, _, err := config.LoadBroker(props)
	if err != nil {
		t.Fatal(err)
	}
	q := &memQuorum{}
	c := New(Config{Static: cfg, ClusterID: testClusterID}, q, slog.New(slog.NewTextHandler(io.Discard, nil)))
	q.publish = c.Publish
	h := &harness{t: t, c: c, q: q, epochs: map[int32]int64{}}
	if err := c.Bootstrap(nil); err != nil {
		t.Fatal(err)
	}
	return h
}

const testClusterID = "weir-test-cluster-id0"

// testNow is the controller tests' clock.
var testNow = time.Unix(1_800_000_000, 0)

// at is a clock stopped at t.
func at(t time.Time) func() time.Time { return func() time.Time { return t } }

// addBroker registers broker id and, unless fenced, unfences it.
func (h *harness) addBroker(id int32, fenced bool) {
	h.t.Helper()
	h.addRackBroker(id, "", fenced)
}

// addRackBroker registers broker id in rack ("" for none) and, unless
// fenced, unfences it with a caught-up heartbeat.
func (h *harness) addRackBroker(id int32, rack string, fenced bool) {
	h.t.Helper()
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.ClusterID, req.IncarnationID = id, testClusterID, [16]byte{byte(id), 1}
	req.Listeners = []kmsg.BrokerRegistrationRequestListener{{Name: "PLAINTEXT", Host: "localhost", Port: uint16(9092 + id)}}
	if rack != "" {
		req.Rack = &rack
	}
	epoch, err := h.c.RegisterBroker(req, testNow)
	if err != nil {
		h.t.Fatal(err)
	}
	h.epochs[id] = epoch
	if !fenced {
		h.heartbeat(id, epoch, false)
	}
}

// heartbeat sends a caught-up heartbeat.
func (h *harness) heartbeat(id int32, epoch int64, wantShutdown bool) *kmsg.BrokerHeartbeatResponse {
	h.t.Helper()
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset, hb.WantShutdown = id, epoch, math.MaxInt64, wantShutdown
	resp, err := h.c.BrokerHeartbeat(hb, at(testNow))
	if err != nil {
		h.t.Fatal(err)
	}
	return resp
}

func newCluster(t *testing.T, brokers int, props map[string]string) *harness {
	h := newHarness(t, props)
	for id := int32(1); id <= int32(brokers); id++ {
		h.addBroker(id, false)
	}
	return h
}

func topicReq(name string, partitions int32, rf int16, cfg ...string) kmsg.CreateTopicsRequestTopic {
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, partitions, rf
	for i := 0; i+1 < len(cfg); i += 2 {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		v := cfg[i+1]
		c.Name, c.Value = cfg[i], &v
		t.Configs = append(t.Configs, c)
	}
	return t
}

func manualReq(name string, assignment ...[]int32) kmsg.CreateTopicsRequestTopic {
	t := topicReq(name, -1, -1)
	for p, replicas := range assignment {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), replicas
		t.ReplicaAssignment = append(t.ReplicaAssignment, a)
	}
	return t
}

// create sends one CreateTopics request and returns its results.
func (h *harness) create(validateOnly bool, topics ...kmsg.CreateTopicsRequestTopic) ([]CreatedTopic, []error, int64) {
	h.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Topics, req.ValidateOnly = topics, validateOnly
	res, err := h.c.CreateTopics(req)
	if err != nil {
		h.t.Fatalf("CreateTopics: %v", err)
	}
	if len(res.Topics) != len(topics) || len(res.Errs) != len(topics) {
		h.t.Fatalf("CreateTopics returned %d results and %d errors for %d topics", len(res.Topics), len(res.Errs), len(topics))
	}
	return res.Topics, res.Errs, res.Offset
}

func (h *harness) mustCreate(topics ...kmsg.CreateTopicsRequestTopic) []CreatedTopic {
	h.t.Helper()
	res, errs, _ := h.create(false, topics...)
	for i, err := range errs {
		if err != nil {
			h.t.Fatalf("creating %s: %v", topics[i].Topic, err)
		}
	}
	return res
}

// wantCode checks that err is a *TopicError with code (nil code: no error).
func wantCode(t *testing.T, what string, err error, code *kerr.Error) {
	t.Helper()
	if code == nil {
		if err != nil {
			t.Fatalf("%s: unexpected error %v", what, err)
		}
		return
	}
	var te *TopicError
	if !errors.As(err, &te) {
		t.Fatalf("%s: error %v (%T), want %s", what, err, err, code.Message)
	}
	if te.Code != code {
		t.Fatalf("%s: code %s (%q), want %s", what, te.Code.Message, te.Error(), code.Message)
	}
	if te.Error() == "" {
		t.Fatalf("%s: empty error message", what)
	}
}

func TestBootstrapWritesFeatureLevelsOnce(t *testing.T) {
	h := newHarness(t, nil)
	if len(h.q.batches) != 1 {
		t.Fatalf("bootstrap wrote %d batches", len(h.q.batches))
	}
	if recs := h.q.batches[0].Records; len(recs) != 2 {
		t.Fatalf("bootstrap records = %+v", recs)
	}
	want := map[string]int16{"metadata.version": MetadataVersion, "group.version": GroupVersion}
	for name, level := range want {
		if got := h.c.Image().Features[name]; got != level {
			t.Fatalf("feature %s = %d, want %d (features %v)", name, got, level, h.c.Image().Features)
		}
	}
	if err := h.c.Bootstrap(nil); err != nil {
		t.Fatal(err)
	}
	if len(h.q.batches) != 1 {
		t.Fatal("a second Bootstrap wrote again")
	}
}

func TestRegisterAndUnfenceBroker(t *testing.T) {
	h := newHarness(t, nil)
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.ClusterID, req.IncarnationID = 1, testClusterID, [16]byte{1}
	epoch, err := h.c.RegisterBroker(req, testNow)
	if err != nil {
		t.Fatal(err)
	}
	b := h.c.Image().Brokers[1]
	if b == nil || b.Epoch != epoch || !b.Fenced {
		t.Fatalf("registered broker = %+v (epoch %d)", b, epoch)
	}
	stale := kmsg.NewPtrBrokerHeartbeatRequest()
	stale.BrokerID, stale.BrokerEpoch = 1, epoch+1
	if _, err := h.c.BrokerHeartbeat(stale, at(testNow)); !errors.Is(err, kerr.StaleBrokerEpoch) {
		t.Fatalf("heartbeat with a wrong epoch: %v", err)
	}
	stale.BrokerID, stale.BrokerEpoch = 2, epoch
	if _, err := h.c.BrokerHeartbeat(stale, at(testNow)); !errors.Is(err, kerr.StaleBrokerEpoch) {
		t.Fatalf("heartbeat of an unknown broker: %v", err)
	}
	// Not caught up: stays fenced.
	behind := kmsg.NewPtrBrokerHeartbeatRequest()
	behind.BrokerID, behind.BrokerEpoch, behind.CurrentMetadataOffset = 1, epoch, epoch-1
	if resp, err := h.c.BrokerHeartbeat(behind, at(testNow)); err != nil || !resp.IsFenced || resp.IsCaughtUp {
		t.Fatalf("heartbeat behind the registration: %+v, %v", resp, err)
	}
	if resp := h.heartbeat(1, epoch, false); resp.IsFenced || !resp.IsCaughtUp {
		t.Fatalf("caught-up heartbeat: %+v", resp)
	}
	n := len(h.q.batches)
	if resp := h.heartbeat(1, epoch, false); resp.IsFenced || len(h.q.batches) != n {
		t.Fatalf("heartbeat of an unfenced broker: %+v, wrote %d batches", resp, len(h.q.batches)-n)
	}
	// Another incarnation while the session lives is a duplicate.
	other := *req
	other.IncarnationID = [16]byte{9}
	if _, err := h.c.RegisterBroker(&other, testNow); errorCode(err) != kerr.DuplicateBrokerRegistration {
		t.Fatalf("second incarnation: %v", err)
	}
	// The same incarnation re-registers: a new, higher epoch, fenced again.
	epoch2, err := h.c.RegisterBroker(req, testNow)
	if err != nil || epoch2 <= epoch || !h.c.Image().Brokers[1].Fenced {
		t.Fatalf("re-registration: epoch %d -> %d, %v, %+v", epoch, epoch2, err, h.c.Image().Brokers[1])
	}
	// A fenced registration has no session left (as in Kafka): another
	// incarnation takes over at once, as a process restarted after its
	// predecessor was fenced does.
	if _, err := h.c.RegisterBroker(&other, testNow); err != nil {
		t.Fatalf("another incarnation of a fenced registration: %v", err)
	}
	bad := *req
	bad.ClusterID = "other"
	if _, err := h.c.RegisterBroker(&bad, testNow); errorCode(err) != kerr.InconsistentClusterID {
		t.Fatalf("wrong cluster id: %v", err)
	}
}

func errorCode(err error) *kerr.Error {
	var te *TopicError
	if errors.As(err, &te) {
		return te.Code
	}
	return nil
}

func TestCreateTopicDefaults(t *testing.T) {
	h := newCluster(t, 3, map[string]string{"num.partitions": "4", "default.replication.factor": "2"})
	res := h.mustCreate(topicReq("d", -1, -1))
	if res[0].NumPartitions != 4 || res[0].ReplicationFactor != 2 {
		t.Fatalf("result = %+v", res[0])
	}
	tp := h.c.Image().Topics.Get("d")
	if tp == nil || tp.ID != res[0].ID || len(tp.Partitions) != 4 {
		t.Fatalf("image topic = %+v", tp)
	}
	for _, p := range tp.Partitions {
		if len(p.Replicas) != 2 {
			t.Fatalf("partition %d replicas %v", p.ID, p.Replicas)
		}
	}

	// Explicit counts win over the defaults.
	res = h.mustCreate(topicReq("e", 2, 3))
	if res[0].NumPartitions != 2 || res[0].ReplicationFactor != 3 || len(h.c.Image().Topics.Get("e").Partitions[1].Replicas) != 3 {
		t.Fatalf("result = %+v", res[0])
	}
	// Either one alone may be defaulted.
	res = h.mustCreate(topicReq("f", 1, -1), topicReq("g", -1, 1))
	if res[0].NumPartitions != 1 || res[0].ReplicationFactor != 2 || res[1].NumPartitions != 4 || res[1].ReplicationFactor != 1 {
		t.Fatalf("results = %+v", res)
	}
}

func TestCreateTopicRecords(t *testing.T) {
	h := newCluster(t, 3, nil)
	from := len(h.q.batches)
	res, errs, last := h.create(false, topicReq("r", 3, 2, "retention.ms", "1000", "cleanup.policy", "compact"))
	wantCode(t, "create", errs[0], nil)
	if last != h.q.end-1 || len(h.q.batches) != from+1 {
		t.Fatalf("last = %d, end %d, %d new batches", last, h.q.end, len(h.q.batches)-from)
	}
	recs := h.q.recordsSince(from)
	if len(recs) != 1+3+2 {
		t.Fatalf("records: %d, want 6: %+v", len(recs), recs)
	}
	tr, ok := recs[0].(*metadata.TopicRecord)
	if !ok || tr.Name != "r" || tr.TopicId != res[0].ID || tr.TopicId == (metadata.Uuid{}) {
		t.Fatalf("first record = %+v", recs[0])
	}
	leaders := map[int32]bool{}
	for i, r := range recs[1:4] {
		pr, ok := r.(*metadata.PartitionRecord)
		if !ok {
			t.Fatalf("record %d = %T", i+1, r)
		}
		if pr.PartitionId != int32(i) || pr.TopicId != tr.TopicId || len(pr.Replicas) != 2 {
			t.Fatalf("partition record = %+v", pr)
		}
		if !slices.Equal(pr.Isr, pr.Replicas) || pr.Leader != pr.Replicas[0] || pr.LeaderEpoch != 0 || pr.PartitionEpoch != 0 {
			t.Fatalf("partition record = %+v", pr)
		}
		if pr.Replicas[0] == pr.Replicas[1] {
			t.Fatalf("duplicate replica: %v", pr.Replicas)
		}
		leaders[pr.Leader] = true
	}
	if len(leaders) != 3 {
		t.Fatalf("leaders of 3 partitions on 3 brokers: %v", leaders)
	}
	wantCfg := []string{"cleanup.policy=compact", "retention.ms=1000"}
	var gotCfg []string
	for _, r := range recs[4:] {
		cr, ok := r.(*metadata.ConfigRecord)
		if !ok || cr.ResourceType != metadata.ResourceTopic || cr.ResourceName != "r" || cr.Value == nil {
			t.Fatalf("config record = %+v", r)
		}
		gotCfg = append(gotCfg, cr.Name+"="+*cr.Value)
	}
	if !slices.Equal(gotCfg, wantCfg) {
		t.Fatalf("config records %v, want %v", gotCfg, wantCfg)
	}
	if !maps.Equal(res[0].Configs, map[string]string{"retention.ms": "1000", "cleanup.policy": "compact"}) {
		t.Fatalf("result configs = %v", res[0].Configs)
	}
	if !maps.Equal(h.c.Image().TopicConfig("r"), res[0].Configs) {
		t.Fatalf("image configs = %v", h.c.Image().TopicConfig("r"))
	}
}

func TestCreateTopicLeaderIsFirstLiveReplica(t *testing.T) {
	h := newCluster(t, 2, nil)
	h.addBroker(3, true) // registered, fenced
	h.mustCreate(manualReq("m", []int32{3, 1, 2}, []int32{2, 3, 1}))
	tp := h.c.Image().Topics.Get("m")
	p0, p1 := tp.Partitions[0], tp.Partitions[1]
	if !slices.Equal(p0.Replicas, []int32{3, 1, 2}) || !slices.Equal(p0.ISR, []int32{1, 2}) || p0.Leader != 1 {
		t.Fatalf("p0 = %+v", p0)
	}
	if !slices.Equal(p1.ISR, []int32{2, 1}) || p1.Leader != 2 {
		t.Fatalf("p1 = %+v", p1)
	}
	// A partition whose replicas are all fenced could have no leader:
	// Kafka refuses such an assignment.
	_, errs, _ := h.create(false, manualReq("dead", []int32{3}))
	wantCode(t, "all replicas fenced", errs[0], kerr.InvalidReplicaAssignment)
	// Automatic placement never uses the fenced broker.
	h.mustCreate(topicReq("auto", 6, 2))
	for _, p := range h.c.Image().Topics.Get("auto").Partitions {
		if p.HasReplica(3) {
			t.Fatalf("partition %d placed on fenced broker: %v", p.ID, p.Replicas)
		}
	}
}

func TestCreateTopicManualAssignment(t *testing.T) {
	h := newCluster(t, 3, nil)
	res := h.mustCreate(manualReq("ok", []int32{2, 3}, []int32{3, 1}, []int32{1, 2}))
	if res[0].NumPartitions != 3 || res[0].ReplicationFactor != 2 {
		t.Fatalf("result = %+v", res[0])
	}
	tp := h.c.Image().Topics.Get("ok")
	for p, want := range [][]int32{{2, 3}, {3, 1}, {1, 2}} {
		if got := tp.Partitions[int32(p)]; !slices.Equal(got.Replicas, want) || got.Leader != want[0] {
			t.Fatalf("partition %d = %+v, want replicas %v", p, got, want)
		}
	}
	// Partitions listed out of order are fine.
	out := manualReq("ooo", []int32{1}, []int32{2})
	out.ReplicaAssignment[0].Partition, out.ReplicaAssignment[1].Partition = 1, 0
	h.mustCreate(out)
	if got := h.c.Image().Topics.Get("ooo").Partitions[0].Replicas; !slices.Equal(got, []int32{2}) {
		t.Fatalf("out-of-order assignment: partition 0 = %v", got)
	}

	gap := manualReq("gap", []int32{1}, []int32{2})
	gap.ReplicaAssignment[1].Partition = 2
	dupPart := manualReq("dup-part", []int32{1}, []int32{2})
	dupPart.ReplicaAssignment[1].Partition = 0
	negative := manualReq("negative", []int32{1})
	negative.ReplicaAssignment[0].Partition = -1
	withCount := manualReq("with-count", []int32{1})
	withCount.NumPartitions = 1
	withRF := manualReq("with-rf", []int32{1})
	withRF.ReplicationFactor = 1
	cases := []struct {
		topic kmsg.CreateTopicsRequestTopic
		code  *kerr.Error
	}{
		{gap, kerr.InvalidReplicaAssignment},
		{dupPart, kerr.InvalidReplicaAssignment},
		{negative, kerr.InvalidReplicaAssignment},
		{manualReq("dup-broker", []int32{1, 1}), kerr.InvalidReplicaAssignment},
		{manualReq("unknown-broker", []int32{1, 9}), kerr.InvalidReplicaAssignment},
		{manualReq("uneven", []int32{1, 2}, []int32{3}), kerr.InvalidReplicaAssignment},
		{manualReq("empty", []int32{}), kerr.InvalidReplicaAssignment},
		{withCount, kerr.InvalidRequest},
		{withRF, kerr.InvalidRequest},
	}
	for _, tc := range cases {
		n := len(h.q.batches)
		_, errs, last := h.create(false, tc.topic)
		wantCode(t, tc.topic.Topic, errs[0], tc.code)
		if len(h.q.batches) != n || last != -1 || h.c.Image().Topics.Get(tc.topic.Topic) != nil {
			t.Fatalf("%s: a failed creation wrote records", tc.topic.Topic)
		}
	}
}

func TestCreateTopicNames(t *testing.T) {
	h := newCluster(t, 1, nil)
	long := strings.Repeat("a", MaxTopicNameLength)
	h.mustCreate(topicReq(long, 1, 1), topicReq("Az09._-", 1, 1), topicReq("...", 1, 1))
	for _, name := range []string{"", ".", "..", long + "b", "a b", "a/b", "ä", "a\x00", "a:b", "a+b"} {
		_, errs, _ := h.create(false, topicReq(name, 1, 1))
		wantCode(t, "name "+name, errs[0], kerr.InvalidTopicException)
		if err := ValidateTopicName(name); err == nil {
			t.Fatalf("ValidateTopicName(%q) = nil", name)
		}
	}
}

func TestCreateTopicCollisions(t *testing.T) {
	h := newCluster(t, 1, nil)
	h.mustCreate(topicReq("a.b", 1, 1))
	_, errs, _ := h.create(false, topicReq("a_b", 1, 1))
	wantCode(t, "a_b after a.b", errs[0], kerr.InvalidTopicException)
	_, errs, _ = h.create(false, topicReq("a.b", 1, 1))
	wantCode(t, "a.b again", errs[0], kerr.TopicAlreadyExists)

	// Within one request the first of two colliding names wins.
	_, errs, _ = h.create(false, topicReq("x_y", 1, 1), topicReq("x.y", 1, 1), topicReq("xy", 1, 1))
	wantCode(t, "x_y", errs[0], nil)
	wantCode(t, "x.y", errs[1], kerr.InvalidTopicException)
	wantCode(t, "xy", errs[2], nil)
	if h.c.Image().Topics.Get("x.y") != nil || h.c.Image().Topics.Get("x_y") == nil {
		t.Fatal("wrong topic of a colliding pair created")
	}
	// The name check folds only '.' and '_'.
	h.mustCreate(topicReq("a-b", 1, 1))

	// Names with many separators (past maxCollisionSeparators too).
	for _, pair := range [][2]string{
		{"m.a_n.y", "m_a.n_y"},
		{"._._._._._", "_._._._._."},
		{strings.Repeat("._", maxCollisionSeparators), strings.Repeat("_.", maxCollisionSeparators)},
	} {
		h.mustCreate(topicReq(pair[0], 1, 1))
		_, errs, _ := h.create(false, topicReq(pair[1], 1, 1))
		wantCode(t, pair[1]+" after "+pair[0], errs[0], kerr.InvalidTopicException)
		if got := collidingTopic(h.c.Image(), pair[1]); got != pair[0] {
			t.Fatalf("collidingTopic(%q) = %q, want %q", pair[1], got, pair[0])
		}
		if got := collidingTopic(h.c.Image(), pair[0]); got != "" {
			t.Fatalf("collidingTopic(%q), an existing topic, = %q", pair[0], got)
		}
	}
}

func TestCreateTopicRequestErrors(t *testing.T) {
	h := newCluster(t, 3, nil)
	h.mustCreate(topicReq("exists", 1, 1))
	from := len(h.q.batches)
	_, errs, _ := h.create(false,
		topicReq("dup", 1, 1), topicReq("dup", 1, 1),
		topicReq("exists", 1, 1),
		topicReq("rf-too-big", 1, 4),
		topicReq("rf-zero", 1, 0),
		topicReq("rf-negative", 1, -2),
		topicReq("parts-zero", 0, 1),
		topicReq("parts-negative", -2, 1),
		topicReq("bad-config-key", 1, 1, "no.such.config", "1"),
		topicReq("bad-config-value", 1, 1, "retention.ms", "soon"),
		topicReq("bad-config-combo", 1, 1, "min.compaction.lag.ms", "10", "max.compaction.lag.ms", "5"),
		// The metadata log's topic, however asked for (and not counted
		// against the request's partitions).
		topicReq(metadata.LogTopic, MaxPartitionsPerRequest, 1),
		topicReq("good", 2, 3),
	)
	want := []*kerr.Error{
		kerr.InvalidRequest, kerr.InvalidRequest,
		kerr.TopicAlreadyExists,
		kerr.InvalidReplicationFactor, kerr.InvalidReplicationFactor, kerr.InvalidReplicationFactor,
		kerr.InvalidPartitions, kerr.InvalidPartitions,
		kerr.InvalidConfig, kerr.InvalidConfig, kerr.InvalidConfig,
		kerr.InvalidRequest,
		nil,
	}
	for i, code := range want {
		wantCode(t, "topic "+string(rune('0'+i)), errs[i], code)
	}
	// Only the good topic was written, in one batch.
	recs := h.q.recordsSince(from)
	if len(h.q.batches) != from+1 || len(recs) != 1+2 {
		t.Fatalf("wrote %d batches, %d records", len(h.q.batches)-from, len(recs))
	}
	if h.c.Image().Topics.Get("dup") != nil {
		t.Fatal("a topic listed twice was created")
	}

	if msg := errs[len(want)-2].Error(); msg != "Creation of internal topic __cluster_metadata is prohibited." {
		t.Fatalf("creating the metadata log's topic: %q", msg)
	}
	_, errs, _ = h.create(true, topicReq(metadata.LogTopic, 1, 1))
	wantCode(t, "validating the metadata log's topic", errs[0], kerr.InvalidRequest)

	// A null config value is INVALID_CONFIG.
	nv := topicReq("null-value", 1, 1)
	c := kmsg.NewCreateTopicsRequestTopicConfig()
	c.Name = "retention.ms"
	nv.Configs = append(nv.Configs, c)
	_, errs, _ = h.create(false, nv)
	wantCode(t, "null config value", errs[0], kerr.InvalidConfig)

	// With no usable broker nothing can be placed.
	e := newHarness(t, nil)
	_, errs, _ = e.create(false, topicReq("nowhere", 1, 1))
	wantCode(t, "no brokers", errs[0], kerr.InvalidReplicationFactor)
}

func TestCreateTopicValidateOnly(t *testing.T) {
	h := newCluster(t, 3, nil)
	h.mustCreate(topicReq("exists", 1, 1))
	n, end := len(h.q.batches), h.q.end
	res, errs, last := h.create(true, topicReq("v", 5, 3, "retention.ms", "5"), topicReq("exists", 1, 1))
	wantCode(t, "v", errs[0], nil)
	wantCode(t, "exists", errs[1], kerr.TopicAlreadyExists)
	if res[0].NumPartitions != 5 || res[0].ReplicationFactor != 3 || res[0].Configs["retention.ms"] != "5" {
		t.Fatalf("validate-only result = %+v", res[0])
	}
	if len(h.q.batches) != n || h.q.end != end || last != -1 || h.c.Image().Topics.Get("v") != nil {
		t.Fatal("validate_only wrote records")
	}
}

// TestPlacementSpreadsLeaders creates single-partition topics one after
// the other and in one request: each new topic starts on the broker that
// leads the fewest partitions, so leaders spread evenly.
func TestPlacementSpreadsLeaders(t *testing.T) {
	leaders := func(h *harness) map[int32]int {
		n := map[int32]int{}
		for _, tp := range h.c.Image().Topics.All() {
			for _, p := range tp.Partitions {
				n[p.Leader]++
			}
		}
		return n
	}
	h := newCluster(t, 3, nil)
	for _, name := range []string{"a", "b", "c", "d", "e", "f"} {
		h.mustCreate(topicReq(name, 1, 2))
	}
	if got := leaders(h); !maps.Equal(got, map[int32]int{1: 2, 2: 2, 3: 2}) {
		t.Fatalf("leaders after 6 separate creations: %v", got)
	}

	h = newCluster(t, 3, nil)
	h.mustCreate(topicReq("a", 1, 1), topicReq("b", 1, 1), topicReq("c", 1, 1))
	if got := leaders(h); !maps.Equal(got, map[int32]int{1: 1, 2: 1, 3: 1}) {
		t.Fatalf("leaders after one request with 3 topics: %v", got)
	}

	// A multi-partition topic spreads both leaders and replica sets.
	h = newCluster(t, 3, nil)
	h.mustCreate(topicReq("m", 6, 3))
	if got := leaders(h); !maps.Equal(got, map[int32]int{1: 2, 2: 2, 3: 2}) {
		t.Fatalf("leaders of a 6-partition topic: %v", got)
	}
	for _, p := range h.c.Image().Topics.Get("m").Partitions {
		s := slices.Clone(p.Replicas)
		slices.Sort(s)
		if !slices.Equal(s, []int32{1, 2, 3}) {
			t.Fatalf("partition %d replicas %v", p.ID, p.Replicas)
		}
	}
}

func TestDeleteTopics(t *testing.T) {
	h := newCluster(t, 1, nil)
	res := h.mustCreate(topicReq("a", 2, 1, "retention.ms", "5"), topicReq("b", 1, 1), topicReq("c", 1, 1))
	idB := res[1].ID
	from := len(h.q.batches)
	refs := []TopicRef{
		{Name: "a"},
		{ID: idB},
		{Name: "nope"},
		{ID: metadata.Uuid{1}},
		{Name: "a"},     // a duplicate by name
		{ID: res[0].ID}, // and by id
	}
	deleted, err := h.c.DeleteTopics(refs)
	if err != nil {
		t.Fatal(err)
	}
	out, errs, last := deleted.Topics, deleted.Errs, deleted.Offset
	wantCode(t, "a", errs[0], nil)
	wantCode(t, "b by id", errs[1], nil)
	wantCode(t, "unknown name", errs[2], kerr.UnknownTopicOrPartition)
	wantCode(t, "unknown id", errs[3], kerr.UnknownTopicID)
	wantCode(t, "a again", errs[4], nil)
	wantCode(t, "a by id", errs[5], nil)
	if out[0] != (TopicRef{Name: "a", ID: res[0].ID}) || out[1] != (TopicRef{Name: "b", ID: idB}) || out[5].Name != "a" {
		t.Fatalf("refs = %+v", out)
	}
	if out[2] != refs[2] || out[3] != refs[3] {
		t.Fatalf("unknown refs are echoed: %+v", out)
	}
	recs := h.q.recordsSince(from)
	if len(recs) != 2 || last != h.q.end-1 {
		t.Fatalf("records = %+v (last %d)", recs, last)
	}
	gone := map[metadata.Uuid]bool{}
	for _, r := range recs {
		gone[r.(*metadata.RemoveTopicRecord).TopicId] = true
	}
	if !gone[res[0].ID] || !gone[idB] {
		t.Fatalf("removed %v", gone)
	}
	im := h.c.Image()
	if im.Topics.Get("a") != nil || im.Topics.Get("b") != nil || im.Topics.Get("c") == nil || len(im.TopicConfig("a")) != 0 {
		t.Fatalf("image after delete: %v %v", im.Topics, im.Configs)
	}
	// Nothing to delete writes nothing.
	n := len(h.q.batches)
	deleted, err = h.c.DeleteTopics([]TopicRef{{Name: "a"}})
	if err != nil || len(h.q.batches) != n {
		t.Fatalf("deleting a deleted topic wrote records (%v)", err)
	}
	wantCode(t, "deleted again", deleted.Errs[0], kerr.UnknownTopicOrPartition)
	if deleted.Offset != h.q.end-1 {
		t.Errorf("nothing deleted: offset %d, want the image's %d", deleted.Offset, h.q.end-1)
	}
	// A recreated topic gets a new id.
	res2 := h.mustCreate(topicReq("a", 1, 1))
	if res2[0].ID == res[0].ID {
		t.Fatal("recreated topic reuses the old id")
	}
}

// createPartitions sends one CreatePartitions request and returns its
// errors.
func (h *harness) createPartitions(req *kmsg.CreatePartitionsRequest) []error {
	h.t.Helper()
	res, err := h.c.CreatePartitions(req)
	if err != nil {
		h.t.Fatalf("CreatePartitions: %v", err)
	}
	return res.Errs
}

func partsReq(validateOnly bool, topics ...kmsg.CreatePartitionsRequestTopic) *kmsg.CreatePartitionsRequest {
	r := kmsg.NewPtrCreatePartitionsRequest()
	r.Topics, r.ValidateOnly = topics, validateOnly
	return r
}

func partsTopic(name string, count int32, assignment ...[]int32) kmsg.CreatePartitionsRequestTopic {
	t := kmsg.NewCreatePartitionsRequestTopic()
	t.Topic, t.Count = name, count
	for _, a := range assignment {
		pa := kmsg.NewCreatePartitionsRequestTopicAssignment()
		pa.Replicas = a
		t.Assignment = append(t.Assignment, pa)
	}
	return t
}

func TestCreatePartitions(t *testing.T) {
	h := newCluster(t, 3, nil)
	res := h.mustCreate(topicReq("t", 2, 2), topicReq("u", 1, 1), topicReq("v", 1, 3))
	from := len(h.q.batches)
	created, err := h.c.CreatePartitions(partsReq(false, partsTopic("t", 5), partsTopic("u", 3, []int32{3}, []int32{1})))
	if err != nil {
		t.Fatal(err)
	}
	errs, last := created.Errs, created.Offset
	wantCode(t, "t", errs[0], nil)
	wantCode(t, "u", errs[1], nil)
	if last != h.q.end-1 || len(h.q.batches) != from+1 {
		t.Fatalf("last %d, %d batches", last, len(h.q.batches)-from)
	}
	tp := h.c.Image().Topics.Get("t")
	if len(tp.Partitions) != 5 {
		t.Fatalf("t has %d partitions", len(tp.Partitions))
	}
	for id := int32(2); id < 5; id++ {
		p := tp.Partitions[id]
		if len(p.Replicas) != 2 || p.Leader != p.Replicas[0] || !slices.Equal(p.ISR, p.Replicas) || p.LeaderEpoch != 0 {
			t.Fatalf("new partition %d = %+v", id, p)
		}
	}
	for _, r := range h.q.recordsSince(from) {
		pr, ok := r.(*metadata.PartitionRecord)
		if !ok || (pr.TopicId != res[0].ID && pr.TopicId != res[1].ID) {
			t.Fatalf("record %+v", r)
		}
	}
	if u := h.c.Image().Topics.Get("u"); len(u.Partitions) != 3 || !slices.Equal(u.Partitions[1].Replicas, []int32{3}) || !slices.Equal(u.Partitions[2].Replicas, []int32{1}) {
		t.Fatalf("u = %+v", u.Partitions)
	}

	cases := []struct {
		name  string
		topic kmsg.CreatePartitionsRequestTopic
		code  *kerr.Error
	}{
		{"equal", partsTopic("t", 5), kerr.InvalidPartitions},
		{"decrease", partsTopic("t", 4), kerr.InvalidPartitions},
		{"unknown topic", partsTopic("nope", 4), kerr.UnknownTopicOrPartition},
		{"too few assignments", partsTopic("t", 7, []int32{1, 2}), kerr.InvalidReplicaAssignment},
		{"too many assignments", partsTopic("t", 6, []int32{1, 2}, []int32{2, 3}), kerr.InvalidReplicaAssignment},
		{"replication factor", partsTopic("t", 6, []int32{1}), kerr.InvalidReplicaAssignment},
		{"unknown broker", partsTopic("t", 6, []int32{1, 9}), kerr.InvalidReplicaAssignment},
		{"duplicate broker", partsTopic("t", 6, []int32{2, 2}), kerr.InvalidReplicaAssignment},
	}
	for _, tc := range cases {
		n := len(h.q.batches)
		created, err := h.c.CreatePartitions(partsReq(false, tc.topic))
		if err != nil {
			t.Fatal(err)
		}
		wantCode(t, tc.name, created.Errs[0], tc.code)
		if len(h.q.batches) != n {
			t.Fatalf("%s: wrote records", tc.name)
		}
	}

	// Duplicate topics in one request are both refused.
	errs = h.createPartitions(partsReq(false, partsTopic("t", 6), partsTopic("t", 7)))
	wantCode(t, "dup 1", errs[0], kerr.InvalidRequest)
	wantCode(t, "dup 2", errs[1], kerr.InvalidRequest)

	// validate_only checks everything and writes nothing.
	n := len(h.q.batches)
	errs = h.createPartitions(partsReq(true, partsTopic("t", 8), partsTopic("u", 2), partsTopic("v", 4, []int32{7, 1, 2})))
	wantCode(t, "validate t", errs[0], nil)
	wantCode(t, "validate u", errs[1], kerr.InvalidPartitions)
	wantCode(t, "validate v", errs[2], kerr.InvalidReplicaAssignment)
	if len(h.q.batches) != n || len(h.c.Image().Topics.Get("t").Partitions) != 5 {
		t.Fatal("validate_only wrote records")
	}

	// Automatic placement needs enough usable brokers.
	h.addBroker(4, true)
	h.mustCreate(manualReq("wide", []int32{1, 2, 3, 4}))
	errs = h.createPartitions(partsReq(false, partsTopic("wide", 2)))
	wantCode(t, "rf above usable brokers", errs[0], kerr.InvalidReplicationFactor)
	// A manual assignment whose replicas are all fenced is refused.
	h.mustCreate(manualReq("one", []int32{1}))
	errs = h.createPartitions(partsReq(false, partsTopic("one", 2, []int32{4})))
	wantCode(t, "all fenced", errs[0], kerr.InvalidReplicaAssignment)
	_ = res
}

func configChange(typ int8, name string, kv ...string) ConfigChange {
	ch := ConfigChange{Type: typ, Name: name, Replace: map[string]*string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		v := kv[i+1]
		ch.Replace[kv[i]] = &v
	}
	return ch
}

func incOp(name string, op kmsg.IncrementalAlterConfigOp, value ...string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op = name, op
	if len(value) > 0 {
		c.Value = &value[0]
	}
	return c
}

func incChange(typ int8, name string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) ConfigChange {
	return ConfigChange{Type: typ, Name: name, Ops: ops, Incremental: true}
}

func (h *harness) alter(validateOnly bool, changes ...ConfigChange) []error {
	h.t.Helper()
	res, err := h.c.AlterConfigs(changes, validateOnly)
	if err != nil {
		h.t.Fatal(err)
	}
	if res.Offset != h.q.end-1 {
		h.t.Fatalf("offset = %d, end = %d", res.Offset, h.q.end)
	}
	return res.Errs
}

func TestAlterConfigsReplacesTheWholeSet(t *testing.T) {
	h := newCluster(t, 1, nil)
	h.mustCreate(topicReq("t", 1, 1, "retention.ms", "100", "segment.bytes", "1048576"))
	from := len(h.q.batches)
	errs := h.alter(false, configChange(metadata.ResourceTopic, "t", "retention.ms", "200", "cleanup.policy", "compact"))
	wantCode(t, "replace", errs[0], nil)
	if got := h.c.Image().TopicConfig("t"); !maps.Equal(got, map[string]string{"retention.ms": "200", "cleanup.policy": "compact"}) {
		t.Fatalf("configs = %v (segment.bytes must be removed)", got)
	}
	// One record per changed key: a delete for the key left out, sets for
	// the changed and new ones.
	var got []string
	for _, r := range h.q.recordsSince(from) {
		cr := r.(*metadata.ConfigRecord)
		v := "<nil>"
		if cr.Value != nil {
			v = *cr.Value
		}
		got = append(got, cr.Name+"="+v)
	}
	if want := []string{"segment.bytes=<nil>", "cleanup.policy=compact", "retention.ms=200"}; !slices.Equal(got, want) {
		t.Fatalf("records %v, want %v", got, want)
	}

	// An unchanged set writes nothing; an empty set removes everything.
	n := len(h.q.batches)
	h.alter(false, configChange(metadata.ResourceTopic, "t", "retention.ms", "200", "cleanup.policy", "compact"))
	if len(h.q.batches) != n {
		t.Fatal("an unchanged config set wrote records")
	}
	wantCode(t, "clear", h.alter(false, configChange(metadata.ResourceTopic, "t"))[0], nil)
	if len(h.c.Image().TopicConfig("t")) != 0 {
		t.Fatalf("configs = %v", h.c.Image().TopicConfig("t"))
	}

	nullValue := configChange(metadata.ResourceTopic, "t")
	nullValue.Replace["retention.ms"] = nil
	errs = h.alter(false,
		configChange(metadata.ResourceTopic, "nope", "retention.ms", "1"),
		configChange(metadata.ResourceTopic, "t", "retention.ms", "x"),
		configChange(metadata.ResourceTopic, "t", "no.such.key", "1"),
		nullValue,
		ConfigChange{Type: 3, Name: "g"},
	)
	wantCode(t, "unknown topic", errs[0], kerr.UnknownTopicOrPartition)
	wantCode(t, "bad value (duplicate resource)", errs[1], kerr.InvalidRequest)
	wantCode(t, "unknown key (duplicate resource)", errs[2], kerr.InvalidRequest)
	wantCode(t, "null (duplicate resource)", errs[3], kerr.InvalidRequest)
	wantCode(t, "group resource", errs[4], kerr.InvalidRequest)
	for _, ch := range []ConfigChange{
		configChange(metadata.ResourceTopic, "t", "retention.ms", "x"),
		configChange(metadata.ResourceTopic, "t", "no.such.key", "1"),
		nullValue,
	} {
		wantCode(t, "invalid", h.alter(false, ch)[0], kerr.InvalidConfig)
	}
	if len(h.c.Image().TopicConfig("t")) != 0 {
		t.Fatal("a failed change wrote configs")
	}

	// validate_only: no records, errors still reported.
	n = len(h.q.batches)
	errs = h.alter(true, configChange(metadata.ResourceTopic, "t", "retention.ms", "1"),
		configChange(metadata.ResourceBroker, "", "log.retention.ms", "-5x"))
	wantCode(t, "validate ok", errs[0], nil)
	wantCode(t, "validate bad", errs[1], kerr.InvalidConfig)
	if len(h.q.batches) != n {
		t.Fatal("validate_only wrote records")
	}
}

func TestAlterConfigsBrokers(t *testing.T) {
	h := newCluster(t, 2, nil)
	errs := h.alter(false,
		configChange(metadata.ResourceBroker, "", "log.retention.ms", "1000"),
		configChange(metadata.ResourceBroker, "1", "log.retention.ms", "2000", "min.insync.replicas", "2"),
	)
	wantCode(t, "cluster default", errs[0], nil)
	wantCode(t, "broker 1", errs[1], nil)
	im := h.c.Image()
	if im.BrokerConfig("")["log.retention.ms"] != "1000" || im.BrokerConfig("1")["log.retention.ms"] != "2000" || len(im.BrokerConfig("2")) != 0 {
		t.Fatalf("broker configs = %v", im.Configs)
	}
	errs = h.alter(false,
		configChange(metadata.ResourceBroker, "2", "log.dirs", "/tmp/x"),         // read-only
		configChange(metadata.ResourceBroker, "", "listeners", "PLAINTEXT://:1"), // read at start-up only
		configChange(metadata.ResourceBroker, "abc", "log.retention.ms", "1"),
		configChange(metadata.ResourceBroker, "1.5", "log.retention.ms", "1"),
		configChange(metadata.ResourceTopic, "", "retention.ms", "1"),
		configChange(metadata.ResourceBroker, "1", "log.retention.ms", "5", "ssl.keystore.location", "/ks.jks"), // no TLS
	)
	wantCode(t, "read-only", errs[0], kerr.InvalidConfig)
	wantCode(t, "start-up only key", errs[1], kerr.InvalidConfig)
	wantCode(t, "non-numeric broker", errs[2], kerr.InvalidRequest)
	wantCode(t, "non-integer broker", errs[3], kerr.InvalidRequest)
	wantCode(t, "unnamed topic", errs[4], kerr.UnknownTopicOrPartition)
	wantCode(t, "ssl key", errs[5], kerr.InvalidConfig)
	wantCode(t, "super.users", h.alter(false, configChange(metadata.ResourceBroker, "", "super.users", "User:admin"))[0], kerr.InvalidConfig)
	if len(h.c.Image().BrokerConfig("2")) != 0 || h.c.Image().BrokerConfig("")["listeners"] != "" ||
		h.c.Image().BrokerConfig("1")["log.retention.ms"] != "2000" || len(h.c.Image().BrokerConfig("")) != 1 {
		t.Fatal("a refused change was written")
	}
}

func TestIncrementalAlterConfigs(t *testing.T) {
	h := newCluster(t, 1, nil)
	h.mustCreate(topicReq("t", 1, 1, "retention.ms", "100", "segment.bytes", "1048576"))
	set, del := kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete
	app, sub := kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract
	cfg := func() map[string]string { return h.c.Image().TopicConfig("t") }

	// SET and DELETE touch only the keys named.
	errs := h.alter(false, incChange(metadata.ResourceTopic, "t", incOp("retention.ms", set, "300"), incOp("segment.bytes", del)))
	wantCode(t, "set+delete", errs[0], nil)
	if !maps.Equal(cfg(), map[string]string{"retention.ms": "300"}) {
		t.Fatalf("configs = %v", cfg())
	}
	// DELETE of a key that is not set is fine and writes nothing.
	n := len(h.q.batches)
	wantCode(t, "delete unset", h.alter(false, incChange(metadata.ResourceTopic, "t", incOp("segment.ms", del)))[0], nil)
	if len(h.q.batches) != n {
		t.Fatal("deleting an unset key wrote records")
	}

	// APPEND starts from the default of an unset list key (cleanup.policy
	// defaults to delete) and skips values already there.
	wantCode(t, "append", h.alter(false, incChange(metadata.ResourceTopic, "t", incOp("cleanup.policy", app, "compact")))[0], nil)
	if got := cfg()["cleanup.policy"]; got != "delete,compact" {
		t.Fatalf("cleanup.policy after APPEND compact = %q", got)
	}
	wantCode(t, "append again", h.alter(false, incChange(metadata.ResourceTopic, "t", incOp("cleanup.policy", app, "compact,delete")))[0], nil)
	if got := cfg()["cleanup.policy"]; got != "delete,compact" {
		t.Fatalf("cleanup.policy after a second APPEND = %q", got)
	}
	wantCode(t, "subtract", h.alter(false, incChange(metadata.ResourceTopic, "t", incOp("cleanup.policy", sub, "delete")))[0], nil)
	if got := cfg()["cleanup.policy"]; got != "compact" {
		t.Fatalf("cleanup.policy after SUBTRACT delete = %q", got)
	}
	wantCode(t, "subtract all", h.alter(false, incChange(metadata.ResourceTopic, "t", incOp("cleanup.policy", sub, "compact")))[0], nil)
	if got, ok := cfg()["cleanup.policy"]; !ok || got != "" {
		t.Fatalf("cleanup.policy after subtracting everything = %q, %v", got, ok)
	}
	// APPEND to a list explicitly set empty starts from empty, not from
	// the default (Kafka uses the default only when the key is unset).
	wantCode(t, "append to empty", h.alter(false, incChange(metadata.ResourceTopic, "t", incOp("cleanup.policy", app, "compact")))[0], nil)
	if got := cfg()["cleanup.policy"]; got != "compact" {
		t.Fatalf("cleanup.policy after APPEND to an empty list = %q", got)
	}

	errs = h.alter(false,
		incChange(metadata.ResourceTopic, "t", incOp("retention.ms", app, "5")),
		incChange(metadata.ResourceTopic, "nope", incOp("retention.ms", set, "5")),
	)
	wantCode(t, "append to a non-list", errs[0], kerr.InvalidConfig)
	wantCode(t, "unknown topic", errs[1], kerr.UnknownTopicOrPartition)
	for name, ch := range map[string]ConfigChange{
		"subtract from a non-list": incChange(metadata.ResourceTopic, "t", incOp("retention.ms", sub, "5")),
		"duplicate key":            incChange(metadata.ResourceTopic, "t", incOp("retention.ms", set, "1"), incOp("retention.ms", del)),
		"null set":                 incChange(metadata.ResourceTopic, "t", incOp("retention.ms", set)),
		"invalid value":            incChange(metadata.ResourceTopic, "t", incOp("retention.ms", set, "x")),
		"unknown key":              incChange(metadata.ResourceTopic, "t", incOp("no.such.key", set, "1")),
	} {
		wantCode(t, name, h.alter(false, ch)[0], kerr.InvalidConfig)
	}
	wantCode(t, "unknown op", h.alter(false, incChange(metadata.ResourceTopic, "t", incOp("retention.ms", 9, "1")))[0], kerr.InvalidRequest)
	wantCode(t, "duplicate resource", h.alter(false,
		incChange(metadata.ResourceTopic, "t", incOp("retention.ms", set, "1")),
		incChange(metadata.ResourceTopic, "t", incOp("segment.ms", set, "1")))[1], kerr.InvalidRequest)
	if !maps.Equal(cfg(), map[string]string{"retention.ms": "300", "cleanup.policy": "compact"}) {
		t.Fatalf("refused changes were written: %v", cfg())
	}

	// Brokers: per broker id and the cluster default.
	errs = h.alter(false,
		incChange(metadata.ResourceBroker, "1", incOp("log.cleanup.policy", app, "compact")),
		incChange(metadata.ResourceBroker, "", incOp("log.retention.ms", set, "5000")),
		incChange(metadata.ResourceBroker, "x", incOp("log.retention.ms", set, "5000")),
		incChange(metadata.ResourceBroker, "2", incOp("node.id", set, "7")),
	)
	wantCode(t, "broker 1 append", errs[0], nil)
	wantCode(t, "default set", errs[1], nil)
	wantCode(t, "broker x", errs[2], kerr.InvalidRequest)
	wantCode(t, "read-only", errs[3], kerr.InvalidConfig)
	im := h.c.Image()
	if im.BrokerConfig("1")["log.cleanup.policy"] != "delete,compact" || im.BrokerConfig("")["log.retention.ms"] != "5000" {
		t.Fatalf("broker configs = %v", im.Configs)
	}
	wantCode(t, "broker delete", h.alter(false, incChange(metadata.ResourceBroker, "", incOp("log.retention.ms", del)))[0], nil)
	if len(h.c.Image().BrokerConfig("")) != 0 {
		t.Fatalf("cluster default configs = %v", h.c.Image().BrokerConfig(""))
	}
}

func TestAllocateProducerIDs(t *testing.T) {
	h := newCluster(t, 2, nil)
	seen := map[int64]bool{}
	next := int64(0)
	for i := range 6 {
		id := int32(1 + i%2)
		block, err := h.c.AllocateProducerIDs(id, h.epochs[id])
		if err != nil {
			t.Fatal(err)
		}
		first, n := block.First, block.Size
		if first != next || n != ProducerIDBlockSize || seen[first] {
			t.Fatalf("block %d: first %d, size %d; want first %d", i, first, n, next)
		}
		seen[first] = true
		next = first + int64(n)
		if h.c.Image().NextProducerID != next {
			t.Fatalf("image NextProducerID = %d, want %d", h.c.Image().NextProducerID, next)
		}
		last := h.q.batches[len(h.q.batches)-1].Records[0].(*metadata.ProducerIdsRecord)
		if last.BrokerId != id || last.BrokerEpoch != h.epochs[id] || last.NextProducerId != next {
			t.Fatalf("record = %+v", last)
		}
	}
	n := len(h.q.batches)
	for _, tc := range []struct {
		id    int32
		epoch int64
	}{{1, h.epochs[1] + 1}, {2, h.epochs[1]}, {9, 0}} {
		if _, err := h.c.AllocateProducerIDs(tc.id, tc.epoch); !errors.Is(err, kerr.StaleBrokerEpoch) {
			t.Fatalf("broker %d epoch %d: %v, want STALE_BROKER_EPOCH", tc.id, tc.epoch, err)
		}
	}
	// A re-registered broker must use its new epoch.
	old := h.epochs[1]
	h.addBroker(1, false)
	if _, err := h.c.AllocateProducerIDs(1, old); !errors.Is(err, kerr.StaleBrokerEpoch) {
		t.Fatalf("old epoch after re-registration: %v", err)
	}
	if len(h.q.batches) != n+2 { // only the registration and the unfence
		t.Fatalf("refused allocations wrote records")
	}
	if block, err := h.c.AllocateProducerIDs(1, h.epochs[1]); err != nil || block.First != next {
		t.Fatalf("after re-registration: first %d, %v", block.First, err)
	}
}

// TestBrokerInControlledShutdownIsNotActive: Kafka places no new replica
// on a broker shutting down and leaves it out of a new partition's ISR.
func TestBrokerInControlledShutdownIsNotActive(t *testing.T) {
	h := newCluster(t, 3, nil)
	if _, err := h.q.Append([]metadata.Record{&metadata.BrokerRegistrationChangeRecord{
		RecordVersion: 1, BrokerId: 2, BrokerEpoch: h.epochs[2], InControlledShutdown: 1}}); err != nil {
		t.Fatal(err)
	}
	h.mustCreate(manualReq("m", []int32{2, 3}))
	if p := h.c.Image().Topics.Get("m").Partitions[0]; p.Leader != 3 || !slices.Equal(p.ISR, []int32{3}) {
		t.Fatalf("partition = %+v", p)
	}
	_, errs, _ := h.create(false, manualReq("only-2", []int32{2}))
	wantCode(t, "only a broker shutting down", errs[0], kerr.InvalidReplicaAssignment)
	h.mustCreate(topicReq("auto", 4, 2))
	for _, p := range h.c.Image().Topics.Get("auto").Partitions {
		if p.HasReplica(2) {
			t.Fatalf("partition %d placed on a broker shutting down: %v", p.ID, p.Replicas)
		}
	}
	_, errs, _ = h.create(false, topicReq("rf3", 1, 3))
	wantCode(t, "rf 3 with 2 usable brokers", errs[0], kerr.InvalidReplicationFactor)
}

// A client request that would commit more than MaxRecordsPerUserOp
// records is refused whole (POLICY_VIOLATION), as Kafka's BoundedList of
// records refuses it, and commits nothing.
func TestUserOpRecordBound(t *testing.T) {
	h := newCluster(t, 1, nil)
	const topics = MaxRecordsPerUserOp + 200
	// The topics are committed directly: through CreateTopics they would
	// take many requests, each applying its topics one by one.
	var all []TopicRef
	var recs []metadata.Record
	for i := range topics {
		name := fmt.Sprintf("t%d", i)
		all = append(all, TopicRef{Name: name})
		id := newUUID()
		pr := metadata.NewPartitionRecord()
		pr.TopicId, pr.Replicas, pr.Isr, pr.Leader = id, []int32{1}, []int32{1}, 1
		pr.SetVersion(0)
		recs = append(recs, &metadata.TopicRecord{Name: name, TopicId: id}, pr)
	}
	if _, err := h.q.Append(recs); err != nil {
		t.Fatal(err)
	}
	from := len(h.q.batches)
	_, err := h.c.DeleteTopics(all)
	wantCode(t, "deleting too many topics at once", err, kerr.PolicyViolation)
	if len(h.q.batches) != from || h.c.Image().Topics.Len() != topics {
		t.Fatalf("a refused request committed %d batches", len(h.q.batches)-from)
	}
	deleted, err := h.c.DeleteTopics(all[:MaxRecordsPerUserOp])
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "deleting the most topics at once", deleted.Errs[0], nil)
	if n := h.c.Image().Topics.Len(); n != topics-MaxRecordsPerUserOp {
		t.Fatalf("%d topics left, want %d", n, topics-MaxRecordsPerUserOp)
	}
}
