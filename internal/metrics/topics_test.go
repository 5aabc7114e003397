package metrics

import "testing"

// A topic's counters are shared by its replicas and outlive all but the
// last; the all-topics series keep what released topics and unattributed
// events counted.
func TestBrokerTopicStatsAcquireRelease(t *testing.T) {
	m := New(&fakeSource{}, Options{})
	a0, a1 := m.Topics.Acquire("a"), m.Topics.Acquire("a")
	if a0 != a1 {
		t.Fatal("two replicas of a topic got different counters")
	}
	a0.Produced(3, 100)
	a1.Produced(2, 50)
	m.Topics.Unattributed().ProduceRequested()
	m.Topics.Release(a0)
	a1.Sent(40, false)
	a1.Sent(1000, true)
	if got := topicSample(t, m, "kafka_server_brokertopicmetrics_bytesin_total", "a"); got != 150 {
		t.Fatalf("bytes in of a = %v, want 150 after one of its two replicas went", got)
	}
	m.Topics.Release(a1)
	for name, want := range map[string]float64{
		"kafka_server_brokertopicmetrics_bytesin_total":              150,
		"kafka_server_brokertopicmetrics_messagesin_total":           5,
		"kafka_server_brokertopicmetrics_bytesout_total":             40,
		"kafka_server_brokertopicmetrics_replicationbytesout_total":  1000,
		"kafka_server_brokertopicmetrics_totalproducerequests_total": 1,
	} {
		if got := topicSample(t, m, name, ""); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := topicSample(t, m, "kafka_server_brokertopicmetrics_bytesin_total", "a"); got != -1 {
		t.Errorf("a's series remain (%v) after its last replica went", got)
	}
	var nilStats *BrokerTopicStats
	nilStats.Acquire("x").Produced(1, 1) // no panic
	nilStats.Release(nil)
}

// topicSample is the value of name's series of topic (all topics for ""),
// or -1 without one.
func topicSample(t *testing.T, m *Metrics, name, topic string) float64 {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, mt := range mf.GetMetric() {
			var got string
			for _, l := range mt.GetLabel() {
				if l.GetName() == "topic" {
					got = l.GetValue()
				}
			}
			if got == topic {
				return mt.GetCounter().GetValue()
			}
		}
	}
	return -1
}
