package kafka

// AlterConfigs, versions 0-2.
//
// Replaces the whole set of dynamic configs of each topic or broker (a
// broker id, or empty for the cluster-wide default): keys left out are
// removed, as Kafka's legacy API does. Forwarded to the controller, which
// validates every value (INVALID_CONFIG naming the key) and commits. The
// change is live on every broker once its metadata catches up; the answer
// waits for this broker's.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/controller"
)

func (s *Server) handleAlterConfigs(req *Request) *Reply {
	r := req.Body.(*kmsg.AlterConfigsRequest)
	resp := respFor(req).(*kmsg.AlterConfigsResponse)
	changes := make([]controller.ConfigChange, len(r.Resources))
	for i, rr := range r.Resources {
		ch := controller.ConfigChange{Type: resourceType(rr.ResourceType), Name: rr.ResourceName, Replace: map[string]*string{}}
		for _, c := range rr.Configs {
			ch.Replace[c.Name] = c.Value
		}
		changes[i] = ch
	}
	errs := s.alterConfigs(req, changes, r.ValidateOnly)
	for i, rr := range r.Resources {
		res := kmsg.NewAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		res.ErrorCode, res.ErrorMessage = errorCode(errs[i]), errorMessage(errs[i])
		resp.Resources = append(resp.Resources, res)
	}
	return done(resp)
}

// alterConfigs sends changes to the controller and waits for the result
// to reach this broker's metadata.
func (s *Server) alterConfigs(req *Request, changes []controller.ConfigChange, validateOnly bool) []error {
	res, err := s.deps.Controller.AlterConfigs(changes, validateOnly)
	errs := res.Errs
	if err != nil {
		s.logUnexpected("alter configs", err)
		errs = make([]error, len(changes))
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	if err := s.awaitMetadata(req.Ctx, res.Offset, 0); err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
	}
	return errs
}
