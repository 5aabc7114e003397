package kafka

// AlterUserScramCredentials, version 0.
//
// Forwarded to the active controller, which validates each user's
// deletions and upsertions (the client sends the salted password, never
// the password) and writes the credentials to the metadata log (see
// controller/scram.go). One result per user; the answer waits until this
// broker's metadata has the change, so a login right after succeeds.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
	"weir/internal/controller"
)

func (s *Server) handleAlterUserScramCredentials(req *Request) *Reply {
	r := req.Body.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := respFor(req).(*kmsg.AlterUserSCRAMCredentialsResponse)
	var results []controller.ScramResult
	var last int64
	var err error = kerr.ClusterAuthorizationFailed // ALTER on the cluster
	if s.authorizedCluster(req, acl.OpAlter) {
		out, e := s.deps.Controller.AlterUserScramCredentials(r)
		results, last, err = out.Users, out.Offset, e
	}
	if err != nil {
		// The controller moved: every user gets the error.
		seen := map[string]bool{}
		add := func(user string) {
			if !seen[user] {
				seen[user] = true
				res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
				res.User, res.ErrorCode, res.ErrorMessage = user, errorCode(err), errorMessage(err)
				resp.Results = append(resp.Results, res)
			}
		}
		for _, d := range r.Deletions {
			add(d.Name)
		}
		for _, u := range r.Upsertions {
			add(u.Name)
		}
		return done(resp)
	}
	if last >= 0 {
		if err := s.awaitMetadata(req.Ctx, last, 30*time.Second); err != nil {
			s.lg.Warn("metadata did not catch up with new SCRAM credentials", "offset", last, "err", err)
		}
	}
	for _, res := range results {
		out := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		out.User, out.ErrorCode, out.ErrorMessage = res.User, errorCode(res.Err), errorMessage(res.Err)
		resp.Results = append(resp.Results, out)
	}
	return done(resp)
}
