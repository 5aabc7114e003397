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
)

func (s *Server) handleCreatePartitions(req *Request) *Reply {
	r := req.Body.(*kmsg.CreatePartitionsRequest)
	resp := respFor(req).(*kmsg.CreatePartitionsResponse)
	out, err := s.deps.Controller.CreatePartitions(r)
	errs := out.Errs
	if err != nil {
		s.logUnexpected("create partitions", err)
		errs = make([]error, len(r.Topics))
		for i := range errs {
			errs[i] = err
		}
	} else if err := s.awaitMetadata(req.Ctx, out.Offset, time.Duration(r.TimeoutMillis)*time.Millisecond); err != nil {
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
