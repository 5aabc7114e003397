package kafka_test

// Helpers that speak the Kafka protocol directly: frames built with kmsg,
// responses read and checked one by one, batches built with the record
// package, and the on-disk state of a partition.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/record"
	"weir/internal/servertest"
)

// ioTimeout bounds every read and write, so a broker that hangs fails the
// test instead of stalling it.
const ioTimeout = 20 * time.Second

const apiVersionsKey = 18

// wire is one raw client connection.
type wire struct {
	t    testing.TB
	nc   net.Conn
	br   *bufio.Reader
	corr int32
}

func dial(t testing.TB, addr string) *wire {
	t.Helper()
	w, err := dialErr(t, addr)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func dialErr(t testing.TB, addr string) (*wire, error) {
	nc, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { nc.Close() })
	return &wire{t: t, nc: nc, br: bufio.NewReader(nc)}, nil
}

// encodeRequest frames req with request header v1 (v2 for flexible
// versions): size, key, version, correlation id, client id, tags, body.
func encodeRequest(dst []byte, req kmsg.Request, corr int32) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = kbin.AppendInt16(dst, req.Key())
	dst = kbin.AppendInt16(dst, req.GetVersion())
	dst = kbin.AppendInt32(dst, corr)
	id := "weir-test"
	dst = kbin.AppendNullableString(dst, &id)
	if req.IsFlexible() {
		dst = append(dst, 0)
	}
	dst = req.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// rawFrame frames a request whose header fields are given as is: the
// version need not be one kmsg knows.
func rawFrame(key, version int16, corr int32, flexible bool, body []byte) []byte {
	dst := []byte{0, 0, 0, 0}
	dst = kbin.AppendInt16(dst, key)
	dst = kbin.AppendInt16(dst, version)
	dst = kbin.AppendInt32(dst, corr)
	id := "weir-test"
	dst = kbin.AppendNullableString(dst, &id)
	if flexible {
		dst = append(dst, 0)
	}
	dst = append(dst, body...)
	binary.BigEndian.PutUint32(dst, uint32(len(dst)-4))
	return dst
}

func (w *wire) nextCorr() int32 {
	w.corr++
	return w.corr
}

func (w *wire) writeErr(b []byte) error {
	w.nc.SetWriteDeadline(time.Now().Add(ioTimeout))
	_, err := w.nc.Write(b)
	return err
}

func (w *wire) write(b []byte) {
	w.t.Helper()
	if err := w.writeErr(b); err != nil {
		w.t.Fatalf("writing request: %v", err)
	}
}

// send writes req with the next correlation id and returns that id.
func (w *wire) send(req kmsg.Request) int32 {
	w.t.Helper()
	corr := w.nextCorr()
	w.write(encodeRequest(nil, req, corr))
	return corr
}

func (w *wire) readFrame() ([]byte, error) {
	w.nc.SetReadDeadline(time.Now().Add(ioTimeout))
	var sz [4]byte
	if _, err := io.ReadFull(w.br, sz[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(sz[:]))
	if n < 4 || n > 256<<20 {
		return nil, fmt.Errorf("response size %d", n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(w.br, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// decodeResponse decodes a response frame (after its size) to req's
// response kind at version, checking the correlation id.
func decodeResponse(frame []byte, key, version int16, wantCorr int32) (kmsg.Response, error) {
	if len(frame) < 4 {
		return nil, fmt.Errorf("response of %d bytes", len(frame))
	}
	if corr := int32(binary.BigEndian.Uint32(frame)); corr != wantCorr {
		return nil, fmt.Errorf("response correlation id %d, want %d", corr, wantCorr)
	}
	resp := kmsg.ResponseForKey(key)
	resp.SetVersion(version)
	body := frame[4:]
	// Response header v1 carries tagged fields; ApiVersions always
	// answers with header v0.
	if resp.IsFlexible() && key != apiVersionsKey {
		rd := kbin.Reader{Src: body}
		for n := rd.Uvarint(); n > 0 && rd.Ok(); n-- {
			rd.Uvarint()
			rd.Span(int(rd.Uvarint()))
		}
		if !rd.Ok() {
			return nil, errors.New("truncated response header")
		}
		body = rd.Src
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("decoding %s v%d response: %w", kmsg.NameForKey(key), version, err)
	}
	return resp, nil
}

// recvErr reads the response to req, sent with correlation id corr.
func (w *wire) recvErr(req kmsg.Request, corr int32) (kmsg.Response, error) {
	frame, err := w.readFrame()
	if err != nil {
		return nil, fmt.Errorf("reading %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	return decodeResponse(frame, req.Key(), req.GetVersion(), corr)
}

func (w *wire) recv(req kmsg.Request, corr int32) kmsg.Response {
	w.t.Helper()
	resp, err := w.recvErr(req, corr)
	if err != nil {
		w.t.Fatal(err)
	}
	return resp
}

// do sends req and returns its response.
func (w *wire) do(req kmsg.Request) kmsg.Response {
	w.t.Helper()
	return w.recv(req, w.send(req))
}

func (w *wire) doErr(req kmsg.Request) (kmsg.Response, error) {
	corr := w.nextCorr()
	if err := w.writeErr(encodeRequest(nil, req, corr)); err != nil {
		return nil, err
	}
	return w.recvErr(req, corr)
}

// expectClosed asserts that the broker closes the connection without
// answering.
func (w *wire) expectClosed() {
	w.t.Helper()
	frame, err := w.readFrame()
	if err == nil {
		w.t.Fatalf("connection still open: got a %d-byte response", len(frame))
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		w.t.Fatalf("connection not closed within %v", ioTimeout)
	}
}

// ping checks the connection still serves requests.
func (w *wire) ping() {
	w.t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "weir-test", "1.0"
	resp := w.do(req).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		w.t.Fatalf("ApiVersions: error %d, %d keys", resp.ErrorCode, len(resp.ApiKeys))
	}
}

// ---- records ----

// testRecords returns n records with keys k<i> and values <prefix>-<i>.
func testRecords(n int, prefix string) []record.Record {
	rs := make([]record.Record, n)
	for i := range rs {
		rs[i] = record.Record{OffsetDelta: int32(i), TimestampDelta: int64(i),
			Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "%s-%d", prefix, i)}
	}
	return rs
}

// batchHeader is a header for a batch without a producer, timestamped now.
func batchHeader() record.BatchHeader {
	h := record.NewBatchHeader()
	h.BaseTimestamp = time.Now().UnixMilli()
	h.MaxTimestamp = h.BaseTimestamp
	return h
}

func buildBatch(t testing.TB, h record.BatchHeader, rs []record.Record) []byte {
	t.Helper()
	b, err := record.Build(h, rs, 0)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// batchOf builds a plain batch of n records.
func batchOf(t testing.TB, n int, prefix string) []byte {
	t.Helper()
	return buildBatch(t, batchHeader(), testRecords(n, prefix))
}

// idemBatch builds an idempotent producer's batch of n records.
func idemBatch(t testing.TB, pid int64, epoch int16, seq int32, n int, prefix string) []byte {
	t.Helper()
	h := batchHeader()
	h.ProducerID, h.ProducerEpoch, h.BaseSequence = pid, epoch, seq
	return buildBatch(t, h, testRecords(n, prefix))
}

// fetched is one record read back from a fetch response.
type fetched struct {
	Offset int64
	Key    string
	Value  string
}

// decodeBatches returns the records of a fetch response's record bytes;
// a partial trailing batch is ignored, as clients do.
func decodeBatches(t testing.TB, data []byte) []fetched {
	t.Helper()
	var out []fetched
	for len(data) > 0 {
		b, rest, err := record.Next(data)
		if errors.Is(err, record.ErrShort) {
			break
		}
		if err != nil {
			t.Fatalf("fetched batch: %v", err)
		}
		if !b.ValidCRC() {
			t.Fatalf("fetched batch at %d has a bad CRC", b.BaseOffset())
		}
		raw, err := b.Decoded(nil, 64<<20)
		if err != nil {
			t.Fatal(err)
		}
		it := record.NewRecords(raw, b.NumRecords())
		for r, ok := it.Next(); ok; r, ok = it.Next() {
			out = append(out, fetched{b.BaseOffset() + int64(r.OffsetDelta), string(r.Key), string(r.Value)})
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		data = rest
	}
	return out
}

// ---- produce ----

type partData struct {
	topic     string
	partition int32
	records   []byte
}

func produceRequest(version, acks int16, parts ...partData) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(version)
	req.Acks, req.TimeoutMillis = acks, 10000
	for _, p := range parts {
		var rt *kmsg.ProduceRequestTopic
		for i := range req.Topics {
			if req.Topics[i].Topic == p.topic {
				rt = &req.Topics[i]
			}
		}
		if rt == nil {
			req.Topics = append(req.Topics, kmsg.NewProduceRequestTopic())
			rt = &req.Topics[len(req.Topics)-1]
			rt.Topic = p.topic
		}
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p.partition, p.records
		rt.Partitions = append(rt.Partitions, rp)
	}
	return req
}

const produceVersion = 9

// produce sends one batch (acks=all) and returns the partition's answer.
func (w *wire) produce(topic string, partition int32, batch []byte) kmsg.ProduceResponseTopicPartition {
	w.t.Helper()
	resp := w.do(produceRequest(produceVersion, -1, partData{topic, partition, batch})).(*kmsg.ProduceResponse)
	return producePart(w.t, resp, topic, partition)
}

// produceOK produces one batch and fails the test on an error; it returns
// the base offset.
func (w *wire) produceOK(topic string, partition int32, batch []byte) int64 {
	w.t.Helper()
	p := w.produce(topic, partition, batch)
	if p.ErrorCode != 0 {
		w.t.Fatalf("produce to %s-%d: %v (%s)", topic, partition, kerr.ErrorForCode(p.ErrorCode), str(p.ErrorMessage))
	}
	return p.BaseOffset
}

func producePart(t testing.TB, resp *kmsg.ProduceResponse, topic string, partition int32) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rt.Topic == topic && rp.Partition == partition {
				return rp
			}
		}
	}
	t.Fatalf("produce response has no %s-%d", topic, partition)
	return kmsg.ProduceResponseTopicPartition{}
}

func str(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// wantCode fails the test unless code is want.
func wantCode(t testing.TB, what string, code int16, want *kerr.Error) {
	t.Helper()
	if code != want.Code {
		t.Fatalf("%s: error %v, want %s", what, kerr.ErrorForCode(code), want.Message)
	}
}

func wantOK(t testing.TB, what string, code int16) {
	t.Helper()
	if code != 0 {
		t.Fatalf("%s: error %v", what, kerr.ErrorForCode(code))
	}
}

// ---- admin ----

func (w *wire) createTopic(name string, partitions int32, configs map[string]string) {
	w.t.Helper()
	rt := w.createTopicResult(name, partitions, configs)
	if rt.ErrorCode != 0 {
		w.t.Fatalf("creating %s: %v (%s)", name, kerr.ErrorForCode(rt.ErrorCode), str(rt.ErrorMessage))
	}
}

func (w *wire) createTopicResult(name string, partitions int32, configs map[string]string) kmsg.CreateTopicsResponseTopic {
	w.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.TimeoutMillis = 10000
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = name, partitions, 1
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		ct.Configs = append(ct.Configs, c)
	}
	req.Topics = append(req.Topics, ct)
	resp := w.do(req).(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != 1 {
		w.t.Fatalf("CreateTopics answered %d topics", len(resp.Topics))
	}
	return resp.Topics[0]
}

// metadataTopic returns the Metadata (v12) answer for one topic.
func (w *wire) metadataTopic(name string, allowCreate bool) kmsg.MetadataResponseTopic {
	w.t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	req.AllowAutoTopicCreation = allowCreate
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(name)
	req.Topics = append(req.Topics, mt)
	resp := w.do(req).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 1 {
		w.t.Fatalf("Metadata answered %d topics", len(resp.Topics))
	}
	return resp.Topics[0]
}

// ---- offsets and fetch ----

// listOffset returns the ListOffsets (v7) answer for one partition at
// timestamp ts (-1 latest, -2 earliest).
func (w *wire) listOffset(topic string, partition int32, ts int64) kmsg.ListOffsetsResponseTopicPartition {
	w.t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(7)
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = partition, ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := w.do(req).(*kmsg.ListOffsetsResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		w.t.Fatalf("ListOffsets answered %+v", resp.Topics)
	}
	return resp.Topics[0].Partitions[0]
}

// endOffset returns a partition's latest offset (its high watermark).
func (w *wire) endOffset(topic string, partition int32) int64 {
	w.t.Helper()
	p := w.listOffset(topic, partition, -1)
	if p.ErrorCode != 0 {
		w.t.Fatalf("ListOffsets %s-%d: %v", topic, partition, kerr.ErrorForCode(p.ErrorCode))
	}
	return p.Offset
}

const fetchVersion = 12

type fetchPart struct {
	topic     string
	partition int32
	offset    int64
	maxBytes  int32
}

func fetchRequest(maxWait, minBytes, maxBytes int32, parts ...fetchPart) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(fetchVersion)
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = maxWait, minBytes, maxBytes
	for _, p := range parts {
		var rt *kmsg.FetchRequestTopic
		for i := range req.Topics {
			if req.Topics[i].Topic == p.topic {
				rt = &req.Topics[i]
			}
		}
		if rt == nil {
			req.Topics = append(req.Topics, kmsg.NewFetchRequestTopic())
			rt = &req.Topics[len(req.Topics)-1]
			rt.Topic = p.topic
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p.partition, p.offset, p.maxBytes
		rt.Partitions = append(rt.Partitions, rp)
	}
	return req
}

func fetchParts(t testing.TB, resp *kmsg.FetchResponse) []kmsg.FetchResponseTopicPartition {
	t.Helper()
	if resp.ErrorCode != 0 {
		t.Fatalf("fetch: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	var out []kmsg.FetchResponseTopicPartition
	for _, rt := range resp.Topics {
		out = append(out, rt.Partitions...)
	}
	return out
}

// fetchOne reads one partition from offset without waiting.
func (w *wire) fetchOne(topic string, partition int32, offset int64) kmsg.FetchResponseTopicPartition {
	w.t.Helper()
	resp := w.do(fetchRequest(0, 0, 64<<20, fetchPart{topic, partition, offset, 64 << 20})).(*kmsg.FetchResponse)
	parts := fetchParts(w.t, resp)
	if len(parts) != 1 {
		w.t.Fatalf("fetch answered %d partitions", len(parts))
	}
	return parts[0]
}

// readAll returns every record of a partition from offset 0.
func (w *wire) readAll(topic string, partition int32) []fetched {
	w.t.Helper()
	var out []fetched
	end := w.endOffset(topic, partition)
	for off := int64(0); off < end; {
		p := w.fetchOne(topic, partition, off)
		if p.ErrorCode != 0 {
			w.t.Fatalf("fetch %s-%d at %d: %v", topic, partition, off, kerr.ErrorForCode(p.ErrorCode))
		}
		recs := decodeBatches(w.t, p.RecordBatches)
		if len(recs) == 0 {
			w.t.Fatalf("fetch %s-%d at %d below end %d returned nothing", topic, partition, off, end)
		}
		for _, r := range recs {
			if r.Offset >= off {
				out = append(out, r)
			}
		}
		off = recs[len(recs)-1].Offset + 1
	}
	return out
}

// ---- on disk ----

// logState is what a partition looks like from outside: its end offset
// and the sizes of its segment files.
type logState struct {
	End      int64
	LogFiles map[string]int64
}

func (s logState) String() string { return fmt.Sprintf("end %d, .log files %v", s.End, s.LogFiles) }

func (s logState) equal(o logState) bool {
	if s.End != o.End || len(s.LogFiles) != len(o.LogFiles) {
		return false
	}
	for k, v := range s.LogFiles {
		if o.LogFiles[k] != v {
			return false
		}
	}
	return true
}

// partitionDir is where the node keeps a partition's segments.
func partitionDir(n *servertest.Node, topic string, partition int32) string {
	return filepath.Join(n.Dir, "logs", fmt.Sprintf("%s-%d", topic, partition))
}

// logFileSizes are the sizes of a partition's segment files. A new
// partition's directory is made in the background (or by its first
// write): until then it has no files.
func logFileSizes(t testing.TB, dir string) map[string]int64 {
	t.Helper()
	sizes := map[string]int64{}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return sizes
	}
	if err != nil {
		t.Fatalf("partition directory: %v", err)
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".log") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		sizes[e.Name()] = fi.Size()
	}
	return sizes
}

func (w *wire) logState(n *servertest.Node, topic string, partition int32) logState {
	w.t.Helper()
	return logState{End: w.endOffset(topic, partition), LogFiles: logFileSizes(w.t, partitionDir(n, topic, partition))}
}

// unchanged fails the test if a partition's state differs from before.
func (w *wire) unchanged(n *servertest.Node, topic string, partition int32, before logState) {
	w.t.Helper()
	if after := w.logState(n, topic, partition); !after.equal(before) {
		w.t.Fatalf("%s-%d changed: before %v, after %v", topic, partition, before, after)
	}
}
