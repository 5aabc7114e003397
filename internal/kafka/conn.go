package kafka

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
	"weir/internal/metrics"
	"weir/internal/sasl"
	"weir/internal/tlsconf"
)

// Request is one decoded request and what a handler needs to know about
// where it came from.
type Request struct {
	Key           int16
	Version       int16
	CorrelationID int32
	ClientID      string
	Body          kmsg.Request
	// Raw is the body of an internal API request (Body is nil).
	Raw        []byte
	Listener   string // the listener name the connection arrived on
	RemoteAddr string
	// Principal is who sent the request ("User:alice"), Host the
	// client's address as ACLs name hosts (acl.Host). A request a node
	// makes itself, forwarded without a principal, has neither.
	Principal, Host string
	// Ctx is cancelled when the connection closes.
	Ctx context.Context

	conn *conn
}

// Reply is a handler's answer. A handler that must wait (acks=all, a long
// poll) returns a Reply and completes it later; replies are written in
// request order regardless of completion order.
type Reply struct {
	ready chan struct{}
	resp  kmsg.Response
	// sections are file ranges spliced into a Fetch response (see fetch.go).
	sections []section
	// none means no response is sent (Produce with acks=0).
	none bool
	// closeConn closes the connection after this reply (acks=0 errors).
	closeConn bool
	// release runs after the reply has been written (or dropped).
	release func()
	corrID  int32
	// raw, when set, is the body of an internal API's answer, sent as is.
	raw []byte
	// bare sends raw alone, without a correlation id (SASL tokens after
	// a SaslHandshake v0).
	bare bool
	// throttle is set by a handler before the reply completes (a
	// consumer's fetch over its quota); reqThrottle by the reader once
	// the handler returns (produce bytes, request time). The larger
	// goes in the response's throttle_time_ms (quota.go).
	throttle, reqThrottle time.Duration
	// obs is the request's path for the RequestMetrics, filled by the
	// reader (observed set) and the writer; doneAt is when complete ran.
	obs      metrics.Request
	observed bool
	doneAt   time.Time
}

func newReply() *Reply { return &Reply{ready: make(chan struct{})} }

// done returns a completed reply.
func done(resp kmsg.Response) *Reply {
	r := &Reply{ready: closedChan, resp: resp}
	return r
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// complete sets the response of a pending reply. It must be called once.
func (r *Reply) complete(resp kmsg.Response) {
	r.resp = resp
	r.doneAt = time.Now()
	close(r.ready)
}

// conn serves one client connection: a reader goroutine that decodes
// requests and runs their handlers one at a time, in order (so a
// producer's pipelined batches are appended in the order sent), and
// writes the replies ready at once; a writer goroutine, running only
// while some reply waits, sends the others in request order as they
// complete.
type conn struct {
	srv *Server
	nc  net.Conn
	// replies are the replies handed to the writer (made at the first).
	replies chan *Reply
	// inFlight counts the replies handed to the writer goroutine and not
	// yet written. While it is 0 the reader owns wb and broken, and
	// writes a reply that is ready itself: a request answered at once
	// (most are) costs no hand-off between goroutines. The writer owns
	// them from a hand-off until inFlight is back to 0, so replies go out
	// in request order either way. A writer is started as inFlight leaves
	// 0 and ends as it returns there; writers counts them.
	inFlight atomic.Int32
	writers  sync.WaitGroup
	wb       *writeBufs // nil while nothing is buffered (connbuf.go)
	broken   bool       // a write failed: nothing more is written
	ctx      context.Context
	cancel   context.CancelFunc
	closeMu  sync.Once
	// heartbeats is the broker whose heartbeats the controller accepted
	// on this connection, if any (see Deps.BrokerConnLost).
	heartbeats atomic.Pointer[brokerPeer]
	// principal is who the connection authenticated as (User:ANONYMOUS
	// on a PLAINTEXT listener). The SASL fields below, like principal,
	// belong to the reader goroutine (see sasl.go).
	principal     string
	host          string // the client's address, as ACLs name hosts
	remote        string // the client's host:port (Request.RemoteAddr)
	sasl          saslState
	saslMechanism string
	saslServer    sasl.Server
	// sessionExpiry ends the authenticated session (zero: never);
	// reauthStart is when the last re-authentication began, and
	// reauthenticating is set during one.
	sessionExpiry    time.Time
	reauthStart      time.Time
	reauthenticating bool
	badMechanism     string // why a re-authentication fails (saslReauthBadMechanism)
	// muteUntil (unix ns) is when a throttled client's next request may
	// be handled: the channel is muted until then, as Kafka's is.
	muteUntil atomic.Int64
	// lastActive (unix ns) is when the connection last read or wrote.
	lastActive atomic.Int64
}

// touch notes activity: the connection is closed once it has read and
// written nothing for connections.max.idle.ms (Config.MaxIdle).
func (c *conn) touch() {
	now := time.Now()
	c.lastActive.Store(now.UnixNano())
	if d := c.srv.cfg.MaxIdle; d > 0 {
		c.nc.SetReadDeadline(now.Add(d))
	}
}

// brokerPeer is a broker registration: its id and broker epoch.
type brokerPeer struct {
	id    int32
	epoch int64
}

// maxInFlight bounds replies waiting to be written per connection; the
// reader stops reading when the writer falls this far behind.
const maxInFlight = 100

func (c *conn) serve() {
	defer c.close()
	c.remote = c.nc.RemoteAddr().String()
	c.principal, c.host = acl.Anonymous, acl.Host(c.remote)
	if tc, ok := c.nc.(*tls.Conn); ok {
		if err := tc.HandshakeContext(c.ctx); err != nil {
			level := slog.LevelInfo
			if errors.Is(err, io.EOF) {
				// Closed before a ClientHello: a port probe (fast
				// fencing's among them), not a client.
				level = slog.LevelDebug
			}
			c.srv.lg.Log(c.ctx, level, "failed authentication (SSL handshake failed)", "remote", c.nc.RemoteAddr().String(), "err", err)
			if level != slog.LevelDebug {
				c.srv.listener.AuthFailed()
			}
			return
		}
		p, err := tlsconf.Principal(tc.ConnectionState(), c.srv.cfg.Broker.SSL.PrincipalMapper)
		if err != nil {
			c.srv.lg.Info("failed authentication (no principal for the client certificate)", "remote", c.nc.RemoteAddr().String(), "err", err)
			c.srv.listener.AuthFailed()
			return
		}
		c.principal = p
		c.srv.lg.Debug("TLS connection", "remote", c.nc.RemoteAddr().String(), "principal", c.principal)
	}
	if c.srv.cfg.SASL == nil {
		c.sasl = saslDone
	}
	r := newConnReader(c)
	defer func() {
		r.release()
		if c.replies != nil {
			close(c.replies)
		}
		c.writers.Wait()
		c.flush() // what the reader left for a pipelined request
	}()
	for {
		frame, pooled, err := c.readFrame(r)
		read := time.Now()
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				c.srv.lg.Debug("closing connection", "remote", c.nc.RemoteAddr().String(), "err", err)
			}
			if p := c.heartbeats.Load(); p != nil && !errors.Is(err, net.ErrClosed) {
				// The peer closed or reset it (not this server).
				c.srv.deps.BrokerConnLost(p.id, p.epoch)
			}
			return
		}
		if c.sasl == saslAwaitBareToken {
			rep := c.srv.saslBareToken(c, frame)
			if !c.reply(rep, r) {
				return
			}
			if rep.closeConn {
				return
			}
			continue
		}
		req, err := c.decode(frame)
		if err != nil {
			c.srv.lg.Info("closing connection on bad request", "remote", c.nc.RemoteAddr().String(), "err", err)
			return
		}
		if c.muteUntil.Load() > read.UnixNano() {
			// A muted channel is not read in Kafka: the request's
			// time starts when the mute ends. The reply that muted it
			// goes out first, not after the mute.
			if c.inFlight.Load() == 0 {
				c.flush()
			}
			if !c.awaitUnmuted() {
				return
			}
			read = time.Now()
		}
		var rep *Reply
		handled := time.Now()
		if c.srv.cfg.SASL != nil {
			var closeNow bool
			if rep, closeNow = c.srv.saslGate(c, req); closeNow {
				return
			}
		}
		switch {
		case rep != nil: // answered by the SASL gate
		case req.Body == nil && req.Raw == nil:
			// Unsupported ApiVersions version: answered at v0 (KIP-511).
			rep = c.srv.unsupportedAPIVersions()
		default:
			rep = c.srv.dispatch(req)
			c.srv.recordQuotas(req, rep, len(frame), time.Since(handled))
		}
		rep.corrID = req.CorrelationID
		if req.Raw == nil && c.srv.reqs != nil {
			rep.observed = true
			rep.obs = metrics.Request{Key: req.Key, Version: req.Version, Follower: isFollowerFetch(req), Bytes: len(frame) + 4,
				Read: read, Handled: handled, Returned: time.Now()}
		}
		if pooled != nil {
			// Produce is the one API whose request bytes (the batches)
			// are large and never outlive the handler: the log has
			// written them by now. Other requests' bytes may be kept
			// (group metadata, assignments), so their frames are not
			// reused.
			releaseFrame(pooled)
		}
		if !c.reply(rep, r) {
			return
		}
		if rep.closeConn {
			return
		}
	}
}

// frameSource is what frames are read from: a connection's connReader
// (a bufio.Reader in the fuzz tests).
type frameSource interface {
	io.Reader
	Peek(n int) ([]byte, error)
}

// readFrame reads one request frame (without its size). A Produce
// request's frame is read into a pooled buffer, returned as buf for serve
// to give back (see there); others are allocated at their size.
func (c *conn) readFrame(r frameSource) (frame []byte, buf *frameBuf, err error) {
	var sz [4]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return nil, nil, err
	}
	n := int32(binary.BigEndian.Uint32(sz[:]))
	lo := int32(8)
	if c.sasl == saslAwaitBareToken {
		lo = 0 // a bare SASL token has no header
	}
	if n < lo || n > c.srv.cfg.MaxRequestSize {
		return nil, nil, fmt.Errorf("request size %d outside [%d, socket.request.max.bytes=%d]", n, lo, c.srv.cfg.MaxRequestSize)
	}
	if c.srv.cfg.SASL != nil && c.sasl != saslDone && n > c.srv.cfg.SASL.MaxReceive {
		return nil, nil, fmt.Errorf("request size %d before SASL authentication exceeds sasl.server.max.receive.size=%d", n, c.srv.cfg.SASL.MaxReceive)
	}
	if lo > 0 {
		key, err := r.Peek(2)
		if err != nil {
			return nil, nil, err
		}
		if int16(binary.BigEndian.Uint16(key)) == produceKey {
			buf = getFrame()
		}
	}
	// The buffer grows as the bytes arrive, so a connection holds about
	// what it has sent, never the size it announced (at most
	// socket.request.max.bytes).
	if buf != nil {
		frame = buf.b[:0]
	}
	if first := min(int(n), frameChunk); cap(frame) >= first {
		frame = frame[:first]
	} else {
		frame = make([]byte, first)
	}
	for have := 0; ; {
		if _, err := io.ReadFull(r, frame[have:]); err != nil {
			return nil, nil, err
		}
		if have = len(frame); have == int(n) {
			if buf != nil {
				buf.b = frame
			}
			return frame, buf, nil
		}
		next := min(int(n), 2*have)
		if cap(frame) >= next {
			frame = frame[:next]
		} else {
			frame = append(frame, make([]byte, next-have)...)
		}
	}
}

// frameBuf is a pooled buffer of Produce frames; see serve.
type frameBuf struct{ b []byte }

var framePool = sync.Pool{New: func() any { return &frameBuf{b: make([]byte, 0, minPooledFrame)} }}

// frameChunk is the most of a frame allocated before its bytes arrive.
const frameChunk = 1 << 20

const (
	minPooledFrame = 64 << 10
	maxPooledFrame = 16 << 20
)

func getFrame() *frameBuf { return framePool.Get().(*frameBuf) }

// releaseFrame returns a buffer to the pool, unless a frame grew it past
// what the pool keeps.
func releaseFrame(f *frameBuf) {
	if cap(f.b) <= maxPooledFrame {
		framePool.Put(f)
	}
}

// decode parses a request read from the connection.
func (c *conn) decode(frame []byte) (*Request, error) {
	req, err := c.srv.decodeRequest(frame)
	if err != nil {
		return nil, err
	}
	req.Listener, req.RemoteAddr, req.Ctx, req.conn = c.srv.cfg.ListenerName, c.remote, c.ctx, c
	req.Principal, req.Host = c.principal, c.host
	return req, nil
}

// decodeRequest parses the request header and body of a frame (without
// its size). An ApiVersions request of a version this broker does not
// know comes back with a nil Body: it is answered rather than dropped
// (KIP-511).
func (s *Server) decodeRequest(frame []byte) (*Request, error) {
	rd := kbin.Reader{Src: frame}
	key, version, corr := rd.Int16(), rd.Int16(), rd.Int32()
	clientID := rd.NullableString()
	if !rd.Ok() {
		return nil, errors.New("truncated request header")
	}
	if _, ok := s.internal[key]; ok {
		// weir's internal APIs carry their own encoding after the header.
		if version != 0 {
			return nil, fmt.Errorf("unsupported version %d of internal api %d", version, key)
		}
		return &Request{Key: key, Version: version, CorrelationID: corr, Raw: append([]byte{}, rd.Src...)}, nil
	}
	api, ok := s.apis[key]
	if !ok {
		return nil, fmt.Errorf("unknown api key %d", key)
	}
	if version < api.min || version > api.max {
		if key == apiVersionsKey {
			return &Request{Key: key, Version: version, CorrelationID: corr}, nil
		}
		return nil, fmt.Errorf("unsupported %s version %d (supported %d-%d)", kmsg.NameForKey(key), version, api.min, api.max)
	}
	body := kmsg.RequestForKey(key)
	body.SetVersion(version)
	if body.IsFlexible() {
		skipTags(&rd)
	}
	if err := body.ReadFrom(rd.Src); err != nil {
		return nil, fmt.Errorf("malformed %s v%d: %w", kmsg.NameForKey(key), version, err)
	}
	if n := longString(frame, body); n > 0 {
		return nil, fmt.Errorf("malformed %s v%d: a string of %d bytes", kmsg.NameForKey(key), version, n)
	}
	req := &Request{Key: key, Version: version, CorrelationID: corr, Body: body}
	if clientID != nil {
		req.ClientID = *clientID
	}
	return req, nil
}

func skipTags(rd *kbin.Reader) {
	n := rd.Uvarint()
	for i := uint32(0); i < n && rd.Ok(); i++ {
		rd.Uvarint()
		rd.Span(int(rd.Uvarint()))
	}
}

// reply sends rep, from the reader goroutine: written at once when it is
// ready and nothing is in flight (left in the buffer while the next
// request is already read, so pipelined requests' replies go out in one
// write), else handed to the writer. It returns false once the
// connection is closing.
func (c *conn) reply(rep *Reply, r *connReader) bool {
	if c.inFlight.Load() == 0 {
		select {
		case <-rep.ready:
			c.send(rep, !nextFrameBuffered(r))
			return c.ctx.Err() == nil
		default:
		}
		c.flush() // the writer now owns the buffer
	}
	if c.replies == nil {
		c.replies = make(chan *Reply, maxInFlight)
	}
	if c.inFlight.Add(1) == 1 {
		c.writers.Add(1)
		go c.writeLoop()
	}
	select {
	case c.replies <- rep:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// nextFrameBuffered reports whether r holds the whole of the next frame.
func nextFrameBuffered(r *connReader) bool {
	if r.Buffered() < 4 {
		return false
	}
	sz, _ := r.Peek(4)
	return r.Buffered()-4 >= int(binary.BigEndian.Uint32(sz))
}

// writeLoop writes the replies handed over by reply, in order, each once
// it is complete, until none is in flight (or the connection closes).
func (c *conn) writeLoop() {
	defer c.writers.Done()
	for rep := range c.replies {
		select {
		case <-rep.ready:
		case <-c.ctx.Done():
		}
		c.send(rep, len(c.replies) == 0)
		if c.inFlight.Add(-1) == 0 {
			return
		}
	}
}

// send writes a complete reply (flushing the buffer if flush), counts it
// and releases what it held. Only the owner of wb calls it (see inFlight).
func (c *conn) send(rep *Reply, flush bool) {
	writing := time.Now()
	if c.broken || c.ctx.Err() != nil || rep.none {
		if rep.none && !c.broken && c.ctx.Err() == nil {
			c.srv.observe(rep, writing, writing)
			if flush {
				c.flush()
			}
		}
		if rep.release != nil {
			rep.release()
		}
		if rep.closeConn {
			c.close()
		}
		return
	}
	var err error
	wb := c.writer()
	wb.scratch, err = c.writeReply(wb.bw, rep, wb.scratch[:0])
	if err == nil && flush {
		if err = wb.bw.Flush(); err == nil {
			c.releaseWriter()
		}
	}
	if err == nil {
		c.srv.observe(rep, writing, time.Now())
	}
	c.touch()
	if rep.release != nil {
		rep.release()
	}
	if err != nil {
		c.broken = true
		c.close()
	}
}

// flush writes what the buffer holds, if anything, and gives the buffers
// back (the owner of wb only).
func (c *conn) flush() {
	if c.broken || c.wb == nil {
		return
	}
	if err := c.wb.bw.Flush(); err != nil {
		c.broken = true
		c.close()
		return
	}
	c.releaseWriter()
}

// setThrottle raises resp's throttle_time_ms to d, if it has one.
func setThrottle(resp kmsg.Response, d time.Duration) {
	tr, ok := resp.(interface {
		kmsg.ThrottleResponse
		SetThrottle(int32)
	})
	if !ok {
		return
	}
	if ms := int32(min(d.Milliseconds(), math.MaxInt32)); ms > 0 {
		cur, _ := tr.Throttle()
		tr.SetThrottle(max(cur, ms))
	}
}

// writeReply frames and writes one response. buf is scratch for encoding.
func (c *conn) writeReply(bw *bufio.Writer, rep *Reply, buf []byte) ([]byte, error) {
	buf = append(buf, 0, 0, 0, 0)
	if rep.bare {
		buf = append(buf, rep.raw...)
		binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
		_, err := bw.Write(buf)
		return buf, err
	}
	buf = kbin.AppendInt32(buf, rep.corrID)
	if rep.raw != nil {
		buf = append(buf, rep.raw...)
		binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
		_, err := bw.Write(buf)
		return buf, err
	}
	resp := rep.resp
	setThrottle(resp, max(rep.throttle, rep.reqThrottle))
	// ApiVersions responses always use header v0 so that a client can
	// parse them before it knows which versions the broker speaks.
	if resp.IsFlexible() && resp.Key() != apiVersionsKey {
		buf = append(buf, 0)
	}
	buf, cut := appendResponse(buf, resp)
	if cut {
		c.srv.logCut(resp)
	}
	if len(rep.sections) == 0 {
		binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
		_, err := bw.Write(buf)
		return buf, err
	}
	return buf, writeWithSections(bw, c.nc, buf, rep.sections, resp.IsFlexible())
}

func (c *conn) close() {
	c.closeMu.Do(func() {
		c.cancel()
		c.nc.Close()
	})
}
