package controller

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

func quotaEntry(typ, name string, ops ...kmsg.AlterClientQuotasRequestEntryOp) kmsg.AlterClientQuotasRequestEntry {
	e := kmsg.NewAlterClientQuotasRequestEntry()
	ent := kmsg.NewAlterClientQuotasRequestEntryEntity()
	ent.Type = typ
	if name != "<default>" {
		ent.Name = kmsg.StringPtr(name)
	}
	e.Entity = append(e.Entity, ent)
	e.Ops = ops
	return e
}

func quotaOp(key string, v float64, remove bool) kmsg.AlterClientQuotasRequestEntryOp {
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value, op.Remove = key, v, remove
	return op
}

func TestAlterClientQuotasRules(t *testing.T) {
	img := metadata.Empty()
	img.ClientQuotas = map[metadata.QuotaEntity]map[string]float64{
		{User: metadata.Named("alice")}: {"producer_byte_rate": 100},
	}
	recs, out := alterClientQuotas(img, []kmsg.AlterClientQuotasRequestEntry{
		// Unchanged value and removal of an absent key write nothing.
		quotaEntry("user", "alice", quotaOp("producer_byte_rate", 100, false), quotaOp("consumer_byte_rate", 0, true)),
		// A key twice fails the entity.
		quotaEntry("user", "bob", quotaOp("producer_byte_rate", 1, false), quotaOp("producer_byte_rate", 2, false)),
		// The default client id; request_percentage may be fractional.
		quotaEntry("client-id", "<default>", quotaOp("request_percentage", 12.5, false)),
		// The same entity again fails, the first entry's records stay.
		quotaEntry("client-id", "<default>", quotaOp("request_percentage", 50, false)),
		// One bad key fails the whole entity.
		quotaEntry("user", "carol", quotaOp("consumer_byte_rate", 10, false), quotaOp("nope", 1, false)),
	})
	if len(out) != 4 {
		t.Fatalf("%d results, want one per distinct entity", len(out))
	}
	wantErr := []string{"", "Duplicate quota key producer_byte_rate", "Ignoring duplicate entity", "Invalid configuration key nope"}
	for i, w := range wantErr {
		switch {
		case w == "" && out[i].Err != nil:
			t.Errorf("result %d: %v", i, out[i].Err)
		case w != "" && (out[i].Err == nil || !strings.Contains(out[i].Err.Error(), w)):
			t.Errorf("result %d: %v, want %q", i, out[i].Err, w)
		}
	}
	if len(recs) != 1 {
		t.Fatalf("records %+v, want the default client id's request_percentage alone", recs)
	}
	r := recs[0].(*metadata.ClientQuotaRecord)
	if r.Key != "request_percentage" || r.Value != 12.5 || len(r.Entity) != 1 || r.Entity[0].EntityType != "client-id" || r.Entity[0].EntityName != nil {
		t.Fatalf("record %+v", r)
	}
}
