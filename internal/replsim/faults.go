package replsim

import (
	"fmt"
	"slices"
	"time"

	"weir/internal/metadata"
	"weir/internal/partition"
)

const minISR = 2

// setup starts the controller and the brokers; once all three are
// unfenced it creates the topic, starts the producers and the faults.
func (s *Sim) setup() error {
	ctrl, err := newCtrlNode(s)
	if err != nil {
		return err
	}
	s.ctrl = ctrl
	for id := int32(1); id <= numBrokers; id++ {
		if s.brokers[id], err = newBroker(s, id); err != nil {
			return err
		}
	}
	s.tracef("seed %d: chaos %v for %v, drop %.2f dup %.2f delay %.2f (up to %v), a fault every ~%v, flush on ack %v, small index %v, replicas %v",
		s.opts.Seed, s.p.chaos, s.p.chaosLength, s.p.drop, s.p.dup, s.p.delay, s.p.maxDelay, s.p.faultEvery, s.p.flushOnAck,
		s.p.smallIndex, s.p.replicas)
	for _, b := range s.brokers[1:] {
		b.start()
	}
	s.after(0, controllerID, "controller: fence stale brokers", s.ctrl.tick)
	s.after(10*time.Millisecond, -1, "create the topic once the brokers are unfenced", s.createTopic)
	return nil
}

func (s *Sim) createTopic() {
	img := s.ctrl.c.Image()
	for id := int32(1); id <= numBrokers; id++ {
		if b := img.Brokers[id]; b == nil || b.Fenced {
			if s.now.Sub(simStart) > 5*time.Second {
				s.fail("the brokers did not register and unfence: %s", s.describe())
				return
			}
			s.after(10*time.Millisecond, -1, "create the topic once the brokers are unfenced", s.createTopic)
			return
		}
	}
	if err := s.ctrl.createTopic(); err != nil {
		s.fail("creating the topic: %v", err)
		return
	}
	s.chaos, s.chaosAt = true, s.now
	s.clients = []*producer{
		newProducer(s, "all", 1000, partition.AcksAll),
		newProducer(s, "one", 2000, partition.AcksLeader),
	}
	for _, c := range s.clients {
		s.after(s.between(0, 20*time.Millisecond), clientID, c.name+": first batch", c.next)
	}
	s.after(s.between(0, s.p.faultEvery), -1, "fault", s.fault)
}

// impaired reports whether a broker is outside Kafka's failure assumption
// for now: down, paused or cut from the controller (until the controller
// hears its heartbeat again), or crashed and not yet back in the ISR.
func (s *Sim) impaired(b *broker) bool {
	return !b.up || b.paused() || b.silent || b.crashed || s.isCut(b.id, controllerID)
}

// proposal is an ISR change on its way to the controller.
type proposal struct {
	isr    []int32
	copies int
}

// guarded reports whether impairing x keeps the seed within the failure
// assumption (fewer than min.insync.replicas failures, so some in-sync
// replica always survives): nothing else is impaired, and another healthy
// broker is in the controller's ISR and in every ISR change that may
// still be committed (queued, in flight, or pending at a leader).
func (s *Sim) guarded(x *broker) bool {
	for _, b := range s.brokers[1:] {
		if s.impaired(b) {
			return false
		}
	}
	st := s.ctrl.partition()
	if st == nil {
		return false
	}
	isrs := [][]int32{st.ISR}
	for _, pr := range s.proposals {
		isrs = append(isrs, pr.isr)
	}
	for _, b := range s.brokers[1:] {
		for _, it := range []*isrItem{b.isrQueue, b.isrInflight} {
			if it != nil {
				var isr []int32
				for _, m := range it.c.ISR {
					isr = append(isr, m.ID)
				}
				isrs = append(isrs, isr)
			}
		}
	}
	for _, id := range st.ISR {
		if id == x.id || s.impaired(s.brokers[id]) {
			continue
		}
		everywhere := true
		for _, isr := range isrs {
			everywhere = everywhere && slices.Contains(isr, id)
		}
		if everywhere {
			return true
		}
	}
	return false
}

// mayImpair decides whether x may be impaired now: always in chaos seeds
// (which then leave the failure assumption), else only when guarded.
func (s *Sim) mayImpair(x *broker) bool {
	if s.guarded(x) {
		return true
	}
	if s.p.chaos {
		s.chk.leftAssumption(fmt.Sprintf("broker %d impaired beyond the failure assumption", x.id))
		return true
	}
	return false
}

// fault injects one fault and schedules the next.
func (s *Sim) fault() {
	if !s.chaos {
		return
	}
	defer s.after(s.between(s.p.faultEvery/2, s.p.faultEvery*3/2), -1, "fault", s.fault)
	x := s.brokers[1+s.rng.IntN(numBrokers)]
	if st := s.ctrl.partition(); st != nil && st.Leader > 0 && s.rng.IntN(2) == 0 {
		x = s.brokers[st.Leader] // faults at the leader move leadership
	}
	switch k := s.rng.IntN(100); {
	case k < 20:
		y := s.brokers[1+s.rng.IntN(numBrokers)]
		if y != x {
			d := s.between(20*time.Millisecond, 600*time.Millisecond)
			s.tracef("  fault: link %d-%d cut for %v", x.id, y.id, d)
			s.cut(x.id, y.id, d)
		}
	case k < 30:
		d := s.between(20*time.Millisecond, 500*time.Millisecond)
		s.tracef("  fault: link client-%d cut for %v", x.id, d)
		s.cut(clientID, x.id, d)
	case k < 50:
		if !x.up || !s.mayImpair(x) {
			return
		}
		x.crash()
		d := s.between(20*time.Millisecond, 800*time.Millisecond)
		s.after(d, -1, fmt.Sprintf("broker %d restarts", x.id), func() {
			if !x.up {
				x.start()
			}
		})
	case k < 65:
		if !x.up || x.paused() || !s.mayImpair(x) {
			return
		}
		d := s.between(50*time.Millisecond, time.Second)
		s.tracef("  fault: broker %d paused for %v", x.id, d)
		x.pausedUntil, x.silent = s.now.Add(d), true
	case k < 80:
		if !x.up || s.isCut(x.id, controllerID) || !s.mayImpair(x) {
			return
		}
		d := s.between(100*time.Millisecond, time.Second)
		s.tracef("  fault: broker %d cut from the controller for %v", x.id, d)
		s.cut(x.id, controllerID, d)
		x.silent = true
	case k < 85:
		// Not a fault: an admin's DeleteRecords at the leader, up to an
		// offset at or below the high watermark (perhaps inside a batch).
		p := x.part()
		if !s.p.deletes || p == nil || !x.live || x.paused() || !p.IsLeader() {
			return
		}
		lo, hi := p.Log().LogStartOffset(), p.HighWatermark()
		if hi <= lo {
			return
		}
		to := lo + s.rng.Int64N(hi-lo+1)
		got, err := p.DeleteRecords(to)
		s.tracef("  broker %d: DeleteRecords up to %d: log start %d, %v", x.id, to, got, err)
		if err != nil {
			s.fail("broker %d: DeleteRecords(%d) with the high watermark at %d: %v", x.id, to, hi, err)
		}
	case k < 88:
		// Another controller takes over, in a new quorum term: it
		// gives every broker a full session before fencing any.
		s.tracef("  controller failover: a new term")
		s.ctrl.term++
		s.chk.failover = s.now
	default:
		// Not a fault: the page cache writes a log back (flush.ms).
		if p := x.part(); p != nil && !x.paused() {
			s.tracef("  broker %d flushes its log", x.id)
			if err := p.Log().Flush(p.Log().LogEndOffset()); err != nil {
				s.fail("broker %d: flush: %v", x.id, err)
			}
		}
	}
}

// rejoined clears the crashed mark of brokers the controller put back in
// the ISR under their new registration (they caught up with the leader
// since their restart; a change proposed before the crash may add the old
// registration back, which does not count).
func (s *Sim) rejoined(img *metadata.Image, before, after []int32) {
	for _, b := range s.brokers[1:] {
		r := img.Brokers[b.id]
		if b.crashed && b.live && r != nil && r.Epoch == b.epoch && slices.Contains(after, b.id) && !slices.Contains(before, b.id) {
			b.crashed = false
		}
	}
}
