package mirror

import "testing"

// A topic's partitions go round-robin over the tasks from a point set by
// the topic's name, so that a topic's partitions spread and adding a topic
// moves no partition.
func TestTaskOf(t *testing.T) {
	f := &FlowConfig{Tasks: 4}
	for _, topic := range []string{"orders", "payments", "A.orders"} {
		first := f.TaskOf(topic, 0)
		for p := range int32(12) {
			got := f.TaskOf(topic, p)
			if got < 0 || got >= 4 || got != (first+p)%4 {
				t.Errorf("%s-%d: task %d, want %d", topic, p, got, (first+p)%4)
			}
		}
	}
	one := &FlowConfig{Tasks: 1}
	if one.TaskOf("orders", 7) != 0 {
		t.Error("one task holds everything")
	}
}
