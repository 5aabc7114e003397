package dumplog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/cli/clitest"
	"weir/internal/group"
	"weir/internal/log"
	"weir/internal/metadata"
	"weir/internal/quorum"
	"weir/internal/record"
)

// dumpTS is the timestamp of every batch the dump-log test writes.
const dumpTS = 1767225600000 // 2026-01-01T00:00:00Z

// openTestLog opens a log under dir that indexes every batch.
func openTestLog(t *testing.T, dir string, tp log.TopicPartition) *log.Log {
	t.Helper()
	cfg := log.DefaultConfig()
	cfg.IndexIntervalBytes = 1
	l, err := log.Open(filepath.Join(dir, tp.String()), tp, cfg, log.Options{Now: func() time.Time { return time.UnixMilli(dumpTS) }})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func appendBatch(t *testing.T, l *log.Log, h record.BatchHeader, recs []record.Record, origin log.Origin) {
	t.Helper()
	h.BaseTimestamp, h.MaxTimestamp = dumpTS, dumpTS+int64(len(recs)-1)
	for i := range recs {
		recs[i].OffsetDelta, recs[i].TimestampDelta = int32(i), int64(i)
	}
	b, err := record.Build(h, recs, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendWith(b, log.LeaderAppend{LeaderEpoch: 3, Origin: origin}); err != nil {
		t.Fatal(err)
	}
}

// writeDumpFiles writes, with weir's log, group, txn and quorum encoders,
// a topic partition (plain, idempotent and aborted transactional batches,
// rolled so that it has a producer snapshot), __consumer_offsets,
// __transaction_state, __cluster_metadata and a metadata snapshot.
func writeDumpFiles(t *testing.T, dir string) {
	l := openTestLog(t, dir, log.TopicPartition{Topic: "orders", Partition: 0})
	appendBatch(t, l, record.NewBatchHeader(), []record.Record{
		{Key: []byte("k1"), Value: []byte("first"), Headers: []record.Header{{Key: "trace", Value: []byte("1")}, {Key: "src"}}},
		{Value: []byte("no key")},
		{Key: []byte("deleted")},
	}, log.OriginClient)
	h := record.NewBatchHeader()
	h.ProducerID, h.ProducerEpoch, h.BaseSequence = 7, 0, 0
	appendBatch(t, l, h, []record.Record{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("b"), Value: []byte("2")}}, log.OriginClient)
	h = record.NewBatchHeader()
	h.ProducerID, h.ProducerEpoch, h.BaseSequence = 8, 1, 0
	h.Attributes = record.TransactionalAttributes
	appendBatch(t, l, h, []record.Record{{Value: []byte("in a transaction")}}, log.OriginClient)
	if _, err := l.AppendWith(log.MarkerBatch(8, 1, log.Marker{Commit: false, CoordinatorEpoch: 5}, dumpTS+10), log.LeaderAppend{LeaderEpoch: 3, Origin: log.OriginCoordinator}); err != nil {
		t.Fatal(err)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l = openTestLog(t, dir, log.TopicPartition{Topic: "__consumer_offsets", Partition: 0})
	commit := kmsg.NewOffsetCommitValue()
	commit.Offset, commit.LeaderEpoch, commit.Metadata, commit.CommitTimestamp, commit.ExpireTimestamp = 42, 3, "m<&>", dumpTS, -1
	member := kmsg.NewConsumerMemberMetadata()
	member.Version, member.Topics, member.Generation = 3, []string{"orders"}, 1
	assign := kmsg.NewConsumerMemberAssignment()
	assign.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: "orders", Partitions: []int32{0, 1}}}
	gm := kmsg.NewGroupMetadataValue()
	gm.ProtocolType, gm.Generation, gm.Protocol, gm.Leader, gm.CurrentStateTimestamp = "consumer", 1, ptr("range"), ptr("m-1"), dumpTS
	gm.Members = []kmsg.GroupMetadataValueMember{{MemberID: "m-1", ClientID: "c", ClientHost: "/127.0.0.1",
		RebalanceTimeoutMillis: 300000, SessionTimeoutMillis: 45000, Subscription: member.AppendTo(nil), Assignment: assign.AppendTo(nil)}}
	var recs []record.Record
	for _, r := range []group.Record{
		group.EncodeOffsetCommit("g1", "orders", 0, commit),
		group.EncodeGroupMetadata("g1", gm),
		group.EncodeOffsetTombstone("g1", "orders", 1),
		{Key: []byte{0, 99, 0, 0}, Value: []byte{0, 0}}, // a record type neither weir nor Kafka knows
	} {
		recs = append(recs, record.Record{Key: r.Key, Value: r.Value})
	}
	appendBatch(t, l, record.NewBatchHeader(), recs, log.OriginClient)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l = openTestLog(t, dir, log.TopicPartition{Topic: "__transaction_state", Partition: 0})
	txnValue := kmsg.NewTxnMetadataValue()
	txnValue.ProducerID, txnValue.ProducerEpoch, txnValue.TimeoutMillis = 8, 1, 60000
	txnValue.State = 1 // Ongoing
	txnValue.Topics = []kmsg.TxnMetadataValueTopic{{Topic: "orders", Partitions: []int32{0}}}
	txnValue.LastUpdateTimestamp, txnValue.StartTimestamp = dumpTS, dumpTS
	txnKey := kmsg.TxnMetadataKey{TransactionalID: "tx-1"}
	appendBatch(t, l, record.NewBatchHeader(), []record.Record{
		{Key: txnKey.AppendTo(nil), Value: txnValue.AppendTo(nil)},
		{Key: txnKey.AppendTo(nil)},
	}, log.OriginClient)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	topicID := metadata.Uuid{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	part := metadata.NewPartitionRecord()
	part.PartitionId, part.TopicId, part.Replicas, part.Isr, part.Leader, part.LeaderEpoch, part.PartitionEpoch = 0, topicID, []int32{1, 2}, []int32{1, 2}, 1, 0, 0
	part.Directories = []metadata.Uuid{{}, {}}
	broker := metadata.NewRegisterBrokerRecord()
	broker.BrokerId, broker.BrokerEpoch, broker.Rack = 1, 5, ptr("r1")
	broker.EndPoints = []metadata.BrokerEndpoint{{Name: "PLAINTEXT", Host: "localhost", Port: 9092}}
	metaRecs := []metadata.Record{&metadata.TopicRecord{Name: "orders", TopicId: topicID}, part,
		&metadata.ConfigRecord{ResourceType: 2, ResourceName: "orders", Name: "min.insync.replicas", Value: ptr("2")}, broker}
	b, err := quorum.EncodeBatch(metaRecs, dumpTS)
	if err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir, log.TopicPartition{Topic: metadata.LogTopic, Partition: 0})
	// A new Raft leader's first entry: a LeaderChange control record.
	lc := kmsg.NewLeaderChangeMessage()
	lc.LeaderID, lc.Voters, lc.GrantingVoters = 1, []kmsg.LeaderChangeMessageVoter{{VoterID: 1}, {VoterID: 2}}, []kmsg.LeaderChangeMessageVoter{{VoterID: 2}}
	h = record.NewBatchHeader()
	h.Attributes = record.ControlAttributes
	appendBatch(t, l, h, []record.Record{{Key: (&kmsg.ControlRecordKey{Type: 2}).AppendTo(nil), Value: lc.AppendTo(nil)}}, log.OriginCoordinator)
	if _, err := l.AppendWith(b, log.LeaderAppend{LeaderEpoch: 2}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	snap, err := quorum.EncodeSnapshot(quorum.SnapshotHeader{RaftIndex: 3, RaftTerm: 2, EndOffset: 4, LastContainedLogTimestamp: 1700000000123}, metaRecs[:2], 1700000000456)
	if err != nil {
		t.Fatal(err)
	}
	name := log.Filename{Type: log.FileMetadataSnapshot, Offset: 4, Epoch: 2}.String()
	if err := os.WriteFile(filepath.Join(dir, metadata.LogTopic+"-0", name), snap, 0o644); err != nil {
		t.Fatal(err)
	}
	boot, err := quorum.EncodeSnapshot(quorum.SnapshotHeader{}, metaRecs[:1], 1700000000456)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, quorum.BootstrapFile), boot, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDumpLogGolden(t *testing.T) {
	dir := t.TempDir()
	writeDumpFiles(t, dir)
	tr := clitest.Transcript{Weir: weir}
	tr.Sub(dir, "<dir>")
	seg := func(topic string, base int64, ext log.FileType) string {
		return filepath.Join(dir, topic, log.MakeFilename(ext, base))
	}
	orders := func(ext log.FileType) string { return seg("orders-0", 0, ext) }
	tr.Run(t, "dump-log", "--files", orders(log.FileLog))
	tr.Run(t, "dump-log", "--deep-iteration", "--files", orders(log.FileLog))
	tr.Run(t, "dump-log", "--print-data-log", "--files", orders(log.FileLog))
	tr.Run(t, "dump-log", "--print-data-log", "--skip-record-metadata", "--files", orders(log.FileLog))
	tr.Run(t, "dump-log", "--files", strings.Join([]string{orders(log.FileIndex), orders(log.FileTimeIndex), orders(log.FileTxnIndex), seg("orders-0", 7, log.FileProducerSnapshot)}, ","))
	tr.Run(t, "dump-log", "--offsets-decoder", "--files", seg("__consumer_offsets-0", 0, log.FileLog))
	tr.Run(t, "dump-log", "--transaction-log-decoder", "--files", seg("__transaction_state-0", 0, log.FileLog))
	tr.Run(t, "dump-log", "--cluster-metadata-decoder", "--files", seg(metadata.LogTopic+"-0", 0, log.FileLog))
	tr.Run(t, "dump-log", "--cluster-metadata-decoder", "--files", filepath.Join(dir, metadata.LogTopic+"-0", "00000000000000000004-0000000002.checkpoint"))
	tr.Run(t, "dump-log", "--cluster-metadata-decoder", "--files", filepath.Join(dir, quorum.BootstrapFile))

	// Damage: an index entry that points at the wrong batch, and a torn
	// tail on the segment.
	idx := orders(log.FileIndex)
	buf, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	buf[3] = 3 // entry 0 now claims offset 3
	if err := os.WriteFile(idx, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	tr.Run(t, "dump-log", "--verify-index-only", "--files", idx)
	f, err := os.OpenFile(orders(log.FileLog), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte{0, 0, 0, 0, 0, 0, 0, 9, 0, 0}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	tr.Run(t, "dump-log", "--files", orders(log.FileLog))

	// Bad input.
	tr.Run(t, "dump-log")
	tr.Run(t, "dump-log", "--print-data-log")
	tr.Run(t, "dump-log", "--files", filepath.Join(dir, "orders-0", "leader-epoch-checkpoint"))
	tr.Run(t, "dump-log", "--files", filepath.Join(dir, "orders-0", "00000000000000000099.log"))
	tr.Run(t, "dump-log", "--value-decoder-class", "x", "--files", orders(log.FileLog))

	// Files that cannot be dumped fail the run (weir exits 1 for an unknown
	// kind too, where Kafka's tool exits 0): a missing file whose suffix is
	// a kind's, a text file, a name without a suffix, a missing file of an
	// unknown kind, and a directory named as a segment. An unknown file
	// does not stop the others.
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tr.Run(t, "dump-log", "--files", filepath.Join(dir, "nonexistent.log"))
	tr.Run(t, "dump-log", "--files", text+","+orders(log.FileTxnIndex))
	tr.Run(t, "dump-log", "--files", filepath.Join(dir, "orders-0"))
	tr.Run(t, "dump-log", "--files", filepath.Join(dir, "missing.txt"))
	segDir := filepath.Join(dir, "dir", log.MakeFilename(log.FileLog, 0))
	if err := os.MkdirAll(segDir, 0o755); err != nil {
		t.Fatal(err)
	}
	tr.Run(t, "dump-log", "--files", segDir)

	// A length field too small for a batch, with a whole header after it,
	// is corruption: Kafka's tool fails on it.
	corrupt := filepath.Join(dir, "corrupt", log.MakeFilename(log.FileLog, 0))
	if err := os.MkdirAll(filepath.Dir(corrupt), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(corrupt, append([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5}, make([]byte, 20)...), 0o644); err != nil {
		t.Fatal(err)
	}
	tr.Run(t, "dump-log", "--files", corrupt)
	clitest.CheckGolden(t, "dump_log.txt", tr.String())
}

// weir is the command line these tests run.
var weir = clitest.Weir{NewCommand}
