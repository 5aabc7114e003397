package kafka

// AlterConfigs, versions 0-2.
//
// Replaces the whole set of dynamic configs of each topic, broker (a
// broker id, or empty for the cluster-wide default) or group: keys left out are
// removed, as Kafka's legacy API does. Forwarded to the controller, which
// validates every value (INVALID_CONFIG naming the key) and commits. The
// change is live on every broker once its metadata catches up; the answer
// waits for this broker's. BROKER_LOGGER resources are refused as
// Kafka's legacy API refuses them (IncrementalAlterConfigs sets levels).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
	"weir/internal/controller"
	"weir/internal/metadata"
)

func (s *Server) handleAlterConfigs(req *Request) *Reply {
	r := req.Body.(*kmsg.AlterConfigsRequest)
	resp := respFor(req).(*kmsg.AlterConfigsResponse)
	errs := make([]error, len(r.Resources))
	var changes []controller.ConfigChange
	var sent []int // the index in r.Resources of each of changes
	for i, rr := range r.Resources {
		if rr.ResourceType == kmsg.ConfigResourceTypeBrokerLogger {
			errs[i] = legacyAlterLoggers(rr)
			continue
		}
		ch := controller.ConfigChange{Type: resourceType(rr.ResourceType), Name: rr.ResourceName, Replace: map[string]*string{}}
		for _, c := range rr.Configs {
			ch.Replace[c.Name] = c.Value
		}
		changes = append(changes, ch)
		sent = append(sent, i)
	}
	if len(changes) > 0 {
		for j, err := range s.alterConfigs(req, changes, r.ValidateOnly) {
			errs[sent[j]] = err
		}
	}
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
func (s *Server) alterConfigs(req *Request, all []controller.ConfigChange, validateOnly bool) []error {
	// With an authorizer a broker's configs need ALTER_CONFIGS on the
	// cluster, a topic's on the topic, a group's on the group; denied resources never reach the
	// controller.
	denied := make([]error, len(all))
	var changes []controller.ConfigChange
	for i, ch := range all {
		switch {
		case ch.Type == metadata.ResourceBroker && !s.authorizedCluster(req, acl.OpAlterConfigs):
			denied[i] = kerr.ClusterAuthorizationFailed
		case ch.Type == metadata.ResourceTopic && !s.authorized(req, acl.OpAlterConfigs, acl.ResourceTopic, ch.Name):
			denied[i] = kerr.TopicAuthorizationFailed
		case ch.Type == metadata.ResourceGroup && !s.authorized(req, acl.OpAlterConfigs, acl.ResourceGroup, ch.Name):
			denied[i] = kerr.GroupAuthorizationFailed
		default:
			changes = append(changes, ch)
		}
	}
	if len(changes) < len(all) {
		var errs []error
		if len(changes) > 0 {
			errs = s.alterAuthorizedConfigs(req, changes, validateOnly)
		}
		j := 0
		for i := range denied {
			if denied[i] == nil {
				denied[i] = errs[j]
				j++
			}
		}
		return denied
	}
	return s.alterAuthorizedConfigs(req, changes, validateOnly)
}

func (s *Server) alterAuthorizedConfigs(req *Request, changes []controller.ConfigChange, validateOnly bool) []error {
	res, err := s.deps.Controller.AlterConfigs(changes, validateOnly)
	errs, last := res.Errs, res.Offset
	if err != nil {
		s.logUnexpected("alter configs", err)
		errs = make([]error, len(changes))
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	if err := s.awaitMetadata(req.Ctx, last, 0); err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
	}
	return errs
}
