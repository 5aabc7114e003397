package controller

// Broker lifecycle, as Kafka's controller runs it (KIP-631):
//
//   - BrokerRegistration: a broker (re)registers with a new incarnation; it
//     gets a broker epoch (the offset of its RegisterBrokerRecord) and
//     starts fenced. The cluster id must match (INCONSISTENT_CLUSTER_ID);
//     another incarnation of the same id, unfenced and within its
//     session, is DUPLICATE_BROKER_REGISTRATION.
//   - BrokerHeartbeat, every broker.heartbeat.interval.ms: a fenced broker
//     whose metadata has caught up with its registration is unfenced; a
//     broker that asks to shut down enters controlled shutdown, its
//     leaderships move away, and once it leads nothing it is told to shut
//     down (and fenced); it is not unfenced again before it registers
//     anew. A stale epoch is STALE_BROKER_EPOCH.
//   - A controller that is not the active one answers all of these
//     NOT_CONTROLLER before looking at its image, which may lag the log
//     (a restarted former leader still replaying it): a STALE_BROKER_EPOCH
//     from it would send a healthy broker to register again, fenced.
//   - A broker that sends no heartbeat for broker.session.timeout.ms is
//     fenced by FenceStaleBrokers, run by the active controller's clock.
//
// Fencing or shutting down a broker, and unfencing one, run the elections
// of elections.go. Sessions live in the active controller's memory and
// belong to the quorum term they were kept in: a controller active in a
// new term (another node's, or its own again) gives every broker a full
// session before fencing any. Sessions kept in an earlier term are never
// used: a controller that was active before, lost the leadership and won
// it back would otherwise fence live brokers at once on deadlines that
// passed while another controller heard their heartbeats. A heartbeat
// renews its session when it arrives, before it waits for the
// controller's lock (as Kafka's controller tracks heartbeats outside its
// event queue), and again when it is answered: a controller busy
// committing must not fence the brokers whose heartbeats queue behind the
// commit. A broker sends its next heartbeat only once this one is
// answered, so while a heartbeat waits (behind another commit, or for its
// own: unfencing a broker that leads 100,000 partitions commits 100,000
// leader changes) its session does not run out, and it counts from the
// answer: otherwise a commit longer than the session fences the broker
// it just unfenced.

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

// session is a broker's registration epoch, when its session runs out,
// and when the controller last heard a heartbeat of it (zero: not in
// this term).
type session struct {
	epoch    int64
	deadline time.Time
	heard    time.Time
}

func (c *Controller) sessionTimeout() time.Duration { return c.cfg.Static.BrokerSessionTimeout }

// sessionsLocked returns the sessions of the current quorum term, after
// forgetting those of an earlier one; the caller holds c.smu.
func (c *Controller) sessionsLocked() map[int32]session {
	if term := c.quorum.Status().Term; term != c.sessionsTerm {
		c.sessions, c.sessionsTerm = map[int32]session{}, term
	}
	return c.sessions
}

// RegisterBroker handles BrokerRegistration and returns the broker epoch.
func (c *Controller) RegisterBroker(req *kmsg.BrokerRegistrationRequest, now time.Time) (int64, error) {
	return run(c, func(img *metadata.Image) (result[int64], error) {
		live := func(broker int32, epoch int64) bool {
			s, ok := c.session(broker)
			return ok && s.epoch == epoch && now.Before(s.deadline)
		}
		res, err := c.registerBroker(img, req, c.quorum.EndOffset(), live)
		res.after = func() { c.touch(req.BrokerID, res.Answer, now) }
		return res, err
	})
}

// registerBroker builds RegisterBroker: the registration gets epoch (the
// offset its record will have); live reports whether a broker's session
// at an epoch is running.
func (c *Controller) registerBroker(img *metadata.Image, req *kmsg.BrokerRegistrationRequest, epoch int64, live func(broker int32, epoch int64) bool) (result[int64], error) {
	var res result[int64]
	if req.ClusterID != c.cfg.ClusterID {
		return res, topicErr(kerr.InconsistentClusterID, "Expected cluster ID %s, but got cluster ID %s", c.cfg.ClusterID, req.ClusterID)
	}
	// A fenced registration has no session left, as in Kafka.
	if old := img.Brokers[req.BrokerID]; old != nil && !old.Fenced && old.IncarnationID != req.IncarnationID && live(old.ID, old.Epoch) {
		return res, topicErr(kerr.DuplicateBrokerRegistration, "Another broker is registered with that broker id.")
	}
	for _, f := range req.Features {
		if f.Name == "metadata.version" {
			if mv := img.Features["metadata.version"]; mv < f.MinSupportedVersion || mv > f.MaxSupportedVersion {
				return res, topicErr(kerr.UnsupportedVersion, "Unable to register because the broker does not support finalized version %d of metadata.version.", mv)
			}
		}
	}
	r := metadata.NewRegisterBrokerRecord()
	r.BrokerId, r.IncarnationId, r.Rack, r.LogDirs = req.BrokerID, req.IncarnationID, req.Rack, nil
	for _, d := range req.LogDirs {
		r.LogDirs = append(r.LogDirs, d)
	}
	for _, l := range req.Listeners {
		r.EndPoints = append(r.EndPoints, metadata.BrokerEndpoint{Name: l.Name, Host: l.Host, Port: l.Port, SecurityProtocol: l.SecurityProtocol})
	}
	for _, f := range req.Features {
		r.Features = append(r.Features, metadata.BrokerFeature{Name: f.Name, MinSupportedVersion: f.MinSupportedVersion, MaxSupportedVersion: f.MaxSupportedVersion})
	}
	r.BrokerEpoch = epoch
	r.Fenced = true
	recs := []metadata.Record{r}
	// A re-registration replaces a live registration: its leaderships
	// must move, as for a fenced broker.
	if old := img.Brokers[req.BrokerID]; old != nil && !old.Fenced {
		var err error
		if recs, err = thenElect(img, recs, func(after *metadata.Image) []metadata.Record { return c.electAway(after, req.BrokerID) }); err != nil {
			return res, err
		}
	}
	// A broker that did not shut down cleanly since its last registration
	// may have lost its unflushed tail: it is no longer an eligible
	// leader replica anywhere.
	if old := img.Brokers[req.BrokerID]; old != nil && req.PreviousBrokerEpoch != old.Epoch {
		var err error
		if recs, err = thenElect(img, recs, func(after *metadata.Image) []metadata.Record { return c.uncleanShutdown(after, req.BrokerID) }); err != nil {
			return res, err
		}
	}
	res.Records, res.Answer = recs, epoch
	return res, nil
}

// BrokerHeartbeat handles a heartbeat and returns the broker's state; now
// tells the time, read when the heartbeat arrives and when it is
// answered (see the file comment).
func (c *Controller) BrokerHeartbeat(req *kmsg.BrokerHeartbeatRequest, now func() time.Time) (*kmsg.BrokerHeartbeatResponse, error) {
	arrived := now()
	if b := c.Image().Brokers[req.BrokerID]; b != nil && b.Epoch == req.BrokerEpoch && c.requireActive() == nil {
		c.touch(b.ID, b.Epoch, arrived)
	}
	key := brokerEpoch{req.BrokerID, req.BrokerEpoch}
	c.waitingHeartbeat(key, 1)
	defer c.waitingHeartbeat(key, -1)
	return run(c, func(img *metadata.Image) (result[*kmsg.BrokerHeartbeatResponse], error) {
		if b := img.Brokers[req.BrokerID]; b != nil && b.Epoch == req.BrokerEpoch {
			c.touch(b.ID, b.Epoch, arrived)
		}
		res, err := c.brokerHeartbeat(img, req)
		// Answered (after its own commit): the session counts from here.
		res.after = func() { c.touch(key.id, key.epoch, now()) }
		return res, err
	})
}

// brokerEpoch is a broker's registration.
type brokerEpoch struct {
	id    int32
	epoch int64
}

// waitingHeartbeat counts the heartbeats of a registration that arrived
// and are not answered yet.
func (c *Controller) waitingHeartbeat(key brokerEpoch, delta int) {
	c.smu.Lock()
	defer c.smu.Unlock()
	if n := c.waiting[key] + delta; n > 0 {
		c.waiting[key] = n
	} else {
		delete(c.waiting, key)
	}
}

// brokerHeartbeat builds BrokerHeartbeat. A broker shutting down that
// leads nothing once its leaderships moved is fenced in the same batch
// and told to shut down.
func (c *Controller) brokerHeartbeat(img *metadata.Image, req *kmsg.BrokerHeartbeatRequest) (result[*kmsg.BrokerHeartbeatResponse], error) {
	var res result[*kmsg.BrokerHeartbeatResponse]
	b := img.Brokers[req.BrokerID]
	if b == nil || b.Epoch != req.BrokerEpoch {
		return res, kerr.StaleBrokerEpoch
	}
	caughtUp := req.CurrentMetadataOffset >= b.Epoch
	var recs []metadata.Record
	away := func(after *metadata.Image) []metadata.Record { return c.electAway(after, b.ID) }
	var elect func(*metadata.Image) []metadata.Record
	switch {
	case req.WantShutdown:
		if !b.InControlledShutdown && !b.Fenced {
			change := &metadata.BrokerRegistrationChangeRecord{BrokerId: b.ID, BrokerEpoch: b.Epoch, InControlledShutdown: 1}
			change.SetVersion(change.HighestVersion())
			recs = append(recs, change)
		}
		elect = away
	case b.Fenced && !req.WantFence && caughtUp && !b.InControlledShutdown:
		// A broker that entered controlled shutdown stays fenced until it
		// registers again, whatever its heartbeats ask (as Kafka's
		// CONTROLLED_SHUTDOWN state): it is stopping.
		recs = append(recs, &metadata.UnfenceBrokerRecord{Id: b.ID, Epoch: b.Epoch})
		elect = c.electOffline
	case !b.Fenced && req.WantFence:
		recs = append(recs, &metadata.FenceBrokerRecord{Id: b.ID, Epoch: b.Epoch})
		elect = away
	}
	after := img
	if elect != nil {
		var err error
		if recs, err = thenElect(img, recs, elect); err != nil {
			return res, err
		}
		if after, _, err = img.Apply(recs, img.Offset); err != nil {
			return res, err
		}
	}
	b = after.Brokers[req.BrokerID]
	resp := kmsg.NewPtrBrokerHeartbeatResponse()
	resp.IsCaughtUp, resp.IsFenced = caughtUp, b.Fenced
	if req.WantShutdown && !leadsAny(after, b.ID) {
		resp.ShouldShutdown = true
		if !b.Fenced {
			recs = append(recs, &metadata.FenceBrokerRecord{Id: b.ID, Epoch: b.Epoch})
			resp.IsFenced = true
		}
	}
	res.Records, res.Answer = recs, resp
	return res, nil
}

// FenceStaleBrokers fences every unfenced broker whose session has run out
// and returns their ids. The active controller calls it on a timer.
func (c *Controller) FenceStaleBrokers(now time.Time) ([]int32, error) {
	fenced, err := run(c, func(img *metadata.Image) (result[[]int32], error) {
		return c.fenceBrokers(img, c.staleBrokers(img, now))
	})
	if len(fenced) > 0 {
		c.lg.Warn("fenced brokers whose sessions expired", "brokers", fenced)
	}
	return fenced, err
}

// staleBrokers returns the unfenced brokers of img whose sessions ran out
// by now and that have no heartbeat waiting for an answer, and starts a
// full session for those not heard from in this term.
func (c *Controller) staleBrokers(img *metadata.Image, now time.Time) []int32 {
	c.smu.Lock()
	defer c.smu.Unlock()
	sessions := c.sessionsLocked()
	var stale []int32
	for _, id := range sortedBrokerIDs(img) {
		b := img.Brokers[id]
		if b.Fenced || c.waiting[brokerEpoch{id, b.Epoch}] > 0 {
			continue
		}
		s, ok := sessions[id]
		if !ok || s.epoch != b.Epoch {
			// Not heard from in this term: a full session from now.
			sessions[id] = session{epoch: b.Epoch, deadline: now.Add(c.sessionTimeout())}
			continue
		}
		if !now.Before(s.deadline) {
			stale = append(stale, id)
		}
	}
	return stale
}

// fenceBrokers builds the fencing of brokers (unfenced in img) and the
// moves of their leaderships and ISR memberships away, elected against an
// image where all of them are gone at once. It answers brokers.
func (c *Controller) fenceBrokers(img *metadata.Image, brokers []int32) (result[[]int32], error) {
	res := result[[]int32]{Answer: brokers}
	if len(brokers) == 0 {
		return res, nil
	}
	var recs []metadata.Record
	for _, id := range brokers {
		recs = append(recs, &metadata.FenceBrokerRecord{Id: id, Epoch: img.Brokers[id].Epoch})
	}
	after, _, err := img.Apply(recs, img.Offset)
	if err != nil {
		return res, err
	}
	for _, id := range brokers {
		moved := c.electAway(after, id)
		if after, _, err = after.Apply(moved, img.Offset); err != nil {
			return res, err
		}
		recs = append(recs, moved...)
	}
	res.Records = recs
	return res, nil
}

// FenceUnreachable fences broker at epoch as an expired session would,
// before its session runs out, when the server has evidence that it
// died: the connection its heartbeats came on closed at since, and
// nothing listens at its address any more. It does so only while the
// broker is still registered at epoch and unfenced, has not heartbeat
// since, and was not fenced this way at that epoch before (a live broker
// fenced in error unfences with its next heartbeat, and then waits for
// its session to run out like any other). It reports whether it fenced.
// See docs/ARCHITECTURE.md (Fast fencing) for why this is safe.
func (c *Controller) FenceUnreachable(broker int32, epoch int64, since time.Time) (bool, error) {
	fenced, err := run(c, func(img *metadata.Image) (result[bool], error) {
		var res result[bool]
		b := img.Brokers[broker]
		if b == nil || b.Fenced || b.Epoch != epoch || c.fastFenced[broker] == epoch {
			return res, nil
		}
		if s, ok := c.session(broker); ok && s.epoch == epoch && s.heard.After(since) {
			return res, nil
		}
		f, err := c.fenceBrokers(img, []int32{broker})
		res.Records, res.Answer = f.Records, true
		res.after = func() { c.fastFenced[broker] = epoch }
		return res, err
	})
	if fenced {
		c.lg.Warn("fenced a broker that closed its connection and no longer listens", "broker", broker, "broker_epoch", epoch)
	}
	return fenced, err
}

// touch renews broker's session at epoch as of now; a session never
// moves back.
func (c *Controller) touch(broker int32, epoch int64, now time.Time) {
	c.smu.Lock()
	defer c.smu.Unlock()
	sessions := c.sessionsLocked()
	s := session{epoch: epoch, deadline: now.Add(c.sessionTimeout()), heard: now}
	if old, ok := sessions[broker]; ok && old.epoch == epoch && old.deadline.After(s.deadline) {
		return
	}
	sessions[broker] = s
}

// session returns broker's session in the current term.
func (c *Controller) session(broker int32) (session, bool) {
	c.smu.Lock()
	defer c.smu.Unlock()
	s, ok := c.sessionsLocked()[broker]
	return s, ok
}

// NextSessionDeadline is when the next session of an unfenced broker
// without a heartbeat waiting runs out (zero: none is kept): the active
// controller checks for stale brokers then, as well as on its timer.
func (c *Controller) NextSessionDeadline() time.Time {
	img := c.Image()
	c.smu.Lock()
	defer c.smu.Unlock()
	var next time.Time
	for id, s := range c.sessionsLocked() {
		if c.waiting[brokerEpoch{id, s.epoch}] > 0 {
			continue
		}
		if b := img.Brokers[id]; b != nil && !b.Fenced && b.Epoch == s.epoch && (next.IsZero() || s.deadline.Before(next)) {
			next = s.deadline
		}
	}
	return next
}

func sortedBrokerIDs(img *metadata.Image) []int32 {
	ids := make([]int32, 0, len(img.Brokers))
	for id := range img.Brokers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func leadsAny(img *metadata.Image, broker int32) bool {
	for _, t := range img.Topics.All() {
		for _, p := range t.Partitions {
			if p.Leader == broker {
				return true
			}
		}
	}
	return false
}

func sortedTopicNames(img *metadata.Image) []string {
	names := make([]string, 0, img.Topics.Len())
	for n := range img.Topics.All() {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
