package controller

// UnregisterBroker (KIP-631), as Kafka's controller runs it
// (ReplicationControlManager.unregisterBroker): an unknown id is
// BROKER_ID_NOT_REGISTERED; otherwise one commit takes the broker out of
// every ISR and leadership (the PartitionChangeRecords of a fencing: a
// broker that leaves is never an acceptable leader, and the last member of
// an ISR stays), re-runs the election of every partition whose ELR holds
// it, and ends with the UnregisterBrokerRecord. The broker stays among
// the partitions' replicas: moving them is reassign-partitions' job,
// before (Kafka's procedure for scaling in is to reassign, stop the
// broker, then unregister it).
//
// A broker that is still running when it is unregistered gets
// STALE_BROKER_EPOCH at its next heartbeat, as in Kafka. Kafka's broker
// then keeps failing its heartbeats until it is restarted; weir's
// registers again at once (fenced, unfenced once caught up), as it does
// whenever the controller no longer knows its epoch. Either way a broker
// registers again when it is restarted: an id that is not registered may
// always register.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/metadata"
)

// unregisterRecords returns the records that unregister broker from img
// (see the file comment). electionFor and minISR are the topics'
// elections and ELR settings (Controller.onlineElection, elrMinISR).
func unregisterRecords(img *metadata.Image, broker int32, electionFor func(string) election, minISR func(string) int) ([]metadata.Record, error) {
	b := img.Brokers[broker]
	if b == nil {
		return nil, kerr.BrokerIDNotRegistered
	}
	last := &metadata.UnregisterBrokerRecord{BrokerId: broker, BrokerEpoch: b.Epoch}
	// Elections run against the image without the broker, so that it is
	// no acceptable leader anywhere.
	gone, _, err := img.Apply([]metadata.Record{last}, img.Offset)
	if err != nil {
		return nil, err
	}
	var recs []metadata.Record
	for _, name := range sortedTopicNames(gone) {
		t := gone.Topics.Get(name)
		for _, p := range t.SortedPartitions() {
			inISR := p.Leader == broker || slices.Contains(p.ISR, broker)
			if !inISR && !slices.Contains(p.ELR, broker) {
				continue
			}
			ch := newChange(gone, t.ID, p, minISR(name))
			ch.isr, ch.election = without(p.ISR, []int32{broker}), electionFor(name)
			if rec := ch.record(); rec != nil {
				recs = append(recs, rec)
			}
		}
	}
	return append(recs, last), nil
}

// UnregisterBroker handles UnregisterBroker; the answer's offset is that
// of the last record committed.
func (c *Controller) UnregisterBroker(broker int32) (Committed, error) {
	return run(c, func(img *metadata.Image) (result[Committed], error) {
		recs, err := unregisterRecords(img, broker, c.onlineElection(img), c.elrMinISR(img))
		if err != nil {
			return result[Committed]{}, err
		}
		return result[Committed]{Records: recs, after: func() {
			c.lg.Info("unregistered a broker", "broker", broker, "partitions_changed", len(recs)-1)
		}}, nil
	})
}
