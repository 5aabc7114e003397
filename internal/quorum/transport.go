package quorum

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"weir/internal/nodeclient"
)

// Raft messages travel between voters on the controller listener, framed
// as Kafka requests of an internal API that is not listed in ApiVersions:
//
//	size int32 | api key int16 = RaftAPIKey | version int16 = 0 |
//	correlation id int32 | client id string ("weir-raft-<node.id>") |
//	cluster id string |
//	messages: [ length uint32 | raftpb.Message (protobuf) ]...
//
// The receiver does not answer: Raft's own messages are its replies. A
// frame from another cluster (a voter formatted with a different cluster
// id) is refused with ErrInconsistentClusterID, so such a node can never
// vote or be counted towards a commit.
const RaftAPIKey int16 = 32000

// ErrInconsistentClusterID refuses a Raft frame from another cluster.
var ErrInconsistentClusterID = errors.New("raft frame from another cluster")

// EncodeFrameBody appends the body of a Raft frame: the sender's cluster
// id, then its messages.
func EncodeFrameBody(dst []byte, clusterID string, msgs []*pb.Message) ([]byte, error) {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(clusterID)))
	dst = append(dst, clusterID...)
	return EncodeMessages(dst, msgs)
}

// DecodeFrameBody parses the body of a Raft frame, refusing one from a
// cluster other than clusterID.
func DecodeFrameBody(body []byte, clusterID string) ([]*pb.Message, error) {
	if len(body) < 2 {
		return nil, errors.New("raft frame: truncated cluster id")
	}
	n := int(binary.BigEndian.Uint16(body))
	if len(body) < 2+n {
		return nil, errors.New("raft frame: truncated cluster id")
	}
	if got := string(body[2 : 2+n]); got != clusterID {
		return nil, fmt.Errorf("%w: expected cluster id %s, got %s", ErrInconsistentClusterID, clusterID, got)
	}
	return DecodeMessages(body[2+n:])
}

// EncodeMessages appends the body of a Raft message frame.
func EncodeMessages(dst []byte, msgs []*pb.Message) ([]byte, error) {
	for _, m := range msgs {
		b, err := proto.Marshal(m)
		if err != nil {
			return nil, err
		}
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(b)))
		dst = append(dst, b...)
	}
	return dst, nil
}

// DecodeMessages parses the body of a Raft message frame.
func DecodeMessages(body []byte) ([]*pb.Message, error) {
	var out []*pb.Message
	for len(body) > 0 {
		if len(body) < 4 {
			return nil, errors.New("raft frame: truncated length")
		}
		n := binary.BigEndian.Uint32(body)
		body = body[4:]
		if uint64(n) > uint64(len(body)) {
			return nil, errors.New("raft frame: message overruns the frame")
		}
		m := &pb.Message{}
		if err := proto.Unmarshal(body[:n], m); err != nil {
			return nil, fmt.Errorf("raft frame: %w", err)
		}
		out = append(out, m)
		body = body[n:]
	}
	return out, nil
}

// NetTransport sends Raft messages to the other voters over TCP, one
// connection and one goroutine per peer. A peer's queue is bounded: when
// it is full (the peer is down or slow) messages are dropped, which Raft
// tolerates.
type NetTransport struct {
	self    int32
	cluster string
	lg      *slog.Logger
	dial    nodeclient.Dialer
	peers   map[int32]*peer
}

type peer struct {
	id   int32
	addr string
	q    chan *pb.Message
	stop chan struct{}
}

// NewNetTransport starts a transport from node self of cluster clusterID
// to the voters at addrs (node.id -> host:port; self is skipped).
func NewNetTransport(self int32, clusterID string, addrs map[int32]string, dial nodeclient.Dialer, lg *slog.Logger) *NetTransport {
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	t := &NetTransport{self: self, cluster: clusterID, lg: lg, dial: dial, peers: map[int32]*peer{}}
	for id, addr := range addrs {
		if id == self {
			continue
		}
		p := &peer{id: id, addr: addr, q: make(chan *pb.Message, 4096), stop: make(chan struct{})}
		t.peers[id] = p
		go t.run(p)
	}
	return t
}

// Send queues messages for their peers without blocking.
func (t *NetTransport) Send(msgs []*pb.Message) {
	for _, m := range msgs {
		p := t.peers[nodeID(m.GetTo())]
		if p == nil {
			continue
		}
		select {
		case p.q <- m:
		default:
		}
	}
}

// Close stops every peer's goroutine.
func (t *NetTransport) Close() {
	for _, p := range t.peers {
		close(p.stop)
	}
}

func (t *NetTransport) run(p *peer) {
	var (
		nc  net.Conn
		bw  *bufio.Writer
		buf []byte
	)
	clientID := fmt.Sprintf("weir-raft-%d", t.self)
	backoff := 50 * time.Millisecond
	for {
		var first *pb.Message
		select {
		case <-p.stop:
			if nc != nil {
				nc.Close()
			}
			return
		case first = <-p.q:
		}
		msgs := []*pb.Message{first}
	drain:
		for len(msgs) < 512 {
			select {
			case m := <-p.q:
				msgs = append(msgs, m)
			default:
				break drain
			}
		}
		if nc == nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			c, err := t.dial(ctx, "tcp", p.addr)
			cancel()
			if err != nil {
				// Drop what is queued: Raft resends what still matters.
				t.lg.Debug("raft peer unreachable", "peer", p.id, "err", err)
				select {
				case <-p.stop:
					return
				case <-time.After(backoff):
				}
				backoff = min(2*backoff, time.Second)
				continue
			}
			if tc, ok := c.(*net.TCPConn); ok {
				tc.SetNoDelay(true)
			}
			nc, bw, backoff = c, bufio.NewWriterSize(c, 64<<10), 50*time.Millisecond
			go discard(c) // the receiver never answers; notice a closed peer
		}
		var err error
		buf = append(buf[:0], 0, 0, 0, 0)
		buf = binary.BigEndian.AppendUint16(buf, uint16(RaftAPIKey))
		buf = binary.BigEndian.AppendUint16(buf, 0)
		buf = binary.BigEndian.AppendUint32(buf, 0)
		buf = binary.BigEndian.AppendUint16(buf, uint16(len(clientID)))
		buf = append(buf, clientID...)
		if buf, err = EncodeFrameBody(buf, t.cluster, msgs); err != nil {
			t.lg.Error("encoding raft messages", "err", err)
			continue
		}
		binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
		nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err = bw.Write(buf); err == nil {
			err = bw.Flush()
		}
		if err != nil {
			t.lg.Debug("raft peer connection lost", "peer", p.id, "err", err)
			nc.Close()
			nc = nil
		}
	}
}

func discard(c net.Conn) {
	var b [512]byte
	for {
		if _, err := c.Read(b[:]); err != nil {
			c.Close()
			return
		}
	}
}
