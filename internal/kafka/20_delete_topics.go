package kafka

// DeleteTopics, versions 0-6.
//
// Topics are named (v0-v5) or given by name or id (v6+). Forwarded to the
// controller; the answer waits until this broker's metadata no longer has
// them (their logs are renamed for deletion at that point). With
// delete.topic.enable=false every topic gets TOPIC_DELETION_DISABLED.
// With an authorizer each topic needs DELETE (else
// TOPIC_AUTHORIZATION_FAILED; a topic given by id is looked up first, and
// an unknown id goes on to the controller's UNKNOWN_TOPIC_ID).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
	"weir/internal/controller"
	"weir/internal/metadata"
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
	img := s.deps.Metadata.Image()
	var allowed []controller.TopicRef
	denied := make([]bool, len(refs))
	for i, ref := range refs {
		name := ref.Name
		if ref.ID != (metadata.Uuid{}) {
			if t := img.TopicsByID.Get(ref.ID); t != nil {
				name = t.Name
			} else {
				name = ""
			}
		}
		if name != "" && !s.authorized(req, acl.OpDelete, acl.ResourceTopic, name) {
			denied[i] = true
			continue
		}
		allowed = append(allowed, ref)
	}
	out := controller.DeleteTopicsResult{Committed: controller.Committed{Offset: -1}}
	var err error
	if len(allowed) > 0 {
		out, err = s.deps.Controller.DeleteTopics(allowed)
	}
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
	j := 0
	for i, ref := range refs {
		if denied[i] {
			answer(ref, kerr.TopicAuthorizationFailed)
			continue
		}
		if j < len(out.Topics) {
			answer(out.Topics[j], errs[j])
			j++
		}
	}
	return done(resp)
}
