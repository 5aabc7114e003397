package group

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnReq is a TxnOffsetCommit; the zero value is a v3 request of producer
// 1, epoch 0, naming no member and generation -1.
type txnReq struct {
	group          string
	pid            int64
	epoch          int16
	member         string
	gen            int32 // 0 means -1; use genSet for generation 0
	genSet         bool
	instance       string
	version        int16
	metadataLength int
}

func (h *harness) txnCommit(q txnReq, offsets map[string]int64) uint64 {
	h.t.Helper()
	r := kmsg.NewPtrTxnOffsetCommitRequest()
	r.Version = 3
	if q.version != 0 {
		r.Version = q.version
	}
	r.TransactionalID, r.Group, r.ProducerID, r.ProducerEpoch = "tx", q.group, q.pid, q.epoch
	if q.pid == 0 {
		r.ProducerID = 1
	}
	r.MemberID, r.Generation = q.member, -1
	if q.gen != 0 || q.genSet {
		r.Generation = q.gen
	}
	if q.instance != "" {
		r.InstanceID = &q.instance
	}
	for _, topic := range sortedKeys(offsets) {
		t := kmsg.NewTxnOffsetCommitRequestTopic()
		t.Topic = topic
		p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		p.Offset, p.LeaderEpoch = offsets[topic], 3
		md := "tx-" + topic
		if q.metadataLength > 0 {
			md = strings.Repeat("x", q.metadataLength)
		}
		p.Metadata = &md
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
	}
	return h.send("c", r)
}

// txnCodes flattens a TxnOffsetCommit response's codes.
func (h *harness) txnCodes(tok uint64) []int16 {
	h.t.Helper()
	r, ok := h.responses[tok].(*kmsg.TxnOffsetCommitResponse)
	if !ok {
		h.t.Fatalf("request %d: no TxnOffsetCommit response", tok)
	}
	var codes []int16
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			codes = append(codes, p.ErrorCode)
		}
	}
	return codes
}

func (h *harness) txnCode(q txnReq, offsets map[string]int64) int16 {
	h.t.Helper()
	return h.txnCodes(h.txnCommit(q, offsets))[0]
}

// controlRecord is a COMMIT or ABORT marker's record.
func controlRecord(commit bool) Record {
	k := kmsg.ControlRecordKey{Version: 0, Type: 0}
	if commit {
		k.Type = 1
	}
	v := kmsg.EndTxnMarker{Version: 0, CoordinatorEpoch: 0}
	return Record{Key: k.AppendTo(nil), Value: v.AppendTo(nil)}
}

// appendMarker appends a marker of pid to the log of the group's
// partition and returns its offset, without telling the coordinator.
func (h *harness) appendMarker(group string, pid int64, commit bool) int64 {
	p := h.c.PartitionFor(group)
	off := int64(len(h.log[p]))
	h.log[p] = append(h.log[p], LogRecord{Record: controlRecord(commit), Offset: off, Control: true, ProducerID: pid})
	return off
}

// marker appends a marker and reports it, as WriteTxnMarkers does.
func (h *harness) marker(group string, pid int64, commit bool) {
	h.t.Helper()
	off := h.appendMarker(group, pid, commit)
	h.apply(h.c.TxnMarker(h.now, h.c.PartitionFor(group), pid, commit, off))
}

// fetchStable is an OffsetFetch v7 with require_stable: partition 0 of each
// topic, its offset and error code.
func (h *harness) fetchStable(group string, topics ...string) (map[string]int64, map[string]int16) {
	h.t.Helper()
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version, r.Group, r.RequireStable = 7, group, true
	if topics != nil {
		for _, t := range topics {
			r.Topics = append(r.Topics, kmsg.OffsetFetchRequestTopic{Topic: t, Partitions: []int32{0}})
		}
	}
	resp := h.responses[h.send("c", r)].(*kmsg.OffsetFetchResponse)
	if resp.ErrorCode != 0 {
		h.t.Fatalf("fetch %s: error %d", group, resp.ErrorCode)
	}
	offsets, codes := make(map[string]int64), make(map[string]int16)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			offsets[t.Topic], codes[t.Topic] = p.Offset, p.ErrorCode
		}
	}
	return offsets, codes
}

// txnSnapshot describes a group's durable pending offsets.
func txnSnapshot(o *groupOffsets) string {
	if o == nil {
		return ""
	}
	var out []string
	for pid, tps := range o.txn {
		for tp, t := range tps {
			if t.durable != nil {
				out = append(out, fmt.Sprintf("%d:%s/%d=%+v", pid, tp.topic, tp.partition, *t.durable))
			}
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func TestTxnCommitVisibleAfterCommitMarker(t *testing.T) {
	h := newHarness(t, testConfig())
	h.autoPersist = false
	tok := h.txnCommit(txnReq{group: "g", pid: 7, epoch: 2}, map[string]int64{"t": 5, "u": 6})
	if len(h.pending) != 1 {
		t.Fatalf("%d writes", len(h.pending))
	}
	w := h.pending[0]
	if !w.Transactional || w.ProducerID != 7 || w.ProducerEpoch != 2 || len(w.Records) != 2 {
		t.Fatalf("write %+v", w)
	}
	if h.answered(tok) {
		t.Fatal("answered before its records persisted")
	}
	// In flight: already unstable.
	if _, codes := h.fetchStable("g", "t"); codes["t"] != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("stable fetch while writing: %v", codes)
	}
	h.persistAll()
	h.autoPersist = true
	for _, c := range h.txnCodes(tok) {
		wantCode(t, "txn commit", c, 0)
	}
	g := h.group("g")
	if g.state != Empty || g.protocolType != "" {
		t.Fatalf("created group %v %q", g.state, g.protocolType)
	}
	if got := h.fetch("g", "t", "u"); got["t"] != -1 || got["u"] != -1 {
		t.Fatalf("pending offsets visible: %v", got)
	}
	offs, codes := h.fetchStable("g", "t", "u", "v")
	if codes["t"] != kerr.UnstableOffsetCommit.Code || codes["u"] != kerr.UnstableOffsetCommit.Code || codes["v"] != 0 ||
		offs["t"] != -1 || offs["v"] != -1 {
		t.Fatalf("stable fetch: %v %v", offs, codes)
	}
	// Another producer's marker changes nothing.
	h.marker("g", 8, true)
	if got := h.fetch("g", "t"); got["t"] != -1 {
		t.Fatalf("other producer's marker committed: %v", got)
	}
	h.marker("g", 7, true)
	if got := h.fetch("g", "t", "u"); got["t"] != 5 || got["u"] != 6 {
		t.Fatalf("after commit marker: %v", got)
	}
	offs, codes = h.fetchStable("g", "t")
	if codes["t"] != 0 || offs["t"] != 5 {
		t.Fatalf("stable fetch after commit: %v %v", offs, codes)
	}
	o := h.offsets("g").committed[topicPartition{"t", 0}]
	if o.leaderEpoch != 3 || o.metadata != "tx-t" || o.commitTimestamp != t0.UnixMilli() || o.expireTimestamp != -1 {
		t.Fatalf("committed %+v", o)
	}
	if o := h.offsets("g"); o.txn != nil {
		t.Fatalf("pending left: %s", txnSnapshot(o))
	}
	// Fetch of all offsets with require_stable lists committed partitions.
	h.txnCommit(txnReq{group: "g", pid: 7, epoch: 2}, map[string]int64{"t": 9})
	_, codes = h.fetchStable("g")
	if codes["t"] != kerr.UnstableOffsetCommit.Code || codes["u"] != 0 {
		t.Fatalf("stable fetch of all: %v", codes)
	}
}

func TestTxnAbortDropsOffsets(t *testing.T) {
	h := newHarness(t, testConfig())
	wantCode(t, "plain commit", h.commitCodes(h.commit("g", "", -1, map[string]int64{"t": 3}))[0], 0)
	wantCode(t, "txn commit", h.txnCode(txnReq{group: "g", pid: 4}, map[string]int64{"t": 9, "u": 1}), 0)
	wantCode(t, "second txn commit", h.txnCode(txnReq{group: "g", pid: 4}, map[string]int64{"t": 10}), 0)
	h.marker("g", 4, false)
	if got := h.fetch("g", "t", "u"); got["t"] != 3 || got["u"] != -1 {
		t.Fatalf("after abort: %v", got)
	}
	if _, codes := h.fetchStable("g", "t", "u"); codes["t"] != 0 || codes["u"] != 0 {
		t.Fatalf("stable fetch after abort: %v", codes)
	}
	if o := h.offsets("g"); o.txn != nil {
		t.Fatalf("pending left: %s", txnSnapshot(o))
	}
	// The producer's next transaction commits its latest offsets.
	h.txnCommit(txnReq{group: "g", pid: 4}, map[string]int64{"t": 11})
	h.txnCommit(txnReq{group: "g", pid: 4}, map[string]int64{"t": 12})
	h.marker("g", 4, true)
	if got := h.fetch("g", "t"); got["t"] != 12 {
		t.Fatalf("after commit: %v", got)
	}
}

func TestTxnCommitKeepsLaterPlainCommit(t *testing.T) {
	h := newHarness(t, testConfig())
	// A plain commit after the transactional one wins...
	h.txnCommit(txnReq{group: "g", pid: 4}, map[string]int64{"t": 9, "u": 9})
	h.commit("g", "", -1, map[string]int64{"t": 2})
	h.marker("g", 4, true)
	if got := h.fetch("g", "t", "u"); got["t"] != 2 || got["u"] != 9 {
		t.Fatalf("plain commit after txn commit: %v", got)
	}
	// ...one before it loses.
	h.commit("g", "", -1, map[string]int64{"t": 3})
	h.txnCommit(txnReq{group: "g", pid: 5}, map[string]int64{"t": 20})
	h.marker("g", 5, true)
	if got := h.fetch("g", "t"); got["t"] != 20 {
		t.Fatalf("plain commit before txn commit: %v", got)
	}
	// Two producers: each marker ends its own offsets.
	h.txnCommit(txnReq{group: "g", pid: 6}, map[string]int64{"t": 30})
	h.txnCommit(txnReq{group: "g", pid: 7}, map[string]int64{"t": 40})
	h.marker("g", 7, true)
	if got := h.fetch("g", "t"); got["t"] != 40 {
		t.Fatalf("after producer 7: %v", got)
	}
	if _, codes := h.fetchStable("g", "t"); codes["t"] != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("producer 6 still pending: %v", codes)
	}
	h.marker("g", 6, true) // its record is earlier than producer 7's
	if got := h.fetch("g", "t"); got["t"] != 40 {
		t.Fatalf("after producer 6: %v", got)
	}
}

func TestTxnMarkerBeforePersisted(t *testing.T) {
	h := newHarness(t, testConfig())
	h.autoPersist = false
	// The write lands before the marker, but its report comes after it.
	tok := h.txnCommit(txnReq{group: "g", pid: 4}, map[string]int64{"t": 9})
	w := h.pending[0]
	h.pending = nil
	off := h.appendLog(w)
	h.marker("g", 4, true)
	h.apply(h.c.Persisted(h.now, w.ID, off, nil))
	wantCode(t, "txn commit", h.txnCodes(tok)[0], 0)
	if got := h.fetch("g", "t"); got["t"] != 9 {
		t.Fatalf("late report of a committed write: %v", got)
	}
	// An aborted one.
	h.txnCommit(txnReq{group: "g", pid: 4}, map[string]int64{"t": 10})
	w = h.pending[0]
	h.pending = nil
	off = h.appendLog(w)
	h.marker("g", 4, false)
	h.apply(h.c.Persisted(h.now, w.ID, off, nil))
	if got := h.fetch("g", "t"); got["t"] != 9 {
		t.Fatalf("late report of an aborted write: %v", got)
	}
	// A write that lands after the marker belongs to the next transaction.
	h.txnCommit(txnReq{group: "g", pid: 4}, map[string]int64{"t": 11})
	w = h.pending[0]
	h.pending = nil
	h.marker("g", 4, true)
	h.apply(h.c.Persisted(h.now, w.ID, h.appendLog(w), nil))
	if got := h.fetch("g", "t"); got["t"] != 9 {
		t.Fatalf("write after the marker committed: %v", got)
	}
	if _, codes := h.fetchStable("g", "t"); codes["t"] != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("write after the marker not pending: %v", codes)
	}
	h.autoPersist = true
	h.marker("g", 4, true)
	if got := h.fetch("g", "t"); got["t"] != 11 {
		t.Fatalf("next transaction: %v", got)
	}
	h.checkReplay()
}

func TestTxnFailedWrite(t *testing.T) {
	h := newHarness(t, testConfig())
	h.autoPersist = false
	tok := h.txnCommit(txnReq{group: "g", pid: 4}, map[string]int64{"t": 9})
	h.failWrites(kerr.NotLeaderForPartition)
	wantCode(t, "failed txn commit", h.txnCodes(tok)[0], kerr.NotCoordinator.Code)
	tok = h.txnCommit(txnReq{group: "g", pid: 4, epoch: 1}, map[string]int64{"t": 9})
	h.failWrites(kerr.InvalidProducerEpoch)
	wantCode(t, "fenced txn commit", h.txnCodes(tok)[0], kerr.InvalidProducerEpoch.Code)
	h.autoPersist = true
	if _, codes := h.fetchStable("g", "t"); codes["t"] != 0 {
		t.Fatalf("failed write left a pending offset: %v", codes)
	}
	if h.c.groups.byID["g"] != nil {
		t.Fatal("the group a failed write created is left")
	}
	h.marker("g", 4, true)
	if got := h.fetch("g", "t"); got["t"] != -1 {
		t.Fatalf("failed write committed: %v", got)
	}
	// A failure leaves an existing group's pending offsets as they were.
	h.txnCommit(txnReq{group: "g", pid: 4}, map[string]int64{"t": 7})
	h.autoPersist = false
	h.txnCommit(txnReq{group: "g", pid: 4}, map[string]int64{"t": 8})
	h.failWrites(kerr.NotLeaderForPartition)
	h.autoPersist = true
	h.marker("g", 4, true)
	if got := h.fetch("g", "t"); got["t"] != 7 {
		t.Fatalf("after a failed second commit: %v", got)
	}
	h.checkReplay()
}

func TestTxnOffsetCommitValidation(t *testing.T) {
	h := newHarness(t, testConfig())
	wantCode(t, "empty group id", h.txnCode(txnReq{group: ""}, map[string]int64{"t": 1}), kerr.InvalidGroupID.Code)
	wantCode(t, "unknown group with a generation", h.txnCode(txnReq{group: "new", member: "m", gen: 1}, map[string]int64{"t": 1}),
		kerr.IllegalGeneration.Code)
	if h.c.groups.byID["new"] != nil {
		t.Fatal("group created by a failed commit")
	}
	wantCode(t, "v0", h.txnCode(txnReq{group: "v0", version: 0}, map[string]int64{"t": 1}), 0)
	codes := h.txnCodes(h.txnCommit(txnReq{group: "v0", metadataLength: 4097}, map[string]int64{"t": 1, "u": 1}))
	wantCode(t, "metadata too large", codes[0], kerr.OffsetMetadataTooLarge.Code)

	a, ta := h.joinNew("g", "a", joinOpts{})
	tb := h.join("g", "b", "", joinOpts{instance: "sb"})
	h.tick()
	b := h.joinResp(tb).MemberID
	gen := h.joinResp(ta).Generation
	// CompletingRebalance does not stop transactional commits.
	wantCode(t, "completing rebalance", h.txnCode(txnReq{group: "g", member: a, gen: gen}, map[string]int64{"t": 1}), 0)
	gen = h.stable("g", map[string]uint64{a: ta, b: tb})
	for _, c := range []struct {
		what string
		q    txnReq
		want int16
	}{
		{"member and generation", txnReq{member: a, gen: gen}, 0},
		{"static member", txnReq{member: b, gen: gen, instance: "sb"}, 0},
		{"no member (v0-2 style) on a Stable group", txnReq{}, 0},
		{"generation -1 with a member", txnReq{member: a}, kerr.IllegalGeneration.Code},
		{"old generation", txnReq{member: a, gen: gen - 1}, kerr.IllegalGeneration.Code},
		{"unknown member", txnReq{member: "x", gen: gen}, kerr.UnknownMemberID.Code},
		{"generation without member", txnReq{gen: gen}, kerr.UnknownMemberID.Code},
		{"fenced instance", txnReq{member: a, gen: gen, instance: "sb"}, kerr.FencedInstanceID.Code},
		{"unknown instance", txnReq{member: a, gen: gen, instance: "zz"}, kerr.UnknownMemberID.Code},
	} {
		c.q.group = "g"
		wantCode(t, c.what, h.txnCode(c.q, map[string]int64{"t": 1}), c.want)
	}

	// Coordinator errors.
	p := h.c.PartitionFor("g")
	h.apply(h.c.UnloadPartition(h.now, p))
	wantCode(t, "not coordinator", h.txnCode(txnReq{group: "g"}, map[string]int64{"t": 1}), kerr.NotCoordinator.Code)
	h.apply(h.c.BeginLoad(h.now, p))
	wantCode(t, "loading", h.txnCode(txnReq{group: "g"}, map[string]int64{"t": 1}), kerr.CoordinatorLoadInProgress.Code)
}

func TestTxnOffsetCommitConsumerGroup(t *testing.T) {
	h := newHarness(t, cgConfig())
	h.setTopics(map[string]int32{"t": 3})
	m := h.newMember("g")
	wantCode(t, "join", h.beat(m).ErrorCode, 0)
	for _, c := range []struct {
		what string
		q    txnReq
		want int16
	}{
		{"member and epoch", txnReq{member: m.id, gen: m.epoch}, 0},
		{"anonymous", txnReq{}, 0},
		{"stale epoch", txnReq{member: m.id, gen: m.epoch + 1}, kerr.IllegalGeneration.Code},
		{"unknown member", txnReq{member: "x", gen: m.epoch}, kerr.UnknownMemberID.Code},
		{"epoch -1 with a member", txnReq{member: m.id}, kerr.IllegalGeneration.Code},
	} {
		c.q.group = "g"
		wantCode(t, c.what, h.txnCode(c.q, map[string]int64{"t": 1}), c.want)
	}
	h.marker("g", 1, true)
	if got := h.fetch("g", "t"); got["t"] != 1 {
		t.Fatalf("consumer group after commit: %v", got)
	}
	h.reload()
}

func TestTxnOffsetsAndDeletion(t *testing.T) {
	cfg := testConfig()
	cfg.OffsetsRetention = time.Hour
	h := newHarness(t, cfg)
	// OffsetDelete of a partition with only a pending offset writes a
	// tombstone that ends it.
	h.txnCommit(txnReq{group: "g", pid: 4}, map[string]int64{"t": 9})
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "g"
	od.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
	n := len(h.log[h.c.PartitionFor("g")])
	h.send("c", od)
	if recs := h.log[h.c.PartitionFor("g")]; len(recs) != n+1 || recs[n].Value != nil {
		t.Fatal("no tombstone for a pending offset")
	}
	h.marker("g", 4, true)
	if got := h.fetch("g", "t"); got["t"] != -1 {
		t.Fatalf("deleted pending offset committed: %v", got)
	}

	// Retention keeps a group whose only offsets are pending, and an
	// offset with a pending transactional one.
	h.commit("r", "", -1, map[string]int64{"u": 1})
	h.txnCommit(txnReq{group: "r", pid: 5}, map[string]int64{"t": 2, "u": 3})
	h.txnCommit(txnReq{group: "s", pid: 5}, map[string]int64{"t": 2})
	h.advance(2 * time.Hour)
	if h.c.groups.byID["s"] == nil || h.c.groups.byID["r"] == nil {
		t.Fatal("group with pending offsets deleted by retention")
	}
	if _, ok := h.offsets("r").committed[topicPartition{"u", 0}]; !ok {
		t.Fatal("offset with a pending transactional offset expired")
	}
	h.checkReplay()
	h.marker("r", 5, false)
	h.marker("s", 5, false)
	h.advance(2 * time.Hour)
	if h.c.groups.byID["s"] != nil || h.c.groups.byID["r"] != nil {
		t.Fatal("groups not deleted once their transactions ended")
	}

	// DeleteGroups tombstones pending offsets too.
	h.txnCommit(txnReq{group: "d", pid: 6}, map[string]int64{"t": 2})
	h.commit("d", "", -1, map[string]int64{"u": 2})
	if r := h.deleteGroups("d"); r[0].ErrorCode != 0 {
		t.Fatalf("delete: %v", r[0].ErrorCode)
	}
	h.marker("d", 6, true)
	if h.c.groups.byID["d"] != nil {
		t.Fatal("deleted group came back")
	}
	h.checkReplay()
}

func TestTxnMarkersWhileLoading(t *testing.T) {
	h := newHarness(t, testConfig())
	h.txnCommit(txnReq{group: "g", pid: 4}, map[string]int64{"t": 9})
	h.txnCommit(txnReq{group: "g", pid: 5}, map[string]int64{"u": 9})
	p := h.c.PartitionFor("g")
	h.apply(h.c.UnloadPartition(h.now, p))
	h.apply(h.c.BeginLoad(h.now, p))
	// The load reads the log before producer 5's marker, after 4's.
	h.marker("g", 4, true)
	recs := append([]LogRecord(nil), h.log[p]...)
	h.marker("g", 5, true)
	h.marker("g", 6, true) // nothing of 6's: ignored
	rd, err := h.c.LoadPartition(h.now, p, recs)
	if err != nil {
		t.Fatal(err)
	}
	h.apply(rd)
	if got := h.fetch("g", "t", "u"); got["t"] != 9 || got["u"] != 9 {
		t.Fatalf("after load: %v", got)
	}
	if o := h.offsets("g"); o.txn != nil {
		t.Fatalf("pending left: %s", txnSnapshot(o))
	}
	// A marker of a partition not led here is ignored.
	h.apply(h.c.UnloadPartition(h.now, p))
	h.apply(h.c.TxnMarker(h.now, p, 4, true, 1000))
}

func TestTxnReplay(t *testing.T) {
	h := newHarness(t, testConfig())
	a, ta := h.joinNew("g", "a", joinOpts{})
	gen := h.stable("g", map[string]uint64{a: ta})
	h.commit("g", a, gen, map[string]int64{"t": 1, "u": 1, "v": 1})
	h.txnCommit(txnReq{group: "g", pid: 4, member: a, gen: gen}, map[string]int64{"t": 2, "u": 2})
	h.txnCommit(txnReq{group: "g", pid: 5, member: a, gen: gen}, map[string]int64{"v": 3})
	h.commit("g", a, gen, map[string]int64{"u": 5})
	h.marker("g", 4, true)
	h.marker("g", 5, false)
	h.txnCommit(txnReq{group: "g", pid: 4, member: a, gen: gen}, map[string]int64{"t": 6, "w": 6}) // stays pending
	h.txnCommit(txnReq{group: "s", pid: 9}, map[string]int64{"t": 7})                              // pending only
	h.txnCommit(txnReq{group: "s2", pid: 9}, map[string]int64{"t": 7})
	h.marker("s2", 9, true)
	if got := h.fetch("g", "t", "u", "v", "w"); got["t"] != 2 || got["u"] != 5 || got["v"] != 1 || got["w"] != -1 {
		t.Fatalf("before replay: %v", got)
	}
	c := h.checkReplay()
	// The replayed coordinator goes on where the old one stopped.
	h.c = c
	h.marker("g", 4, true)
	if got := h.fetch("g", "t", "w"); got["t"] != 6 || got["w"] != 6 {
		t.Fatalf("after replay and commit: %v", got)
	}
	h.marker("s", 9, true)
	if got := h.fetch("s", "t"); got["t"] != 7 {
		t.Fatalf("simple group after replay and commit: %v", got)
	}
	h.checkReplay()
}

// checkReplay loads every partition's log into a new coordinator, checks
// that groups, offsets and pending transactional offsets come back the
// same, and returns it. The harness must be quiescent.
func (h *harness) checkReplay() *Coordinator {
	h.t.Helper()
	if len(h.pending) != 0 {
		h.t.Fatal("writes pending")
	}
	cfg := h.c.cfg
	cfg.Stats = &Stats{}
	fresh := New(cfg)
	for p := int32(0); p < h.c.cfg.OffsetsTopicPartitions; p++ {
		fresh.BeginLoad(h.now, p)
		rd, err := fresh.LoadPartition(h.now, p, h.log[p])
		if err != nil {
			h.t.Fatal(err)
		}
		_ = rd
	}
	want, got := snapshot(h.c), snapshot(fresh)
	for id := range want {
		if !reflect.DeepEqual(got[id], want[id]) {
			h.t.Errorf("group %s after replay:\n got %+v\nwant %+v", id, got[id], want[id])
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			h.t.Errorf("group %s only after replay: %+v", id, got[id])
		}
	}
	if h.t.(*testing.T).Failed() {
		h.t.FailNow()
	}
	return fresh
}

// The KIP-890 check the driver made goes with the transactional write.
func TestTxnWriteCarriesVerification(t *testing.T) {
	h := newHarness(t, testConfig())
	h.autoPersist = false
	r := kmsg.NewPtrTxnOffsetCommitRequest()
	r.Version, r.Group, r.ProducerID, r.ProducerEpoch = 3, "g", 9, 1
	r.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
	h.lastToken++
	h.apply(h.c.Handle(h.now, Request{Token: h.lastToken, Body: r, VerifyTxn: true, Guard: 77}))
	if len(h.pending) != 1 {
		t.Fatalf("%d writes", len(h.pending))
	}
	if w := h.pending[0]; !w.VerifyTxn || w.Guard != 77 || w.ProducerID != 9 || w.ProducerEpoch != 1 {
		t.Fatalf("write %+v", w)
	}
	h.persistAll()
	wantCode(t, "commit", h.txnCodes(h.lastToken)[0], 0)
}
