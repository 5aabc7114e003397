package clusterhealth

import (
	"bytes"
	"reflect"
	"testing"
)

func TestHealthyCluster(t *testing.T) {
	r := Of(Input{
		Controller: 1,
		Brokers:    []Broker{{ID: 3}, {ID: 1}, {ID: 2}},
		Partitions: []Partition{{Topic: "t", Partition: 0, Leader: 1, Replicas: 3, ISR: 3, MinISR: 2}},
	})
	want := Report{
		Healthy: true, UnhealthyReasons: []string{}, Controller: 1,
		AllNodes: []int32{1, 2, 3}, NodesDown: []int32{},
		LeaderlessPartitions: []string{}, UnderReplicatedPartitions: []string{}, UnderMinISRPartitions: []string{},
	}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("got %+v\nwant %+v", r, want)
	}
}

// Each fault gives its reason, in a fixed order, and its partitions; a
// leaderless partition is not also under-replicated; a partition under
// min ISR is also under-replicated.
func TestEachFaultHasItsReason(t *testing.T) {
	r := Of(Input{
		Controller: -1,
		Brokers:    []Broker{{ID: 1}, {ID: 2, Fenced: true}, {ID: 3}},
		Partitions: []Partition{
			{Topic: "b", Partition: 1, Leader: 1, Replicas: 3, ISR: 1, MinISR: 2},
			{Topic: "a", Partition: 0, Leader: -1, Replicas: 3, ISR: 1, MinISR: 2},
			{Topic: "b", Partition: 0, Leader: 3, Replicas: 3, ISR: 2, MinISR: 2},
			{Topic: "c", Partition: 0, Leader: 3, Replicas: 1, ISR: 1, MinISR: 0},
		},
	})
	if r.Healthy {
		t.Fatal("healthy")
	}
	if want := []string{NoController, NodesDown, Leaderless, UnderReplicated, UnderMinISR}; !reflect.DeepEqual(r.UnhealthyReasons, want) {
		t.Errorf("reasons %v, want %v", r.UnhealthyReasons, want)
	}
	if !reflect.DeepEqual(r.NodesDown, []int32{2}) {
		t.Errorf("nodes down %v", r.NodesDown)
	}
	if r.LeaderlessCount != 1 || !reflect.DeepEqual(r.LeaderlessPartitions, []string{"a-0"}) {
		t.Errorf("leaderless %d %v", r.LeaderlessCount, r.LeaderlessPartitions)
	}
	if r.UnderReplicatedCount != 2 || !reflect.DeepEqual(r.UnderReplicatedPartitions, []string{"b-0", "b-1"}) {
		t.Errorf("under-replicated %d %v", r.UnderReplicatedCount, r.UnderReplicatedPartitions)
	}
	if r.UnderMinISRCount != 1 || !reflect.DeepEqual(r.UnderMinISRPartitions, []string{"b-1"}) {
		t.Errorf("under min ISR %d %v", r.UnderMinISRCount, r.UnderMinISRPartitions)
	}
}

// The lists stop at MaxListed; the counts and the text say how many more.
func TestListsAreBounded(t *testing.T) {
	var ps []Partition
	for i := range MaxListed + 5 {
		ps = append(ps, Partition{Topic: "t", Partition: int32(i), Leader: -1, Replicas: 1})
	}
	r := Of(Input{Controller: 1, Brokers: []Broker{{ID: 1}}, Partitions: ps})
	if r.LeaderlessCount != MaxListed+5 || len(r.LeaderlessPartitions) != MaxListed {
		t.Fatalf("count %d, listed %d", r.LeaderlessCount, len(r.LeaderlessPartitions))
	}
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if want := "and 5 more\n"; !bytes.Contains(b.Bytes(), []byte(want)) {
		t.Errorf("text lacks %q:\n%s", want, b.String())
	}
}

func TestWriteText(t *testing.T) {
	r := Of(Input{Controller: 2, Brokers: []Broker{{ID: 1}, {ID: 2, Fenced: true}},
		Partitions: []Partition{{Topic: "t", Partition: 0, Leader: 1, Replicas: 2, ISR: 1, MinISR: 1}}})
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := `CLUSTER HEALTH OVERVIEW
=======================
Healthy:                          false
Unhealthy reasons:                [nodes_down under_replicated_partitions]
Controller ID:                    2
All nodes:                        [1 2]
Nodes down:                       [2]
Leaderless partitions (0):        []
Under-replicated partitions (1):  [t-0]
Under-min-ISR partitions (0):     []
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}
