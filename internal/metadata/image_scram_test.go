package metadata

import (
	"reflect"
	"testing"
)

func TestScramCredentials(t *testing.T) {
	old := Empty()
	im, _ := mustApply(t, old, 3,
		&UserScramCredentialRecord{Name: "alice", Mechanism: 1, Salt: []byte("s"), StoredKey: []byte("k"), ServerKey: []byte("v"), Iterations: 4096},
		&UserScramCredentialRecord{Name: "alice", Mechanism: 2, Salt: []byte("s2"), StoredKey: []byte("k2"), ServerKey: []byte("v2"), Iterations: 8192},
		&UserScramCredentialRecord{Name: "bob", Mechanism: 1, Salt: []byte("b"), StoredKey: []byte("bk"), ServerKey: []byte("bv"), Iterations: 4096},
		&RemoveUserScramCredentialRecord{Name: "alice", Mechanism: 1})
	if len(old.Scram) != 0 {
		t.Fatal("Apply changed the old image's credentials")
	}
	want := map[ScramKey]ScramCredential{
		{"alice", 2}: {Salt: []byte("s2"), StoredKey: []byte("k2"), ServerKey: []byte("v2"), Iterations: 8192},
		{"bob", 1}:   {Salt: []byte("b"), StoredKey: []byte("bk"), ServerKey: []byte("bv"), Iterations: 4096},
	}
	if !reflect.DeepEqual(im.Scram, want) {
		t.Fatalf("credentials %+v", im.Scram)
	}
	// A snapshot keeps them.
	again, _ := mustApply(t, Empty(), im.Offset, im.Records()...)
	if !reflect.DeepEqual(again.Scram, im.Scram) {
		t.Fatalf("after a snapshot: %+v", again.Scram)
	}
}
