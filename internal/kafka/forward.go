package kafka

// Admin requests that change metadata (CreateTopics, DeleteTopics,
// CreatePartitions, AlterConfigs, IncrementalAlterConfigs, ElectLeaders,
// AlterPartitionReassignments, UpdateFeatures, AlterUserScramCredentials,
// UnregisterBroker, CreateAcls, DeleteAcls, AlterClientQuotas),
// ListPartitionReassignments, and
// DescribeQuorum, which only the leader can answer, are carried out by the
// active controller. A node whose own controller is not active
// forwards them, whole, to the active one over an internal API of the
// controller listener:
//
//	request body:  api key int16 | api version int16 | principal string |
//	               client host string | client id string | the request's body
//	response body: metadata offset int64 | the response's body
//
// (strings as Kafka's: int16 length, then the bytes). As Kafka's
// EnvelopeRequest, the sender needs CLUSTER_ACTION on the cluster, and the
// request is authorized at the controller as the principal and host of
// the client that sent it; an empty principal is a request the forwarding
// node makes itself (auto-created and internal topics), authorized there.
// The offset is the active controller's metadata image after the change;
// the forwarding node answers its client once its own image has it, so a
// client sees its change wherever it asks next. The active controller
// charges a client's CreateTopics, CreatePartitions and DeleteTopics to
// its controller mutation quota (mutation_quota.go), as Kafka's does for
// an enveloped request: one budget per principal and client id whichever
// broker the client asks; the forwarding node passes the throttle time
// on and mutes its client's connection that long.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
	"weir/internal/link"
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
var forwarded = map[int16]bool{19: true, 20: true, 30: true, 31: true, 33: true, 37: true, 43: true, 44: true, 45: true, 46: true, 49: true, 51: true, 55: true, 57: true, 64: true}

// maybeForward sends req to the active controller when this node's is not
// active; it returns nil when req is to be handled here.
func (s *Server) maybeForward(req *Request) *Reply {
	if s.deps.Forward == nil || !forwarded[req.Key] || s.deps.Forward.Local() {
		return nil
	}
	resp, err := s.forward(req.Ctx, req.Body, req.Principal, req.Host, req.ClientID)
	if err != nil {
		// The active controller moved or cannot be reached: the client
		// gets NOT_CONTROLLER and retries (a node with a controller of
		// its own lets it answer that).
		s.lg.Info("forwarding to the active controller failed", "api", kmsg.NameForKey(req.Key), "err", err)
		if s.deps.Controller == nil {
			return s.notController(req)
		}
		return nil
	}
	if tr, ok := resp.(kmsg.ThrottleResponse); ok && req.conn != nil {
		if ms, _ := tr.Throttle(); ms > 0 {
			req.conn.mute(time.Duration(ms) * time.Millisecond)
		}
	}
	return done(resp)
}

// forward has the active controller carry out body (a request at its
// version) and waits until this node's metadata includes the outcome.
// principal, host and clientID are the client's ("" for the node's own
// requests).
func (s *Server) forward(ctx context.Context, body kmsg.Request, principal, host, clientID string) (kmsg.Response, error) {
	enc := binary.BigEndian.AppendUint16(nil, uint16(body.Key()))
	enc = binary.BigEndian.AppendUint16(enc, uint16(body.GetVersion()))
	enc = kbin.AppendString(enc, principal)
	enc = kbin.AppendString(enc, host)
	enc = kbin.AppendString(enc, clientID)
	enc = body.AppendTo(enc)
	out, err := s.deps.Forward.Forward(ctx, enc)
	if err != nil {
		return nil, err
	}
	if len(out) < 8 {
		return nil, errors.New("short answer from the active controller")
	}
	offset := int64(binary.BigEndian.Uint64(out))
	resp := body.ResponseKind()
	resp.SetVersion(body.GetVersion())
	if err := resp.ReadFrom(out[8:]); err != nil {
		return nil, fmt.Errorf("bad answer from the active controller: %w", err)
	}
	if err := s.awaitMetadata(ctx, offset, 30*time.Second); err != nil {
		s.lg.Warn("metadata did not catch up with a forwarded change", "offset", offset, "err", err)
	}
	return resp, nil
}

// createTopics creates topics this broker needs itself (auto-creation,
// internal topics) at the active controller, wherever it is, and returns
// once this broker's metadata has them: one error per topic (nil when
// created).
func (s *Server) createTopics(ctx context.Context, req *kmsg.CreateTopicsRequest) ([]error, error) {
	if s.deps.Forward != nil && !s.deps.Forward.Local() {
		req.SetVersion(7)
		out, err := s.forward(ctx, req, "", "", "")
		if err != nil {
			return nil, err
		}
		resp := out.(*kmsg.CreateTopicsResponse)
		errs := make([]error, len(req.Topics))
		for i, t := range resp.Topics {
			if i < len(errs) {
				errs[i] = kerr.ErrorForCode(t.ErrorCode)
			}
		}
		return errs, nil
	}
	if s.deps.Controller == nil {
		return nil, kerr.NotController
	}
	out, err := s.deps.Controller.CreateTopics(req)
	if err != nil {
		return nil, err
	}
	return out.Errs, s.awaitMetadata(ctx, out.Offset, 10*time.Second)
}

// decodeForwarded decodes the body of a forwarded request: an API that
// brokers forward, at a version this node serves.
func (s *Server) decodeForwarded(key, version int16, raw []byte) (kmsg.Request, error) {
	a, ok := s.apis[key]
	if !ok || !forwarded[key] || version < a.min || version > a.max {
		return nil, fmt.Errorf("api %d v%d is not forwarded", key, version)
	}
	body := kmsg.RequestForKey(key)
	body.SetVersion(version)
	if err := body.ReadFrom(raw); err != nil {
		return nil, fmt.Errorf("malformed: %w", err)
	}
	return body, nil
}

// handleForward carries out a forwarded request as the active controller.
func (s *Server) handleForward(req *Request) *Reply {
	raw := req.Raw
	if len(raw) < 4 {
		return &Reply{ready: closedChan, none: true, closeConn: true}
	}
	if !s.authorizedCluster(req, acl.OpClusterAction) {
		s.lg.Warn("refusing a forwarded request: the sender lacks CLUSTER_ACTION", "principal", req.Principal, "remote", req.RemoteAddr)
		return &Reply{ready: closedChan, none: true, closeConn: true}
	}
	key, version := int16(binary.BigEndian.Uint16(raw)), int16(binary.BigEndian.Uint16(raw[2:]))
	rd := kbin.Reader{Src: raw[4:]}
	principal, host, clientID := rd.String(), rd.String(), rd.String()
	if !rd.Ok() {
		return &Reply{ready: closedChan, none: true, closeConn: true}
	}
	if key == link.AdminAPIKey && version == 0 && s.deps.Controller != nil {
		return s.handleForwardedLinkAdmin(rd.Src) // authorized by the forwarding broker
	}
	body, err := s.decodeForwarded(key, version, rd.Src)
	if err != nil {
		s.lg.Warn("refusing a forwarded request", "api", key, "version", version, "err", err)
		return &Reply{ready: closedChan, none: true, closeConn: true}
	}
	inner := &Request{Key: key, Version: version, CorrelationID: req.CorrelationID, ClientID: clientID,
		Body: body, Listener: req.Listener, RemoteAddr: req.RemoteAddr, Ctx: req.Ctx, Principal: principal, Host: host}
	handle := s.apis[key].handle
	var innerRep *Reply
	if principal != "" { // a client's request: charged to its mutation quota
		innerRep = s.mutationQuota(inner, handle)
	}
	if innerRep == nil {
		innerRep = handle(inner)
	}
	rep := newReply()
	go func() {
		select {
		case <-innerRep.ready:
		case <-req.Ctx.Done():
			return
		}
		setThrottle(innerRep.resp, innerRep.throttle)
		out := binary.BigEndian.AppendUint64(nil, uint64(s.deps.Metadata.Image().Offset))
		var cut bool
		if rep.raw, cut = appendResponse(out, innerRep.resp); cut {
			s.logCut(innerRep.resp)
		}
		close(rep.ready)
	}()
	return rep
}

// notController answers a forwardable request with NOT_CONTROLLER for
// every resource it names.
func (s *Server) notController(req *Request) *Reply {
	code := kerr.NotController.Code
	msg := kerr.NotController.Message
	switch r := req.Body.(type) {
	case *kmsg.CreateTopicsRequest:
		resp := respFor(req).(*kmsg.CreateTopicsResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, code, &msg
			resp.Topics = append(resp.Topics, rt)
		}
		return done(resp)
	case *kmsg.DeleteTopicsRequest:
		resp := respFor(req).(*kmsg.DeleteTopicsResponse)
		for _, n := range r.TopicNames {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = kmsg.StringPtr(n), code
			resp.Topics = append(resp.Topics, rt)
		}
		for _, t := range r.Topics {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode = t.Topic, t.TopicID, code
			resp.Topics = append(resp.Topics, rt)
		}
		return done(resp)
	case *kmsg.CreatePartitionsRequest:
		resp := respFor(req).(*kmsg.CreatePartitionsResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, code, &msg
			resp.Topics = append(resp.Topics, rt)
		}
		return done(resp)
	case *kmsg.AlterConfigsRequest:
		resp := respFor(req).(*kmsg.AlterConfigsResponse)
		for _, rr := range r.Resources {
			res := kmsg.NewAlterConfigsResponseResource()
			res.ResourceType, res.ResourceName, res.ErrorCode, res.ErrorMessage = rr.ResourceType, rr.ResourceName, code, &msg
			resp.Resources = append(resp.Resources, res)
		}
		return done(resp)
	case *kmsg.IncrementalAlterConfigsRequest:
		resp := respFor(req).(*kmsg.IncrementalAlterConfigsResponse)
		for _, rr := range r.Resources {
			res := kmsg.NewIncrementalAlterConfigsResponseResource()
			res.ResourceType, res.ResourceName, res.ErrorCode, res.ErrorMessage = rr.ResourceType, rr.ResourceName, code, &msg
			resp.Resources = append(resp.Resources, res)
		}
		return done(resp)
	case *kmsg.ElectLeadersRequest:
		resp := respFor(req).(*kmsg.ElectLeadersResponse)
		if req.Version >= 1 {
			resp.ErrorCode = code
		}
		for _, t := range r.Topics {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewElectLeadersResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = p, code, &msg
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return done(resp)
	case *kmsg.AlterPartitionAssignmentsRequest:
		resp := respFor(req).(*kmsg.AlterPartitionAssignmentsResponse)
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		return done(resp)
	case *kmsg.ListPartitionReassignmentsRequest:
		resp := respFor(req).(*kmsg.ListPartitionReassignmentsResponse)
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		return done(resp)
	case *kmsg.UpdateFeaturesRequest:
		resp := respFor(req).(*kmsg.UpdateFeaturesResponse)
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		return done(resp)
	case *kmsg.UnregisterBrokerRequest:
		resp := respFor(req).(*kmsg.UnregisterBrokerResponse)
		resp.ErrorCode = code
		return done(resp)
	case *kmsg.AlterClientQuotasRequest:
		return done(alterClientQuotasFailed(req, kerr.NotController))
	case *kmsg.CreateACLsRequest:
		resp := respFor(req).(*kmsg.CreateACLsResponse)
		for range r.Creations {
			res := kmsg.NewCreateACLsResponseResult()
			res.ErrorCode, res.ErrorMessage = code, &msg
			resp.Results = append(resp.Results, res)
		}
		return done(resp)
	case *kmsg.DeleteACLsRequest:
		resp := respFor(req).(*kmsg.DeleteACLsResponse)
		for range r.Filters {
			res := kmsg.NewDeleteACLsResponseResult()
			res.ErrorCode, res.ErrorMessage = code, &msg
			resp.Results = append(resp.Results, res)
		}
		return done(resp)
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		resp := respFor(req).(*kmsg.AlterUserSCRAMCredentialsResponse)
		seen := map[string]bool{}
		add := func(user string) {
			if !seen[user] {
				seen[user] = true
				res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
				res.User, res.ErrorCode, res.ErrorMessage = user, code, &msg
				resp.Results = append(resp.Results, res)
			}
		}
		for _, d := range r.Deletions {
			add(d.Name)
		}
		for _, u := range r.Upsertions {
			add(u.Name)
		}
		return done(resp)
	default:
		resp := respFor(req).(*kmsg.DescribeQuorumResponse)
		resp.ErrorCode = kerr.NotLeaderForPartition.Code
		return done(resp)
	}
}
