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
//     down (and fenced). A stale epoch is STALE_BROKER_EPOCH.
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
// event queue): a controller busy committing must not fence the brokers
// whose heartbeats queue behind the commit.

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
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.requireActive(); err != nil {
		return 0, err
	}
	if req.ClusterID != c.cfg.ClusterID {
		return 0, topicErr(kerr.InconsistentClusterID, "Expected cluster ID %s, but got cluster ID %s", c.cfg.ClusterID, req.ClusterID)
	}
	img := c.Image()
	if old := img.Brokers[req.BrokerID]; old != nil && !old.Fenced && old.IncarnationID != req.IncarnationID {
		// A fenced registration has no session left, as in Kafka.
		if s, ok := c.session(req.BrokerID); ok && s.epoch == old.Epoch && now.Before(s.deadline) {
			return 0, topicErr(kerr.DuplicateBrokerRegistration, "Another broker is registered with that broker id.")
		}
	}
	for _, f := range req.Features {
		if f.Name == "metadata.version" {
			if mv := img.Features["metadata.version"]; mv < f.MinSupportedVersion || mv > f.MaxSupportedVersion {
				return 0, topicErr(kerr.UnsupportedVersion, "Unable to register because the broker does not support finalized version %d of metadata.version.", mv)
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
	r.BrokerEpoch = c.quorum.EndOffset()
	r.Fenced = true
	recs := []metadata.Record{r}
	// A re-registration replaces a live registration: its leaderships
	// must move, as for a fenced broker.
	if old := img.Brokers[req.BrokerID]; old != nil && !old.Fenced {
		var err error
		if recs, err = thenElect(img, recs, func(after *metadata.Image) []metadata.Record { return c.electAway(after, req.BrokerID) }); err != nil {
			return 0, err
		}
	}
	// A broker that did not shut down cleanly since its last registration
	// may have lost its unflushed tail: it is no longer an eligible
	// leader replica anywhere.
	if old := img.Brokers[req.BrokerID]; old != nil && req.PreviousBrokerEpoch != old.Epoch {
		var err error
		if recs, err = thenElect(img, recs, func(after *metadata.Image) []metadata.Record { return c.uncleanShutdown(after, req.BrokerID) }); err != nil {
			return 0, err
		}
	}
	if _, err := c.commit(recs); err != nil {
		return 0, err
	}
	c.touch(req.BrokerID, r.BrokerEpoch, now)
	return r.BrokerEpoch, nil
}

// BrokerHeartbeat handles a heartbeat and returns the broker's state.
func (c *Controller) BrokerHeartbeat(req *kmsg.BrokerHeartbeatRequest, now time.Time) (*kmsg.BrokerHeartbeatResponse, error) {
	if b := c.Image().Brokers[req.BrokerID]; b != nil && b.Epoch == req.BrokerEpoch && c.requireActive() == nil {
		c.touch(b.ID, b.Epoch, now)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.requireActive(); err != nil {
		return nil, err
	}
	resp := kmsg.NewPtrBrokerHeartbeatResponse()
	img := c.Image()
	b := img.Brokers[req.BrokerID]
	if b == nil || b.Epoch != req.BrokerEpoch {
		return nil, kerr.StaleBrokerEpoch
	}
	c.touch(b.ID, b.Epoch, now)
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
	case b.Fenced && !req.WantFence && caughtUp:
		recs = append(recs, &metadata.UnfenceBrokerRecord{Id: b.ID, Epoch: b.Epoch})
		elect = c.electOffline
	case !b.Fenced && req.WantFence:
		recs = append(recs, &metadata.FenceBrokerRecord{Id: b.ID, Epoch: b.Epoch})
		elect = away
	}
	if elect != nil {
		var err error
		if recs, err = thenElect(img, recs, elect); err != nil {
			return nil, err
		}
	}
	if _, err := c.commit(recs); err != nil {
		return nil, err
	}
	img = c.Image()
	b = img.Brokers[req.BrokerID]
	resp.IsCaughtUp, resp.IsFenced = caughtUp, b.Fenced
	if req.WantShutdown && !leadsAny(img, b.ID) {
		resp.ShouldShutdown = true
		if !b.Fenced {
			if _, err := c.commit([]metadata.Record{&metadata.FenceBrokerRecord{Id: b.ID, Epoch: b.Epoch}}); err != nil {
				return nil, err
			}
			resp.IsFenced = true
		}
	}
	return resp, nil
}

// FenceStaleBrokers fences every unfenced broker whose session has run out
// and returns their ids. The active controller calls it on a timer.
func (c *Controller) FenceStaleBrokers(now time.Time) ([]int32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.requireActive(); err != nil {
		return nil, err
	}
	img := c.Image()
	fenced := c.staleBrokers(img, now)
	if len(fenced) == 0 {
		return nil, nil
	}
	if err := c.fence(img, fenced); err != nil {
		return nil, err
	}
	c.lg.Warn("fenced brokers whose sessions expired", "brokers", fenced)
	return fenced, nil
}

// staleBrokers returns the unfenced brokers of img whose sessions ran out
// by now, and starts a full session for those not heard from in this term.
func (c *Controller) staleBrokers(img *metadata.Image, now time.Time) []int32 {
	c.smu.Lock()
	defer c.smu.Unlock()
	sessions := c.sessionsLocked()
	var stale []int32
	for _, id := range sortedBrokerIDs(img) {
		b := img.Brokers[id]
		if b.Fenced {
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

// fence commits the fencing of brokers (unfenced in img) and moves their
// leaderships and ISR memberships away, electing against an image where
// all of them are gone at once. The caller holds c.mu.
func (c *Controller) fence(img *metadata.Image, brokers []int32) error {
	var recs []metadata.Record
	for _, id := range brokers {
		recs = append(recs, &metadata.FenceBrokerRecord{Id: id, Epoch: img.Brokers[id].Epoch})
	}
	after, _, err := img.Apply(recs, img.Offset)
	if err != nil {
		return err
	}
	for _, id := range brokers {
		moved := c.electAway(after, id)
		if after, _, err = after.Apply(moved, img.Offset); err != nil {
			return err
		}
		recs = append(recs, moved...)
	}
	_, err = c.commit(recs)
	return err
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
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.requireActive(); err != nil {
		return false, err
	}
	img := c.Image()
	b := img.Brokers[broker]
	if b == nil || b.Fenced || b.Epoch != epoch || c.fastFenced[broker] == epoch {
		return false, nil
	}
	if s, ok := c.session(broker); ok && s.epoch == epoch && s.heard.After(since) {
		return false, nil
	}
	if err := c.fence(img, []int32{broker}); err != nil {
		return false, err
	}
	c.fastFenced[broker] = epoch
	c.lg.Warn("fenced a broker that closed its connection and no longer listens", "broker", broker, "broker_epoch", epoch)
	return true, nil
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

// NextSessionDeadline is when the next session of an unfenced broker runs
// out (zero: none is kept): the active controller checks for stale
// brokers then, as well as on its timer.
func (c *Controller) NextSessionDeadline() time.Time {
	img := c.Image()
	c.smu.Lock()
	defer c.smu.Unlock()
	var next time.Time
	for id, s := range c.sessionsLocked() {
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
