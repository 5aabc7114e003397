package kafka_test

// The connection layer and Fetch, spoken directly: framing errors, KIP-511,
// acks=0, pipelining, concurrency, long polls and byte limits.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/record"
	"weir/internal/servertest"
)

// A malformed frame closes its own connection only.
func TestBadFramesCloseOnlyTheirConnection(t *testing.T) {
	const maxRequest = 1 << 20
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{"socket.request.max.bytes": fmt.Sprint(maxRequest)}})
	bystander := dial(t, n.Addr)
	bystander.ping()

	size := func(n int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }
	// A Metadata v12 body whose topic array claims 2^32-2 entries.
	garbage := []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 0xde, 0xad}
	probe := kmsg.NewPtrMetadataRequest()
	probe.SetVersion(12)
	if err := probe.ReadFrom(garbage); err == nil {
		t.Fatal("the garbage body decodes; pick other garbage")
	}
	header := kbin.AppendInt32(kbin.AppendInt16(kbin.AppendInt16(nil, 3), 12), 7) // Metadata v12, correlation id 7
	produce := produceRequest(produceVersion, -1, partData{"t", 0, []byte{1, 2, 3}})

	for _, tc := range []struct {
		name  string
		frame []byte
	}{
		{"negative size", size(-2)},
		{"size zero", size(0)},
		{"over socket.request.max.bytes", append(size(maxRequest+1), bytes.Repeat([]byte{0}, 64)...)},
		{"shorter than a header", append(size(4), 0, 3, 0, 12)},
		{"truncated header", append(size(int32(len(header)+1)), append(bytes.Clone(header), 0)...)},
		{"truncated client id", append(size(int32(len(header)+4)), append(bytes.Clone(header), 0, 9, 'a', 'b')...)},
		{"garbage body", rawFrame(3, 12, 7, true, garbage)},
		{"truncated body", func() []byte {
			f := encodeRequest(nil, produce, 7)
			f = f[:len(f)-2]
			binary.BigEndian.PutUint32(f, uint32(len(f)-4))
			return f
		}()},
		{"unknown api key", rawFrame(999, 0, 7, false, nil)},
		{"negative api key", rawFrame(-1, 0, 7, false, nil)},
		{"Produce v99", rawFrame(0, 99, 7, false, produce.AppendTo(nil))},
		{"Fetch v3, below the served range", rawFrame(1, 3, 7, false, fetchRequest(0, 0, 1, fetchPart{"t", 0, 0, 1}).AppendTo(nil))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, n.Addr)
			c.writeErr(tc.frame) // the broker may close before reading it all
			c.expectClosed()
			bystander.ping()
		})
	}
	// A frame of exactly socket.request.max.bytes is read, not refused.
	c := dial(t, n.Addr)
	big := produceRequest(produceVersion, -1, partData{"nope", 0, make([]byte, maxRequest-200)})
	f := encodeRequest(nil, big, 1)
	pad := maxRequest - (len(f) - 4)
	big.Topics[0].Partitions[0].Records = make([]byte, maxRequest-200+pad)
	f = encodeRequest(nil, big, 1)
	if len(f)-4 != maxRequest {
		t.Fatalf("frame of %d bytes, want %d", len(f)-4, maxRequest)
	}
	c.write(f)
	resp := c.recv(big, 1).(*kmsg.ProduceResponse)
	wantCode(t, "produce of exactly socket.request.max.bytes", producePart(t, resp, "nope", 0).ErrorCode, kerr.UnknownTopicOrPartition)
}

// An ApiVersions version the broker does not know is answered at v0
// with UNSUPPORTED_VERSION and the API list (KIP-511).
func TestApiVersionsUnsupportedVersion(t *testing.T) {
	n := servertest.Start(t, servertest.Options{})
	w := dial(t, n.Addr)
	body := kmsg.NewPtrApiVersionsRequest()
	body.SetVersion(4)
	body.ClientSoftwareName, body.ClientSoftwareVersion = "future-client", "9.9"
	w.write(rawFrame(apiVersionsKey, 99, 42, true, body.AppendTo(nil)))
	frame, err := w.readFrame()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := decodeResponse(frame, apiVersionsKey, 0, 42)
	if err != nil {
		t.Fatal(err)
	}
	av := resp.(*kmsg.ApiVersionsResponse)
	wantCode(t, "ApiVersions v99", av.ErrorCode, kerr.UnsupportedVersion)
	found := false
	for _, k := range av.ApiKeys {
		if k.ApiKey == apiVersionsKey {
			found = k.MinVersion == 0 && k.MaxVersion >= 3
		}
	}
	if !found {
		t.Fatalf("ApiVersions v99 answer does not list ApiVersions 0-3+: %+v", av.ApiKeys)
	}
	w.ping() // the client retries at a version both know, on the same connection
}

func TestApiVersionsInvalidClientSoftware(t *testing.T) {
	n := servertest.Start(t, servertest.Options{})
	w := dial(t, n.Addr)
	for _, sw := range [][2]string{{"bad name!", "1.0"}, {"", "1.0"}, {"client", "-1"}, {"client", "1.0 beta"}} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(3)
		req.ClientSoftwareName, req.ClientSoftwareVersion = sw[0], sw[1]
		resp := w.do(req).(*kmsg.ApiVersionsResponse)
		wantCode(t, fmt.Sprintf("ApiVersions v3 from %q %q", sw[0], sw[1]), resp.ErrorCode, kerr.InvalidRequest)
	}
	w.ping()
}

// acks=0: a good produce gets no response; a bad one closes the
// connection and writes nothing.
func TestAcksZero(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: noAutoCreate})
	w := dial(t, n.Addr)
	w.createTopic("fire", 1, nil)

	w.send(produceRequest(produceVersion, 0, partData{"fire", 0, batchOf(t, 2, "a")}))
	w.send(produceRequest(produceVersion, 0, partData{"fire", 0, batchOf(t, 3, "b")}))
	// The next response on the connection is the next request's.
	if end := w.endOffset("fire", 0); end != 5 {
		t.Fatalf("end offset %d after two acks=0 produces of 5 records", end)
	}

	before := w.logState(n, "fire", 0)
	bad := batchOf(t, 2, "bad")
	bad[len(bad)-1] ^= 0xff
	c := dial(t, n.Addr)
	c.send(produceRequest(produceVersion, 0, partData{"fire", 0, bad}))
	c.expectClosed()
	w.unchanged(n, "fire", 0, before)

	// An unknown topic with acks=0 is an error too.
	c = dial(t, n.Addr)
	c.send(produceRequest(produceVersion, 0, partData{"nope", 0, batchOf(t, 1, "x")}))
	c.expectClosed()
	w.unchanged(n, "fire", 0, before)
}

// Requests written back to back on one connection are answered and
// appended in order.
func TestPipelinedProduce(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: noAutoCreate})
	w := dial(t, n.Addr)
	w.createTopic("pipe", 1, nil)

	const count = 50
	reqs := make([]*kmsg.ProduceRequest, count)
	var buf []byte
	first := w.corr + 1
	for i := range reqs {
		acks := int16(-1)
		if i%2 == 1 {
			acks = 1
		}
		reqs[i] = produceRequest(produceVersion, acks, partData{"pipe", 0, buildBatch(t, batchHeader(), testRecords(1, fmt.Sprintf("p%02d", i)))})
		buf = encodeRequest(buf, reqs[i], w.nextCorr())
	}
	w.write(buf) // all 50 before reading anything
	for i, req := range reqs {
		resp := w.recv(req, first+int32(i)).(*kmsg.ProduceResponse)
		p := producePart(t, resp, "pipe", 0)
		wantOK(t, fmt.Sprintf("pipelined produce %d", i), p.ErrorCode)
		if p.BaseOffset != int64(i) {
			t.Fatalf("pipelined produce %d at offset %d", i, p.BaseOffset)
		}
	}
	got := w.readAll("pipe", 0)
	if len(got) != count {
		t.Fatalf("read %d records, want %d", len(got), count)
	}
	for i, r := range got {
		if want := fmt.Sprintf("p%02d-0", i); r.Value != want {
			t.Fatalf("record %d is %q, want %q", i, r.Value, want)
		}
	}
}

func TestConcurrentProducers(t *testing.T) {
	// Fixed socket buffers instead of the kernel's autotuning.
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{"auto.create.topics.enable": "false",
		"socket.send.buffer.bytes": "131072", "socket.receive.buffer.bytes": "131072"}})
	w := dial(t, n.Addr)
	w.createTopic("busy", 4, nil)

	const conns, batches, perBatch = 20, 10, 3
	errs := make(chan error, conns)
	var wg sync.WaitGroup
	for c := 0; c < conns; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- func() error {
				cw, err := dialErr(t, n.Addr)
				if err != nil {
					return err
				}
				for i := 0; i < batches; i++ {
					b, err := record.Build(batchHeader(), testRecords(perBatch, fmt.Sprintf("c%d-%d", c, i)), 0)
					if err != nil {
						return err
					}
					part := int32((c + i) % 4)
					req := produceRequest(produceVersion, -1, partData{"busy", part, b})
					resp, err := cw.doErr(req)
					if err != nil {
						return fmt.Errorf("connection %d: %w", c, err)
					}
					for _, rt := range resp.(*kmsg.ProduceResponse).Topics {
						for _, rp := range rt.Partitions {
							if rp.ErrorCode != 0 {
								return fmt.Errorf("connection %d batch %d: %v", c, i, kerr.ErrorForCode(rp.ErrorCode))
							}
						}
					}
				}
				return nil
			}()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var total int64
	for p := int32(0); p < 4; p++ {
		recs := w.readAll("busy", p)
		for i, r := range recs {
			if r.Offset != int64(i) {
				t.Fatalf("busy-%d: record %d at offset %d", p, i, r.Offset)
			}
		}
		total += int64(len(recs))
	}
	if total != conns*batches*perBatch {
		t.Fatalf("%d records in the topic, want %d", total, conns*batches*perBatch)
	}
}

func TestFetchLongPollWakesOnProduce(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: noAutoCreate})
	w := dial(t, n.Addr)
	w.createTopic("poll", 1, nil)
	w.produceOK("poll", 0, batchOf(t, 1, "old"))

	// Max wait is long enough that only the produce can end the poll
	// early; it is not reached unless the wake-up is lost.
	const maxWait = 15 * time.Second
	consumer := dial(t, n.Addr)
	req := fetchRequest(int32(maxWait/time.Millisecond), 1, 1<<20, fetchPart{"poll", 0, 1, 1 << 20})
	start := time.Now()
	corr := consumer.send(req)
	w.produceOK("poll", 0, batchOf(t, 1, "new"))
	resp := consumer.recv(req, corr).(*kmsg.FetchResponse)
	elapsed := time.Since(start)
	parts := fetchParts(t, resp)
	wantOK(t, "long poll", parts[0].ErrorCode)
	recs := decodeBatches(t, parts[0].RecordBatches)
	if len(recs) != 1 || recs[0].Offset != 1 || recs[0].Value != "new-0" {
		t.Fatalf("long poll returned %+v, want the new record at offset 1", recs)
	}
	if elapsed >= maxWait {
		t.Fatalf("long poll returned after %v, the full max wait", elapsed)
	}
}

func TestFetchMaxWaitWithoutData(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: noAutoCreate})
	w := dial(t, n.Addr)
	w.createTopic("quiet", 2, nil)
	w.produceOK("quiet", 0, batchOf(t, 1, "x"))
	resp := w.do(fetchRequest(300, 1, 1<<20, fetchPart{"quiet", 0, 1, 1 << 20}, fetchPart{"quiet", 1, 0, 1 << 20})).(*kmsg.FetchResponse)
	for _, p := range fetchParts(t, resp) {
		wantOK(t, fmt.Sprintf("idle long poll, partition %d", p.Partition), p.ErrorCode)
		if len(p.RecordBatches) != 0 {
			t.Fatalf("idle long poll returned %d bytes for partition %d", len(p.RecordBatches), p.Partition)
		}
	}
	// min bytes above what there is: still answered at max wait, with
	// what there is.
	resp = w.do(fetchRequest(300, 1<<20, 1<<20, fetchPart{"quiet", 0, 0, 1 << 20})).(*kmsg.FetchResponse)
	if recs := decodeBatches(t, fetchParts(t, resp)[0].RecordBatches); len(recs) != 1 {
		t.Fatalf("fetch with unmet min bytes returned %d records, want 1", len(recs))
	}
}

func TestFetchErrors(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: noAutoCreate})
	w := dial(t, n.Addr)
	w.createTopic("f", 1, nil)
	w.produceOK("f", 0, batchOf(t, 3, "x"))

	for _, off := range []int64{4, 1000, -5} {
		p := w.fetchOne("f", 0, off)
		wantCode(t, fmt.Sprintf("fetch at %d", off), p.ErrorCode, kerr.OffsetOutOfRange)
		if p.HighWatermark != 3 || p.LogStartOffset != 0 {
			t.Fatalf("OFFSET_OUT_OF_RANGE with high watermark %d, log start %d", p.HighWatermark, p.LogStartOffset)
		}
	}
	// The end itself is in range: nothing yet.
	if p := w.fetchOne("f", 0, 3); p.ErrorCode != 0 || len(p.RecordBatches) != 0 {
		t.Fatalf("fetch at the end: error %d, %d bytes", p.ErrorCode, len(p.RecordBatches))
	}

	// Fetch sessions are declined: an incremental fetch names a session
	// that does not exist.
	req := fetchRequest(0, 0, 1<<20, fetchPart{"f", 0, 0, 1 << 20})
	req.SessionID, req.SessionEpoch = 12345, 1
	resp := w.do(req).(*kmsg.FetchResponse)
	wantCode(t, "incremental fetch", resp.ErrorCode, kerr.FetchSessionIDNotFound)
	// A full fetch that asks for a session gets none, and data.
	req = fetchRequest(0, 0, 1<<20, fetchPart{"f", 0, 0, 1 << 20})
	req.SessionID, req.SessionEpoch = 0, 0
	resp = w.do(req).(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 || resp.SessionID != 0 || len(decodeBatches(t, fetchParts(t, resp)[0].RecordBatches)) != 3 {
		t.Fatalf("full fetch asking for a session: error %d, session %d", resp.ErrorCode, resp.SessionID)
	}
}

// wholeBatches returns the sizes of the complete batches in data; a
// partial last batch (Kafka cuts the last one at the byte limit, as weir
// does) is not counted.
func wholeBatches(t testing.TB, data []byte) []int {
	t.Helper()
	var sizes []int
	for len(data) > 0 {
		b, rest, err := record.Next(data)
		if errors.Is(err, record.ErrShort) {
			break
		}
		if err != nil {
			t.Fatalf("fetched bytes are not batches: %v", err)
		}
		sizes = append(sizes, len(b))
		data = rest
	}
	return sizes
}

func TestFetchByteLimits(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: noAutoCreate})
	w := dial(t, n.Addr)
	w.createTopic("lim", 3, nil)
	value := bytes.Repeat([]byte("v"), 1000)
	batchSize := 0
	for p := int32(0); p < 3; p++ {
		for i := 0; i < 4; i++ {
			b := buildBatch(t, batchHeader(), []record.Record{{Key: []byte("k"), Value: value}})
			batchSize = len(b)
			w.produceOK("lim", p, b)
		}
	}
	all := []fetchPart{{"lim", 0, 0, 1 << 20}, {"lim", 1, 0, 1 << 20}, {"lim", 2, 0, 1 << 20}}

	t.Run("response max bytes across partitions", func(t *testing.T) {
		maxBytes := int32(2*batchSize + batchSize/2)
		resp := w.do(fetchRequest(0, 0, maxBytes, all...)).(*kmsg.FetchResponse)
		total := 0
		parts := fetchParts(t, resp)
		for _, p := range parts {
			wantOK(t, "fetch", p.ErrorCode)
			total += len(p.RecordBatches)
		}
		if total > int(maxBytes) {
			t.Fatalf("fetch with max bytes %d returned %d bytes", maxBytes, total)
		}
		if got := wholeBatches(t, parts[0].RecordBatches); len(got) != 2 {
			t.Fatalf("first partition returned %d whole batches, want the 2 that fit", len(got))
		}
	})
	t.Run("partition max bytes", func(t *testing.T) {
		parts := append([]fetchPart(nil), all...)
		for i := range parts {
			parts[i].maxBytes = int32(batchSize + batchSize/2)
		}
		resp := w.do(fetchRequest(0, 0, 1<<20, parts...)).(*kmsg.FetchResponse)
		for _, p := range fetchParts(t, resp) {
			if len(p.RecordBatches) > int(parts[0].maxBytes) {
				t.Fatalf("partition %d returned %d bytes, over its max bytes %d", p.Partition, len(p.RecordBatches), parts[0].maxBytes)
			}
			if got := wholeBatches(t, p.RecordBatches); len(got) != 1 {
				t.Fatalf("partition %d returned %d whole batches under a one-and-a-half-batch partition max bytes", p.Partition, len(got))
			}
		}
	})
	t.Run("oversized batch returned whole for the first partition", func(t *testing.T) {
		small := int32(batchSize / 4)
		parts := append([]fetchPart(nil), all...)
		for i := range parts {
			parts[i].maxBytes = small
		}
		resp := w.do(fetchRequest(0, 0, small, parts...)).(*kmsg.FetchResponse)
		got := fetchParts(t, resp)
		if sizes := wholeBatches(t, got[0].RecordBatches); len(sizes) != 1 || len(got[0].RecordBatches) != batchSize {
			t.Fatalf("first partition returned batches %v, want one whole batch of %d bytes", sizes, batchSize)
		}
		for _, p := range got[1:] {
			wantOK(t, "fetch", p.ErrorCode)
			if len(p.RecordBatches) != 0 {
				t.Fatalf("partition %d returned %d bytes past the response's max bytes", p.Partition, len(p.RecordBatches))
			}
		}
	})
}

// fetch.max.bytes caps a fetch whose max bytes is larger.
func TestFetchMaxBytesCapsRequests(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{"auto.create.topics.enable": "false", "fetch.max.bytes": "2048"}})
	w := dial(t, n.Addr)
	w.createTopic("cap", 3, nil)
	value := bytes.Repeat([]byte("v"), 800)
	for p := int32(0); p < 3; p++ {
		for i := 0; i < 2; i++ {
			w.produceOK("cap", p, buildBatch(t, batchHeader(), []record.Record{{Key: []byte("k"), Value: value}}))
		}
	}
	all := []fetchPart{{"cap", 0, 0, 1 << 20}, {"cap", 1, 0, 1 << 20}, {"cap", 2, 0, 1 << 20}}
	resp := w.do(fetchRequest(0, 1, 1<<20, all...)).(*kmsg.FetchResponse)
	total := 0
	for _, p := range fetchParts(t, resp) {
		wantOK(t, "fetch", p.ErrorCode)
		total += len(p.RecordBatches)
	}
	if total == 0 || total > 2048 {
		t.Fatalf("a fetch of up to 1 MiB returned %d bytes under fetch.max.bytes=2048", total)
	}
}

// Without transactions, read_committed reads what read_uncommitted reads.
func TestFetchReadCommitted(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: noAutoCreate})
	w := dial(t, n.Addr)
	w.createTopic("rc", 1, nil)
	for i := 0; i < 3; i++ {
		w.produceOK("rc", 0, batchOf(t, 2, fmt.Sprint("b", i)))
	}
	var got [2]kmsg.FetchResponseTopicPartition
	for iso := int8(0); iso < 2; iso++ {
		req := fetchRequest(0, 0, 1<<20, fetchPart{"rc", 0, 0, 1 << 20})
		req.IsolationLevel = iso
		got[iso] = fetchParts(t, w.do(req).(*kmsg.FetchResponse))[0]
		wantOK(t, fmt.Sprint("fetch with isolation ", iso), got[iso].ErrorCode)
	}
	u, c := got[0], got[1]
	if !bytes.Equal(u.RecordBatches, c.RecordBatches) || u.HighWatermark != c.HighWatermark ||
		u.LastStableOffset != c.LastStableOffset || c.LastStableOffset != 6 || len(c.AbortedTransactions) != 0 {
		t.Fatalf("read_committed: HW %d LSO %d, %d bytes; read_uncommitted: HW %d LSO %d, %d bytes",
			c.HighWatermark, c.LastStableOffset, len(c.RecordBatches), u.HighWatermark, u.LastStableOffset, len(u.RecordBatches))
	}
	if len(decodeBatches(t, c.RecordBatches)) != 6 {
		t.Fatal("read_committed did not return the 6 records")
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(7)
	req.ReplicaID, req.IsolationLevel = -1, 1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "rc"
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	lo := w.do(req).(*kmsg.ListOffsetsResponse)
	if p := lo.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != 6 {
		t.Fatalf("read_committed latest offset: error %d, offset %d, want 6", p.ErrorCode, p.Offset)
	}
}
