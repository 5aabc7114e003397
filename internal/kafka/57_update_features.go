package kafka

// UpdateFeatures, versions 0-1.
//
// Forwarded to the controller, which finalizes the new levels (see
// controller/features.go): kafka-features.sh upgrade and downgrade, e.g.
// eligible.leader.replicas.version=1 to turn on eligible leader replicas
// (KIP-966). A failure of the whole request (NOT_CONTROLLER) is the
// top-level error; per-feature errors are in the results. The answer
// waits until this broker's metadata has the new levels.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
)

func (s *Server) handleUpdateFeatures(req *Request) *Reply {
	r := req.Body.(*kmsg.UpdateFeaturesRequest)
	resp := respFor(req).(*kmsg.UpdateFeaturesResponse)
	var errs []error
	var last int64
	var err error = kerr.ClusterAuthorizationFailed // ALTER on the cluster
	if s.authorizedCluster(req, acl.OpAlter) {
		out, e := s.deps.Controller.UpdateFeatures(r)
		errs, last, err = out.Errs, out.Offset, e
	}
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		if resp.ErrorCode == kerr.UnknownServerError.Code {
			s.lg.Error("update features", "err", err)
		}
		return done(resp)
	}
	if err := s.awaitMetadata(req.Ctx, last, time.Duration(r.TimeoutMillis)*time.Millisecond); err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.RequestTimedOut.Code, errorMessage(err)
	}
	for i, u := range r.FeatureUpdates {
		res := kmsg.NewUpdateFeaturesResponseResult()
		res.Feature, res.ErrorCode, res.ErrorMessage = u.Feature, errorCode(errs[i]), errorMessage(errs[i])
		resp.Results = append(resp.Results, res)
	}
	return done(resp)
}
