package controller

import (
	"errors"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

// Group configs (GROUP resources) are validated against the controller's
// group.consumer.* bounds with Kafka's messages and stored as GROUP
// ConfigRecords; the share and streams groups' keys are refused.
func TestBuildAlterGroupConfigs(t *testing.T) {
	c := builder(t, map[string]string{"group.consumer.max.heartbeat.interval.ms": "50000"})
	img := testImage(t, 1)

	res, err := c.alterConfigs(img, []ConfigChange{{Type: metadata.ResourceGroup, Name: "g", Incremental: true,
		Ops: []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("consumer.heartbeat.interval.ms", kmsg.IncrementalAlterConfigOpSet, "20000"),
			incOp("consumer.session.timeout.ms", kmsg.IncrementalAlterConfigOpSet, "50000")}}}, false)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "in bounds", res.Answer.Errs[0], nil)
	hb, st := "20000", "50000"
	want := []metadata.Record{
		&metadata.ConfigRecord{ResourceType: metadata.ResourceGroup, ResourceName: "g", Name: "consumer.heartbeat.interval.ms", Value: &hb},
		&metadata.ConfigRecord{ResourceType: metadata.ResourceGroup, ResourceName: "g", Name: "consumer.session.timeout.ms", Value: &st},
	}
	if !reflect.DeepEqual(res.Records, want) {
		t.Errorf("records %v, want %v", res.Records, want)
	}
	img, _, err = img.Apply(res.Records, img.Offset+1)
	if err != nil {
		t.Fatal(err)
	}
	if got := img.GroupConfig("g"); !reflect.DeepEqual(got, map[string]string{"consumer.heartbeat.interval.ms": hb, "consumer.session.timeout.ms": st}) {
		t.Errorf("image's group config %v", got)
	}

	for _, tc := range []struct {
		name, key, value, msg string
		code                  *kerr.Error
	}{
		{"heartbeat below min", "consumer.heartbeat.interval.ms", "4999", "consumer.heartbeat.interval.ms must be in the range 5000 to 50000 inclusive.", kerr.InvalidConfig},
		{"heartbeat above max", "consumer.heartbeat.interval.ms", "50001", "consumer.heartbeat.interval.ms must be in the range 5000 to 50000 inclusive.", kerr.InvalidConfig},
		{"session above max", "consumer.session.timeout.ms", "60001", "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.", kerr.InvalidConfig},
		{"session not above heartbeat", "consumer.heartbeat.interval.ms", "50000", "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms", kerr.InvalidConfig},
		{"not a number", "consumer.session.timeout.ms", "x", "Invalid value x for configuration consumer.session.timeout.ms: Not a number of type INT", kerr.InvalidConfig},
		{"below 1", "consumer.session.timeout.ms", "0", "Invalid value 0 for configuration consumer.session.timeout.ms: Value must be at least 1", kerr.InvalidConfig},
		{"share key", "share.session.timeout.ms", "45000", "Group config share.session.timeout.ms is not supported: weir does not have share groups (KIP-932) yet.", kerr.InvalidConfig},
		{"streams key", "streams.num.standby.replicas", "1", "Group config streams.num.standby.replicas is not supported: weir does not have streams groups (KIP-1071) yet.", kerr.InvalidConfig},
		{"unknown key", "consumer.max.size", "1", "Unknown group config name: consumer.max.size", kerr.InvalidConfig},
	} {
		ch := ConfigChange{Type: metadata.ResourceGroup, Name: "g", Incremental: true,
			Ops: []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp(tc.key, kmsg.IncrementalAlterConfigOpSet, tc.value)}}
		res, err := c.alterConfigs(img, []ConfigChange{ch}, false)
		if err != nil {
			t.Fatal(err)
		}
		wantCode(t, tc.name, res.Answer.Errs[0], tc.code)
		var te *TopicError
		if errors.As(res.Answer.Errs[0], &te); te.Error() != tc.msg {
			t.Errorf("%s: message %q, want %q", tc.name, te.Error(), tc.msg)
		}
		if len(res.Records) != 0 {
			t.Errorf("%s: records %v", tc.name, res.Records)
		}
	}

	// Deleting a key falls back to the broker's value in the cross check.
	res, err = c.alterConfigs(img, []ConfigChange{{Type: metadata.ResourceGroup, Name: "g", Incremental: true,
		Ops: []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("consumer.session.timeout.ms", kmsg.IncrementalAlterConfigOpDelete)}}}, false)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "delete session timeout", res.Answer.Errs[0], nil)
	want = []metadata.Record{&metadata.ConfigRecord{ResourceType: metadata.ResourceGroup, ResourceName: "g", Name: "consumer.session.timeout.ms"}}
	if !reflect.DeepEqual(res.Records, want) {
		t.Errorf("delete: records %v, want %v", res.Records, want)
	}

	res, err = c.alterConfigs(img, []ConfigChange{configChange(metadata.ResourceGroup, "", "consumer.session.timeout.ms", "50000")}, false)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "empty group name", res.Answer.Errs[0], kerr.InvalidRequest)
}
