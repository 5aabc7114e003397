package kafka_test

// Bad input gets a clear Kafka error and changes nothing on disk: every
// rejected produce is checked against the partition's end offset and the
// sizes of its .log files before and after.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/record"
	"weir/internal/servertest"
	"weir/internal/testwait"
	"weir/internal/vfs"
	"weir/internal/vfs/vfstest"
)

var noAutoCreate = map[string]string{"auto.create.topics.enable": "false"}

// Batch header offsets (see the record package comment).
const (
	offLastOffsetDelta = 23
	offRecordCount     = 57
	controlBit         = 0x20
)

// rewrite changes a batch's header and recomputes its CRC, so the batch is
// well formed except for what was changed.
func rewrite(b []byte, fn func(b []byte)) []byte {
	b = bytes.Clone(b)
	fn(b)
	record.Batch(b).UpdateCRC()
	return b
}

func TestProduceRejectsBadBatchesAndWritesNothing(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: noAutoCreate})
	w := dial(t, n.Addr)
	w.createTopic("bad", 2, nil)
	w.createTopic("compacted", 1, map[string]string{"cleanup.policy": "compact"})
	w.createTopic("ts", 1, map[string]string{"message.timestamp.after.max.ms": "60000"})
	w.createTopic("small", 1, map[string]string{"max.message.bytes": "2048"})
	for _, tp := range []string{"bad", "compacted", "ts", "small"} {
		w.produceOK(tp, 0, batchOf(t, 2, "seed"))
	}

	good := func() []byte { return batchOf(t, 3, "v") }
	cases := []struct {
		name  string
		topic string
		batch []byte
		want  *kerr.Error
	}{
		{"bad CRC", "bad", func() []byte { b := good(); b[len(b)-1] ^= 0xff; return b }(), kerr.CorruptMessage},
		{"bad CRC field", "bad", func() []byte { b := good(); b[17] ^= 0x01; return b }(), kerr.CorruptMessage},
		{"magic 3", "bad", func() []byte { b := good(); b[16] = 3; return b }(), kerr.CorruptMessage},
		{"magic -1", "bad", func() []byte { b := good(); b[16] = 0xff; return b }(), kerr.CorruptMessage},
		{"legacy magic in a v3+ request", "bad", func() []byte { b := good(); b[16] = 1; return b }(), kerr.InvalidRecord},
		{"length below a batch header", "bad", rewrite(good(), func(b []byte) { binary.BigEndian.PutUint32(b[8:], 20) }), kerr.CorruptMessage},
		// Kafka finds no complete batch in a truncated one ("must have
		// at least one record batch per partition"): INVALID_RECORD.
		{"truncated batch", "bad", good()[:len(good())-7], kerr.InvalidRecord},
		{"truncated inside the header", "bad", good()[:40], kerr.InvalidRecord},
		{"empty records", "bad", []byte{}, kerr.InvalidRecord},
		{"two batches", "bad", append(good(), good()...), kerr.InvalidRecord},
		{"record count above offset range", "bad", rewrite(good(), func(b []byte) { binary.BigEndian.PutUint32(b[offRecordCount:], 4) }), kerr.InvalidRecord},
		{"record count below offset range", "bad", rewrite(good(), func(b []byte) { binary.BigEndian.PutUint32(b[offRecordCount:], 2) }), kerr.InvalidRecord},
		{"offset range above record count", "bad", rewrite(good(), func(b []byte) { binary.BigEndian.PutUint32(b[offLastOffsetDelta:], 5) }), kerr.InvalidRecord},
		{"non-sequential offset deltas", "bad", func() []byte {
			rs := testRecords(3, "gap")
			rs[1].OffsetDelta, rs[2].OffsetDelta = 2, 2
			return buildBatch(t, batchHeader(), rs)
		}(), kerr.InvalidRecord},
		{"control batch", "bad", func() []byte {
			h := batchHeader()
			h.Attributes = controlBit
			return buildBatch(t, h, testRecords(1, "ctl"))
		}(), kerr.InvalidRecord},
		{"record without key on a compacted topic", "compacted", func() []byte {
			rs := testRecords(3, "c")
			rs[1].Key = nil
			return buildBatch(t, batchHeader(), rs)
		}(), kerr.InvalidRecord},
		{"timestamp beyond message.timestamp.after.max.ms", "ts", func() []byte {
			h := batchHeader()
			h.BaseTimestamp = time.Now().Add(time.Hour).UnixMilli()
			h.MaxTimestamp = h.BaseTimestamp
			return buildBatch(t, h, testRecords(2, "future"))
		}(), kerr.InvalidTimestamp},
		{"batch over the topic's max.message.bytes", "small", buildBatch(t, batchHeader(),
			[]record.Record{{Key: []byte("k"), Value: bytes.Repeat([]byte("x"), 3000)}}), kerr.MessageTooLarge},
	}
	for _, version := range []int16{3, 7, produceVersion, 11} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("v%d/%s", version, tc.name), func(t *testing.T) {
				w := dial(t, n.Addr)
				before := w.logState(n, tc.topic, 0)
				resp := w.do(produceRequest(version, -1, partData{tc.topic, 0, tc.batch})).(*kmsg.ProduceResponse)
				p := producePart(t, resp, tc.topic, 0)
				wantCode(t, tc.name, p.ErrorCode, tc.want)
				if p.BaseOffset != -1 {
					t.Errorf("rejected batch answered with base offset %d", p.BaseOffset)
				}
				if version >= 8 && p.ErrorMessage == nil {
					t.Errorf("%s: no error message", tc.name)
				}
				w.unchanged(n, tc.topic, 0, before)
			})
		}
	}
	// The untouched partition of "bad" and the seeds are all there is.
	if got := w.endOffset("bad", 1); got != 0 {
		t.Fatalf("bad-1 end offset %d, want 0", got)
	}
	if got := w.readAll("bad", 0); len(got) != 2 || got[0].Value != "seed-0" || got[1].Value != "seed-1" {
		t.Fatalf("bad-0 holds %v, want the two seed records", got)
	}
}

// A batch over max.message.bytes (the topic's, or the broker's
// message.max.bytes by default) fails its partition only: a good batch
// to another partition in the same request is appended.
func TestProduceTooLargeFailsOnlyItsPartition(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: noAutoCreate})
	w := dial(t, n.Addr)
	w.createTopic("limited", 2, map[string]string{"max.message.bytes": "4096"})
	w.createTopic("default", 2, nil)

	for _, tc := range []struct {
		topic string
		size  int
	}{
		{"limited", 5000},        // over the topic's max.message.bytes
		{"default", 1048588 + 1}, // over the broker's message.max.bytes
	} {
		t.Run(tc.topic, func(t *testing.T) {
			big := buildBatch(t, batchHeader(), []record.Record{{Key: []byte("k"), Value: bytes.Repeat([]byte("x"), tc.size)}})
			before0 := w.logState(n, tc.topic, 0)
			before1 := w.logState(n, tc.topic, 1)
			resp := w.do(produceRequest(produceVersion, -1,
				partData{tc.topic, 0, big}, partData{tc.topic, 1, batchOf(t, 3, "ok")})).(*kmsg.ProduceResponse)
			wantCode(t, "big batch", producePart(t, resp, tc.topic, 0).ErrorCode, kerr.MessageTooLarge)
			ok := producePart(t, resp, tc.topic, 1)
			wantOK(t, "good batch", ok.ErrorCode)
			if ok.BaseOffset != before1.End {
				t.Fatalf("good batch at offset %d, want %d", ok.BaseOffset, before1.End)
			}
			w.unchanged(n, tc.topic, 0, before0)
			if end := w.endOffset(tc.topic, 1); end != before1.End+3 {
				t.Fatalf("%s-1 end offset %d, want %d", tc.topic, end, before1.End+3)
			}
		})
	}
}

func TestProduceInvalidAcks(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: noAutoCreate})
	w := dial(t, n.Addr)
	w.createTopic("acks", 2, nil)
	before0, before1 := w.logState(n, "acks", 0), w.logState(n, "acks", 1)
	for _, acks := range []int16{2, -2, 5} {
		resp := w.do(produceRequest(produceVersion, acks,
			partData{"acks", 0, batchOf(t, 1, "a")}, partData{"acks", 1, batchOf(t, 1, "b")})).(*kmsg.ProduceResponse)
		for _, p := range []int32{0, 1} {
			wantCode(t, fmt.Sprintf("acks=%d partition %d", acks, p), producePart(t, resp, "acks", p).ErrorCode, kerr.InvalidRequiredAcks)
		}
	}
	w.unchanged(n, "acks", 0, before0)
	w.unchanged(n, "acks", 1, before1)
	w.ping() // the connection stays open
}

// With auto.create.topics.enable=false an unknown topic is
// UNKNOWN_TOPIC_OR_PARTITION everywhere, and is not created.
func TestUnknownTopic(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: noAutoCreate})
	w := dial(t, n.Addr)
	w.createTopic("known", 1, nil)

	resp := w.do(produceRequest(produceVersion, -1, partData{"nope", 0, batchOf(t, 1, "x")})).(*kmsg.ProduceResponse)
	wantCode(t, "produce to an unknown topic", producePart(t, resp, "nope", 0).ErrorCode, kerr.UnknownTopicOrPartition)
	resp = w.do(produceRequest(produceVersion, -1, partData{"known", 7, batchOf(t, 1, "x")})).(*kmsg.ProduceResponse)
	wantCode(t, "produce to an unknown partition", producePart(t, resp, "known", 7).ErrorCode, kerr.UnknownTopicOrPartition)

	wantCode(t, "fetch from an unknown topic", w.fetchOne("nope", 0, 0).ErrorCode, kerr.UnknownTopicOrPartition)
	wantCode(t, "fetch from an unknown partition", w.fetchOne("known", 3, 0).ErrorCode, kerr.UnknownTopicOrPartition)
	wantCode(t, "list offsets of an unknown topic", w.listOffset("nope", 0, -1).ErrorCode, kerr.UnknownTopicOrPartition)
	for _, allow := range []bool{false, true} {
		wantCode(t, fmt.Sprintf("metadata of an unknown topic (allow auto-create %v)", allow),
			w.metadataTopic("nope", allow).ErrorCode, kerr.UnknownTopicOrPartition)
	}
	for _, name := range []string{"bad name", "a/b", ".", "..", strings.Repeat("x", 250)} {
		wantCode(t, fmt.Sprintf("metadata of topic %q", name), w.metadataTopic(name, true).ErrorCode, kerr.InvalidTopicException)
	}

	// Fetch v13+ names topics by id.
	req := fetchRequest(0, 0, 1<<20, fetchPart{"", 0, 0, 1 << 20})
	req.SetVersion(13)
	req.Topics[0].TopicID = [16]byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	parts := fetchParts(t, w.do(req).(*kmsg.FetchResponse))
	if len(parts) != 1 {
		t.Fatalf("fetch by topic id answered %d partitions", len(parts))
	}
	wantCode(t, "fetch by an unknown topic id", parts[0].ErrorCode, kerr.UnknownTopicID)

	if got := w.metadataTopic("nope", true).ErrorCode; got != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic was created: metadata error %d", got)
	}
}

func TestAutoCreateTopic(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{"auto.create.topics.enable": "true", "num.partitions": "3"}})
	w := dial(t, n.Addr)

	// Metadata that does not allow auto-creation creates nothing.
	wantCode(t, "metadata without auto-create", w.metadataTopic("auto", false).ErrorCode, kerr.UnknownTopicOrPartition)
	// Produce does not create topics, in Kafka neither.
	resp := w.do(produceRequest(produceVersion, -1, partData{"auto", 0, batchOf(t, 1, "x")})).(*kmsg.ProduceResponse)
	wantCode(t, "produce to an unknown topic", producePart(t, resp, "auto", 0).ErrorCode, kerr.UnknownTopicOrPartition)

	mt := w.metadataTopic("auto", true)
	if mt.ErrorCode != 0 || len(mt.Partitions) != 3 {
		t.Fatalf("auto-created topic: error %v, %d partitions, want 3", kerr.ErrorForCode(mt.ErrorCode), len(mt.Partitions))
	}
	for _, p := range mt.Partitions {
		if p.ErrorCode != 0 || p.Leader < 0 {
			t.Fatalf("auto-created partition %d: error %d, leader %d", p.Partition, p.ErrorCode, p.Leader)
		}
	}
	if off := w.produceOK("auto", 2, batchOf(t, 2, "x")); off != 0 {
		t.Fatalf("first produce at offset %d", off)
	}
	// Invalid names are refused, not created.
	wantCode(t, "auto-create an invalid name", w.metadataTopic("no way", true).ErrorCode, kerr.InvalidTopicException)
}

// Metadata by topic id, as the Java consumer asks for the topics the
// broker assigned it (KIP-848 with a broker-side pattern): the name is ""
// rather than null, and the id decides. An unknown id is UNKNOWN_TOPIC_ID
// with a null name, and nothing is created.
func TestMetadataByTopicID(t *testing.T) {
	n := servertest.Start(t, servertest.Options{})
	w := dial(t, n.Addr)
	w.createTopic("by-id", 2, nil)
	id := w.metadataTopic("by-id", false).TopicID
	unknown := [16]byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}

	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	req.AllowAutoTopicCreation = true
	for _, tid := range [][16]byte{id, unknown} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic, rt.TopicID = kmsg.StringPtr(""), tid
		req.Topics = append(req.Topics, rt)
	}
	resp := w.do(req).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 2 {
		t.Fatalf("Metadata answered %d topics, want 2", len(resp.Topics))
	}
	known, missing := resp.Topics[0], resp.Topics[1]
	if known.ErrorCode != 0 || str(known.Topic) != "by-id" || known.TopicID != id || len(known.Partitions) != 2 {
		t.Fatalf("topic by id: error %d, name %q, id %x, %d partitions", known.ErrorCode, str(known.Topic), known.TopicID, len(known.Partitions))
	}
	wantCode(t, "metadata of an unknown topic id", missing.ErrorCode, kerr.UnknownTopicID)
	if missing.Topic != nil || missing.TopicID != unknown {
		t.Fatalf("unknown topic id answered as name %q, id %x", str(missing.Topic), missing.TopicID)
	}
	all := kmsg.NewPtrMetadataRequest()
	all.SetVersion(12)
	if got := len(w.do(all).(*kmsg.MetadataResponse).Topics); got != 1 {
		t.Fatalf("%d topics after the lookup by id, want 1", got)
	}
}

// describeConfigs returns the name -> value/source of a resource's configs.
func (w *wire) describeConfigs(typ kmsg.ConfigResourceType, name string) map[string]string {
	w.t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.SetVersion(4)
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = typ, name
	req.Resources = append(req.Resources, r)
	resp := w.do(req).(*kmsg.DescribeConfigsResponse)
	if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
		w.t.Fatalf("DescribeConfigs %s: %+v", name, resp.Resources)
	}
	out := map[string]string{}
	for _, c := range resp.Resources[0].Configs {
		out[c.Name] = str(c.Value) + " from " + c.Source.String()
	}
	return out
}

func sameConfigs(t testing.TB, what string, before, after map[string]string) {
	t.Helper()
	if len(before) != len(after) {
		t.Fatalf("%s: %d configs before, %d after", what, len(before), len(after))
	}
	for k, v := range before {
		if after[k] != v {
			t.Fatalf("%s: %s changed from %q to %q", what, k, v, after[k])
		}
	}
}

func wantInvalidConfig(t testing.TB, what string, code int16, msg *string, key string) {
	t.Helper()
	wantCode(t, what, code, kerr.InvalidConfig)
	if msg == nil || !strings.Contains(*msg, key) {
		t.Fatalf("%s: message %q does not name %s", what, str(msg), key)
	}
}

// Invalid configs are INVALID_CONFIG with a message naming the key, and
// change nothing.
func TestInvalidConfigsChangeNothing(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: noAutoCreate})
	w := dial(t, n.Addr)
	w.createTopic("cfg", 1, map[string]string{"retention.ms": "100000"})
	topicBefore := w.describeConfigs(kmsg.ConfigResourceTypeTopic, "cfg")
	brokerBefore := w.describeConfigs(kmsg.ConfigResourceTypeBroker, "1")
	defaultsBefore := w.describeConfigs(kmsg.ConfigResourceTypeBroker, "")

	t.Run("CreateTopics", func(t *testing.T) {
		for key, value := range map[string]string{"retention.ms": "abc", "cleanup.policy": "sometimes", "min.insync.replicas": "0", "no.such.config": "1"} {
			rt := w.createTopicResult("cfg-new", 1, map[string]string{key: value, "segment.ms": "100000"})
			wantInvalidConfig(t, "CreateTopics "+key+"="+value, rt.ErrorCode, rt.ErrorMessage, key)
		}
		wantCode(t, "metadata of the refused topic", w.metadataTopic("cfg-new", true).ErrorCode, kerr.UnknownTopicOrPartition)
	})

	t.Run("AlterConfigs", func(t *testing.T) {
		req := kmsg.NewPtrAlterConfigsRequest()
		req.SetVersion(2)
		r := kmsg.NewAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "cfg"
		for k, v := range map[string]string{"retention.ms": "5000", "cleanup.policy": "sometimes"} {
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = k, kmsg.StringPtr(v)
			r.Configs = append(r.Configs, c)
		}
		req.Resources = append(req.Resources, r)
		br := kmsg.NewAlterConfigsRequestResource()
		br.ResourceType, br.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "message.max.bytes", kmsg.StringPtr("lots")
		br.Configs = append(br.Configs, c)
		req.Resources = append(req.Resources, br)
		resp := w.do(req).(*kmsg.AlterConfigsResponse)
		if len(resp.Resources) != 2 {
			t.Fatalf("AlterConfigs answered %d resources", len(resp.Resources))
		}
		wantInvalidConfig(t, "AlterConfigs topic", resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage, "cleanup.policy")
		wantInvalidConfig(t, "AlterConfigs broker", resp.Resources[1].ErrorCode, resp.Resources[1].ErrorMessage, "message.max.bytes")
	})

	t.Run("IncrementalAlterConfigs", func(t *testing.T) {
		for _, tc := range []struct {
			typ  kmsg.ConfigResourceType
			name string
			ops  map[string]string
			bad  string
		}{
			{kmsg.ConfigResourceTypeTopic, "cfg", map[string]string{"retention.ms": "5000", "segment.bytes": "1"}, "segment.bytes"},
			{kmsg.ConfigResourceTypeTopic, "cfg", map[string]string{"retention.ms": "ten"}, "retention.ms"},
			{kmsg.ConfigResourceTypeBroker, "1", map[string]string{"log.retention.ms": "5000", "message.max.bytes": "-5"}, "message.max.bytes"},
			{kmsg.ConfigResourceTypeBroker, "1", map[string]string{"log.dirs": "/tmp/elsewhere"}, "log.dirs"},
			{kmsg.ConfigResourceTypeBroker, "1", map[string]string{"socket.request.max.bytes": "1000"}, "socket.request.max.bytes"},
			{kmsg.ConfigResourceTypeBroker, "", map[string]string{"num.partitions": "5"}, "num.partitions"},
		} {
			req := kmsg.NewPtrIncrementalAlterConfigsRequest()
			req.SetVersion(1)
			r := kmsg.NewIncrementalAlterConfigsRequestResource()
			r.ResourceType, r.ResourceName = tc.typ, tc.name
			for k, v := range tc.ops {
				c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
				c.Name, c.Op, c.Value = k, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(v)
				r.Configs = append(r.Configs, c)
			}
			req.Resources = append(req.Resources, r)
			resp := w.do(req).(*kmsg.IncrementalAlterConfigsResponse)
			if len(resp.Resources) != 1 {
				t.Fatalf("IncrementalAlterConfigs answered %d resources", len(resp.Resources))
			}
			wantInvalidConfig(t, fmt.Sprintf("IncrementalAlterConfigs %s %q %v", tc.typ, tc.name, tc.ops),
				resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage, tc.bad)
		}
	})

	sameConfigs(t, "topic cfg", topicBefore, w.describeConfigs(kmsg.ConfigResourceTypeTopic, "cfg"))
	sameConfigs(t, "broker 1", brokerBefore, w.describeConfigs(kmsg.ConfigResourceTypeBroker, "1"))
	sameConfigs(t, "broker defaults", defaultsBefore, w.describeConfigs(kmsg.ConfigResourceTypeBroker, ""))
}

// A full disk fails the produce with KAFKA_STORAGE_ERROR, leaves nothing
// partial behind, keeps reads going, and heals when space comes back; a
// restart finds exactly the acknowledged records.
func TestFullDisk(t *testing.T) {
	fs := vfstest.Faulty(vfs.OS)
	fs.SetPartialWrites(true) // as real disks do: the prefix that fits is written
	n := servertest.Start(t, servertest.Options{Overrides: noAutoCreate, FS: fs})
	w := dial(t, n.Addr)
	w.createTopic("disk", 1, nil)

	var acked []string
	var ackedBytes int64
	produce := func(i int) kmsg.ProduceResponseTopicPartition {
		rs := testRecords(3, fmt.Sprintf("b%d-%s", i, strings.Repeat("v", 200)))
		b := buildBatch(t, batchHeader(), rs)
		p := w.produce("disk", 0, b)
		if p.ErrorCode == 0 {
			if p.BaseOffset != int64(len(acked)) {
				t.Fatalf("batch %d at offset %d, want %d", i, p.BaseOffset, len(acked))
			}
			for _, r := range rs {
				acked = append(acked, string(r.Value))
			}
			ackedBytes += int64(len(b))
		}
		return p
	}
	for i := 0; i < 5; i++ {
		if p := produce(i); p.ErrorCode != 0 {
			t.Fatalf("produce before the disk fills: %v", kerr.ErrorForCode(p.ErrorCode))
		}
	}

	// The disk fills up while producing.
	fs.SetWriteBudget(3000)
	failures := 0
	for i := 5; i < 100 && failures < 5; i++ {
		if p := produce(i); p.ErrorCode != 0 {
			wantCode(t, fmt.Sprintf("produce %d on a full disk", i), p.ErrorCode, kerr.KafkaStorageError)
			failures++
		}
	}
	if failures == 0 {
		t.Fatal("the write budget never ran out")
	}
	t.Logf("%d records acknowledged before the disk filled", len(acked))
	check := func(w *wire, when string) {
		t.Helper()
		st := w.logState(n, "disk", 0)
		if st.End != int64(len(acked)) {
			t.Fatalf("%s: end offset %d, want %d acknowledged records", when, st.End, len(acked))
		}
		var total int64
		for _, s := range st.LogFiles {
			total += s
		}
		if total != ackedBytes {
			t.Fatalf("%s: .log files hold %d bytes, the acknowledged batches %d", when, total, ackedBytes)
		}
		got := w.readAll("disk", 0)
		if len(got) != len(acked) {
			t.Fatalf("%s: read %d records, want %d", when, len(got), len(acked))
		}
		for i, r := range got {
			if r.Offset != int64(i) || r.Value != acked[i] {
				t.Fatalf("%s: record %d is %+v, want %q", when, i, r, acked[i])
			}
		}
	}
	// Reads keep working, on this connection and a new one, and show
	// exactly the acknowledged records.
	check(w, "disk full")
	check(dial(t, n.Addr), "disk full, new connection")

	fs.SetWriteBudget(-1)
	if p := produce(100); p.ErrorCode != 0 {
		t.Fatalf("produce after space came back: %v (%s)", kerr.ErrorForCode(p.ErrorCode), str(p.ErrorMessage))
	}
	check(w, "space back")

	n.Restart()
	check(dial(t, n.Addr), "after restart")
}

// The disk fills up again and again, at whatever write the budget ends:
// segment data, index entries, segment rolls and producer snapshots. Each
// time the produce fails cleanly and the log holds exactly the
// acknowledged batches, also after a restart.
func TestFullDiskAtEveryStep(t *testing.T) {
	fs := vfstest.Faulty(vfs.OS)
	fs.SetPartialWrites(true)
	n := servertest.Start(t, servertest.Options{Overrides: noAutoCreate, FS: fs})
	w := dial(t, n.Addr)
	w.createTopic("fill", 1, map[string]string{"segment.bytes": "1048576", "index.interval.bytes": "0"})
	// The partition's directory is made in the background: before the
	// disk fills, or it could not be made and the partition would go
	// offline (a case TestOfflinePartition covers).
	testwait.For(t, 60*time.Second, "the partition's directory", func() error {
		_, err := os.Stat(filepath.Join(n.Dir, "logs", "fill-0", "partition.metadata"))
		return err
	})

	value := bytes.Repeat([]byte("f"), 64<<10)
	var ackedBytes int64
	var ackedValues []string
	check := func(w *wire, when string) {
		t.Helper()
		st := w.logState(n, "fill", 0)
		var total int64
		for _, s := range st.LogFiles {
			total += s
		}
		if st.End != int64(len(ackedValues)) || total != ackedBytes {
			t.Fatalf("%s: end offset %d and %d bytes of .log files, want %d records in %d bytes", when, st.End, total, len(ackedValues), ackedBytes)
		}
	}
	// Budgets end at chosen points of a batch's writes: its data, then an
	// offset index entry (8 bytes) and a time index entry (12 bytes);
	// every so often the batch rolls a segment first (a producer
	// snapshot, the old segment's last time index entry).
	size := int64(len(buildBatch(t, batchHeader(), []record.Record{{Key: []byte("k"), Value: []byte("10-" + string(value))}})))
	ends := []int64{0, 1, size / 2, size - 1, size, size + 1, size + 4, size + 7, size + 8, size + 9, size + 12, size + 19, size + 20, size + 21}
	batchNo := 0
	for cycle := 0; cycle < 42; cycle++ {
		fs.SetWriteBudget(int64(cycle%3)*(size+20) + ends[cycle%len(ends)])
		failed := false
		for try := 0; try < 10 && !failed; try++ {
			v := fmt.Sprintf("%d-%s", batchNo, value)
			b := buildBatch(t, batchHeader(), []record.Record{{Key: []byte("k"), Value: []byte(v)}})
			batchNo++
			p := w.produce("fill", 0, b)
			switch p.ErrorCode {
			case 0:
				if p.BaseOffset != int64(len(ackedValues)) {
					t.Fatalf("cycle %d: batch at offset %d, want %d", cycle, p.BaseOffset, len(ackedValues))
				}
				ackedValues = append(ackedValues, v)
				ackedBytes += int64(len(b))
			case kerr.KafkaStorageError.Code:
				failed = true
			default:
				t.Fatalf("cycle %d: produce on a filling disk: %v (%s)", cycle, kerr.ErrorForCode(p.ErrorCode), str(p.ErrorMessage))
			}
		}
		if !failed {
			t.Fatalf("cycle %d: the disk never filled", cycle)
		}
		check(w, fmt.Sprintf("cycle %d, disk full", cycle))
		fs.SetWriteBudget(-1)
	}
	segs := len(logFileSizes(t, partitionDir(n, "fill", 0)))
	t.Logf("%d batches acknowledged in %d segments", len(ackedValues), segs)
	if segs < 3 {
		t.Fatalf("only %d segments: the test never rolled", segs)
	}
	verify := func(w *wire, when string) {
		t.Helper()
		check(w, when)
		got := w.readAll("fill", 0)
		if len(got) != len(ackedValues) {
			t.Fatalf("%s: read %d records, want %d", when, len(got), len(ackedValues))
		}
		for i, r := range got {
			if r.Value != ackedValues[i] {
				t.Fatalf("%s: record %d differs", when, i)
			}
		}
	}
	verify(w, "space back")
	n.Restart()
	w = dial(t, n.Addr)
	verify(w, "after restart")
	if off := w.produceOK("fill", 0, batchOf(t, 1, "last")); off != int64(len(ackedValues)) {
		t.Fatalf("produce after restart at offset %d, want %d", off, len(ackedValues))
	}
}

// With delete.topic.enable=false, DeleteTopics is TOPIC_DELETION_DISABLED
// and the topic stays.
func TestDeleteTopicsDisabled(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{"auto.create.topics.enable": "false", "delete.topic.enable": "false"}})
	w := dial(t, n.Addr)
	w.createTopic("kept", 1, nil)
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.SetVersion(4)
	req.TopicNames = []string{"kept"}
	req.TimeoutMillis = 5000
	resp := w.do(req).(*kmsg.DeleteTopicsResponse)
	if len(resp.Topics) != 1 {
		t.Fatalf("DeleteTopics answered %d topics", len(resp.Topics))
	}
	wantCode(t, "DeleteTopics", resp.Topics[0].ErrorCode, kerr.TopicDeletionDisabled)
	wantOK(t, "metadata of the kept topic", w.metadataTopic("kept", false).ErrorCode)
}
