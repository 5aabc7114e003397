package kafka_test

// Real-client compatibility: kcat, that is librdkafka. librdkafka decides
// from the broker's ApiVersions ranges which codecs it may use (gzip,
// snappy and lz4 need Produce v0 in range, lz4 also FindCoordinator v0,
// zstd Produce v7), so each codec is checked in the stored batches, not
// only in what a consumer reads back. Skipped when kcat is not installed;
// CI installs it.

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/record"
)

// kcatPath returns kcat's path or skips the test.
func kcatPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat is not on PATH")
	}
	return p
}

// runKcat runs kcat with stdin and returns its stdout; a failure or any
// error report on stderr fails the test.
func runKcat(t *testing.T, ctx context.Context, kcat string, stdin []byte, args ...string) []byte {
	t.Helper()
	cmd := exec.CommandContext(ctx, kcat, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr.String())
	}
	if s := stderr.String(); strings.Contains(s, "ERROR") || strings.Contains(s, "FAIL") {
		t.Fatalf("kcat %s reported errors:\n%s", strings.Join(args, " "), s)
	}
	return stdout.Bytes()
}

// kcatLines makes n key:value lines.
func kcatLines(n int, tag string) []string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf("key-%d:%s value %d %s", i%37, tag, i, strings.Repeat("x", i%60))
	}
	return lines
}

// kcatProduceConsume produces lines to topic with extra producer flags and
// checks that a kcat consumer from the beginning reads exactly those lines:
// each partition's offsets contiguous from 0, each partition in the order
// produced, nothing missing or extra.
func kcatProduceConsume(t *testing.T, ctx context.Context, kcat, addr, topic string, lines []string, produceArgs ...string) {
	t.Helper()
	args := append([]string{"-P", "-b", addr, "-t", topic, "-K:"}, produceArgs...)
	runKcat(t, ctx, kcat, []byte(strings.Join(lines, "\n")+"\n"), args...)

	// A short fetch wait makes -e notice the end of each partition sooner.
	// check.crcs makes librdkafka verify every batch's CRC.
	out := runKcat(t, ctx, kcat, nil, "-C", "-b", addr, "-t", topic, "-o", "beginning", "-e", "-q", "-X", "fetch.wait.max.ms=50",
		"-X", "check.crcs=true", "-f", "%p %o %k:%s\n")
	order := map[string]int{}
	for i, l := range lines {
		order[l] = i
	}
	next := map[int]int64{}
	last := map[int]int{}
	var got []string
	for _, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		f := strings.SplitN(l, " ", 3)
		if len(f) != 3 {
			t.Fatalf("unexpected kcat output line %q", l)
		}
		p, _ := strconv.Atoi(f[0])
		o, _ := strconv.ParseInt(f[1], 10, 64)
		if o != next[p] {
			t.Fatalf("partition %d: offset %d, want %d", p, o, next[p])
		}
		next[p]++
		i, ok := order[f[2]]
		if !ok {
			t.Fatalf("consumed %q, which was never produced", f[2])
		}
		if prev, seen := last[p]; seen && i <= prev {
			t.Fatalf("partition %d: line %d read after line %d", p, i, prev)
		}
		last[p] = i
		got = append(got, f[2])
	}
	want := append([]string(nil), lines...)
	sort.Strings(want)
	sort.Strings(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("kcat read %d lines, produced %d; they differ", len(got), len(want))
	}
}

// Every codec: kcat -z CODEC, read back by kcat -C, stored with the codec.
func TestKcatEveryCodec(t *testing.T) {
	kcat := kcatPath(t)
	n := cliNode(t, nil)
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	codecs := []struct {
		name string
		want record.Codec
	}{{"none", record.None}, {"gzip", record.Gzip}, {"snappy", record.Snappy}, {"lz4", record.LZ4}, {"zstd", record.Zstd}}
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			topic := "kcat-" + c.name
			cliCreateTopic(t, ctx, adm, topic, 2, nil)
			kcatProduceConsume(t, ctx, kcat, n.Addr, topic, kcatLines(1000, c.name), "-z", c.name)
			for p := int32(0); p < 2; p++ {
				cliCheckClientCodec(t, ctx, n.Addr, topic, p, c.want)
			}
		})
	}
}

// kcat -L lists the broker and the topic with its partitions.
func TestKcatMetadataList(t *testing.T) {
	kcat := kcatPath(t)
	n := cliNode(t, nil)
	ctx := cliCtx(t)
	cliCreateTopic(t, ctx, cliAdmin(t, n.Addr), "kcat-listed", 3, nil)
	out := string(runKcat(t, ctx, kcat, nil, "-L", "-b", n.Addr))
	for _, want := range []string{
		"1 brokers:",
		"broker 1 at " + n.Addr,
		`topic "kcat-listed" with 3 partitions:`,
		"partition 0, leader 1, replicas: 1, isrs: 1",
		"partition 2, leader 1, replicas: 1, isrs: 1",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("kcat -L output lacks %q:\n%s", want, out)
		}
	}
	out = string(runKcat(t, ctx, kcat, nil, "-L", "-b", n.Addr, "-t", "kcat-listed"))
	if !strings.Contains(out, `topic "kcat-listed" with 3 partitions:`) {
		t.Fatalf("kcat -L -t output:\n%s", out)
	}
}

// The idempotent librdkafka producer: InitProducerId, sequences, and a
// topic created on first use (auto.create.topics.enable).
func TestKcatIdempotentProducer(t *testing.T) {
	kcat := kcatPath(t)
	n := cliNode(t, map[string]string{"num.partitions": "2"})
	ctx := cliCtx(t)
	topic := "kcat-idempotent"
	kcatProduceConsume(t, ctx, kcat, n.Addr, topic, kcatLines(1000, "idem"), "-X", "enable.idempotence=true", "-z", "lz4")
	for p := int32(0); p < 2; p++ {
		next := map[int64]int32{}
		for _, b := range cliCheckClientCodec(t, ctx, n.Addr, topic, p, record.LZ4) {
			if b.ProducerID() < 0 || b.BaseSequence() != next[b.ProducerID()] {
				t.Fatalf("%s-%d batch at %d: producer id %d, sequence %d, want %d", topic, p, b.BaseOffset(), b.ProducerID(), b.BaseSequence(), next[b.ProducerID()])
			}
			next[b.ProducerID()] = b.LastSequence() + 1
		}
	}
}

// acks=0 produce, null keys and values (-Z sends empty as NULL), and the
// consumer's start positions: an absolute offset, relative to the end, and
// by timestamp (s@ms, through ListOffsets).
func TestKcatAcksNullsAndOffsets(t *testing.T) {
	kcat := kcatPath(t)
	n := cliNode(t, nil)
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	topic := "kcat-offsets"
	cliCreateTopic(t, ctx, adm, topic, 1, nil)
	lines := []string{"k1:v1", ":null-key", "k3:", "k4:v4"}
	runKcat(t, ctx, kcat, []byte(strings.Join(lines, "\n")+"\n"), "-P", "-b", n.Addr, "-t", topic, "-K:", "-Z", "-X", "acks=0")
	// acks=0 answers nothing: wait for the records to be in.
	for {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := ends.Lookup(topic, 0); o.Offset == int64(len(lines)) {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("deadline waiting for the acks=0 records")
		}
	}
	out := runKcat(t, ctx, kcat, nil, "-C", "-b", n.Addr, "-t", topic, "-o", "beginning", "-e", "-q", "-X", "fetch.wait.max.ms=50",
		"-f", "%o %K %S %k:%s\n")
	want := "0 2 2 k1:v1\n1 -1 8 :null-key\n2 2 -1 k3:\n3 2 2 k4:v4\n"
	if string(out) != want {
		t.Fatalf("kcat read\n%s\nwant (offset, key length, value length; -1 is null)\n%s", out, want)
	}

	// Records with known timestamps, through franz-go, in another topic.
	timed := "kcat-times"
	cliCreateTopic(t, ctx, adm, timed, 1, nil)
	cl := cliFranz(t, n.Addr, kgo.DefaultProduceTopic(timed))
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var recs []*kgo.Record
	for i := 0; i < 20; i++ {
		recs = append(recs, &kgo.Record{Value: []byte(strconv.Itoa(i)), Timestamp: base.Add(time.Duration(i) * time.Second)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	read := func(offset string) string {
		return string(runKcat(t, ctx, kcat, nil, "-C", "-b", n.Addr, "-t", timed, "-o", offset, "-e", "-q", "-X", "fetch.wait.max.ms=50", "-f", "%o,"))
	}
	if got := read("16"); got != "16,17,18,19," {
		t.Fatalf("kcat -o 16 read offsets %q", got)
	}
	if got := read("-3"); got != "17,18,19," {
		t.Fatalf("kcat -o -3 read offsets %q", got)
	}
	if got := read("s@" + strconv.FormatInt(base.Add(15500*time.Millisecond).UnixMilli(), 10)); got != "16,17,18,19," {
		t.Fatalf("kcat -o s@(record 16's time - 0.5s) read offsets %q", got)
	}
}

// Batches the broker rewrites: on a topic with compression.type=zstd and
// message.timestamp.type=LogAppendTime, gzip batches from kcat are stored
// recompressed with zstd and stamped with the append time; librdkafka
// reads them with CRC checks on and sees the broker's timestamps.
func TestKcatBrokerRewrittenBatches(t *testing.T) {
	kcat := kcatPath(t)
	n := cliNode(t, nil)
	ctx := cliCtx(t)
	topic := "kcat-rewritten"
	cliCreateTopic(t, ctx, cliAdmin(t, n.Addr), topic, 2, map[string]*string{
		"compression.type":       kadm.StringPtr("zstd"),
		"message.timestamp.type": kadm.StringPtr("LogAppendTime"),
	})
	before := time.Now().UnixMilli()
	kcatProduceConsume(t, ctx, kcat, n.Addr, topic, kcatLines(500, "rewritten"), "-z", "gzip")
	after := time.Now().UnixMilli()
	for p := int32(0); p < 2; p++ {
		cliCheckCodecs(t, ctx, n.Addr, topic, p, record.Zstd)
	}
	out := runKcat(t, ctx, kcat, nil, "-C", "-b", n.Addr, "-t", topic, "-o", "beginning", "-e", "-q", "-X", "fetch.wait.max.ms=50",
		"-X", "check.crcs=true", "-f", "%T\n")
	lines := strings.Fields(string(out))
	if len(lines) != 500 {
		t.Fatalf("read %d timestamps, want 500", len(lines))
	}
	for _, l := range lines {
		ts, err := strconv.ParseInt(l, 10, 64)
		if err != nil || ts < before || ts > after {
			t.Fatalf("timestamp %q, want the append time in [%d, %d]", l, before, after)
		}
	}
}
