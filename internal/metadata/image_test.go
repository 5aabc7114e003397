package metadata

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Tests of Image.Apply and the Delta it returns. Records are built fresh by
// functions so that two images built from "the same" records share no
// slices, which lets reflect.DeepEqual detect any mutation of an old image.

func imgID(b byte) Uuid {
	var u Uuid
	u[0], u[15] = b, b
	return u
}

func imgStr(s string) *string { return &s }

func topicRecs(name string, id Uuid, parts int, replicas ...int32) []Record {
	recs := []Record{&TopicRecord{Name: name, TopicId: id}}
	for p := range parts {
		pr := NewPartitionRecord()
		pr.PartitionId, pr.TopicId = int32(p), id
		pr.Replicas = slices.Clone(replicas)
		pr.Isr = slices.Clone(replicas)
		pr.Leader, pr.LeaderEpoch, pr.PartitionEpoch = replicas[0], 0, 0
		recs = append(recs, pr)
	}
	return recs
}

func registerRec(id int32, epoch int64) *RegisterBrokerRecord {
	r := NewRegisterBrokerRecord()
	r.BrokerId, r.BrokerEpoch = id, epoch
	r.EndPoints = []BrokerEndpoint{{Name: "PLAINTEXT", Host: "h", Port: 9092}}
	return r
}

func mustApply(t *testing.T, im *Image, last int64, recs ...Record) (*Image, *Delta) {
	t.Helper()
	next, d, err := im.Apply(recs, last)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if next.Offset != last {
		t.Fatalf("Offset = %d, want %d", next.Offset, last)
	}
	return next, d
}

func mustFail(t *testing.T, im *Image, want string, recs ...Record) {
	t.Helper()
	before := mustClone(t, im)
	next, d, err := im.Apply(recs, im.Offset+int64(len(recs)))
	if err == nil {
		t.Fatalf("Apply succeeded, want an error containing %q", want)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not contain %q", err, want)
	}
	if next != nil || d != nil {
		t.Fatalf("Apply returned an image or delta with its error")
	}
	if !reflect.DeepEqual(im, before) {
		t.Fatalf("a failed Apply changed the old image")
	}
}

// mustClone deep-copies an image by value, for comparison after Apply.
func mustClone(t *testing.T, im *Image) *Image {
	t.Helper()
	c := &Image{Offset: im.Offset, NextProducerID: im.NextProducerID, Brokers: map[int32]*Broker{}, Configs: map[ConfigResource]map[string]string{},
		Features: map[string]int16{}, Links: map[Uuid]*Link{}, Mirrors: map[Uuid]*Mirror{}, Scram: maps.Clone(im.Scram), ACLs: maps.Clone(im.ACLs),
		ClientQuotas: maps.Clone(im.ClientQuotas), BrokerLoads: maps.Clone(im.BrokerLoads)}
	for id, l := range im.Links {
		cl := *l
		cl.Configs = maps.Clone(l.Configs)
		c.Links[id] = &cl
	}
	for id, m := range im.Mirrors {
		cm := *m
		c.Mirrors[id] = &cm
	}
	// Deep copies of the topics, in maps of the same layout (so that
	// DeepEqual compares their contents).
	copies := map[*Topic]*Topic{}
	clone := func(tp *Topic) *Topic {
		if ct := copies[tp]; ct != nil {
			return ct
		}
		ct := &Topic{Name: tp.Name, ID: tp.ID, Partitions: map[int32]*Partition{}}
		for id, p := range tp.Partitions {
			cp := *p
			cp.Replicas, cp.ISR = slices.Clone(p.Replicas), slices.Clone(p.ISR)
			cp.Removing, cp.Adding = slices.Clone(p.Removing), slices.Clone(p.Adding)
			cp.ELR, cp.LastKnownELR = slices.Clone(p.ELR), slices.Clone(p.LastKnownELR)
			ct.Partitions[id] = &cp
		}
		copies[tp] = ct
		return ct
	}
	c.Topics, c.TopicsByID = cloneShards(im.Topics, clone), cloneShards(im.TopicsByID, clone)
	if c.TopicsByID.Len() != im.TopicsByID.Len() {
		t.Fatalf("Topics and TopicsByID disagree: %d vs %d", im.Topics.Len(), im.TopicsByID.Len())
	}
	for id, b := range im.Brokers {
		cb := *b
		cb.Endpoints, cb.LogDirs = slices.Clone(b.Endpoints), slices.Clone(b.LogDirs)
		c.Brokers[id] = &cb
	}
	for res, cfg := range im.Configs {
		m := map[string]string{}
		for k, v := range cfg {
			m[k] = v
		}
		c.Configs[res] = m
	}
	for k, v := range im.Features {
		c.Features[k] = v
	}
	return c
}

func TestEmptyImage(t *testing.T) {
	im := Empty()
	if im.Offset != -1 || im.Topics.Len() != 0 || len(im.Brokers) != 0 || im.NextProducerID != 0 {
		t.Fatalf("Empty() = %+v", im)
	}
	if im.TopicConfig("nope") == nil || im.BrokerConfig("") == nil || im.BrokerConfig("1") == nil {
		t.Fatal("config accessors must never return nil")
	}
}

func TestApplyTopicAndPartitions(t *testing.T) {
	id := imgID(1)
	im, d := mustApply(t, Empty(), 2, topicRecs("orders", id, 2, 1, 2)...)
	tp := im.Topics.Get("orders")
	if tp == nil || im.TopicsByID.Get(id) != tp || tp.ID != id || tp.Name != "orders" {
		t.Fatalf("topic not indexed by name and id: %+v", im.Topics)
	}
	if len(tp.Partitions) != 2 {
		t.Fatalf("partitions = %d, want 2", len(tp.Partitions))
	}
	want := &Partition{ID: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1}
	if got := tp.Partitions[1]; !reflect.DeepEqual(got, want) {
		t.Fatalf("partition 1 = %+v, want %+v", got, want)
	}
	if got := tp.SortedPartitions(); len(got) != 2 || got[0].ID != 0 || got[1].ID != 1 {
		t.Fatalf("SortedPartitions = %v", got)
	}
	if !tp.Partitions[0].HasReplica(2) || tp.Partitions[0].HasReplica(3) {
		t.Fatal("HasReplica is wrong")
	}
	if d.ChangedTopics["orders"] != tp {
		t.Fatalf("ChangedTopics = %v", d.ChangedTopics)
	}
	if got := d.ChangedPartitions[id]; !reflect.DeepEqual(got, map[int32]bool{0: true, 1: true}) {
		t.Fatalf("ChangedPartitions = %v", got)
	}
	if len(d.DeletedTopics)+len(d.ChangedConfigs)+len(d.ChangedBrokers) != 0 {
		t.Fatalf("unexpected delta %+v", d)
	}

	// A topic with no partitions yet is still reported as changed.
	im2, d2 := mustApply(t, im, 3, &TopicRecord{Name: "empty", TopicId: imgID(2)})
	if got, ok := d2.ChangedPartitions[imgID(2)]; !ok || len(got) != 0 {
		t.Fatalf("ChangedPartitions for a bare topic = %v, %v", got, ok)
	}
	if d2.ChangedTopics["empty"] != im2.Topics.Get("empty") || len(d2.ChangedTopics) != 1 {
		t.Fatalf("ChangedTopics = %v", d2.ChangedTopics)
	}

	// A PartitionRecord for an existing partition replaces its state.
	pr := NewPartitionRecord()
	pr.PartitionId, pr.TopicId, pr.Replicas, pr.Isr, pr.Leader, pr.LeaderEpoch, pr.PartitionEpoch = 0, id, []int32{3}, []int32{3}, 3, 7, 9
	im3, d3 := mustApply(t, im2, 4, pr)
	if p := im3.Topics.Get("orders").Partitions[0]; p.Leader != 3 || p.LeaderEpoch != 7 || p.PartitionEpoch != 9 || !slices.Equal(p.Replicas, []int32{3}) {
		t.Fatalf("replaced partition = %+v", p)
	}
	if !reflect.DeepEqual(d3.ChangedPartitions[id], map[int32]bool{0: true}) {
		t.Fatalf("ChangedPartitions = %v", d3.ChangedPartitions)
	}
}

func TestApplyRejectsRecordsThatDoNotFit(t *testing.T) {
	id := imgID(1)
	im, _ := mustApply(t, Empty(), 2, append(topicRecs("t", id, 1, 1), registerRec(1, 10))...)

	mustFail(t, im, "already exists", &TopicRecord{Name: "t", TopicId: imgID(9)})
	pr := NewPartitionRecord()
	pr.PartitionId, pr.TopicId = 0, imgID(9)
	mustFail(t, im, "unknown topic id", pr)
	pc := NewPartitionChangeRecord()
	pc.PartitionId, pc.TopicId = 0, imgID(9)
	mustFail(t, im, "unknown topic id", pc)
	pc = NewPartitionChangeRecord()
	pc.PartitionId, pc.TopicId = 5, id
	mustFail(t, im, "unknown partition", pc)
	mustFail(t, im, "unknown topic id", &RemoveTopicRecord{TopicId: imgID(9)})
	mustFail(t, im, "unknown broker", &FenceBrokerRecord{Id: 2, Epoch: 10})
	mustFail(t, im, "unknown broker", &UnfenceBrokerRecord{Id: 2, Epoch: 10})
	mustFail(t, im, "unknown broker", &BrokerRegistrationChangeRecord{BrokerId: 2, BrokerEpoch: 10, Fenced: -1})
	mustFail(t, im, "epoch", &FenceBrokerRecord{Id: 1, Epoch: 9})
	mustFail(t, im, "epoch", &UnfenceBrokerRecord{Id: 1, Epoch: 11})
	mustFail(t, im, "epoch", &BrokerRegistrationChangeRecord{BrokerId: 1, BrokerEpoch: 9, Fenced: -1})

	// A bad record after good ones fails the whole batch and leaves the old
	// image as it was, even though the good ones touched copied state.
	ok := NewPartitionChangeRecord()
	ok.PartitionId, ok.TopicId, ok.Leader = 0, id, -1
	mustFail(t, im, "epoch",
		&TopicRecord{Name: "u", TopicId: imgID(3)},
		ok,
		&ConfigRecord{ResourceType: ResourceTopic, ResourceName: "t", Name: "retention.ms", Value: imgStr("1")},
		&UnfenceBrokerRecord{Id: 1, Epoch: 10},
		&FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 25},
		&ProducerIdsRecord{NextProducerId: 1000},
		&FenceBrokerRecord{Id: 1, Epoch: 1})
}

func TestApplyPartitionChange(t *testing.T) {
	id := imgID(1)
	base := func(t *testing.T) *Image {
		im, _ := mustApply(t, Empty(), 3, topicRecs("t", id, 1, 1, 2, 3)...)
		// Give the partition some non-zero epochs and every optional list.
		pr := NewPartitionRecord()
		pr.PartitionId, pr.TopicId = 0, id
		pr.Replicas, pr.Isr, pr.Leader, pr.LeaderEpoch, pr.PartitionEpoch = []int32{1, 2, 3}, []int32{1, 2, 3}, 1, 4, 10
		pr.RemovingReplicas, pr.AddingReplicas = []int32{3}, []int32{}
		pr.EligibleLeaderReplicas, pr.LastKnownElr = []int32{}, []int32{}
		im, _ = mustApply(t, im, 4, pr)
		return im
	}
	change := func(fn func(r *PartitionChangeRecord)) *PartitionChangeRecord {
		r := NewPartitionChangeRecord()
		r.PartitionId, r.TopicId = 0, id
		fn(r)
		return r
	}
	cases := []struct {
		name string
		rec  *PartitionChangeRecord
		want func(p *Partition)
	}{
		{"nothing", change(func(r *PartitionChangeRecord) {}), func(p *Partition) {}},
		{"isr", change(func(r *PartitionChangeRecord) { r.Isr = []int32{1} }), func(p *Partition) { p.ISR = []int32{1} }},
		{"replicas", change(func(r *PartitionChangeRecord) { r.Replicas = []int32{1, 2} }), func(p *Partition) { p.Replicas = []int32{1, 2} }},
		{"removing", change(func(r *PartitionChangeRecord) { r.RemovingReplicas = []int32{} }), func(p *Partition) { p.Removing = []int32{} }},
		{"adding", change(func(r *PartitionChangeRecord) { r.AddingReplicas = []int32{4} }), func(p *Partition) { p.Adding = []int32{4} }},
		{"elr", change(func(r *PartitionChangeRecord) { r.EligibleLeaderReplicas = []int32{2} }), func(p *Partition) { p.ELR = []int32{2} }},
		{"last known elr", change(func(r *PartitionChangeRecord) { r.LastKnownElr = []int32{3} }), func(p *Partition) { p.LastKnownELR = []int32{3} }},
		{"recovery state", change(func(r *PartitionChangeRecord) { r.LeaderRecoveryState = 1 }), func(p *Partition) { p.LeaderRecoveryState = 1 }},
		// Any leader field, even the same leader, bumps the leader epoch
		// (Kafka's PartitionRegistration.merge); -2 leaves both alone.
		{"new leader", change(func(r *PartitionChangeRecord) { r.Leader = 2 }), func(p *Partition) { p.Leader, p.LeaderEpoch = 2, 5 }},
		{"same leader", change(func(r *PartitionChangeRecord) { r.Leader = 1 }), func(p *Partition) { p.LeaderEpoch = 5 }},
		{"no leader", change(func(r *PartitionChangeRecord) { r.Leader = -1 }), func(p *Partition) { p.Leader, p.LeaderEpoch = -1, 5 }},
		{"isr and leader", change(func(r *PartitionChangeRecord) { r.Isr, r.Leader = []int32{3}, 3 }),
			func(p *Partition) { p.ISR, p.Leader, p.LeaderEpoch = []int32{3}, 3, 5 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := base(t)
			snapshot := mustClone(t, old)
			want := *snapshot.Topics.Get("t").Partitions[0]
			tc.want(&want)
			want.PartitionEpoch = 11 // every change bumps the partition epoch
			im, d := mustApply(t, old, 5, tc.rec)
			if got := im.Topics.Get("t").Partitions[0]; !reflect.DeepEqual(got, &want) {
				t.Fatalf("partition = %+v\nwant        %+v", got, &want)
			}
			if !reflect.DeepEqual(old, snapshot) {
				t.Fatal("Apply changed the old image")
			}
			if d.ChangedTopics["t"] != im.Topics.Get("t") || !reflect.DeepEqual(d.ChangedPartitions[id], map[int32]bool{0: true}) {
				t.Fatalf("delta = %+v", d)
			}
		})
	}

	// Two changes in one batch both apply, in order.
	im, _ := mustApply(t, base(t), 6,
		change(func(r *PartitionChangeRecord) { r.Leader = 2 }),
		change(func(r *PartitionChangeRecord) { r.Leader = 3; r.Isr = []int32{3} }))
	if p := im.Topics.Get("t").Partitions[0]; p.Leader != 3 || p.LeaderEpoch != 6 || p.PartitionEpoch != 12 || !slices.Equal(p.ISR, []int32{3}) {
		t.Fatalf("after two changes: %+v", p)
	}
}

func TestApplyRemoveTopic(t *testing.T) {
	a, b := imgID(1), imgID(2)
	recs := append(topicRecs("a", a, 2, 1), topicRecs("b", b, 1, 1)...)
	recs = append(recs,
		&ConfigRecord{ResourceType: ResourceTopic, ResourceName: "a", Name: "retention.ms", Value: imgStr("1000")},
		&ConfigRecord{ResourceType: ResourceTopic, ResourceName: "b", Name: "retention.ms", Value: imgStr("2000")},
		&ConfigRecord{ResourceType: ResourceBroker, ResourceName: "", Name: "log.retention.ms", Value: imgStr("3000")})
	old, _ := mustApply(t, Empty(), 10, recs...)
	snapshot := mustClone(t, old)
	oldA := old.Topics.Get("a")

	im, d := mustApply(t, old, 11, &RemoveTopicRecord{TopicId: a})
	if im.Topics.Get("a") != nil || im.TopicsByID.Get(a) != nil {
		t.Fatal("topic a still in the image")
	}
	if im.Topics.Get("b") != old.Topics.Get("b") {
		t.Fatal("topic b was copied though it did not change")
	}
	if len(im.TopicConfig("a")) != 0 {
		t.Fatalf("configs of a deleted topic survive: %v", im.TopicConfig("a"))
	}
	if _, ok := im.Configs[ConfigResource{ResourceTopic, "a"}]; ok {
		t.Fatal("empty config map left in Configs")
	}
	if im.TopicConfig("b")["retention.ms"] != "2000" || im.BrokerConfig("")["log.retention.ms"] != "3000" {
		t.Fatalf("other configs changed: %v", im.Configs)
	}
	if d.DeletedTopics[a] != oldA || len(d.DeletedTopics) != 1 {
		t.Fatalf("DeletedTopics = %v", d.DeletedTopics)
	}
	if !d.ChangedConfigs[ConfigResource{ResourceTopic, "a"}] || len(d.ChangedConfigs) != 1 {
		t.Fatalf("ChangedConfigs = %v", d.ChangedConfigs)
	}
	if len(d.ChangedTopics) != 0 || len(d.ChangedPartitions) != 0 {
		t.Fatalf("a deleted topic is reported as changed: %v %v", d.ChangedTopics, d.ChangedPartitions)
	}
	if !reflect.DeepEqual(old, snapshot) {
		t.Fatal("Apply changed the old image")
	}

	// Deleted and created again under the same name in one batch: the
	// delta has the old id deleted and the new topic changed, and the new
	// topic starts with no configs of the old one.
	c := imgID(3)
	recreate := append([]Record{&RemoveTopicRecord{TopicId: a}}, topicRecs("a", c, 1, 2)...)
	im, d = mustApply(t, old, 14, recreate...)
	if im.Topics.Get("a").ID != c || im.TopicsByID.Get(a) != nil || im.TopicsByID.Get(c) != im.Topics.Get("a") {
		t.Fatalf("recreated topic: %+v", im.Topics.Get("a"))
	}
	if len(im.TopicConfig("a")) != 0 {
		t.Fatal("recreated topic inherited configs")
	}
	if d.DeletedTopics[a] != oldA || d.ChangedTopics["a"] != im.Topics.Get("a") || !d.ChangedPartitions[c][0] {
		t.Fatalf("delta = %+v", d)
	}
	if _, ok := d.ChangedPartitions[a]; ok {
		t.Fatal("the deleted id is in ChangedPartitions")
	}

	// Created and deleted in the same batch: nothing changed remains.
	im, d = mustApply(t, old, 13, append(topicRecs("x", imgID(4), 1, 1), &RemoveTopicRecord{TopicId: imgID(4)})...)
	if im.Topics.Get("x") != nil || len(d.ChangedTopics) != 0 || len(d.ChangedPartitions) != 0 {
		t.Fatalf("topic created and deleted in one batch: %v %+v", im.Topics, d)
	}
}

func TestApplyConfigRecords(t *testing.T) {
	topic := ConfigResource{ResourceTopic, "t"}
	def := ConfigResource{ResourceBroker, ""}
	one := ConfigResource{ResourceBroker, "1"}
	im, d := mustApply(t, Empty(), 2,
		&ConfigRecord{ResourceType: ResourceTopic, ResourceName: "t", Name: "retention.ms", Value: imgStr("1")},
		&ConfigRecord{ResourceType: ResourceTopic, ResourceName: "t", Name: "cleanup.policy", Value: imgStr("compact")},
		&ConfigRecord{ResourceType: ResourceBroker, ResourceName: "", Name: "log.retention.ms", Value: imgStr("5")})
	if !reflect.DeepEqual(im.TopicConfig("t"), map[string]string{"retention.ms": "1", "cleanup.policy": "compact"}) {
		t.Fatalf("topic config = %v", im.TopicConfig("t"))
	}
	if !reflect.DeepEqual(im.BrokerConfig(""), map[string]string{"log.retention.ms": "5"}) || len(im.BrokerConfig("1")) != 0 {
		t.Fatalf("broker configs = %v", im.Configs)
	}
	if !reflect.DeepEqual(d.ChangedConfigs, map[ConfigResource]bool{topic: true, def: true}) {
		t.Fatalf("ChangedConfigs = %v", d.ChangedConfigs)
	}

	old := im
	snapshot := mustClone(t, old)
	im, d = mustApply(t, old, 5,
		&ConfigRecord{ResourceType: ResourceTopic, ResourceName: "t", Name: "retention.ms", Value: imgStr("2")},
		&ConfigRecord{ResourceType: ResourceTopic, ResourceName: "t", Name: "cleanup.policy"}, // null: delete
		&ConfigRecord{ResourceType: ResourceBroker, ResourceName: "1", Name: "log.retention.ms", Value: imgStr("7")})
	if !reflect.DeepEqual(im.TopicConfig("t"), map[string]string{"retention.ms": "2"}) {
		t.Fatalf("topic config = %v", im.TopicConfig("t"))
	}
	if im.BrokerConfig("1")["log.retention.ms"] != "7" || im.BrokerConfig("")["log.retention.ms"] != "5" {
		t.Fatalf("broker configs = %v", im.Configs)
	}
	if !reflect.DeepEqual(d.ChangedConfigs, map[ConfigResource]bool{topic: true, one: true}) {
		t.Fatalf("ChangedConfigs = %v", d.ChangedConfigs)
	}
	if !reflect.DeepEqual(old, snapshot) {
		t.Fatal("Apply changed the old image's configs")
	}
	if reflect.ValueOf(im.Configs[def]).Pointer() != reflect.ValueOf(old.Configs[def]).Pointer() {
		t.Fatal("an unchanged resource's config map was copied")
	}

	// Deleting the last key removes the resource; deleting a missing key
	// is harmless.
	im, _ = mustApply(t, im, 7,
		&ConfigRecord{ResourceType: ResourceTopic, ResourceName: "t", Name: "retention.ms"},
		&ConfigRecord{ResourceType: ResourceTopic, ResourceName: "t", Name: "never.set"})
	if _, ok := im.Configs[topic]; ok || len(im.TopicConfig("t")) != 0 {
		t.Fatalf("configs = %v", im.Configs)
	}
}

func TestApplyBrokers(t *testing.T) {
	reg := registerRec(1, 100)
	reg.Rack = imgStr("r1")
	reg.LogDirs = []Uuid{imgID(7)}
	im, d := mustApply(t, Empty(), 0, reg)
	want := &Broker{ID: 1, Epoch: 100, Endpoints: reg.EndPoints, Rack: reg.Rack, Fenced: true, LogDirs: reg.LogDirs}
	if !reflect.DeepEqual(im.Brokers[1], want) {
		t.Fatalf("broker = %+v, want %+v", im.Brokers[1], want)
	}
	if e, ok := im.Brokers[1].Endpoint("PLAINTEXT"); !ok || e.Port != 9092 {
		t.Fatalf("Endpoint = %+v %v", e, ok)
	}
	if _, ok := im.Brokers[1].Endpoint("SSL"); ok {
		t.Fatal("Endpoint found a listener that is not there")
	}
	if !reflect.DeepEqual(d.ChangedBrokers, map[int32]bool{1: true}) {
		t.Fatalf("ChangedBrokers = %v", d.ChangedBrokers)
	}

	im, _ = mustApply(t, im, 1, registerRec(2, 101))
	old := im
	snapshot := mustClone(t, old)
	im, d = mustApply(t, old, 2, &UnfenceBrokerRecord{Id: 1, Epoch: 100})
	if im.Brokers[1].Fenced || !old.Brokers[1].Fenced {
		t.Fatal("unfence did not copy the broker")
	}
	if im.Brokers[2] != old.Brokers[2] {
		t.Fatal("an unchanged broker was copied")
	}
	if !reflect.DeepEqual(d.ChangedBrokers, map[int32]bool{1: true}) {
		t.Fatalf("ChangedBrokers = %v", d.ChangedBrokers)
	}
	if !reflect.DeepEqual(old, snapshot) {
		t.Fatal("Apply changed the old image's brokers")
	}

	im, _ = mustApply(t, im, 3, &FenceBrokerRecord{Id: 1, Epoch: 100})
	if !im.Brokers[1].Fenced {
		t.Fatal("fence did not fence")
	}

	// BrokerRegistrationChangeRecord: 1 fences, -1 unfences, 0 keeps.
	chg := func(fenced, shutdown int8, dirs ...Uuid) Record {
		return &BrokerRegistrationChangeRecord{BrokerId: 1, BrokerEpoch: 100, Fenced: fenced, InControlledShutdown: shutdown, LogDirs: dirs}
	}
	im, _ = mustApply(t, im, 4, chg(-1, 0))
	if b := im.Brokers[1]; b.Fenced || b.InControlledShutdown || !slices.Equal(b.LogDirs, reg.LogDirs) {
		t.Fatalf("after unfence change: %+v", b)
	}
	im, _ = mustApply(t, im, 5, chg(0, 1, imgID(8), imgID(9)))
	if b := im.Brokers[1]; b.Fenced || !b.InControlledShutdown || !slices.Equal(b.LogDirs, []Uuid{imgID(8), imgID(9)}) {
		t.Fatalf("after shutdown change: %+v", b)
	}
	im, _ = mustApply(t, im, 6, chg(1, 0))
	if b := im.Brokers[1]; !b.Fenced || !b.InControlledShutdown || len(b.LogDirs) != 2 {
		t.Fatalf("after fence change: %+v", b)
	}

	// Re-registration replaces the registration (new epoch, fenced) and
	// the old epoch no longer applies.
	im, _ = mustApply(t, im, 7, registerRec(1, 200))
	if b := im.Brokers[1]; b.Epoch != 200 || !b.Fenced || b.InControlledShutdown || b.LogDirs != nil {
		t.Fatalf("after re-registration: %+v", b)
	}
	mustFail(t, im, "epoch", &UnfenceBrokerRecord{Id: 1, Epoch: 100})

	im, d = mustApply(t, im, 8, &UnregisterBrokerRecord{BrokerId: 2, BrokerEpoch: 101})
	if im.Brokers[2] != nil || !d.ChangedBrokers[2] {
		t.Fatalf("unregister: %v %v", im.Brokers, d.ChangedBrokers)
	}
}

func TestApplyProducerIDsAndFeatures(t *testing.T) {
	pid := NewProducerIdsRecord()
	pid.BrokerId, pid.BrokerEpoch, pid.NextProducerId = 1, 5, 1000
	im, d := mustApply(t, Empty(), 1, pid,
		&FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 25},
		&FeatureLevelRecord{Name: "kraft.version", FeatureLevel: 1})
	if im.NextProducerID != 1000 {
		t.Fatalf("NextProducerID = %d", im.NextProducerID)
	}
	if !reflect.DeepEqual(im.Features, map[string]int16{"metadata.version": 25, "kraft.version": 1}) {
		t.Fatalf("Features = %v", im.Features)
	}
	if len(d.ChangedTopics)+len(d.ChangedBrokers)+len(d.ChangedConfigs)+len(d.DeletedTopics) != 0 {
		t.Fatalf("delta = %+v", d)
	}
	old := im
	im, _ = mustApply(t, old, 2, &FeatureLevelRecord{Name: "kraft.version", FeatureLevel: 0})
	if _, ok := im.Features["kraft.version"]; ok || im.Features["metadata.version"] != 25 {
		t.Fatalf("level 0 must remove the feature: %v", im.Features)
	}
	if old.Features["kraft.version"] != 1 {
		t.Fatal("Apply changed the old image's features")
	}
}

func TestApplyIgnoresRecordsWeirDoesNotActOn(t *testing.T) {
	old, _ := mustApply(t, Empty(), 1, topicRecs("t", imgID(1), 1, 1)...)
	snapshot := mustClone(t, old)
	im, d := mustApply(t, old, 9,
		&NoOpRecord{},
		&ClientQuotaRecord{Key: "producer_byte_rate", Value: 1},
		&DelegationTokenRecord{TokenId: "x"},
		&BeginTransactionRecord{}, &EndTransactionRecord{})
	snapshot.Offset = 9
	if !reflect.DeepEqual(im, snapshot) {
		t.Fatal("ignored records changed the image")
	}
	if len(d.ChangedTopics)+len(d.ChangedPartitions)+len(d.ChangedBrokers)+len(d.ChangedConfigs)+len(d.DeletedTopics) != 0 {
		t.Fatalf("delta = %+v", d)
	}
}

// TestApplySharesUnchangedState checks structural sharing: topics and
// partitions a batch does not touch are the same pointers in the new image,
// and the old image is unchanged (compared with an image rebuilt from
// freshly built records).
func TestApplySharesUnchangedState(t *testing.T) {
	build := func(t *testing.T) *Image {
		recs := append(topicRecs("a", imgID(1), 3, 1, 2), topicRecs("b", imgID(2), 1, 2)...)
		recs = append(recs, registerRec(1, 1), registerRec(2, 2),
			&ConfigRecord{ResourceType: ResourceTopic, ResourceName: "b", Name: "retention.ms", Value: imgStr("9")})
		im, _ := mustApply(t, Empty(), int64(len(recs)-1), recs...)
		return im
	}
	old, ref := build(t), build(t)
	ch := NewPartitionChangeRecord()
	ch.PartitionId, ch.TopicId, ch.Isr = 1, imgID(1), []int32{1}
	im, d := mustApply(t, old, 20, ch,
		&ConfigRecord{ResourceType: ResourceTopic, ResourceName: "a", Name: "retention.ms", Value: imgStr("3")},
		&UnfenceBrokerRecord{Id: 2, Epoch: 2})

	if !reflect.DeepEqual(old, ref) {
		t.Fatal("Apply changed the old image")
	}
	if im.Topics.Get("b") != old.Topics.Get("b") || im.TopicsByID.Get(imgID(2)) != old.Topics.Get("b") {
		t.Fatal("unchanged topic b is not shared")
	}
	if im.Topics.Get("a") == old.Topics.Get("a") {
		t.Fatal("changed topic a is shared with the old image")
	}
	if im.TopicsByID.Get(imgID(1)) != im.Topics.Get("a") {
		t.Fatal("Topics and TopicsByID point at different copies of a")
	}
	for _, p := range []int32{0, 2} {
		if im.Topics.Get("a").Partitions[p] != old.Topics.Get("a").Partitions[p] {
			t.Fatalf("unchanged partition a-%d is not shared", p)
		}
	}
	if im.Topics.Get("a").Partitions[1] == old.Topics.Get("a").Partitions[1] {
		t.Fatal("changed partition a-1 is shared")
	}
	if im.Brokers[1] != old.Brokers[1] || im.Brokers[2] == old.Brokers[2] {
		t.Fatal("broker sharing is wrong")
	}
	wantDelta := &Delta{
		ChangedTopics:     map[string]*Topic{"a": im.Topics.Get("a")},
		ChangedPartitions: map[Uuid]map[int32]bool{imgID(1): {1: true}},
		DeletedTopics:     map[Uuid]*Topic{},
		ChangedConfigs:    map[ConfigResource]bool{{ResourceTopic, "a"}: true},
		ChangedBrokers:    map[int32]bool{2: true},
	}
	if !reflect.DeepEqual(d, wantDelta) {
		t.Fatalf("delta = %+v\nwant    %+v", d, wantDelta)
	}

	// An empty batch only moves the offset and shares everything.
	im2, d2 := mustApply(t, im, 21)
	if im2 == im || im2.Offset != 21 || im.Offset != 20 {
		t.Fatal("an empty Apply must return a new image with the new offset")
	}
	if im2.Topics.d != im.Topics.d {
		t.Fatal("an empty Apply copied the topic map")
	}
	if len(d2.ChangedTopics)+len(d2.ChangedBrokers)+len(d2.ChangedConfigs) != 0 {
		t.Fatalf("delta = %+v", d2)
	}
}

// cloneShards copies m with the same shard layout, each value through f.
func cloneShards[K comparable, V any](m Map[K, V], f func(V) V) Map[K, V] {
	if m.d == nil {
		return m
	}
	d := &mapData[K, V]{n: m.d.n}
	for i, s := range m.d.shards {
		if s != nil {
			c := make(map[K]V, len(s))
			for k, v := range s {
				c[k] = f(v)
			}
			d.shards[i] = c
		}
	}
	return Map[K, V]{d}
}
