package controller

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
	"weir/internal/sasl"
)

// ScramResult is the outcome of AlterUserScramCredentials for one user.
type ScramResult struct {
	User string
	Err  error // nil: applied
}

// AlterUserScramCredentials deletes and sets users' SCRAM credentials
// (UserScramCredentialRecord, RemoveUserScramCredentialRecord) with
// Kafka's rules (ScramControlManager): a user altered twice in one request
// gets DUPLICATE_RESOURCE, an empty name or too few or many iterations
// UNACCEPTABLE_CREDENTIAL, an unknown mechanism UNSUPPORTED_SASL_MECHANISM,
// the deletion of a credential that does not exist RESOURCE_NOT_FOUND; the
// valid alterations of the other users are applied.
func (c *Controller) AlterUserScramCredentials(req *kmsg.AlterUserSCRAMCredentialsRequest) (ScramCredentialsResult, error) {
	return run(c, func(img *metadata.Image) (result[ScramCredentialsResult], error) {
		return alterUserScramCredentials(img, req), nil
	})
}

// ScramCredentialsResult is the answer of AlterUserScramCredentials: one
// result per user, in the order of their first alteration.
type ScramCredentialsResult struct {
	Committed
	Users []ScramResult
}

// alterUserScramCredentials builds AlterUserScramCredentials. Nothing is
// to be waited for (Offset -1) unless credentials change.
func alterUserScramCredentials(img *metadata.Image, req *kmsg.AlterUserSCRAMCredentialsRequest) result[ScramCredentialsResult] {
	var order []string
	errs := map[string]error{}
	recs := map[string]metadata.Record{}
	seen := func(user string) bool {
		_, e := errs[user]
		_, r := recs[user]
		if !e && !r {
			order = append(order, user)
		}
		return e || r
	}
	duplicate := topicErr(kerr.DuplicateResource, "A user credential cannot be altered twice in the same request")
	for _, d := range req.Deletions {
		if seen(d.Name) {
			if _, failed := errs[d.Name]; !failed {
				delete(recs, d.Name)
				errs[d.Name] = duplicate
			}
			continue
		}
		if err := validScramUser(d.Name, d.Mechanism); err != nil {
			errs[d.Name] = err
		} else if _, ok := img.Scram[metadata.ScramKey{User: d.Name, Mechanism: d.Mechanism}]; !ok {
			errs[d.Name] = topicErr(kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist")
		} else {
			recs[d.Name] = &metadata.RemoveUserScramCredentialRecord{Name: d.Name, Mechanism: d.Mechanism}
		}
	}
	for _, u := range req.Upsertions {
		if seen(u.Name) {
			if _, failed := errs[u.Name]; !failed {
				delete(recs, u.Name)
				errs[u.Name] = duplicate
			}
			continue
		}
		switch err := validScramUser(u.Name, u.Mechanism); {
		case err != nil:
			errs[u.Name] = err
		case u.Iterations < sasl.MinIterations:
			errs[u.Name] = topicErr(kerr.UnacceptableCredential, "Too few iterations")
		case u.Iterations > sasl.MaxIterations:
			errs[u.Name] = topicErr(kerr.UnacceptableCredential, "Too many iterations")
		default:
			cred := sasl.NewCredential(u.Mechanism, u.SaltedPassword, u.Salt, int(u.Iterations))
			recs[u.Name] = &metadata.UserScramCredentialRecord{Name: u.Name, Mechanism: u.Mechanism, Salt: u.Salt,
				StoredKey: cred.StoredKey, ServerKey: cred.ServerKey, Iterations: u.Iterations}
		}
	}
	out := make([]ScramResult, len(order))
	res := result[ScramCredentialsResult]{Answer: ScramCredentialsResult{Committed{-1}, out}}
	var batch userRecords
	for i, user := range order {
		out[i] = ScramResult{User: user, Err: errs[user]}
		if r := recs[user]; r != nil {
			if err := batch.add(r); err != nil {
				for j := range out {
					out[j] = ScramResult{User: order[j], Err: err}
				}
				return res
			}
		}
	}
	res.Records = batch
	return res
}

func validScramUser(name string, mechanism int8) error {
	if name == "" {
		return topicErr(kerr.UnacceptableCredential, "Username must not be empty")
	}
	if sasl.ScramName(mechanism) == "" {
		return topicErr(kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
	}
	return nil
}
