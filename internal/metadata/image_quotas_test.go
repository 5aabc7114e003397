package metadata

import (
	"reflect"
	"testing"
)

func TestClientQuotas(t *testing.T) {
	alice := "alice"
	old := Empty()
	im, d := mustApply(t, old, 4,
		&ClientQuotaRecord{Entity: []EntityData{{EntityType: QuotaUser, EntityName: &alice}}, Key: "producer_byte_rate", Value: 1024},
		&ClientQuotaRecord{Entity: []EntityData{{EntityType: QuotaUser, EntityName: &alice}, {EntityType: QuotaClientID}}, Key: "consumer_byte_rate", Value: 2048},
		&ClientQuotaRecord{Entity: []EntityData{{EntityType: QuotaClientID}}, Key: "request_percentage", Value: 50},
		&ClientQuotaRecord{Entity: []EntityData{{EntityType: QuotaClientID}}, Key: "request_percentage", Remove: true},
		&ClientQuotaRecord{Entity: []EntityData{{EntityType: "group"}}, Key: "x", Value: 1})
	if !d.ChangedQuotas {
		t.Fatal("delta does not report the quota change")
	}
	if len(old.ClientQuotas) != 0 {
		t.Fatal("Apply changed the old image's quotas")
	}
	want := map[QuotaEntity]map[string]float64{
		{User: Named("alice")}:                        {"producer_byte_rate": 1024},
		{User: Named("alice"), ClientID: DefaultName}: {"consumer_byte_rate": 2048},
	}
	if !reflect.DeepEqual(im.ClientQuotas, want) {
		t.Fatalf("quotas %+v", im.ClientQuotas)
	}
	again, _ := mustApply(t, Empty(), im.Offset, im.Records()...)
	if !reflect.DeepEqual(again.ClientQuotas, im.ClientQuotas) {
		t.Fatalf("after a snapshot: %+v", again.ClientQuotas)
	}
}
