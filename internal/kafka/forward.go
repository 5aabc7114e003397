package kafka

// Admin requests that change metadata (CreateTopics, DeleteTopics,
// CreatePartitions, AlterConfigs, IncrementalAlterConfigs), and
// DescribeQuorum, which only the leader can answer, are carried out by the
// active controller. A node whose own controller is not active
// forwards them, whole, to the active one over an internal API of the
// controller listener:
//
//	request body:  api key int16 | api version int16 | the request's body
//	response body: metadata offset int64 | the response's body
//
// The offset is the active controller's metadata image after the change;
// the forwarding node answers its client once its own image has it, so a
// client sees its change wherever it asks next.

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ForwardAPIKey is the internal API carrying forwarded requests.
const ForwardAPIKey int16 = 32001

// Forwarder reaches the active controller.
type Forwarder interface {
	// Local reports whether this node's controller is the active one.
	Local() bool
	// Forward sends an encoded forward request (see the package comment
	// of forward.go) to the active controller and returns the encoded
	// answer.
	Forward(ctx context.Context, body []byte) ([]byte, error)
}

// forwarded are the APIs the active controller carries out.
var forwarded = map[int16]bool{19: true, 20: true, 33: true, 37: true, 44: true, 55: true}

// maybeForward sends req to the active controller when this node's is not
// active; it returns nil when req is to be handled here.
func (s *Server) maybeForward(req *Request) *Reply {
	if s.deps.Forward == nil || !forwarded[req.Key] || s.deps.Forward.Local() {
		return nil
	}
	body := binary.BigEndian.AppendUint16(nil, uint16(req.Key))
	body = binary.BigEndian.AppendUint16(body, uint16(req.Version))
	body = req.Body.AppendTo(body)
	out, err := s.deps.Forward.Forward(req.Ctx, body)
	if err != nil {
		// The active controller moved or cannot be reached: handled here,
		// the controller answers NOT_CONTROLLER and the client retries.
		s.lg.Info("forwarding to the active controller failed", "api", kmsg.NameForKey(req.Key), "err", err)
		return nil
	}
	if len(out) < 8 {
		s.lg.Warn("short answer from the active controller")
		return nil
	}
	offset := int64(binary.BigEndian.Uint64(out))
	resp := respFor(req)
	if err := resp.ReadFrom(out[8:]); err != nil {
		s.lg.Warn("bad answer from the active controller", "err", err)
		return nil
	}
	if err := s.awaitMetadata(req.Ctx, offset, 30*time.Second); err != nil {
		s.lg.Warn("metadata did not catch up with a forwarded change", "offset", offset, "err", err)
	}
	return done(resp)
}

// handleForward carries out a forwarded request as the active controller.
func (s *Server) handleForward(req *Request) *Reply {
	raw := req.Raw
	if len(raw) < 4 {
		return &Reply{ready: closedChan, none: true, closeConn: true}
	}
	key, version := int16(binary.BigEndian.Uint16(raw)), int16(binary.BigEndian.Uint16(raw[2:]))
	a, ok := s.apis[key]
	if !ok || !forwarded[key] || version < a.min || version > a.max {
		s.lg.Warn("refusing a forwarded request", "api", key, "version", version)
		return &Reply{ready: closedChan, none: true, closeConn: true}
	}
	body := kmsg.RequestForKey(key)
	body.SetVersion(version)
	if err := body.ReadFrom(raw[4:]); err != nil {
		s.lg.Warn("malformed forwarded request", "err", err)
		return &Reply{ready: closedChan, none: true, closeConn: true}
	}
	inner := &Request{Key: key, Version: version, CorrelationID: req.CorrelationID, ClientID: req.ClientID,
		Body: body, Listener: req.Listener, RemoteAddr: req.RemoteAddr, Ctx: req.Ctx}
	innerRep := a.handle(inner)
	rep := newReply()
	go func() {
		select {
		case <-innerRep.ready:
		case <-req.Ctx.Done():
			return
		}
		out := binary.BigEndian.AppendUint64(nil, uint64(s.deps.Metadata.Image().Offset))
		rep.raw = innerRep.resp.AppendTo(out)
		close(rep.ready)
	}()
	return rep
}
