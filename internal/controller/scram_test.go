package controller

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
	"weir/internal/sasl"
)

func upsert(user string, mech int8, iterations int32) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
	u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = user, mech, iterations, []byte("salt"), []byte("salted-password-of-32-bytes!!!!!")
	return u
}

func deletion(user string, mech int8) kmsg.AlterUserSCRAMCredentialsRequestDeletion {
	d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	d.Name, d.Mechanism = user, mech
	return d
}

func TestAlterUserScramCredentials(t *testing.T) {
	h := newHarness(t, nil)
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
		upsert("alice", sasl.ScramSHA256ID, 4096), upsert("bob", sasl.ScramSHA512ID, 16384),
		upsert("", sasl.ScramSHA256ID, 4096), upsert("carol", 3, 4096),
		upsert("dave", sasl.ScramSHA256ID, 4095), upsert("erin", sasl.ScramSHA256ID, 16385),
		upsert("frank", sasl.ScramSHA256ID, 4096), upsert("frank", sasl.ScramSHA512ID, 4096),
	}
	req.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{deletion("gina", sasl.ScramSHA256ID)}
	altered, err := h.c.AlterUserScramCredentials(req)
	if err != nil || altered.Offset != h.q.end-1 {
		t.Fatalf("alter: %v, offset %d", err, altered.Offset)
	}
	res := altered.Users
	want := map[string]*kerr.Error{"alice": nil, "bob": nil, "": kerr.UnacceptableCredential, "carol": kerr.UnsupportedSaslMechanism,
		"dave": kerr.UnacceptableCredential, "erin": kerr.UnacceptableCredential, "frank": kerr.DuplicateResource, "gina": kerr.ResourceNotFound}
	if len(res) != len(want) {
		t.Fatalf("results %+v", res)
	}
	for _, r := range res {
		var te *TopicError
		if w := want[r.User]; w == nil && r.Err != nil || w != nil && (!errors.As(r.Err, &te) || te.Code != w) {
			t.Errorf("%q: %v, want %v", r.User, r.Err, w)
		}
	}
	img := h.c.Image()
	alice, ok := img.Scram[metadata.ScramKey{User: "alice", Mechanism: sasl.ScramSHA256ID}]
	wantCred := sasl.NewCredential(sasl.ScramSHA256ID, []byte("salted-password-of-32-bytes!!!!!"), []byte("salt"), 4096)
	if !ok || string(alice.StoredKey) != string(wantCred.StoredKey) || string(alice.ServerKey) != string(wantCred.ServerKey) || alice.Iterations != 4096 {
		t.Errorf("alice's credential %+v", alice)
	}
	if len(img.Scram) != 2 {
		t.Errorf("credentials %v", img.Scram)
	}

	// Deleting one and replacing another in one request.
	req = kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{deletion("alice", sasl.ScramSHA256ID)}
	req.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{upsert("bob", sasl.ScramSHA512ID, 8192)}
	if res, err := h.c.AlterUserScramCredentials(req); err != nil || res.Users[0].Err != nil || res.Users[1].Err != nil {
		t.Fatalf("second alter: %v %+v", err, res)
	}
	img = h.c.Image()
	if _, ok := img.Scram[metadata.ScramKey{User: "alice", Mechanism: sasl.ScramSHA256ID}]; ok || img.Scram[metadata.ScramKey{User: "bob", Mechanism: sasl.ScramSHA512ID}].Iterations != 8192 {
		t.Errorf("after the second alter: %v", img.Scram)
	}
}
