package reassign

// The actions of reassign-partitions against the cluster.

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/cli/tool"
)

type reassigner struct {
	tc  *tool.Client
	ctx context.Context
	out io.Writer
}

// brokerRacks are the cluster's brokers and their racks ("" for none).
func (r *reassigner) brokerRacks() (map[int32]string, error) {
	md, err := r.tc.Admin.BrokerMetadata(r.ctx)
	if err != nil {
		return nil, tool.KafkaError(err, nil)
	}
	racks := map[int32]string{}
	for _, b := range md.Brokers {
		rack := ""
		if b.Rack != nil {
			rack = *b.Rack
		}
		racks[b.NodeID] = rack
	}
	return racks, nil
}

// assignment returns the replicas of the topics' partitions; a topic that
// does not exist fails as in Kafka's tool.
func (r *reassigner) assignment(topics []string) (map[topicPart][]int32, error) {
	md, err := r.tc.Admin.Metadata(r.ctx, topics...)
	if err != nil {
		return nil, tool.KafkaError(err, nil)
	}
	out := map[topicPart][]int32{}
	for _, t := range topics {
		td, ok := md.Topics[t]
		if !ok || td.Err != nil {
			if !ok || kerr.IsRetriable(td.Err) || td.Err == kerr.UnknownTopicOrPartition {
				return nil, &tool.JavaError{Class: "UnknownTopicOrPartitionException", Msg: "Topic " + t + " not found."}
			}
			return nil, tool.KafkaError(td.Err, nil)
		}
		for _, p := range td.Partitions {
			out[topicPart{t, p.Partition}] = slices.Clone(p.Replicas)
		}
	}
	return out, nil
}

// ongoing lists the reassignments in progress.
func (r *reassigner) ongoing() (map[topicPart]kmsg.ListPartitionReassignmentsResponseTopicPartition, error) {
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	req.TimeoutMillis = int32(r.tc.RequestTimeout.Milliseconds())
	resp, err := req.RequestWith(r.ctx, r.tc.Kgo)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		var msg *string
		if resp != nil {
			msg = resp.ErrorMessage
		}
		return nil, tool.KafkaError(err, msg)
	}
	out := map[topicPart]kmsg.ListPartitionReassignmentsResponseTopicPartition{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[topicPart{t.Topic, p.Partition}] = p
		}
	}
	return out, nil
}

// alter starts (replicas) or cancels (nil replicas) reassignments and
// returns the partitions' errors.
func (r *reassigner) alter(parts map[topicPart][]int32) (map[topicPart]error, error) {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.TimeoutMillis = int32(r.tc.RequestTimeout.Milliseconds())
	for _, p := range slices.SortedFunc(maps.Keys(parts), compareTP) {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != p.topic {
			req.Topics = append(req.Topics, kmsg.AlterPartitionAssignmentsRequestTopic{Topic: p.topic})
		}
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition, rp.Replicas = p.partition, parts[p]
		req.Topics[len(req.Topics)-1].Partitions = append(req.Topics[len(req.Topics)-1].Partitions, rp)
	}
	resp, err := req.RequestWith(r.ctx, r.tc.Kgo)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		var msg *string
		if resp != nil {
			msg = resp.ErrorMessage
		}
		return nil, tool.KafkaError(err, msg)
	}
	errs := map[topicPart]error{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if e := kerr.ErrorForCode(p.ErrorCode); e != nil {
				errs[topicPart{t.Topic, p.Partition}] = tool.KafkaError(e, p.ErrorMessage)
			}
		}
	}
	return errs, nil
}

// errorMessage is an exception's getMessage.
func errorMessage(err error) string {
	if je, ok := err.(*tool.JavaError); ok {
		return je.Msg
	}
	return err.Error()
}

func (r *reassigner) generate(topics []string, brokers []int32, rackAware bool) error {
	current, err := r.assignment(topics)
	if err != nil {
		return err
	}
	racks, err := r.brokerRacks()
	if err != nil {
		return err
	}
	var meta []brokerRack
	rackless := 0
	for _, id := range brokers {
		rack, ok := racks[id]
		if !ok {
			continue
		}
		if !rackAware {
			rack = ""
		}
		if rack == "" {
			rackless++
		}
		meta = append(meta, brokerRack{id, rack})
	}
	if rackAware && rackless != 0 && rackless != len(meta) {
		return failure("Not all brokers have rack information. Add --disable-rack-aware in command line to make replica assignment without rack information.")
	}
	proposed := map[topicPart][]int32{}
	for _, t := range topics {
		var n int32
		rf := 0
		for p, replicas := range current {
			if p.topic == t {
				n++
				if p.partition == 0 {
					rf = len(replicas)
				}
			}
		}
		assigned, err := assignReplicas(meta, int(n), rf)
		if err != nil {
			return err
		}
		for p, replicas := range assigned {
			proposed[topicPart{t, int32(p)}] = replicas
		}
	}
	fmt.Fprintf(r.out, "Current partition replica assignment\n%s\n\n", reassignmentJSON(current))
	fmt.Fprintf(r.out, "Proposed partition reassignment configuration\n%s\n", reassignmentJSON(proposed))
	return nil
}

func (r *reassigner) executeAssignment(parts map[topicPart][]int32, additional bool, throttle int64) error {
	ongoing, err := r.ongoing()
	if err != nil {
		return err
	}
	if !additional && len(ongoing) > 0 {
		return &cliError{terse: true, msg: "Cannot execute because there is an existing partition assignment.  Use --additional to override this and create a new partition assignment in addition to the existing one. The --additional flag can also be used to change the throttle by resubmitting the current reassignment."}
	}
	racks, err := r.brokerRacks()
	if err != nil {
		return err
	}
	var ids []int32
	for _, p := range slices.SortedFunc(maps.Keys(parts), compareTP) {
		for _, b := range parts[p] {
			if _, ok := racks[b]; !ok && !slices.Contains(ids, b) {
				ids = append(ids, b)
			}
		}
	}
	if len(ids) > 0 {
		return failure("Unknown broker id %d", ids[0])
	}
	var topics []string
	for p := range parts {
		if !slices.Contains(topics, p.topic) {
			topics = append(topics, p.topic)
		}
	}
	sort.Strings(topics)
	all, err := r.assignment(topics)
	if err != nil {
		return err
	}
	current := map[topicPart][]int32{}
	var missing []string
	for _, p := range slices.SortedFunc(maps.Keys(parts), compareTP) {
		if replicas, ok := all[p]; ok {
			current[p] = replicas
		} else {
			missing = append(missing, p.String())
		}
	}
	if len(missing) > 0 {
		return &tool.JavaError{Class: "UnknownTopicOrPartitionException", Msg: "Unable to find partition: " + strings.Join(missing, ", ")}
	}
	fmt.Fprintf(r.out, "Current partition replica assignment\n\n%s\n\nSave this to use as the --reassignment-json-file option during rollback\n", reassignmentJSON(current))
	if throttle >= 0 {
		fmt.Fprintln(r.out, "Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle is removed.")
		if err := r.setThrottles(ongoing, parts, current, throttle); err != nil {
			return err
		}
	}
	errs, err := r.alter(parts)
	if err != nil {
		return err
	}
	if len(errs) > 0 {
		var lines []string
		for _, p := range slices.SortedFunc(maps.Keys(errs), compareTP) {
			lines = append(lines, p.String()+": "+errorMessage(errs[p]))
		}
		return &cliError{terse: true, msg: "Error reassigning partition(s):\n" + strings.Join(lines, "\n")}
	}
	var names []string
	for _, p := range slices.SortedFunc(maps.Keys(parts), compareTP) {
		names = append(names, p.String())
	}
	fmt.Fprintf(r.out, "Successfully started partition reassignment%s for %s\n", tool.Plural(len(parts)), strings.Join(names, ","))
	return nil
}

// move is a partition's replicas that move: from sources to destinations.
type move struct{ sources, destinations []int32 }

// setThrottles throttles the moving replicas, as Kafka's tool: the
// sources as leader and the new replicas as follower throttled replicas
// of their topics, and the rate on every broker that takes part.
func (r *reassigner) setThrottles(ongoing map[topicPart]kmsg.ListPartitionReassignmentsResponseTopicPartition, parts, current map[topicPart][]int32, rate int64) error {
	moves := map[topicPart]move{}
	for p, o := range ongoing {
		var src []int32
		for _, b := range o.Replicas {
			if !slices.Contains(o.AddingReplicas, b) {
				src = append(src, b)
			}
		}
		moves[p] = move{src, slices.Clone(o.AddingReplicas)}
	}
	for p, replicas := range parts {
		src := current[p]
		if m, ok := moves[p]; ok {
			src = m.sources
		}
		var dst []int32
		for _, b := range replicas {
			if !slices.Contains(src, b) {
				dst = append(dst, b)
			}
		}
		moves[p] = move{src, dst}
	}
	leader, follower := map[string][]string{}, map[string][]string{}
	var brokers []int32
	for p, m := range moves {
		for _, b := range m.sources {
			leader[p.topic] = append(leader[p.topic], fmt.Sprintf("%d:%d", p.partition, b))
		}
		for _, b := range m.destinations {
			follower[p.topic] = append(follower[p.topic], fmt.Sprintf("%d:%d", p.partition, b))
		}
		if _, ok := follower[p.topic]; !ok {
			follower[p.topic] = nil
		}
		for _, b := range append(slices.Clone(m.sources), m.destinations...) {
			if !slices.Contains(brokers, b) {
				brokers = append(brokers, b)
			}
		}
	}
	for _, t := range slices.Sorted(maps.Keys(leader)) {
		l, fo := slices.Compact(slices.Sorted(slices.Values(leader[t]))), slices.Compact(slices.Sorted(slices.Values(follower[t])))
		resp, err := r.tc.Admin.AlterTopicConfigs(r.ctx, []kadm.AlterConfig{
			{Op: kadm.SetConfig, Name: topicThrottles[0], Value: kadm.StringPtr(strings.Join(l, ","))},
			{Op: kadm.SetConfig, Name: topicThrottles[1], Value: kadm.StringPtr(strings.Join(fo, ","))},
		}, t)
		if err = configsErr(resp, err); err != nil {
			return err
		}
	}
	slices.Sort(brokers)
	v := kadm.StringPtr(tool.Itoa(rate))
	resp, err := r.tc.Admin.AlterBrokerConfigs(r.ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: brokerThrottles[0], Value: v},
		{Op: kadm.SetConfig, Name: brokerThrottles[1], Value: v},
	}, brokers...)
	if err = configsErr(resp, err); err != nil {
		return err
	}
	fmt.Fprintf(r.out, "The inter-broker throttle limit was set to %d B/s\n", rate)
	return nil
}

// configsErr is the first error of an incremental config change.
func configsErr(resp kadm.AlterConfigsResponses, err error) error {
	if err != nil {
		return tool.KafkaError(err, nil)
	}
	for _, r := range resp {
		if r.Err != nil {
			msg := r.ErrMessage
			return tool.KafkaError(r.Err, &msg)
		}
	}
	return nil
}

// clearThrottles removes every throttle of the brokers and the files'
// topics, as Kafka's tool does once nothing moves.
func (r *reassigner) clearThrottles(order []topicPart, parts map[topicPart][]int32) error {
	racks, err := r.brokerRacks()
	if err != nil {
		return err
	}
	brokers := slices.Collect(maps.Keys(racks))
	slices.Sort(brokers)
	var topics []string
	for _, p := range order {
		for _, b := range parts[p] {
			if !slices.Contains(brokers, b) {
				brokers = append(brokers, b)
			}
		}
		if !slices.Contains(topics, p.topic) {
			topics = append(topics, p.topic)
		}
	}
	fmt.Fprintf(r.out, "Clearing broker-level throttles on broker%s %s\n", tool.Plural(len(brokers)), tool.JavaIntSet(brokers))
	var ops []kadm.AlterConfig
	for _, name := range brokerThrottles {
		ops = append(ops, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: name})
	}
	resp, err := r.tc.Admin.AlterBrokerConfigs(r.ctx, ops, brokers...)
	if err = configsErr(resp, err); err != nil {
		return err
	}
	tool.JavaOrder(topics, tool.JavaStringHash)
	fmt.Fprintf(r.out, "Clearing topic-level throttles on topic%s %s\n", tool.Plural(len(topics)), strings.Join(topics, ","))
	ops = nil
	for _, name := range topicThrottles {
		ops = append(ops, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: name})
	}
	if len(topics) == 0 {
		return nil
	}
	resp, err = r.tc.Admin.AlterTopicConfigs(r.ctx, ops, topics...)
	return configsErr(resp, err)
}

func (r *reassigner) verifyAssignment(order []topicPart, parts map[topicPart][]int32, preserve bool) error {
	ongoing, err := r.ongoing()
	if err != nil {
		return err
	}
	var topics []string
	for _, p := range order {
		if _, ok := ongoing[p]; !ok && !slices.Contains(topics, p.topic) {
			topics = append(topics, p.topic)
		}
	}
	current := map[topicPart][]int32{}
	if len(topics) > 0 {
		md, err := r.tc.Admin.Metadata(r.ctx, topics...)
		if err != nil {
			return tool.KafkaError(err, nil)
		}
		for _, t := range topics {
			for _, p := range md.Topics[t].Partitions {
				current[topicPart{t, p.Partition}] = p.Replicas
			}
		}
	}
	lines := []string{"Status of partition reassignment:"}
	for _, p := range slices.SortedFunc(slices.Values(order), compareTP) {
		switch {
		case hasTP(ongoing, p):
			lines = append(lines, fmt.Sprintf("Reassignment of partition %s is still in progress.", p))
		case slices.Equal(current[p], parts[p]):
			lines = append(lines, fmt.Sprintf("Reassignment of partition %s is completed.", p))
		default:
			lines = append(lines, fmt.Sprintf("There is no active reassignment of partition %s, but replica set is %s rather than %s.", p, tool.JoinInts(current[p]), tool.JoinInts(parts[p])))
		}
	}
	fmt.Fprintln(r.out, strings.Join(lines, "\n"))
	fmt.Fprintln(r.out) // the log directory moves: none
	if len(ongoing) == 0 && !preserve {
		return r.clearThrottles(order, parts)
	}
	return nil
}

func hasTP[V any](m map[topicPart]V, p topicPart) bool { _, ok := m[p]; return ok }

func (r *reassigner) cancelAssignment(order []topicPart, parts map[topicPart][]int32, preserve bool) error {
	ongoing, err := r.ongoing()
	if err != nil {
		return err
	}
	cancel := map[topicPart][]int32{}
	for _, p := range order {
		if o, ok := ongoing[p]; ok && (len(o.AddingReplicas) == 0 || len(o.RemovingReplicas) > 0) {
			cancel[p] = nil
		}
	}
	if len(cancel) > 0 {
		errs, err := r.alter(cancel)
		if err != nil {
			return err
		}
		if len(errs) > 0 {
			var lines []string
			for _, p := range slices.SortedFunc(maps.Keys(errs), compareTP) {
				lines = append(lines, p.String()+": "+errorMessage(errs[p]))
			}
			return &cliError{terse: true, msg: fmt.Sprintf("Error cancelling partition reassignment%s for:\n%s", tool.Plural(len(errs)), strings.Join(lines, "\n"))}
		}
		var names []string
		for _, p := range slices.SortedFunc(maps.Keys(cancel), compareTP) {
			names = append(names, p.String())
		}
		fmt.Fprintf(r.out, "Successfully cancelled partition reassignment%s for: %s\n", tool.Plural(len(cancel)), strings.Join(names, ","))
	} else {
		fmt.Fprintln(r.out, "None of the specified partition reassignments are active.")
	}
	// Kafka's tool prints this without a line end.
	fmt.Fprint(r.out, "None of the specified partition moves are active.")
	if !preserve {
		return r.clearThrottles(order, parts)
	}
	return nil
}

func (r *reassigner) listText() (string, error) {
	ongoing, err := r.ongoing()
	if err != nil {
		return "", err
	}
	var lines []string
	for _, p := range slices.SortedFunc(maps.Keys(ongoing), compareTP) {
		o := ongoing[p]
		line := fmt.Sprintf("%s: replicas: %s.", p, tool.JoinInts(o.Replicas))
		if len(o.AddingReplicas) > 0 {
			line += fmt.Sprintf(" adding: %s.", tool.JoinInts(o.AddingReplicas))
		}
		if len(o.RemovingReplicas) > 0 {
			line += fmt.Sprintf(" removing: %s.", tool.JoinInts(o.RemovingReplicas))
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		return "No partition reassignments found.", nil
	}
	return "Current partition reassignments:\n" + strings.Join(lines, "\n"), nil
}
