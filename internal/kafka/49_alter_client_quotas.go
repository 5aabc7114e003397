package kafka

// AlterClientQuotas, versions 0-1.
//
// Forwarded to the active controller, which validates each entity's
// changes and writes them to the metadata log as ClientQuotaRecords (see
// controller/quotas.go). One result per distinct entity; the answer waits
// until this broker's metadata has the change, so the quota is in force
// here when the client reads the answer.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
	"weir/internal/controller"
)

func (s *Server) handleAlterClientQuotas(req *Request) *Reply {
	r := req.Body.(*kmsg.AlterClientQuotasRequest)
	if !s.authorizedCluster(req, acl.OpAlterConfigs) {
		return done(alterClientQuotasFailed(req, kerr.ClusterAuthorizationFailed))
	}
	res, err := s.deps.Controller.AlterClientQuotas(r)
	if err != nil {
		// The controller moved: every entity gets the error.
		return done(alterClientQuotasFailed(req, err))
	}
	if err := s.awaitMetadata(req.Ctx, res.Offset, 30*time.Second); err != nil {
		s.lg.Warn("metadata did not catch up with new client quotas", "offset", res.Offset, "err", err)
	}
	return done(alterClientQuotasResponse(req, res.Entities))
}

func alterClientQuotasResponse(req *Request, results []controller.QuotaResult) *kmsg.AlterClientQuotasResponse {
	resp := respFor(req).(*kmsg.AlterClientQuotasResponse)
	for _, res := range results {
		out := kmsg.NewAlterClientQuotasResponseEntry()
		out.ErrorCode, out.ErrorMessage = errorCode(res.Err), errorMessage(res.Err)
		for _, e := range res.Entity {
			oe := kmsg.NewAlterClientQuotasResponseEntryEntity()
			oe.Type, oe.Name = e.Type, e.Name
			out.Entity = append(out.Entity, oe)
		}
		resp.Entries = append(resp.Entries, out)
	}
	return resp
}

// alterClientQuotasFailed answers every entity of the request with err.
func alterClientQuotasFailed(req *Request, err error) *kmsg.AlterClientQuotasResponse {
	r := req.Body.(*kmsg.AlterClientQuotasRequest)
	results := make([]controller.QuotaResult, len(r.Entries))
	for i, e := range r.Entries {
		results[i] = controller.QuotaResult{Entity: e.Entity, Err: err}
	}
	return alterClientQuotasResponse(req, results)
}
