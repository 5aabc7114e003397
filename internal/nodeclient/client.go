// Package nodeclient is how a weir node sends Kafka requests to another
// node: registration and heartbeats to the active controller, forwarded
// admin requests, metadata fetches of observers. Requests go at fixed
// versions, since weir speaks to weir.
package nodeclient

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// New returns a connection to addr, dialled on first use.
func New(addr, clientID string, dial Dialer) *Conn {
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	return &Conn{addr: addr, clientID: clientID, dial: dial, turn: make(chan struct{}, 1)}
}

// Dialer opens connections (net.Dialer.DialContext by default; tests
// inject network faults through it).
type Dialer func(ctx context.Context, network, addr string) (net.Conn, error)

// ErrClosed is returned by calls on a closed Conn.
var ErrClosed = errors.New("nodeclient: connection closed")

// Conn is a connection to another node's listener. Calls are serialized:
// a call waits its turn for at most its context's lifetime, and holds the
// connection for at most 30 seconds or its deadline. The connection is
// redialled after an error.
type Conn struct {
	addr     string
	clientID string
	dial     Dialer
	turn     chan struct{} // holds a token while a call is in flight

	// Owned by the call in flight.
	br   *bufio.Reader
	corr int32

	mu     sync.Mutex // guards nc and closed, so Close can abort a call
	nc     net.Conn
	closed bool
	// used is when the connection last carried a call.
	used time.Time
}

// idleRedial is how long a connection may sit unused before it is
// redialled rather than reused: half of Kafka's default
// connections.max.idle.ms (10 minutes), after which the other node
// closes it, as Kafka's own clients close theirs first.
const idleRedial = 5 * time.Minute

// RoundTrip sends a request frame with the given header and body and
// returns the response body (after the correlation id).
func (c *Conn) RoundTrip(ctx context.Context, key, version int16, flexible bool, body []byte) ([]byte, error) {
	return c.roundTrip(ctx, key, version, flexible, body, nil)
}

// roundTrip is RoundTrip reading the response into *buf when buf is not
// nil (see CallReusing).
func (c *Conn) roundTrip(ctx context.Context, key, version int16, flexible bool, body []byte, buf *[]byte) ([]byte, error) {
	select {
	case c.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-c.turn }()
	nc, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	nc.SetDeadline(deadline)
	c.corr++
	frame := make([]byte, 4, 64+len(body))
	frame = binary.BigEndian.AppendUint16(frame, uint16(key))
	frame = binary.BigEndian.AppendUint16(frame, uint16(version))
	frame = binary.BigEndian.AppendUint32(frame, uint32(c.corr))
	frame = binary.BigEndian.AppendUint16(frame, uint16(len(c.clientID)))
	frame = append(frame, c.clientID...)
	if flexible {
		frame = append(frame, 0)
	}
	frame = append(frame, body...)
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	resp, err := c.exchange(nc, frame, buf)
	if err != nil {
		c.mu.Lock()
		if c.nc == nc {
			c.nc = nil
		}
		c.mu.Unlock()
		nc.Close()
		return nil, err
	}
	return resp, nil
}

// connect returns the open connection, dialling one if there is none.
func (c *Conn) connect(ctx context.Context) (net.Conn, error) {
	c.mu.Lock()
	nc, closed := c.nc, c.closed
	c.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if nc != nil && time.Since(c.used) < idleRedial {
		c.used = time.Now()
		return nc, nil
	}
	if nc != nil {
		c.mu.Lock()
		if c.nc == nc {
			c.nc = nil
		}
		c.mu.Unlock()
		nc.Close()
	}
	nc, err := c.dial(ctx, "tcp", c.addr)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		nc.Close()
		return nil, ErrClosed
	}
	c.nc, c.br, c.used = nc, bufio.NewReader(nc), time.Now()
	return nc, nil
}

func (c *Conn) exchange(nc net.Conn, frame []byte, buf *[]byte) ([]byte, error) {
	if _, err := nc.Write(frame); err != nil {
		return nil, err
	}
	var hdr [8]byte
	if _, err := io.ReadFull(c.br, hdr[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(hdr[:]))
	if n < 4 || n > 256<<20 {
		return nil, fmt.Errorf("controller answered a frame of %d bytes", n)
	}
	if corr := int32(binary.BigEndian.Uint32(hdr[4:])); corr != c.corr {
		return nil, fmt.Errorf("controller answered correlation id %d, want %d", corr, c.corr)
	}
	var resp []byte
	switch {
	case buf == nil:
		resp = make([]byte, n-4)
	case cap(*buf) >= n-4:
		resp = (*buf)[:n-4]
	default:
		resp = make([]byte, n-4)
		*buf = resp
	}
	_, err := io.ReadFull(c.br, resp)
	return resp, err
}

// Call sends a Kafka request (at its set version) and decodes its response.
func (c *Conn) Call(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	return c.call(ctx, req, nil)
}

// CallReusing is Call reading the response frame into *buf, which it
// grows as needed and leaves for the next call, so a caller repeating
// large requests (a follower's fetches) does not allocate a response
// buffer each time. Byte fields of the response, such as a fetch's
// record batches, point into *buf: they are valid only until buf is
// used again.
func (c *Conn) CallReusing(ctx context.Context, req kmsg.Request, buf *[]byte) (kmsg.Response, error) {
	return c.call(ctx, req, buf)
}

func (c *Conn) call(ctx context.Context, req kmsg.Request, buf *[]byte) (kmsg.Response, error) {
	body, err := c.roundTrip(ctx, req.Key(), req.GetVersion(), req.IsFlexible(), req.AppendTo(nil), buf)
	if err != nil {
		return nil, err
	}
	resp := req.ResponseKind()
	if resp.IsFlexible() {
		if len(body) == 0 || body[0] != 0 {
			return nil, errors.New("controller response header carries tagged fields")
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, err
	}
	return resp, nil
}

// Close closes the connection, failing a call in flight; later calls
// return ErrClosed.
func (c *Conn) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.nc != nil {
		c.nc.Close()
		c.nc = nil
	}
}
