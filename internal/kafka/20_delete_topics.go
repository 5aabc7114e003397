package kafka

// DeleteTopics, versions 0-6.
//
// Topics are named (v0-v5) or given by name or id (v6+). Forwarded to the
// controller; the answer waits until this broker's metadata no longer has
// them (their logs are renamed for deletion at that point). With
// delete.topic.enable=false every topic gets TOPIC_DELETION_DISABLED.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/controller"
)

func (s *Server) handleDeleteTopics(req *Request) *Reply {
	r := req.Body.(*kmsg.DeleteTopicsRequest)
	resp := respFor(req).(*kmsg.DeleteTopicsResponse)
	var refs []controller.TopicRef
	if req.Version < 6 {
		for _, n := range r.TopicNames {
			refs = append(refs, controller.TopicRef{Name: n})
		}
	} else {
		for _, t := range r.Topics {
			ref := controller.TopicRef{ID: t.TopicID}
			if t.Topic != nil {
				ref.Name = *t.Topic
			}
			refs = append(refs, ref)
		}
	}
	answer := func(ref controller.TopicRef, err error) {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		if ref.Name != "" {
			name := ref.Name
			rt.Topic = &name
		}
		rt.TopicID, rt.ErrorCode, rt.ErrorMessage = ref.ID, errorCode(err), errorMessage(err)
		resp.Topics = append(resp.Topics, rt)
	}
	if !s.cfg.Broker.DeleteTopicEnable {
		for _, ref := range refs {
			answer(ref, kerr.TopicDeletionDisabled)
		}
		return done(resp)
	}
	out, err := s.deps.Controller.DeleteTopics(refs)
	if err != nil {
		s.logUnexpected("delete topics", err)
		for _, ref := range refs {
			answer(ref, err)
		}
		return done(resp)
	}
	errs := out.Errs
	if err := s.awaitMetadata(req.Ctx, out.Offset, time.Duration(r.TimeoutMillis)*time.Millisecond); err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = kerr.RequestTimedOut
			}
		}
	}
	for i, ref := range out.Topics {
		answer(ref, errs[i])
	}
	return done(resp)
}
