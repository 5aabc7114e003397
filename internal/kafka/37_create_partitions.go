package kafka

// CreatePartitions, versions 0-3.
//
// Forwarded to the controller: a topic's partition count may only grow;
// new partitions are placed like a new topic's, or as assigned. More than
// 10000 new partitions over the request is POLICY_VIOLATION for every
// topic, checked before any is placed. The answer waits until this
// broker's metadata has them.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
)

func (s *Server) handleCreatePartitions(req *Request) *Reply {
	r := req.Body.(*kmsg.CreatePartitionsRequest)
	resp := respFor(req).(*kmsg.CreatePartitionsResponse)
	// With an authorizer each topic needs ALTER (else
	// TOPIC_AUTHORIZATION_FAILED; the controller never sees it).
	allowed := *r
	allowed.Topics = nil
	denied := make([]bool, len(r.Topics))
	for i, t := range r.Topics {
		if denied[i] = !s.authorized(req, acl.OpAlter, acl.ResourceTopic, t.Topic); !denied[i] {
			allowed.Topics = append(allowed.Topics, t)
		}
	}
	var errs []error
	var last int64 = -1
	var err error
	if len(allowed.Topics) > 0 {
		out, e := s.deps.Controller.CreatePartitions(&allowed)
		errs, last, err = out.Errs, out.Offset, e
	}
	if err == nil && len(allowed.Topics) < len(r.Topics) {
		all, j := make([]error, len(r.Topics)), 0
		for i := range all {
			if denied[i] {
				all[i] = kerr.TopicAuthorizationFailed
			} else {
				all[i] = errs[j]
				j++
			}
		}
		errs = all
	}
	if err != nil {
		s.logUnexpected("create partitions", err)
		errs = make([]error, len(r.Topics))
		for i := range errs {
			errs[i] = err
		}
	} else if err := s.awaitMetadata(req.Ctx, last, time.Duration(r.TimeoutMillis)*time.Millisecond); err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = kerr.RequestTimedOut
			}
		}
	}
	for i, t := range r.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, errorCode(errs[i]), errorMessage(errs[i])
		resp.Topics = append(resp.Topics, rt)
	}
	return done(resp)
}
