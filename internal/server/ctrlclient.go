package server

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

	"weir/internal/quorum"
)

// ctrlConn is a connection to another node's controller listener, for the
// few requests a node sends a controller itself (registration, heartbeats,
// producer id blocks, forwarded admin requests). Calls are serialized; the
// connection is redialled after an error. weir speaks to weir here, so
// requests go at fixed versions both ends serve.
type ctrlConn struct {
	addr     string
	clientID string
	dial     quorum.Dialer

	mu   sync.Mutex
	nc   net.Conn
	br   *bufio.Reader
	corr int32
}

func (c *ctrlConn) roundTrip(ctx context.Context, key, version int16, flexible bool, body []byte) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nc == nil {
		nc, err := c.dial(ctx, "tcp", c.addr)
		if err != nil {
			return nil, err
		}
		c.nc, c.br = nc, bufio.NewReader(nc)
	}
	deadline := time.Now().Add(30 * time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	c.nc.SetDeadline(deadline)
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
	resp, err := c.exchange(frame)
	if err != nil {
		c.nc.Close()
		c.nc = nil
		return nil, err
	}
	return resp, nil
}

func (c *ctrlConn) exchange(frame []byte) ([]byte, error) {
	if _, err := c.nc.Write(frame); err != nil {
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
	resp := make([]byte, n-4)
	_, err := io.ReadFull(c.br, resp)
	return resp, err
}

// call sends a Kafka request and decodes its response.
func (c *ctrlConn) call(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	body, err := c.roundTrip(ctx, req.Key(), req.GetVersion(), req.IsFlexible(), req.AppendTo(nil))
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

func (c *ctrlConn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nc != nil {
		c.nc.Close()
		c.nc = nil
	}
}
