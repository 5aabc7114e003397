package kafka

// DescribeUserScramCredentials, version 0.
//
// Answered from this broker's metadata image (the users' SCRAM
// credentials), as Kafka's brokers do: the mechanisms and iteration counts
// of each user named (every user when none is), RESOURCE_NOT_FOUND for a
// user without credentials, DUPLICATE_RESOURCE for a user named twice.
// Salts and keys are never returned.

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
)

func (s *Server) handleDescribeUserScramCredentials(req *Request) *Reply {
	r := req.Body.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := respFor(req).(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if !s.authorizedCluster(req, acl.OpDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return done(resp)
	}
	img := s.deps.Metadata.Image()
	byUser := map[string][]kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{}
	for k, c := range img.Scram {
		ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
		ci.Mechanism, ci.Iterations = k.Mechanism, c.Iterations
		byUser[k.User] = append(byUser[k.User], ci)
	}
	var users []string
	twice := map[string]bool{}
	if len(r.Users) == 0 {
		users = slices.Sorted(maps.Keys(byUser))
	} else {
		seen := map[string]bool{}
		for _, u := range r.Users {
			if seen[u.Name] {
				twice[u.Name] = true
				continue
			}
			seen[u.Name] = true
			users = append(users, u.Name)
		}
	}
	for _, u := range users {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = u
		infos := byUser[u]
		switch {
		case twice[u]:
			res.ErrorCode = kerr.DuplicateResource.Code
			res.ErrorMessage = kmsg.StringPtr("Cannot describe SCRAM credentials for the same user twice in a single request: " + u)
		case len(infos) == 0:
			res.ErrorCode = kerr.ResourceNotFound.Code
			res.ErrorMessage = kmsg.StringPtr("Attempt to describe a user credential that does not exist: " + u)
		default:
			slices.SortFunc(infos, func(a, b kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo) int {
				return int(a.Mechanism) - int(b.Mechanism)
			})
			res.CredentialInfos = infos
		}
		resp.Results = append(resp.Results, res)
	}
	return done(resp)
}
