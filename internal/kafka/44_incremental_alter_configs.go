package kafka

// IncrementalAlterConfigs, versions 0-1.
//
// SET, DELETE, APPEND and SUBTRACT (the last two for list configs only)
// applied to a resource's dynamic configs; see AlterConfigs for the rest.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/controller"
)

func (s *Server) handleIncrementalAlterConfigs(req *Request) *Reply {
	r := req.Body.(*kmsg.IncrementalAlterConfigsRequest)
	resp := respFor(req).(*kmsg.IncrementalAlterConfigsResponse)
	changes := make([]controller.ConfigChange, len(r.Resources))
	for i, rr := range r.Resources {
		changes[i] = controller.ConfigChange{Type: resourceType(rr.ResourceType), Name: rr.ResourceName, Ops: rr.Configs, Incremental: true}
	}
	errs := s.alterConfigs(req, changes, r.ValidateOnly)
	for i, rr := range r.Resources {
		res := kmsg.NewIncrementalAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		res.ErrorCode, res.ErrorMessage = errorCode(errs[i]), errorMessage(errs[i])
		resp.Resources = append(resp.Resources, res)
	}
	return done(resp)
}
