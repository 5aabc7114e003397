// Package reqfuzz fuzzes weir nodes from outside, at the wire: for every
// API key and version a node advertises it sends requests built with kmsg
// and filled with random type-valid values (empty, huge and non-UTF-8
// strings, internal and existing topics, extreme integers, null, empty and
// huge arrays, CRC-valid nonsense record batches), some byte-mutated
// after encoding and some under another API's header, on raw loopback
// connections. Every hundred requests a canary writes and reads back
// through a normal client and every node's memory is checked; at the end
// the cluster restarts and all canary data, a consumer group and
// transactions must work. Failures carry the seed and the last frames.
// Tests and bench/reqfuzz use it; weir's binary does not.
package reqfuzz

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config is one fuzzing run.
type Config struct {
	Seed     uint64
	Duration time.Duration // stop after this long
	Requests int           // or after this many requests (0: no limit)
	// HealthEvery is the number of requests between health checks.
	HealthEvery int
	// MaxRSS bounds every node's resident memory, checked after every
	// request.
	MaxRSS int64
	// Keep is how many of the last frames a failure shows.
	Keep int
	// Restart restarts the cluster after the run, before the final check.
	Restart bool
	Log     io.Writer // progress lines
}

// Defaults used for zero Config fields. A node answering the largest
// legitimate requests (8 MiB naming a million partitions) peaks near
// 0.8 GB; the amplifications the fuzzer found grew by several GB.
const (
	DefaultHealthEvery = 100
	DefaultMaxRSS      = 2 << 30
	DefaultKeep        = 20
)

// Stats count what a run sent and how the nodes answered.
type Stats struct {
	Requests, Mutated, HealthChecks int
	MaxRSS                          int64
	PerAPI                          map[int16]*APIStats // by the body's API key
}

// APIStats count the outcomes of one API's requests; CleanClosed counts
// the connections closed on a clean frame (after an acks=0 Produce that
// failed, or on a request Kafka would not parse either).
type APIStats struct {
	Sent, Answered, Closed, CleanClosed, Silent int
}

func (a *APIStats) closed(clean bool) {
	a.Closed++
	if clean {
		a.CleanClosed++
	}
}

func (s *Stats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d requests (%d mutated), %d health checks, max RSS %d MiB\n", s.Requests, s.Mutated, s.HealthChecks, s.MaxRSS>>20)
	fmt.Fprintf(&b, "%-28s %8s %8s %8s %8s %8s\n", "API", "sent", "answered", "closed", "(clean)", "silent")
	for _, k := range slices.Sorted(maps.Keys(s.PerAPI)) {
		a := s.PerAPI[k]
		fmt.Fprintf(&b, "%-28s %8d %8d %8d %8d %8d\n", fmt.Sprintf("%d %s", k, kmsg.NameForKey(k)), a.Sent, a.Answered, a.Closed, a.CleanClosed, a.Silent)
	}
	return b.String()
}

// Failure is a run that found a problem: what, at which request, with the
// seed that reproduces the run and the last frames sent.
type Failure struct {
	Seed   uint64
	Seq    int
	What   string
	Frames []*sent
	Logs   string // the end of the nodes' logs
}

func (f *Failure) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "reqfuzz: %s\nat request %d; reproduce with -seed %d\nlast %d frames:\n", f.What, f.Seq, f.Seed, len(f.Frames))
	for _, s := range f.Frames {
		b.WriteString(s.String())
	}
	b.WriteString(f.Logs)
	return b.String()
}

// sent is a frame with where it went and what came back.
type sent struct {
	*Frame
	Node    int
	Outcome string
}

func (s *sent) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d to node %d: %s v%d, %d bytes", s.Seq, s.Node, kmsg.NameForKey(s.Key), s.Version, len(s.Bytes))
	if !s.Clean() {
		fmt.Fprintf(&b, ", body %s v%d, %s", kmsg.NameForKey(s.Req.Key()), s.Req.GetVersion(), s.Mutation)
	}
	fmt.Fprintf(&b, " -> %s\n", s.Outcome)
	body := describe(s.Req)
	if len(body) > 3000 {
		body = body[:3000] + "..."
	}
	fmt.Fprintf(&b, "  %s\n", body)
	head := s.Bytes[:min(len(s.Bytes), 256)]
	for line := range strings.Lines(hex.Dump(head)) {
		b.WriteString("  " + line)
	}
	return b.String()
}

// driver holds one run's connections and state.
type driver struct {
	cfg    Config
	c      *Cluster
	gen    *Generator
	route  *rand.Rand // which node gets each frame
	conns  []*conn
	last   []*sent // ring of the last cfg.Keep frames
	stats  *Stats
	canary *canary
}

type conn struct {
	nc net.Conn
	r  *bufio.Reader
}

// Run fuzzes the cluster until cfg's duration or request count is
// reached or ctx ends, checking health every cfg.HealthEvery requests,
// then (with cfg.Restart) restarts the cluster and checks that all the
// canary data, a consumer group and transactions work. A problem found is
// a *Failure.
func Run(ctx context.Context, c *Cluster, cfg Config) (*Stats, error) {
	if cfg.HealthEvery <= 0 {
		cfg.HealthEvery = DefaultHealthEvery
	}
	if cfg.MaxRSS <= 0 {
		cfg.MaxRSS = DefaultMaxRSS
	}
	if cfg.Keep <= 0 {
		cfg.Keep = DefaultKeep
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	for _, a := range c.Addrs() {
		if err := loopback(a); err != nil {
			return nil, err
		}
	}
	d := &driver{cfg: cfg, c: c, conns: make([]*conn, len(c.Nodes)), stats: &Stats{PerAPI: map[int16]*APIStats{}},
		route: rand.New(rand.NewPCG(cfg.Seed, 1))}
	defer d.closeAll()
	if err := d.setup(ctx); err != nil {
		return d.stats, d.fail(0, "setup: %v", err)
	}
	defer d.canary.close()
	start := time.Now()
	for i := 1; ; i++ {
		if ctx.Err() != nil || time.Since(start) >= cfg.Duration || cfg.Requests > 0 && i > cfg.Requests {
			break
		}
		f := d.gen.Next()
		s := &sent{Frame: f, Node: d.route.IntN(len(c.Nodes))}
		d.last = append(d.last, s)
		if len(d.last) > cfg.Keep {
			d.last = d.last[1:]
		}
		if err := d.send(s); err != nil {
			return d.stats, d.fail(f.Seq, "%v", err)
		}
		if err := c.Dead(); err != nil {
			return d.stats, d.fail(f.Seq, "%v", err)
		}
		if err := d.memory(); err != nil {
			return d.stats, d.fail(f.Seq, "%v", err)
		}
		if i%cfg.HealthEvery == 0 {
			if err := d.health(ctx); err != nil {
				return d.stats, d.fail(f.Seq, "health check: %v", err)
			}
			if i%(cfg.HealthEvery*10) == 0 {
				fmt.Fprintf(cfg.Log, "reqfuzz: %d requests, %v, max RSS %d MiB\n", i, time.Since(start).Round(time.Second), d.stats.MaxRSS>>20)
			}
		}
	}
	seq := d.gen.seq
	if err := d.health(ctx); err != nil {
		return d.stats, d.fail(seq, "health check: %v", err)
	}
	if cfg.Restart {
		d.closeAll()
		d.canary.close()
		fmt.Fprintf(cfg.Log, "reqfuzz: restarting the cluster\n")
		if err := c.Restart(); err != nil {
			return d.stats, d.fail(seq, "restart: %v", err)
		}
	}
	if err := d.canary.final(ctx); err != nil {
		return d.stats, d.fail(seq, "final check: %v", err)
	}
	return d.stats, nil
}

// loopback refuses any address that is not a loopback IP: the fuzzer
// sends nothing anywhere else.
func loopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("reqfuzz: %s is not a loopback address", addr)
	}
	return nil
}

func (d *driver) fail(seq int, format string, args ...any) error {
	f := &Failure{Seed: d.cfg.Seed, Seq: seq, What: fmt.Sprintf(format, args...), Frames: d.last}
	for _, n := range d.c.Nodes {
		f.Logs += fmt.Sprintf("--- end of node %d's log (%s/node%d.log)\n%s", n.ID, d.c.Dir, n.ID, d.c.LogTail(n.ID, 4000))
	}
	return f
}

// setup asks node 1 for its APIs, creates the fuzz topics and the canary,
// and learns the topic ids the generator may use.
func (d *driver) setup(ctx context.Context) error {
	var err error
	if d.canary, err = newCanary(ctx, d.c.Addrs()); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(d.c.Nodes[0].Addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "weir-reqfuzz", "1"
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err == nil {
		err = kerr.ErrorForCode(resp.(*kmsg.ApiVersionsResponse).ErrorCode)
	}
	if err != nil {
		return fmt.Errorf("ApiVersions: %w", err)
	}
	var apis []API
	for _, k := range resp.(*kmsg.ApiVersionsResponse).ApiKeys {
		apis = append(apis, API{k.ApiKey, k.MinVersion, k.MaxVersion})
	}
	d.gen = NewGenerator(d.cfg.Seed, apis)
	if err := createTopics(ctx, cl, FuzzTopics, 2, min(len(d.c.Nodes), 3), nil); err != nil {
		return err
	}
	if err := d.canary.final(ctx); err != nil { // groups and transactions work before fuzzing
		return err
	}
	ids, err := topicIDs(ctx, cl, append(slices.Clone(FuzzTopics), InternalTopics...))
	if err != nil {
		return err
	}
	d.gen.TopicIDs = ids
	return nil
}

// health runs the canary.
func (d *driver) health(ctx context.Context) error {
	d.stats.HealthChecks++
	return d.canary.check(ctx)
}

// memory checks every node's resident memory (cheap: after every request,
// so the frame that made it grow is the last one shown).
func (d *driver) memory() error {
	for _, n := range d.c.Nodes {
		rss, err := n.RSS()
		if err != nil {
			return fmt.Errorf("node %d: %v", n.ID, err)
		}
		d.stats.MaxRSS = max(d.stats.MaxRSS, rss)
		if rss > d.cfg.MaxRSS {
			return fmt.Errorf("node %d uses %d MiB of memory, over the bound of %d MiB", n.ID, rss>>20, d.cfg.MaxRSS>>20)
		}
	}
	return nil
}

// Answer deadlines: a clean request may wait on a long poll or a
// rebalance that its random fields ask for; garbage is answered at once
// or not at all. Neither silence nor a closed connection is a failure.
const (
	cleanWait   = 5 * time.Second
	garbageWait = time.Second
)

// send writes a frame to its node and reads the answer. Only a malformed
// answer to a request the broker could parse is an error; the broker may
// close the connection or stay silent.
func (d *driver) send(s *sent) error {
	st := d.stats.PerAPI[s.Req.Key()]
	if st == nil {
		st = &APIStats{}
		d.stats.PerAPI[s.Req.Key()] = st
	}
	st.Sent++
	d.stats.Requests++
	if !s.Clean() {
		d.stats.Mutated++
		defer d.drop(s.Node) // what follows a bad frame on its connection is unknowable
	}
	cn, err := d.conn(s.Node)
	if err != nil {
		return err
	}
	cn.nc.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := cn.nc.Write(s.Bytes); err != nil {
		s.Outcome = "closed while written: " + err.Error()
		st.closed(s.Clean())
		d.drop(s.Node)
		return nil
	}
	if !s.Answered() {
		s.Outcome = "not answered (acks=0)"
		return nil
	}
	wait := cleanWait
	if !s.Clean() {
		wait = garbageWait
	}
	cn.nc.SetDeadline(time.Now().Add(wait))
	var size [4]byte
	if _, err := io.ReadFull(cn.r, size[:]); err != nil {
		d.drop(s.Node)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			s.Outcome = fmt.Sprintf("no answer within %v", wait)
			st.Silent++
		} else {
			s.Outcome = "connection closed: " + err.Error()
			st.closed(s.Clean())
		}
		return nil
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	strict := s.Clean() || strings.HasPrefix(s.Mutation, "header of")
	if n < 4 || n > 256<<20 {
		d.drop(s.Node)
		s.Outcome = fmt.Sprintf("answer size %d", n)
		if strict {
			return errors.New("answer with an impossible size " + fmt.Sprint(n))
		}
		return nil
	}
	cn.nc.SetDeadline(time.Now().Add(30 * time.Second))
	body := make([]byte, n)
	if _, err := io.ReadFull(cn.r, body); err != nil {
		d.drop(s.Node)
		s.Outcome = "answer cut short: " + err.Error()
		if strict {
			return fmt.Errorf("answer of %d bytes cut short: %v", n, err)
		}
		return nil
	}
	st.Answered++
	s.Outcome = fmt.Sprintf("answer of %d bytes", n)
	if !strict {
		return nil
	}
	if err := checkAnswer(s.Frame, body); err != nil {
		s.Outcome += ": " + err.Error()
		return fmt.Errorf("malformed answer to %s v%d: %v", kmsg.NameForKey(s.Key), s.Version, err)
	}
	return nil
}

// checkAnswer checks that an answer to a frame whose header the broker
// could read carries its correlation id and decodes, as the header's API
// and version, to a response that encodes back to the same bytes.
func checkAnswer(f *Frame, body []byte) error {
	if corr := int32(binary.BigEndian.Uint32(body)); corr != f.Corr {
		return fmt.Errorf("correlation id %d, want %d", corr, f.Corr)
	}
	resp := kmsg.ResponseForKey(f.Key)
	resp.SetVersion(f.Version)
	rest := body[4:]
	if resp.IsFlexible() && f.Key != 18 { // ApiVersions answers with header v0
		var err error
		if rest, err = skipTags(rest); err != nil {
			return fmt.Errorf("response header: %v", err)
		}
	}
	if err := resp.ReadFrom(rest); err != nil {
		return fmt.Errorf("decoding: %v", err)
	}
	again := resp.AppendTo(nil)
	if !bytes.Equal(again, rest) {
		i := 0
		for i < len(again) && i < len(rest) && again[i] == rest[i] {
			i++
		}
		return fmt.Errorf("%d bytes do not encode back the same (%d bytes; first difference at byte %d): %+.1000v", len(rest), len(again), i, resp)
	}
	return nil
}

func skipTags(b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, errors.New("bad tag count")
	}
	b = b[k:]
	for range n {
		if _, k = binary.Uvarint(b); k <= 0 {
			return nil, errors.New("bad tag")
		}
		b = b[k:]
		size, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < size {
			return nil, errors.New("bad tag size")
		}
		b = b[k+int(size):]
	}
	return b, nil
}

// conn returns the node's connection, dialling it if needed.
func (d *driver) conn(node int) (*conn, error) {
	if c := d.conns[node]; c != nil {
		return c, nil
	}
	addr := d.c.Nodes[node].Addr
	var nc net.Conn
	var err error
	for range 50 {
		if nc, err = net.DialTimeout("tcp", addr, 5*time.Second); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return nil, fmt.Errorf("node %d does not accept connections: %v", node+1, err)
	}
	d.conns[node] = &conn{nc: nc, r: bufio.NewReaderSize(nc, 64<<10)}
	return d.conns[node], nil
}

func (d *driver) drop(node int) {
	if c := d.conns[node]; c != nil {
		c.nc.Close()
		d.conns[node] = nil
	}
}

func (d *driver) closeAll() {
	for i := range d.conns {
		d.drop(i)
	}
}
