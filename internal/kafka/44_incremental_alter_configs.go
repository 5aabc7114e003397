package kafka

// IncrementalAlterConfigs, versions 0-1.
//
// SET, DELETE, APPEND and SUBTRACT (the last two for list configs only)
// applied to a resource's dynamic configs; see AlterConfigs for the rest.
// BROKER_LOGGER resources are applied here, on this node, never reaching
// the controller (broker_loggers.go); one named twice is refused, both
// times, as Kafka refuses it.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/controller"
)

func (s *Server) handleIncrementalAlterConfigs(req *Request) *Reply {
	r := req.Body.(*kmsg.IncrementalAlterConfigsRequest)
	resp := respFor(req).(*kmsg.IncrementalAlterConfigsResponse)
	errs := make([]error, len(r.Resources))
	var changes []controller.ConfigChange
	var sent []int // the index in r.Resources of each of changes
	loggers := map[string]int{}
	for _, rr := range r.Resources {
		if rr.ResourceType == kmsg.ConfigResourceTypeBrokerLogger {
			loggers[rr.ResourceName]++
		}
	}
	for i, rr := range r.Resources {
		switch {
		case rr.ResourceType != kmsg.ConfigResourceTypeBrokerLogger:
			changes = append(changes, controller.ConfigChange{Type: resourceType(rr.ResourceType), Name: rr.ResourceName, Ops: rr.Configs, Incremental: true})
			sent = append(sent, i)
		case loggers[rr.ResourceName] > 1:
			errs[i] = invalidRequest("Each resource must appear at most once.")
		default:
			errs[i] = s.alterLoggers(req, rr, r.ValidateOnly)
		}
	}
	if len(changes) > 0 {
		for j, err := range s.alterConfigs(req, changes, r.ValidateOnly) {
			errs[sent[j]] = err
		}
	}
	for i, rr := range r.Resources {
		res := kmsg.NewIncrementalAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		res.ErrorCode, res.ErrorMessage = errorCode(errs[i]), errorMessage(errs[i])
		resp.Resources = append(resp.Resources, res)
	}
	return done(resp)
}
