package kafka_test

// Hostile requests: type-valid requests no client should send, each
// answered with Kafka's error, after which the node is still alive, serves
// a normal client, and has not grown its memory beyond a bound.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/log"
	"weir/internal/record"
	"weir/internal/servertest"
)

// hostileMemoryBound is how much the test process (which runs the node) may
// grow its peak resident memory while a hostile request is served.
const hostileMemoryBound = 256 << 20

// peakRSS reports the process's peak resident set size (VmHWM), in bytes.
func peakRSS(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("parsing VmHWM %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Skip("no VmHWM in /proc/self/status")
	return 0
}

// memoryBounded runs fn and fails the test if the process's peak resident
// memory grew by more than hostileMemoryBound meanwhile. The peak is reset
// first (clear_refs 5), so earlier tests' peaks do not hide this one's.
func memoryBounded(t *testing.T, what string, fn func()) {
	t.Helper()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Logf("cannot reset the peak RSS (%v): memory not checked", err)
		fn()
		return
	}
	before := peakRSS(t)
	fn()
	if grew := peakRSS(t) - before; grew > hostileMemoryBound {
		t.Fatalf("%s: peak memory grew by %d MiB (bound %d MiB)", what, grew>>20, hostileMemoryBound>>20)
	}
}

// serving checks the node is alive and serves a normal client: a record
// produced with kgo to a fresh topic is consumed back.
func serving(t *testing.T, n *servertest.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := dial(t, n.Addr)
	topic := fmt.Sprintf("canary-%d", time.Now().UnixNano())
	w.createTopic(topic, 1, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr), kgo.DefaultProduceTopic(topic),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("alive")}).FirstErr(); err != nil {
		t.Fatalf("node no longer serves produce: %v", err)
	}
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("node no longer serves fetch: %v", err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetching %s-%d: %v", topic, p, err) })
		if rs := fs.Records(); len(rs) > 0 {
			if string(rs[0].Value) != "alive" {
				t.Fatalf("fetched %q, want \"alive\"", rs[0].Value)
			}
			return
		}
	}
}

// wantError checks an answer's code and message.
func wantError(t *testing.T, what string, code int16, msg *string, want *kerr.Error, wantMsg string) {
	t.Helper()
	wantCode(t, what, code, want)
	if wantMsg != "" && str(msg) != wantMsg {
		t.Errorf("%s: message %q, want %q", what, str(msg), wantMsg)
	}
}

// Partition counts are bounded per request before anything is placed:
// more than 10000 new partitions over a CreateTopics or CreatePartitions
// request is POLICY_VIOLATION for every topic (validating only or not),
// and a request whose records would exceed 10000 is refused whole, as
// Kafka's controller does.
func TestHostilePartitionCounts(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: noAutoCreate})
	w := dial(t, n.Addr)
	w.createTopic("grow", 1, nil)
	const tooMany = "Excessively large number of partitions per request."
	const tooLarge = "Unable to perform excessively large batch operation."

	createTopics := func(validate bool, counts map[string]int32) *kmsg.CreateTopicsResponse {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(7)
		req.TimeoutMillis, req.ValidateOnly = 10000, validate
		for name, c := range counts {
			ct := kmsg.NewCreateTopicsRequestTopic()
			ct.Topic, ct.NumPartitions, ct.ReplicationFactor = name, c, 1
			req.Topics = append(req.Topics, ct)
		}
		return w.do(req).(*kmsg.CreateTopicsResponse)
	}
	createPartitions := func(validate bool, counts map[string]int32) *kmsg.CreatePartitionsResponse {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.SetVersion(3)
		req.TimeoutMillis, req.ValidateOnly = 10000, validate
		for name, c := range counts {
			ct := kmsg.NewCreatePartitionsRequestTopic()
			ct.Topic, ct.Count = name, c
			req.Topics = append(req.Topics, ct)
		}
		return w.do(req).(*kmsg.CreatePartitionsResponse)
	}

	for _, validate := range []bool{true, false} {
		for _, tc := range []struct {
			name   string
			counts map[string]int32
			msg    string
		}{
			{"max int32", map[string]int32{"huge": 2147483647}, tooMany},
			{"two topics over the bound together", map[string]int32{"half-a": 6000, "half-b": 6000}, tooMany},
			{"bound plus the topic record", map[string]int32{"edge": 10000}, tooLarge},
		} {
			what := fmt.Sprintf("CreateTopics %s (validate only %v)", tc.name, validate)
			memoryBounded(t, what, func() {
				resp := createTopics(validate, tc.counts)
				if len(resp.Topics) != len(tc.counts) {
					t.Fatalf("%s: %d topics answered", what, len(resp.Topics))
				}
				for _, rt := range resp.Topics {
					wantError(t, what+" "+rt.Topic, rt.ErrorCode, rt.ErrorMessage, kerr.PolicyViolation, tc.msg)
				}
			})
		}
		for _, counts := range []map[string]int32{{"grow": 2147483647}, {"grow": 10002}} {
			what := fmt.Sprintf("CreatePartitions to %d (validate only %v)", counts["grow"], validate)
			memoryBounded(t, what, func() {
				resp := createPartitions(validate, counts)
				if len(resp.Topics) != 1 {
					t.Fatalf("%s: %d topics answered", what, len(resp.Topics))
				}
				wantError(t, what, resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, kerr.PolicyViolation, tooMany)
			})
		}
	}
	// Nothing was created; within the bounds requests still succeed.
	for _, name := range []string{"huge", "half-a", "half-b", "edge"} {
		wantCode(t, "metadata of "+name, w.metadataTopic(name, false).ErrorCode, kerr.UnknownTopicOrPartition)
	}
	if got := len(w.metadataTopic("grow", false).Partitions); got != 1 {
		t.Fatalf("grow has %d partitions, want 1", got)
	}
	wantOK(t, "CreateTopics within the bound", createTopics(true, map[string]int32{"fits": 9999}).Topics[0].ErrorCode)
	wantOK(t, "CreatePartitions within the bound", createPartitions(false, map[string]int32{"grow": 3}).Topics[0].ErrorCode)
	serving(t, n)
}

// Auto-creation through Metadata is bounded as CreateTopics is: a request
// naming more unknown topics than one request may create creates none.
func TestHostileAutoCreateMany(t *testing.T) {
	n := servertest.Start(t, servertest.Options{})
	w := dial(t, n.Addr)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	req.AllowAutoTopicCreation = true
	for i := range 10001 {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(fmt.Sprintf("auto-%d", i))
		req.Topics = append(req.Topics, mt)
	}
	memoryBounded(t, "Metadata auto-creating 10001 topics", func() {
		resp := w.do(req).(*kmsg.MetadataResponse)
		if len(resp.Topics) != len(req.Topics) {
			t.Fatalf("%d topics answered, want %d", len(resp.Topics), len(req.Topics))
		}
		for _, mt := range resp.Topics {
			wantCode(t, str(mt.Topic), mt.ErrorCode, kerr.UnknownTopicOrPartition)
		}
	})
	serving(t, n)
}

// The metadata log's topic cannot be created, whatever the version,
// validating only or not, or through auto-creation; and its directory
// (here in the log directory, as when metadata.log.dir is not set) stays
// the Raft log's: the node restarts on it.
func TestHostileCreateMetadataTopic(t *testing.T) {
	dir := t.TempDir()
	n := servertest.Start(t, servertest.Options{Dir: dir, Overrides: map[string]string{"metadata.log.dir": dir + "/logs"}})
	w := dial(t, n.Addr)
	const prohibited = "Creation of internal topic __cluster_metadata is prohibited."
	for _, version := range []int16{0, 4, 7} {
		for _, validate := range []bool{false, true} {
			if version == 0 && validate {
				continue
			}
			req := kmsg.NewPtrCreateTopicsRequest()
			req.SetVersion(version)
			req.TimeoutMillis, req.ValidateOnly = 10000, validate
			for _, name := range []string{"__cluster_metadata", fmt.Sprintf("beside-%d-%v", version, validate)} {
				ct := kmsg.NewCreateTopicsRequestTopic()
				ct.Topic, ct.NumPartitions, ct.ReplicationFactor = name, 1, 1
				req.Topics = append(req.Topics, ct)
			}
			resp := w.do(req).(*kmsg.CreateTopicsResponse)
			what := fmt.Sprintf("CreateTopics v%d (validate only %v)", version, validate)
			if len(resp.Topics) != 2 {
				t.Fatalf("%s: %d topics answered", what, len(resp.Topics))
			}
			msg := prohibited
			if version == 0 {
				msg = "" // v0 carries no message
			}
			wantError(t, what, resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, kerr.InvalidRequest, msg)
			wantOK(t, what+" beside it", resp.Topics[1].ErrorCode)
		}
	}
	wantCode(t, "Metadata auto-creating __cluster_metadata", w.metadataTopic("__cluster_metadata", true).ErrorCode, kerr.UnknownTopicOrPartition)

	n.Restart()
	w = dial(t, n.Addr)
	wantOK(t, "a topic created beside it, after a restart", w.metadataTopic("beside-7-false", false).ErrorCode)
	wantCode(t, "__cluster_metadata after a restart", w.metadataTopic("__cluster_metadata", false).ErrorCode, kerr.UnknownTopicOrPartition)
	serving(t, n)
}

// internalOverrides give the internal topics one partition each, so a
// test knows which partition holds its group and transactional id.
var internalOverrides = map[string]string{
	"auto.create.topics.enable":            "false",
	"offsets.topic.num.partitions":         "1",
	"transaction.state.log.num.partitions": "1",
}

// useCoordinators commits an offset of group g and a transaction of
// transactional id tx through kgo, which creates both internal topics.
func useCoordinators(t *testing.T, n *servertest.Node, topic, g, tx string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := cliAdmin(t, n.Addr)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1, LeaderEpoch: -1})
	if resp, err := adm.CommitOffsets(ctx, g, offs); err != nil || resp.Error() != nil {
		t.Fatalf("committing offsets: %v %v", err, resp.Error())
	}
	cl := cliFranz(t, n.Addr, kgo.TransactionalID(tx), kgo.DefaultProduceTopic(topic))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("in a transaction")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	// CompleteCommit follows EndTxn's answer: wait for it, so that the
	// callers see __transaction_state settled.
	if _, err := txcSettled(t, ctx, adm, tx); err != nil {
		t.Fatal(err)
	}
}

// Clients cannot append to the internal topics: INVALID_TOPIC_EXCEPTION,
// nothing written, at every produce version; the coordinators' own writes
// go on.
func TestHostileProduceToInternalTopics(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: internalOverrides})
	w := dial(t, n.Addr)
	w.createTopic("data", 1, nil)
	useCoordinators(t, n, "data", "g", "tx")
	for _, topic := range []string{"__consumer_offsets", "__transaction_state", "__cluster_metadata"} {
		before := int64(-1)
		if topic != "__cluster_metadata" {
			before = w.endOffset(topic, 0)
		}
		for _, version := range []int16{2, 3, 7, produceVersion, 11} {
			// The topic is refused before the records are looked at.
			resp := w.do(produceRequest(version, -1, partData{topic, 0, batchOf(t, 2, "garbage")})).(*kmsg.ProduceResponse)
			p := producePart(t, resp, topic, 0)
			what := fmt.Sprintf("produce v%d to %s", version, topic)
			msg := ""
			if version >= 8 {
				msg = "Cannot append to internal topic " + topic
			}
			wantError(t, what, p.ErrorCode, p.ErrorMessage, kerr.InvalidTopicException, msg)
		}
		if topic != "__cluster_metadata" {
			if after := w.endOffset(topic, 0); after != before {
				t.Fatalf("%s grew from %d to %d", topic, before, after)
			}
		}
	}
	useCoordinators(t, n, "data", "g2", "tx")
	serving(t, n)
}

// appendRaw appends a batch to a stopped node's partition through the log
// package, as nothing on the wire may.
func appendRaw(t *testing.T, n *servertest.Node, topic string, batch []byte) {
	t.Helper()
	l, err := log.Open(partitionDir(n, topic, 0), log.TopicPartition{Topic: topic, Partition: 0}, log.DefaultConfig(), log.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAsLeader(batch, max(l.LatestEpoch(), 0)); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// skippedRecords reads weir_coordinator_loader_skipped_records_total of
// one coordinator.
func skippedRecords(t *testing.T, n *servertest.Node, coordinator string) float64 {
	t.Helper()
	mfs, err := n.Server.Metrics().Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "weir_coordinator_loader_skipped_records_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "coordinator" && l.GetValue() == coordinator {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no skipped-records counter for %s", coordinator)
	return 0
}

// A coordinator whose partition holds records it cannot read skips them
// (with an error log and a count in its metric) and serves the rest: the
// committed offsets are fetched and the transactional id starts anew.
func TestHostileGarbageInInternalTopicsLoads(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: internalOverrides})
	w := dial(t, n.Addr)
	w.createTopic("data", 1, nil)
	useCoordinators(t, n, "data", "g", "tx")

	n.Stop()
	appendRaw(t, n, "__consumer_offsets", buildBatch(t, batchHeader(), []record.Record{
		{Key: []byte{0, 1, 0}, Value: []byte("a truncated offset commit key")},
		{OffsetDelta: 1, Key: []byte{0, 2, 0, 1}, Value: []byte{0xff}}, // a truncated group metadata key
		{OffsetDelta: 2, Key: []byte{0}, Value: []byte("no key version")},
	}))
	appendRaw(t, n, "__transaction_state", buildBatch(t, batchHeader(), []record.Record{
		{Key: []byte{0, 0, 0, 9, 't'}, Value: []byte("a truncated key")},
		{OffsetDelta: 1, Key: []byte{0, 0, 0, 4, 'j', 'u', 'n', 'k'}, Value: []byte{0, 1, 2}}, // a truncated value
	}))
	n.Restart()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := cliAdmin(t, n.Addr)
	var fetched kadm.OffsetResponses
	for {
		var err error
		if fetched, err = adm.FetchOffsets(ctx, "g"); err == nil {
			break
		}
		if !errors.Is(err, kerr.CoordinatorLoadInProgress) || ctx.Err() != nil {
			t.Fatalf("fetching the offsets of g: %v", err)
		}
	}
	if o, ok := fetched.Lookup("data", 0); !ok || o.Err != nil || o.At != 1 {
		t.Fatalf("offset of g on data-0: %+v (%v)", o, ok)
	}
	useCoordinators(t, n, "data", "g", "tx") // InitProducerId of tx, and new commits
	if got := skippedRecords(t, n, "group"); got != 3 {
		t.Fatalf("group coordinator skipped %v records, want 3", got)
	}
	if got := skippedRecords(t, n, "transaction"); got != 2 {
		t.Fatalf("transaction coordinator skipped %v records, want 2", got)
	}
	serving(t, n)
}

// doExact sends req and decodes its answer, which must be exactly what
// kmsg encodes for the decoded response: nothing left over, nothing
// misread (a string longer than its version carries puts the rest out of
// step, and re-encoding it would differ).
func (w *wire) doExact(req kmsg.Request) kmsg.Response {
	w.t.Helper()
	corr := w.send(req)
	frame, err := w.readFrame()
	if err != nil {
		w.t.Fatal(err)
	}
	resp, err := decodeResponse(frame, req.Key(), req.GetVersion(), corr)
	if err != nil {
		w.t.Fatal(err)
	}
	body := frame[4:]
	if resp.IsFlexible() {
		body = body[1:] // the empty tagged fields of the response header
	}
	if again := resp.AppendTo(nil); string(again) != string(body) {
		w.t.Fatalf("%s v%d answer of %d bytes does not re-encode to itself (%d bytes): its framing is out of step",
			kmsg.NameForKey(req.Key()), req.GetVersion(), len(body), len(again))
	}
	return resp
}

// fits checks an answer's error message is within what a STRING carries
// and, when the request named a maximal name, that it was cut to it.
func fits(t *testing.T, what string, msg *string) {
	t.Helper()
	if msg == nil {
		t.Fatalf("%s: no error message", what)
	}
	if len(*msg) > 32767 {
		t.Fatalf("%s: error message of %d bytes", what, len(*msg))
	}
}

// Error messages naming a maximal (32767-byte) resource are cut to what
// the version's STRING carries, and answers of several entries stay in
// step, for every API and version that used to overflow.
func TestHostileLongStringsFit(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: noAutoCreate})
	w := dial(t, n.Addr)
	w.createTopic("grow", 1, nil)
	long := strings.Repeat("x", 32767)

	for v := int16(1); v <= 4; v++ {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(v)
		req.TimeoutMillis = 10000
		for _, name := range []string{long, fmt.Sprintf("fits-%d", v)} {
			ct := kmsg.NewCreateTopicsRequestTopic()
			ct.Topic, ct.NumPartitions, ct.ReplicationFactor = name, 1, 1
			req.Topics = append(req.Topics, ct)
		}
		resp := w.doExact(req).(*kmsg.CreateTopicsResponse)
		what := fmt.Sprintf("CreateTopics v%d", v)
		wantCode(t, what, resp.Topics[0].ErrorCode, kerr.InvalidTopicException)
		fits(t, what, resp.Topics[0].ErrorMessage)
		if len(resp.Topics) != 2 || resp.Topics[1].Topic != req.Topics[1].Topic {
			t.Fatalf("%s: answered %d topics", what, len(resp.Topics))
		}
		wantOK(t, what+" second topic", resp.Topics[1].ErrorCode)
	}
	for v := int16(0); v <= 1; v++ {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.SetVersion(v)
		req.TimeoutMillis, req.ValidateOnly = 10000, true
		for _, name := range []string{long, "grow"} {
			ct := kmsg.NewCreatePartitionsRequestTopic()
			ct.Topic, ct.Count = name, 2
			req.Topics = append(req.Topics, ct)
		}
		resp := w.doExact(req).(*kmsg.CreatePartitionsResponse)
		what := fmt.Sprintf("CreatePartitions v%d", v)
		wantCode(t, what, resp.Topics[0].ErrorCode, kerr.UnknownTopicOrPartition)
		fits(t, what, resp.Topics[0].ErrorMessage)
		if len(resp.Topics) != 2 || resp.Topics[1].Topic != "grow" {
			t.Fatalf("%s: answered %d topics", what, len(resp.Topics))
		}
		wantOK(t, what+" grow", resp.Topics[1].ErrorCode)
	}
	{
		req := kmsg.NewPtrElectLeadersRequest()
		req.SetVersion(0)
		req.TimeoutMillis = 10000
		for _, name := range []string{long, "grow"} {
			rt := kmsg.NewElectLeadersRequestTopic()
			rt.Topic, rt.Partitions = name, []int32{0}
			req.Topics = append(req.Topics, rt)
		}
		resp := w.doExact(req).(*kmsg.ElectLeadersResponse)
		if len(resp.Topics) != 2 || resp.Topics[1].Topic != "grow" || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("ElectLeaders v0: answered %+v", resp.Topics)
		}
		wantCode(t, "ElectLeaders v0", resp.Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
		fits(t, "ElectLeaders v0", resp.Topics[0].Partitions[0].ErrorMessage)
		wantCode(t, "ElectLeaders v0 grow", resp.Topics[1].Partitions[0].ErrorCode, kerr.ElectionNotNeeded)
	}
	{
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.SetVersion(1)
		for _, name := range []string{long, "grow"} {
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, name
			req.Resources = append(req.Resources, rr)
		}
		resp := w.doExact(req).(*kmsg.DescribeConfigsResponse)
		if len(resp.Resources) != 2 || resp.Resources[1].ResourceName != "grow" {
			t.Fatalf("DescribeConfigs v1: answered %d resources", len(resp.Resources))
		}
		wantCode(t, "DescribeConfigs v1", resp.Resources[0].ErrorCode, kerr.UnknownTopicOrPartition)
		fits(t, "DescribeConfigs v1", resp.Resources[0].ErrorMessage)
		wantOK(t, "DescribeConfigs v1 grow", resp.Resources[1].ErrorCode)
		if len(resp.Resources[1].Configs) == 0 {
			t.Fatal("DescribeConfigs v1: no configs of grow")
		}
	}
	{
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.SetVersion(0)
		req.ValidateOnly = true
		for _, name := range []string{long, "grow"} {
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, name
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Value = "retention.ms", kmsg.StringPtr("60000")
			rr.Configs = append(rr.Configs, c)
			req.Resources = append(req.Resources, rr)
		}
		resp := w.doExact(req).(*kmsg.IncrementalAlterConfigsResponse)
		if len(resp.Resources) != 2 || resp.Resources[1].ResourceName != "grow" {
			t.Fatalf("IncrementalAlterConfigs v0: answered %d resources", len(resp.Resources))
		}
		wantCode(t, "IncrementalAlterConfigs v0", resp.Resources[0].ErrorCode, kerr.UnknownTopicOrPartition)
		fits(t, "IncrementalAlterConfigs v0", resp.Resources[0].ErrorMessage)
		wantOK(t, "IncrementalAlterConfigs v0 grow", resp.Resources[1].ErrorCode)
	}
	w.ping()
	serving(t, n)
}

// An isolation level other than read_uncommitted (0) and read_committed
// (1) is INVALID_REQUEST: for the whole Fetch (from v7, and before v13
// for each of its partitions too), and for each partition of ListOffsets. It is never
// read as read_uncommitted.
func TestHostileIsolationLevel(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: noAutoCreate})
	w := dial(t, n.Addr)
	w.createTopic("iso", 2, nil)
	w.produceOK("iso", 0, batchOf(t, 3, "v"))
	id := w.metadataTopic("iso", false).TopicID

	for _, level := range []int8{2, 5, -1} {
		for _, version := range []int16{4, 11, 12, 13, 17} {
			req := fetchRequest(0, 0, 1<<20, fetchPart{"iso", 0, 0, 1 << 20}, fetchPart{"iso", 1, 0, 1 << 20})
			req.SetVersion(version)
			req.IsolationLevel = level
			req.Topics[0].TopicID = id
			resp := w.do(req).(*kmsg.FetchResponse)
			what := fmt.Sprintf("Fetch v%d, isolation level %d", version, level)
			if version >= 7 { // the top-level error
				wantCode(t, what, resp.ErrorCode, kerr.InvalidRequest)
			}
			var parts []kmsg.FetchResponseTopicPartition
			for _, rt := range resp.Topics {
				parts = append(parts, rt.Partitions...)
			}
			if version >= 13 {
				if len(parts) != 0 {
					t.Fatalf("%s: %d partitions answered, want none", what, len(parts))
				}
				continue
			}
			if len(parts) != 2 {
				t.Fatalf("%s: %d partitions answered, want 2", what, len(parts))
			}
			for _, p := range parts {
				wantCode(t, what, p.ErrorCode, kerr.InvalidRequest)
				if len(p.RecordBatches) != 0 {
					t.Fatalf("%s: records returned", what)
				}
			}
		}
		for _, version := range []int16{2, 9} {
			req := kmsg.NewPtrListOffsetsRequest()
			req.SetVersion(version)
			req.ReplicaID, req.IsolationLevel = -1, level
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = "iso"
			for _, p := range []int32{0, 1} {
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Partition, rp.Timestamp = p, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
			resp := w.do(req).(*kmsg.ListOffsetsResponse)
			for _, p := range resp.Topics[0].Partitions {
				what := fmt.Sprintf("ListOffsets v%d, isolation level %d, partition %d", version, level, p.Partition)
				wantCode(t, what, p.ErrorCode, kerr.InvalidRequest)
				if p.Offset != -1 {
					t.Fatalf("%s: offset %d", what, p.Offset)
				}
			}
		}
	}
	if got := len(w.readAll("iso", 0)); got != 3 {
		t.Fatalf("read %d records, want 3", got)
	}
	serving(t, n)
}

// apiKeys lists the keys a listener advertises in ApiVersions.
func apiKeys(t *testing.T, addr string) map[int16]bool {
	t.Helper()
	keys := map[int16]bool{}
	for _, k := range dial(t, addr).do(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse).ApiKeys {
		keys[k.ApiKey] = true
	}
	return keys
}

// As in Kafka, the brokers' controller APIs are served on the controller
// listener only, and the data, group and transaction APIs on broker
// listeners only: neither advertises the other's, and a request for one
// closes the connection, changing nothing.
func TestHostileAPIsOutsideTheirListener(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: noAutoCreate})
	w := dial(t, n.Addr)
	w.createTopic("scoped", 1, nil)
	brokers := len(n.Server.Image().Brokers)
	ctl := n.Server.Addr("CONTROLLER").String()
	controllerOnly := map[int16]string{56: "AlterPartition", 59: "FetchSnapshot", 62: "BrokerRegistration", 63: "BrokerHeartbeat", 67: "AllocateProducerIds"}
	brokerOnly := map[int16]string{0: "Produce", 2: "ListOffsets", 8: "OffsetCommit", 9: "OffsetFetch", 10: "FindCoordinator",
		11: "JoinGroup", 21: "DeleteRecords", 22: "InitProducerId", 23: "OffsetForLeaderEpoch", 24: "AddPartitionsToTxn",
		27: "WriteTxnMarkers", 28: "TxnOffsetCommit", 35: "DescribeLogDirs", 61: "DescribeProducers", 68: "ConsumerGroupHeartbeat"}

	onBroker, onController := apiKeys(t, n.Addr), apiKeys(t, ctl)
	for key, name := range controllerOnly {
		if onBroker[key] || !onController[key] {
			t.Errorf("%s: advertised on the broker listener %v, on the controller listener %v", name, onBroker[key], onController[key])
		}
	}
	for key, name := range brokerOnly {
		if !onBroker[key] || onController[key] {
			t.Errorf("%s: advertised on the broker listener %v, on the controller listener %v", name, onBroker[key], onController[key])
		}
	}

	reg := kmsg.NewPtrBrokerRegistrationRequest()
	reg.SetVersion(4)
	reg.BrokerID, reg.ClusterID, reg.IncarnationID = 77, n.Server.ClusterID(), [16]byte{7}
	reg.Listeners = []kmsg.BrokerRegistrationRequestListener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 1}}
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.SetVersion(1)
	hb.BrokerID, hb.BrokerEpoch, hb.WantShutdown = 1, n.Server.Image().Brokers[1].Epoch, true
	for _, req := range []kmsg.Request{reg, hb} {
		c := dial(t, n.Addr)
		c.send(req)
		c.expectClosed()
	}
	markers := kmsg.NewPtrWriteTxnMarkersRequest()
	markers.SetVersion(1)
	markers.Markers = []kmsg.WriteTxnMarkersRequestMarker{{ProducerID: 1, Topics: []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "scoped", Partitions: []int32{0}}}}}
	for _, req := range []kmsg.Request{produceRequest(produceVersion, -1, partData{"scoped", 0, batchOf(t, 1, "x")}), markers} {
		c := dial(t, ctl)
		c.send(req)
		c.expectClosed()
	}
	if got := len(n.Server.Image().Brokers); got != brokers {
		t.Fatalf("%d brokers registered, want %d", got, brokers)
	}
	if b := n.Server.Image().Brokers[1]; b.Fenced || b.InControlledShutdown {
		t.Fatalf("broker 1 fenced %v, shutting down %v", b.Fenced, b.InControlledShutdown)
	}
	if end := w.endOffset("scoped", 0); end != 0 {
		t.Fatalf("scoped-0 end offset %d, want 0", end)
	}
	serving(t, n)
}

// DeleteTopics of the coordinators' internal topics succeeds, as in Kafka
// 4 (whose brokers forward it to the controller, which checks nothing but
// the topic's existence: ACLs are the guard); the coordinators create
// them again on next use. __cluster_metadata is no topic of the image:
// UNKNOWN_TOPIC_OR_PARTITION.
func TestDeleteInternalTopics(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: internalOverrides})
	w := dial(t, n.Addr)
	w.createTopic("data", 1, nil)
	useCoordinators(t, n, "data", "g", "tx")
	for _, topic := range []string{"__consumer_offsets", "__transaction_state", "__cluster_metadata"} {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.SetVersion(6)
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics, req.TimeoutMillis = append(req.Topics, rt), 10000
		resp := w.do(req).(*kmsg.DeleteTopicsResponse)
		if len(resp.Topics) != 1 {
			t.Fatalf("DeleteTopics %s answered %d topics", topic, len(resp.Topics))
		}
		if topic == "__cluster_metadata" {
			wantCode(t, "DeleteTopics "+topic, resp.Topics[0].ErrorCode, kerr.UnknownTopicOrPartition)
			continue
		}
		wantOK(t, "DeleteTopics "+topic, resp.Topics[0].ErrorCode)
		wantCode(t, "metadata of deleted "+topic, w.metadataTopic(topic, false).ErrorCode, kerr.UnknownTopicOrPartition)
	}
	useCoordinators(t, n, "data", "g2", "tx2")
	for _, topic := range []string{"__consumer_offsets", "__transaction_state"} {
		wantOK(t, "metadata of recreated "+topic, w.metadataTopic(topic, false).ErrorCode)
	}
}
