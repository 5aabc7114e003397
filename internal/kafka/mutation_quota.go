package kafka

// The controller mutation quota (KIP-599): CreateTopics, CreatePartitions
// and DeleteTopics charge the partitions they create or delete to the
// client's controller_mutation_rate (quota.Clients.Mutate), topic by topic
// in request order. From CreateTopics v6, DeleteTopics v5 and
// CreatePartitions v3 the quota is strict: while it is exhausted a topic
// fails with THROTTLING_QUOTA_EXCEEDED and changes nothing; older
// versions are never refused, only throttled. A topic the controller then
// refuses gets its partitions back. The response carries the throttle
// time and the connection is muted that long.
//
// As Kafka's, the quota is charged on the active controller, to the
// principal and client id of the client, whichever broker it sent the
// request to (forward.go): the active controller holds the cluster's
// buckets.

import (
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/quota"
)

// mutationKeys are the APIs charged, with the version from which the
// quota is strict.
var mutationKeys = map[int16]int16{19: 6, 20: 5, 37: 3}

// mutationQuota charges a CreateTopics, DeleteTopics or CreatePartitions
// to its client's mutation quota and runs it (handle) without the topics
// the quota refuses; nil when no mutation quota applies.
func (s *Server) mutationQuota(req *Request, handle func(*Request) *Reply) *Reply {
	strictFrom, ok := mutationKeys[req.Key]
	if !ok {
		return nil
	}
	if s.deps.ClientQuotas == nil || strings.HasPrefix(req.ClientID, "__") {
		return nil
	}
	// A forwarded request has no connection here: its principal is the
	// client's, as the forwarding broker passed it on.
	user := quota.UserOf(req.Principal)
	if !s.deps.ClientQuotas.Applies(quota.Mutation, user, req.ClientID) {
		return nil
	}
	strict := req.Version >= strictFrom
	q := s.deps.ClientQuotas
	permits := s.mutationPermits(req)
	if permits == nil {
		return nil // validate only
	}
	var throttle time.Duration
	refused := make([]bool, len(permits))
	charged := map[string]int{}
	var kept []int
	for i, p := range permits {
		d, no := q.Mutate(user, req.ClientID, p.n, strict)
		throttle = max(throttle, d)
		refused[i] = no
		if !no {
			charged[p.name] += p.n
			kept = append(kept, i)
		}
	}
	var inner *Reply
	if len(kept) > 0 {
		sub := *req
		sub.Body = subRequest(req.Body, kept)
		inner = handle(&sub)
	}
	rep := newReply()
	rep.throttle = throttle
	if throttle > 0 && req.conn != nil {
		req.conn.mute(throttle)
	}
	go func() {
		resp := respFor(req)
		if inner != nil {
			select {
			case <-inner.ready:
			case <-req.Ctx.Done():
				rep.complete(resp)
				return
			}
			resp = inner.resp
			// The controller's refusals get their partitions back.
			for name, code := range topicCodes(resp) {
				if code != 0 && charged[name] > 0 {
					q.Refund(user, req.ClientID, charged[name])
				}
			}
		}
		for i, no := range refused {
			if no {
				appendThrottled(resp, req.Body, i)
			}
		}
		rep.complete(resp)
	}()
	return rep
}

type permit struct {
	name string
	n    int
}

// mutationPermits are the partitions each topic of the request creates or
// deletes; nil for a request that only validates.
func (s *Server) mutationPermits(req *Request) []permit {
	img := s.deps.Metadata.Image()
	var out []permit
	switch r := req.Body.(type) {
	case *kmsg.CreateTopicsRequest:
		if r.ValidateOnly {
			return nil
		}
		for _, t := range r.Topics {
			n := int(t.NumPartitions)
			if len(t.ReplicaAssignment) > 0 {
				n = len(t.ReplicaAssignment)
			} else if n < 0 {
				n = int(s.cfg.Broker.NumPartitions)
			}
			out = append(out, permit{t.Topic, n})
		}
	case *kmsg.CreatePartitionsRequest:
		if r.ValidateOnly {
			return nil
		}
		for _, t := range r.Topics {
			n := 0
			if tp := img.Topics.Get(t.Topic); tp != nil {
				n = max(int(t.Count)-len(tp.Partitions), 0)
			}
			out = append(out, permit{t.Topic, n})
		}
	case *kmsg.DeleteTopicsRequest:
		if req.Version < 6 {
			for _, name := range r.TopicNames {
				n := 0
				if tp := img.Topics.Get(name); tp != nil {
					n = len(tp.Partitions)
				}
				out = append(out, permit{name, n})
			}
			break
		}
		for _, t := range r.Topics {
			name := ""
			if t.Topic != nil {
				name = *t.Topic
			}
			tp := img.Topics.Get(name)
			if tp == nil {
				tp = img.TopicsByID.Get(t.TopicID)
			}
			n := 0
			if tp != nil {
				n, name = len(tp.Partitions), tp.Name
			}
			out = append(out, permit{name, n})
		}
	}
	return out
}

// subRequest is body with only the topics at kept.
func subRequest(body kmsg.Request, kept []int) kmsg.Request {
	switch r := body.(type) {
	case *kmsg.CreateTopicsRequest:
		c := *r
		c.Topics = pick(r.Topics, kept)
		return &c
	case *kmsg.CreatePartitionsRequest:
		c := *r
		c.Topics = pick(r.Topics, kept)
		return &c
	case *kmsg.DeleteTopicsRequest:
		c := *r
		if r.GetVersion() < 6 {
			c.TopicNames = pick(r.TopicNames, kept)
		} else {
			c.Topics = pick(r.Topics, kept)
		}
		return &c
	}
	return body
}

func pick[T any](all []T, kept []int) []T {
	out := make([]T, 0, len(kept))
	for _, i := range kept {
		out = append(out, all[i])
	}
	return out
}

// topicCodes are the error codes of a response's topics, by name.
func topicCodes(resp kmsg.Response) map[string]int16 {
	out := map[string]int16{}
	switch r := resp.(type) {
	case *kmsg.CreateTopicsResponse:
		for _, t := range r.Topics {
			out[t.Topic] = t.ErrorCode
		}
	case *kmsg.CreatePartitionsResponse:
		for _, t := range r.Topics {
			out[t.Topic] = t.ErrorCode
		}
	case *kmsg.DeleteTopicsResponse:
		for _, t := range r.Topics {
			if t.Topic != nil {
				out[*t.Topic] = t.ErrorCode
			}
		}
	}
	return out
}

// appendThrottled answers topic i of body with THROTTLING_QUOTA_EXCEEDED.
func appendThrottled(resp kmsg.Response, body kmsg.Request, i int) {
	e := kerr.ThrottlingQuotaExceeded
	msg := e.Message
	switch r := resp.(type) {
	case *kmsg.CreateTopicsResponse:
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.ErrorCode, rt.ErrorMessage = body.(*kmsg.CreateTopicsRequest).Topics[i].Topic, e.Code, &msg
		rt.NumPartitions, rt.ReplicationFactor = -1, -1
		r.Topics = append(r.Topics, rt)
	case *kmsg.CreatePartitionsResponse:
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic, rt.ErrorCode, rt.ErrorMessage = body.(*kmsg.CreatePartitionsRequest).Topics[i].Topic, e.Code, &msg
		r.Topics = append(r.Topics, rt)
	case *kmsg.DeleteTopicsResponse:
		b := body.(*kmsg.DeleteTopicsRequest)
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.ErrorCode, rt.ErrorMessage = e.Code, &msg
		if b.GetVersion() < 6 {
			rt.Topic = kmsg.StringPtr(b.TopicNames[i])
		} else {
			rt.Topic, rt.TopicID = b.Topics[i].Topic, b.Topics[i].TopicID
		}
		r.Topics = append(r.Topics, rt)
	}
}
