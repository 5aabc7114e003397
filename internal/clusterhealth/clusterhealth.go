// Package clusterhealth sums up whether a cluster serves all its
// partitions: its controller, its brokers and the partitions that are
// leaderless, under-replicated or under min.insync.replicas. The same
// Report is what `weir cluster health` prints, from a client's view of any
// Kafka cluster, and what a weir node's /v1/cluster/health answers, from
// its metadata image, so the two agree. Pure: no I/O.
package clusterhealth

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// Broker is a registered broker; Fenced brokers are down (stopped, or not
// heartbeating the controller).
type Broker struct {
	ID     int32
	Fenced bool
}

// Partition is one partition's leadership. MinISR is its topic's
// min.insync.replicas, 0 when unknown (then never under it).
type Partition struct {
	Topic     string
	Partition int32
	Leader    int32 // -1: none
	Replicas  int
	ISR       int
	MinISR    int
}

// Input is what a Report is made of. Controller is the active
// controller's id, -1 when the quorum has no leader.
type Input struct {
	Controller int32
	Brokers    []Broker
	Partitions []Partition
}

// Reasons a cluster is unhealthy, as Report.UnhealthyReasons lists them.
const (
	NoController    = "no_elected_controller"
	NodesDown       = "nodes_down"
	Leaderless      = "leaderless_partitions"
	UnderReplicated = "under_replicated_partitions"
	UnderMinISR     = "under_min_isr_partitions"
)

// MaxListed is how many partitions each list of a Report names at most;
// the counts are whole.
const MaxListed = 100

// Report is a cluster's health. Partitions are named topic-partition, as
// Kafka's tools print them, sorted, at most MaxListed in each list.
type Report struct {
	Healthy          bool     `json:"is_healthy"`
	UnhealthyReasons []string `json:"unhealthy_reasons"`
	Controller       int32    `json:"controller_id"`
	AllNodes         []int32  `json:"all_nodes"`
	NodesDown        []int32  `json:"nodes_down"`

	LeaderlessCount           int      `json:"leaderless_count"`
	LeaderlessPartitions      []string `json:"leaderless_partitions"`
	UnderReplicatedCount      int      `json:"under_replicated_count"`
	UnderReplicatedPartitions []string `json:"under_replicated_partitions"`
	UnderMinISRCount          int      `json:"under_min_isr_count"`
	UnderMinISRPartitions     []string `json:"under_min_isr_partitions"`
}

// Of is the health of the cluster in. A partition without a leader is
// leaderless only (not also under-replicated); one with a leader is
// under-replicated when its ISR is smaller than its replicas, and under
// min ISR when its ISR is below MinISR.
func Of(in Input) Report {
	r := Report{
		Controller: in.Controller, UnhealthyReasons: []string{},
		AllNodes: []int32{}, NodesDown: []int32{},
		LeaderlessPartitions: []string{}, UnderReplicatedPartitions: []string{}, UnderMinISRPartitions: []string{},
	}
	for _, b := range in.Brokers {
		r.AllNodes = append(r.AllNodes, b.ID)
		if b.Fenced {
			r.NodesDown = append(r.NodesDown, b.ID)
		}
	}
	slices.Sort(r.AllNodes)
	slices.Sort(r.NodesDown)
	ps := slices.Clone(in.Partitions)
	slices.SortFunc(ps, func(a, b Partition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	list := func(names []string, p Partition) []string {
		if len(names) < MaxListed {
			names = append(names, p.Topic+"-"+strconv.Itoa(int(p.Partition)))
		}
		return names
	}
	for _, p := range ps {
		switch {
		case p.Leader < 0:
			r.LeaderlessCount++
			r.LeaderlessPartitions = list(r.LeaderlessPartitions, p)
			continue
		case p.ISR < p.Replicas:
			r.UnderReplicatedCount++
			r.UnderReplicatedPartitions = list(r.UnderReplicatedPartitions, p)
		}
		if p.ISR < p.MinISR {
			r.UnderMinISRCount++
			r.UnderMinISRPartitions = list(r.UnderMinISRPartitions, p)
		}
	}
	for _, c := range []struct {
		bad    bool
		reason string
	}{
		{in.Controller < 0, NoController},
		{len(r.NodesDown) > 0, NodesDown},
		{r.LeaderlessCount > 0, Leaderless},
		{r.UnderReplicatedCount > 0, UnderReplicated},
		{r.UnderMinISRCount > 0, UnderMinISR},
	} {
		if c.bad {
			r.UnhealthyReasons = append(r.UnhealthyReasons, c.reason)
		}
	}
	r.Healthy = len(r.UnhealthyReasons) == 0
	return r
}

// WriteText prints the report for a person, one field a line.
func (r Report) WriteText(w io.Writer) error {
	rows := []struct{ name, value string }{
		{"Healthy:", strconv.FormatBool(r.Healthy)},
		{"Unhealthy reasons:", fmt.Sprint(r.UnhealthyReasons)},
		{"Controller ID:", strconv.Itoa(int(r.Controller))},
		{"All nodes:", fmt.Sprint(r.AllNodes)},
		{"Nodes down:", fmt.Sprint(r.NodesDown)},
		{fmt.Sprintf("Leaderless partitions (%d):", r.LeaderlessCount), listed(r.LeaderlessPartitions, r.LeaderlessCount)},
		{fmt.Sprintf("Under-replicated partitions (%d):", r.UnderReplicatedCount), listed(r.UnderReplicatedPartitions, r.UnderReplicatedCount)},
		{fmt.Sprintf("Under-min-ISR partitions (%d):", r.UnderMinISRCount), listed(r.UnderMinISRPartitions, r.UnderMinISRCount)},
	}
	width := 0
	for _, row := range rows {
		width = max(width, len(row.name))
	}
	if _, err := fmt.Fprint(w, "CLUSTER HEALTH OVERVIEW\n=======================\n"); err != nil {
		return err
	}
	for _, row := range rows {
		if _, err := fmt.Fprintf(w, "%-*s  %s\n", width, row.name, row.value); err != nil {
			return err
		}
	}
	return nil
}

// listed is a list of partitions, with how many more there are when it
// was cut at MaxListed.
func listed(names []string, count int) string {
	s := fmt.Sprint(names)
	if more := count - len(names); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}
