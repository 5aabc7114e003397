package metadata

import (
	"maps"
	"slices"
	"strings"
)

// ScramKey names one SCRAM credential: a user and Kafka's mechanism id.
type ScramKey struct {
	User      string
	Mechanism int8
}

// ScramCredential is a user's salted SCRAM credential for one mechanism.
type ScramCredential struct {
	Salt, StoredKey, ServerKey []byte
	Iterations                 int32
}

// applyScram applies UserScramCredentialRecord and
// RemoveUserScramCredentialRecord.
func (b *builder) applyScram(r Record) {
	if !b.scramCopied {
		b.im.Scram = maps.Clone(b.im.Scram)
		if b.im.Scram == nil {
			b.im.Scram = map[ScramKey]ScramCredential{}
		}
		b.scramCopied = true
	}
	switch r := r.(type) {
	case *UserScramCredentialRecord:
		b.im.Scram[ScramKey{r.Name, r.Mechanism}] = ScramCredential{Salt: r.Salt, StoredKey: r.StoredKey, ServerKey: r.ServerKey, Iterations: r.Iterations}
	case *RemoveUserScramCredentialRecord:
		delete(b.im.Scram, ScramKey{r.Name, r.Mechanism})
	}
}

// scramRecords are the records of the image's SCRAM credentials, by user
// and mechanism.
func (im *Image) scramRecords() []Record {
	keys := slices.SortedFunc(maps.Keys(im.Scram), func(a, b ScramKey) int {
		if c := strings.Compare(a.User, b.User); c != 0 {
			return c
		}
		return int(a.Mechanism) - int(b.Mechanism)
	})
	var out []Record
	for _, k := range keys {
		c := im.Scram[k]
		out = append(out, &UserScramCredentialRecord{Name: k.User, Mechanism: k.Mechanism, Salt: c.Salt,
			StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: c.Iterations})
	}
	return out
}
