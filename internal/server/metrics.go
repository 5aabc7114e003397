package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"weir/internal/clusterhealth"
	"weir/internal/config"
	"weir/internal/log"
	"weir/internal/metadata"
	"weir/internal/metrics"
)

// metricsSource implements metrics.Source from the node's replicas, its
// quorum status and its controller's image. Its fields are set before the
// metrics endpoint starts and never change afterwards.
type metricsSource struct{ s *Server }

// Replicas implements metrics.Source.
func (m metricsSource) Replicas() []metrics.ReplicaStatus {
	s := m.s
	if s.partitions == nil {
		return nil
	}
	img := s.publisher.Image()
	minISR := map[string]int{} // per topic, resolved once per scrape
	parts := s.partitions.All()
	out := make([]metrics.ReplicaStatus, 0, len(parts))
	for _, p := range parts {
		tp, st := p.TopicPartition(), p.State()
		n, ok := minISR[tp.Topic]
		if !ok {
			n = s.partitions.TopicConfig(img, tp.Topic).MinInsyncReplicas
			minISR[tp.Topic] = n
		}
		var lag int64
		if s.fetchers != nil && !p.IsLeader() {
			lag = s.fetchers.Lag(tp)
		}
		out = append(out, metrics.ReplicaStatus{
			Topic:     tp.Topic,
			Partition: tp.Partition,
			Leader:    st.Leader == s.cfg.NodeID,
			LeaderID:  st.Leader,
			Replicas:  len(st.Replicas),
			ISR:       len(st.ISR),
			MinISR:    n,
			Lag:       lag,
		})
	}
	for _, tp := range s.partitions.AllOffline() {
		out = append(out, metrics.ReplicaStatus{Topic: tp.Topic, Partition: tp.Partition, Offline: true})
	}
	return out
}

// Links implements metrics.Source.
func (m metricsSource) Links() metrics.LinkStatus {
	s := m.s
	if s.publisher == nil {
		return metrics.LinkStatus{}
	}
	img := s.publisher.Image()
	st := metrics.LinkStatus{Links: len(img.Links)}
	for _, mi := range img.Mirrors {
		if mi.ReadOnly() {
			st.MirrorTopics++
		}
		t, l := img.TopicsByID.Get(mi.TopicID), img.Links[mi.LinkID]
		if t == nil {
			continue
		}
		mt := metrics.MirrorTopicStatus{Topic: t.Name, State: mirrorStateLabel(mi.State)}
		if l != nil {
			mt.Link = l.Name
		}
		st.Topics = append(st.Topics, mt)
	}
	if s.links != nil {
		for _, p := range s.links.Status() {
			st.Partitions = append(st.Partitions, metrics.MirrorPartitionStatus{Link: p.Link, Topic: p.Topic, Partition: p.Partition,
				Failing: p.Failing, Lag: p.Lag, LagMs: p.LagMs, Bytes: p.Bytes, Records: p.Records, Errors: p.Errors, Throttled: p.Throttled})
		}
	}
	return st
}

// mirrorStateLabel is a mirror state as the metrics label it.
func mirrorStateLabel(s int8) string {
	switch s {
	case metadata.MirrorActive:
		return "active"
	case metadata.MirrorPaused:
		return "paused"
	case metadata.MirrorPromoted:
		return "promoted"
	case metadata.MirrorFailedOver:
		return "failed_over"
	}
	return "unknown"
}

// logOptions are the options of the broker's logs: with
// weir.metrics.listener, their flushes are timed.
func (s *Server) logOptions() log.Options {
	o := log.Options{Logger: s.lg, FS: s.opts.FS}
	if s.cfg.MetricsListener != "" {
		o.Flushed = s.metrics.LogFlushed
	}
	return o
}

// Logs implements metrics.Source.
func (m metricsSource) Logs() []metrics.LogStatus {
	if m.s.logs == nil {
		return nil
	}
	ls := m.s.logs.All()
	out := make([]metrics.LogStatus, 0, len(ls))
	for _, l := range ls {
		tp := l.TopicPartition()
		out = append(out, metrics.LogStatus{Topic: tp.Topic, Partition: tp.Partition, Size: l.Size(), Segments: l.NumSegments(),
			Start: l.LogStartOffset(), End: l.LogEndOffset()})
	}
	return out
}

// Cleaner implements metrics.Source.
func (m metricsSource) Cleaner() metrics.CleanerStatus {
	if m.s.logs == nil {
		return metrics.CleanerStatus{}
	}
	st := m.s.logs.CleanerStats()
	return metrics.CleanerStatus{SinceLastRun: time.Since(st.LastRun), MaxDirtyPercent: st.MaxDirtyPercent, LastCleanTime: st.LastCleanTime}
}

// OpenSegmentFiles implements metrics.Source.
func (m metricsSource) OpenSegmentFiles() int {
	if m.s.logs == nil {
		return 0
	}
	return m.s.logs.OpenFiles()
}

// ClientQuotas implements metrics.Source.
func (m metricsSource) ClientQuotas() []metrics.ClientQuotaStatus {
	stats := m.s.clientQuotas.Stats()
	out := make([]metrics.ClientQuotaStatus, 0, len(stats))
	for _, st := range stats {
		out = append(out, metrics.ClientQuotaStatus{
			Type:       [...]string{"produce", "fetch", "request", "controller_mutation"}[st.Kind],
			User:       st.User,
			ClientID:   st.ClientID,
			Rate:       st.Rate,
			ThrottleMs: uint64(st.Throttled.Milliseconds()),
		})
	}
	return out
}

// Controller implements metrics.Source.
func (m metricsSource) Controller() metrics.ControllerStatus {
	s := m.s
	if s.quorum == nil || s.controller == nil {
		return metrics.ControllerStatus{}
	}
	var st metrics.ControllerStatus
	st.Elections, st.UncleanElections = s.controller.ElectionCounts()
	if !s.quorum.Status().Active {
		return st
	}
	img := s.controller.Image()
	st.Active, st.Topics = true, img.Topics.Len()
	for _, t := range img.Topics.All() {
		st.Partitions += len(t.Partitions)
		for _, p := range t.Partitions {
			if p.Leader == -1 {
				st.OfflinePartitions++
			}
			if len(p.Replicas) > 0 && p.Leader != p.Replicas[0] {
				st.PreferredImbalance++
			}
		}
	}
	for _, b := range img.Brokers {
		if b.Fenced {
			st.FencedBrokers++
		} else {
			st.ActiveBrokers++
		}
	}
	return st
}

// Ready implements metrics.Source.
func (m metricsSource) Ready() bool {
	_, ok := m.s.readiness()
	return ok
}

// Raft implements metrics.Source.
func (m metricsSource) Raft() metrics.RaftStatus {
	s := m.s
	r := metrics.RaftStatus{Leader: -1, Vote: -1, ControllerApplied: -1, BrokerApplied: -1}
	switch {
	case s.quorum != nil:
		q := s.quorum.Status()
		r.Voter, r.Leader, r.Vote, r.Epoch = true, q.Leader, q.Vote, q.Term
		r.HighWatermark, r.LogEndOffset, r.SnapshotAge = q.HighWatermark, q.LogEndOffset, time.Since(q.LastSnapshot)
	case s.observer != nil:
		r.Leader = s.observer.Leader()
		r.HighWatermark = s.observer.EndOffset()
		r.LogEndOffset = r.HighWatermark
	}
	if s.controller != nil {
		r.ControllerApplied = s.controller.Image().Offset
	}
	if s.publisher != nil {
		r.BrokerApplied = s.publisher.Image().Offset
	}
	return r
}

// startMetrics serves /metrics on weir.metrics.listener (bound by bind),
// if set. Call it once the node's services exist (after listen), since
// scrapes read them without locks.
func (s *Server) startMetrics() {
	ln := s.metricsLn
	if ln == nil {
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", s.metrics.Handler())
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { health(w, true, "serving") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		reason, ok := s.readiness()
		health(w, ok, reason)
	})
	mux.HandleFunc("GET /v1/cluster/health", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		json.NewEncoder(w).Encode(s.clusterHealth())
	})
	s.metricsHTTP = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.metricsHTTP.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.lg.Error("metrics listener failed", "addr", ln.Addr().String(), "err", err)
		}
	}()
}

// health answers a probe: 200 when ok, else 503, with a JSON body
// {"status":"ok"|"unavailable","reason":...}.
func health(w http.ResponseWriter, ok bool, reason string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	status := "ok"
	if !ok {
		status = "unavailable"
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	json.NewEncoder(w).Encode(struct {
		Status string `json:"status"`
		Reason string `json:"reason"`
	}{status, reason})
}

// readiness is what /readyz answers: whether the node does its job, and
// why (not). A broker is ready once it is registered, has caught up with
// the metadata log and its replicas with the image that unfenced it (the
// start-up sequence is done), is unfenced as of the controller's last
// heartbeat answer, that answer is younger than
// broker.session.timeout.ms (else the controller has likely fenced it),
// and it is not shutting down. A controller-only node is ready once it
// has caught up with the metadata log and knows the quorum's leader.
func (s *Server) readiness() (string, bool) {
	if s.lifecycle != nil {
		l := s.lifecycle
		switch last := l.answered.Load(); {
		case l.shuttingDown.Load():
			return "shutting down", false
		case l.lastEpoch() < 0:
			return "not registered with the controller", false
		case !s.started.Load():
			return "catching up with the metadata log", false
		case l.fenced.Load():
			return "fenced by the controller", false
		case time.Since(time.Unix(0, last)) > s.cfg.BrokerSessionTimeout:
			return fmt.Sprintf("no heartbeat answered for %s (broker.session.timeout.ms): the controller has likely fenced this broker", time.Since(time.Unix(0, last)).Truncate(time.Millisecond)), false
		}
		return "registered, unfenced and caught up with the metadata log", true
	}
	if !s.started.Load() {
		return "catching up with the metadata log", false
	}
	if s.quorum != nil && s.quorum.Status().Leader < 0 {
		return "no quorum leader known", false
	}
	return "caught up with the metadata log; the quorum has a leader", true
}

// stopMetrics closes the metrics endpoint and its connections.
func (s *Server) stopMetrics() {
	if s.metricsHTTP != nil {
		s.metricsHTTP.Close()
	}
	if s.metricsLn != nil { // bound, perhaps never served
		s.metricsLn.Close()
	}
}

// MetricsAddr is the bound address of the metrics endpoint, or nil when
// weir.metrics.listener is not set (or before Start).
func (s *Server) MetricsAddr() net.Addr { return s.metricsAddr }

// Metrics is the node's metrics registry; the replication code bumps its
// Counters.
func (s *Server) Metrics() *metrics.Metrics { return s.metrics }

// clusterHealth is the cluster's health as this node's metadata image
// has it: what /v1/cluster/health answers, and `weir cluster health`
// prints from a client's view.
func (s *Server) clusterHealth() clusterhealth.Report {
	img := s.publisher.Image()
	leader, _ := s.leader()
	in := clusterhealth.Input{Controller: leader}
	for _, b := range img.Brokers {
		in.Brokers = append(in.Brokers, clusterhealth.Broker{ID: b.ID, Fenced: b.Fenced})
	}
	// Topics without overrides of their own all resolve as the cluster
	// default does: resolve that once.
	self := strconv.Itoa(int(s.cfg.NodeID))
	defaultMinISR := config.ResolveTopic(nil, img.BrokerConfig(""), img.BrokerConfig(self), s.cfg).MinInsyncReplicas
	for name, t := range img.Topics.All() {
		minISR := defaultMinISR
		if o := img.TopicConfig(name); len(o) > 0 {
			minISR = config.ResolveTopic(o, img.BrokerConfig(""), img.BrokerConfig(self), s.cfg).MinInsyncReplicas
		}
		for _, p := range t.Partitions {
			in.Partitions = append(in.Partitions, clusterhealth.Partition{
				Topic: name, Partition: p.ID, Leader: p.Leader, Replicas: len(p.Replicas), ISR: len(p.ISR), MinISR: minISR,
			})
		}
	}
	return clusterhealth.Of(in)
}
