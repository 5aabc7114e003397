package kafka

// Fetch, versions 4-17.
//
// Each partition reads from its leader's log up to the high watermark
// (the last stable offset for read_committed, with the aborted
// transactions that may cover what it returns, from the transaction
// indexes), never more than the partition's and the response's byte
// limits, except that the first partition with data returns at least one
// whole batch so a large batch never stalls a consumer. LastStableOffset is
// the real LSO for both isolation levels. Record bytes
// go from the segment file to the socket by sendfile (see section.go).
// With too little data for min bytes the request waits, up to max wait,
// for new data on any of its partitions. fetch.max.bytes caps max bytes,
// and min bytes with it, as in Kafka. Fetch sessions (KIP-227) are
// declined: the response carries session id 0, so clients send full
// requests; an incremental request gets FETCH_SESSION_ID_NOT_FOUND. With
// a last fetched epoch (v12+) a diverging log is reported in
// DivergingEpoch instead of data.
//
// A follower's fetch (replica id >= 0, in ReplicaState from v15 with its
// broker epoch) reads up to the log end and reports the follower's
// progress to the partition, which moves the high watermark and the ISR
// (partition/leader.go).
//
// With an authorizer, a follower's fetch needs CLUSTER_ACTION on the
// cluster (else TOPIC_AUTHORIZATION_FAILED for every partition) and a
// consumer's READ on each topic (else TOPIC_AUTHORIZATION_FAILED for its
// partitions, after UNKNOWN_TOPIC_ID), as in Kafka; a fetch of the
// metadata log (observers, on a controller listener) needs CLUSTER_ACTION.
//
// An isolation level other than 0 (read_uncommitted) and 1
// (read_committed) is INVALID_REQUEST for the whole request, in the shape
// of Kafka's error response: the top-level error, and before v13 every
// partition's too. (Kafka itself answers UNKNOWN_SERVER_ERROR there, from
// an exception it does not map.)

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
	"weir/internal/log"
	"weir/internal/metadata"
	"weir/internal/metrics"
	"weir/internal/partition"
	"weir/internal/quota"
)

func (s *Server) handleFetch(req *Request) *Reply {
	r := req.Body.(*kmsg.FetchRequest)
	if s.isMetadataFetch(r) {
		if !s.authorizedCluster(req, acl.OpClusterAction) {
			return done(fetchFailed(req, r, kerr.ClusterAuthorizationFailed))
		}
		return s.handleMetadataFetch(req, r)
	}
	if r.IsolationLevel != 0 && r.IsolationLevel != 1 {
		return done(fetchFailed(req, r, kerr.InvalidRequest))
	}
	if s.deps.Partitions == nil {
		return done(s.noPartitions(req, r))
	}
	if r.SessionID != 0 {
		resp := respFor(req).(*kmsg.FetchResponse)
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return done(resp)
	}
	// fetch.max.bytes caps every fetch, and min bytes with it, as in
	// Kafka; a fetch without a limit (max bytes <= 0) gets it whole.
	if limit := s.cfg.Broker.FetchMaxBytes; r.MaxBytes <= 0 || r.MaxBytes > limit {
		r.MaxBytes = limit
	}
	if user, ok := s.quotaUser(req); ok && !isFollowerFetch(req) {
		// No more than the consumer's quota lets through in a window.
		r.MaxBytes = int32(min(int64(r.MaxBytes), s.deps.ClientQuotas.MaxInWindow(quota.Fetch, user, req.ClientID)))
	}
	r.MinBytes = min(r.MinBytes, r.MaxBytes)
	resp, sections, size, urgent := s.readFetch(req, r, true)
	wait := time.Duration(r.MaxWaitMillis) * time.Millisecond
	if urgent || wait <= 0 || size >= int(r.MinBytes) {
		rep := &Reply{ready: closedChan}
		rep.resp, rep.sections = s.chargeFetch(req, rep, resp, sections, size)
		return rep
	}
	rep := newReply()
	go s.longPoll(req, r, rep, wait)
	return rep
}

// longPoll waits for data on the request's partitions until min bytes are
// there or max wait passes. It re-reads when a partition signals that the
// bytes it made readable since the last read may make up what is missing
// (or that its state changed), not on every append (partition.Watcher).
func (s *Server) longPoll(req *Request, r *kmsg.FetchRequest, rep *Reply, wait time.Duration) {
	s.reqs.Waiting(true, 1)
	defer s.reqs.Waiting(true, -1)
	w := partition.NewWatcher()
	var watched []*partition.Partition
	img := s.deps.Metadata.Image()
	bound := partition.BoundHighWatermark
	switch {
	case isFollowerFetch(req):
		bound = partition.BoundLogEnd
	case r.IsolationLevel == partition.ReadCommitted:
		bound = partition.BoundStable
	}
	for _, rt := range r.Topics {
		name := rt.Topic
		if req.Version >= 13 {
			if t := img.TopicsByID.Get(rt.TopicID); t != nil {
				name = t.Name
			}
		}
		for _, rp := range rt.Partitions {
			if p := s.deps.Partitions.Get(log.TopicPartition{Topic: name, Partition: rp.Partition}); p != nil {
				p.Watch(w, rp.FetchOffset, bound)
				watched = append(watched, p)
			}
		}
	}
	defer func() {
		for _, p := range watched {
			p.Unwatch(w)
		}
	}()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		// Re-read after registering, so data appended in between is
		// seen; bytes counted from here on are those the read may miss.
		w.Reset()
		resp, sections, size, urgent := s.readFetch(req, r, false)
		if urgent || size >= int(r.MinBytes) {
			resp, rep.sections = s.chargeFetch(req, rep, resp, sections, size)
			rep.complete(resp)
			return
		}
		if w.Arm(int64(r.MinBytes) - int64(size)) {
			continue
		}
		select {
		case <-w.C:
		case <-timer.C:
			resp, sections, size, _ := s.readFetch(req, r, false)
			resp, rep.sections = s.chargeFetch(req, rep, resp, sections, size)
			rep.complete(resp)
			return
		case <-req.Ctx.Done():
			rep.complete(resp)
			return
		}
	}
}

// isFollowerFetch reports a replica's fetch (a follower's, or an
// observer's of the metadata log): never throttled by client quotas.
func isFollowerFetch(req *Request) bool {
	r, ok := req.Body.(*kmsg.FetchRequest)
	return ok && (r.ReplicaID >= 0 || r.ReplicaState.ID >= 0)
}

// chargeFetch counts a consumer's fetch of size record bytes against its
// fetch quota. Over the quota, the client gets an empty answer with the
// throttle time (the bytes are taken back) and its connection is muted,
// as Kafka's getThrottledResponse. The record bytes of the answer count in
// BytesOut (ReplicationBytesOut for a follower), as Kafka counts them when
// the response is sent.
func (s *Server) chargeFetch(req *Request, rep *Reply, resp *kmsg.FetchResponse, sections []section, size int) (*kmsg.FetchResponse, []section) {
	resp, sections = s.throttleFetch(req, rep, resp, sections, size)
	follower := isFollowerFetch(req)
	for i := range sections {
		sections[i].stats.Sent(sections[i].size, follower)
	}
	return resp, sections
}

// throttleFetch is chargeFetch without the counting.
func (s *Server) throttleFetch(req *Request, rep *Reply, resp *kmsg.FetchResponse, sections []section, size int) (*kmsg.FetchResponse, []section) {
	user, ok := s.quotaUser(req)
	if !ok || isFollowerFetch(req) || size == 0 {
		return resp, sections
	}
	q := s.deps.ClientQuotas
	d := q.Record(quota.Fetch, user, req.ClientID, int64(size))
	if d <= 0 {
		return resp, sections
	}
	q.Unrecord(quota.Fetch, user, req.ClientID, int64(size))
	rep.throttle = d
	req.conn.mute(d)
	empty := respFor(req).(*kmsg.FetchResponse)
	empty.SessionID = resp.SessionID
	return empty, nil
}

// readFetch reads every requested partition once. urgent reports an error
// that should be answered without waiting.
func (s *Server) readFetch(req *Request, r *kmsg.FetchRequest, count bool) (*kmsg.FetchResponse, []section, int, bool) {
	resp := respFor(req).(*kmsg.FetchResponse)
	img := s.deps.Metadata.Image()
	replica := replicaFetch{id: r.ReplicaID, epoch: -1}
	if req.Version >= 15 {
		replica = replicaFetch{id: r.ReplicaState.ID, epoch: r.ReplicaState.Epoch}
	}
	limit := int(r.MaxBytes)
	var sections []section
	total := 0
	urgent := false
	minOne := true
	followerDenied := replica.id >= 0 && !s.authorizedCluster(req, acl.OpClusterAction)
	for _, rt := range r.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		name, known := rt.Topic, true
		if req.Version >= 13 {
			t := img.TopicsByID.Get(rt.TopicID)
			known = t != nil
			if known {
				name = t.Name
			}
		}
		denied := followerDenied || replica.id < 0 && known && !s.authorized(req, acl.OpRead, acl.ResourceTopic, name)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			sp.PreferredReadReplica = -1
			sp.RecordBatches = []byte{}
			var p *partition.Partition
			if known && !denied {
				p = s.deps.Partitions.Get(log.TopicPartition{Topic: name, Partition: rp.Partition})
			}
			switch {
			case !known && !followerDenied:
				sp.ErrorCode = kerr.UnknownTopicID.Code
			case denied:
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case p == nil && known && s.deps.Partitions.Offline(log.TopicPartition{Topic: name, Partition: rp.Partition}) != nil:
				sp.ErrorCode = kerr.KafkaStorageError.Code
				if count {
					s.unattributed().FetchRequested()
				}
			case p == nil && img.Topics.Get(name) != nil && img.Topics.Get(name).Partitions[rp.Partition] != nil:
				s.notLeader(&sp, img, name, rp.Partition)
				if count {
					s.unattributed().FetchRequested()
				}
			case p == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				maxBytes := min(int(rp.PartitionMaxBytes), max(limit-total, 0))
				n, sec, err := s.fetchPartition(p, rp, replica, r.IsolationLevel, maxBytes, minOne, &sp, len(sections))
				if err != nil {
					sp.ErrorCode = errorCode(err)
					if sp.ErrorCode == kerr.NotLeaderForPartition.Code {
						s.notLeader(&sp, img, name, rp.Partition)
					}
					if sp.ErrorCode == kerr.UnknownServerError.Code || sp.ErrorCode == kerr.KafkaStorageError.Code {
						s.lg.Error("fetch failed", "topic", name, "partition", rp.Partition, "err", err)
					}
				}
				if count {
					countFetch(p.Stats(), sp.ErrorCode)
				}
				if sec != nil {
					sec.stats = p.Stats()
					sections = append(sections, *sec)
					total += n
					minOne = false
				}
			}
			urgent = urgent || sp.ErrorCode != 0 || sp.DivergingEpoch.EndOffset >= 0
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, sections, total, urgent
}

// replicaFetch identifies a follower's fetch (id >= 0) and its broker
// epoch (-1: not sent).
// countFetch counts a partition read for a Fetch request in its topic's
// BrokerTopicMetrics, as Kafka's ReplicaManager.readFromLog: each one, and
// a failure for an error Kafka does not expect.
func countFetch(tc *metrics.TopicCounters, code int16) {
	tc.FetchRequested()
	switch code {
	case 0, kerr.UnknownTopicOrPartition.Code, kerr.NotLeaderForPartition.Code, kerr.UnknownLeaderEpoch.Code,
		kerr.FencedLeaderEpoch.Code, kerr.ReplicaNotAvailable.Code, kerr.KafkaStorageError.Code,
		kerr.InconsistentTopicID.Code, kerr.OffsetOutOfRange.Code:
	default:
		tc.FetchFailed()
	}
}

type replicaFetch struct {
	id    int32
	epoch int64
}

// fetchPartition reads one partition into sp; a returned section is the
// file range standing for sp.RecordBatches (which holds its marker).
func (s *Server) fetchPartition(p *partition.Partition, rp kmsg.FetchRequestTopicPartition, replica replicaFetch, isolation int8, maxBytes int, minOne bool, sp *kmsg.FetchResponseTopicPartition, index int) (int, *section, error) {
	var res partition.FetchResult
	var err error
	if replica.id >= 0 {
		// A follower out of the ISR of a throttled replica gets no data
		// while the leader-side replication quota is exceeded.
		throttled := s.deps.ReplicationQuota != nil && p.LeaderThrottled(replica.id)
		if throttled && s.deps.ReplicationQuota.LeaderExceeded() {
			maxBytes, minOne = 0, false
		}
		defer func() {
			if throttled && res.Slice.Size > 0 {
				s.deps.ReplicationQuota.RecordLeader(int64(res.Slice.Size))
			}
		}()
		var fr partition.FollowerRead
		fr, err = p.ReadForFollower(partition.FollowerFetch{ReplicaID: replica.id, BrokerEpoch: replica.epoch,
			FetchOffset: rp.FetchOffset, LogStartOffset: rp.LogStartOffset, LastFetchedEpoch: rp.LastFetchedEpoch,
			CurrentLeaderEpoch: rp.CurrentLeaderEpoch, MaxBytes: maxBytes, MinOne: minOne})
		res = fr.FetchResult
		sp.DivergingEpoch.Epoch, sp.DivergingEpoch.EndOffset = fr.DivergingEpoch, fr.DivergingEndOffset
	} else {
		if rp.LastFetchedEpoch >= 0 {
			epoch, end, err := p.EndOffsetForEpoch(rp.CurrentLeaderEpoch, rp.LastFetchedEpoch)
			if err != nil {
				return 0, nil, err
			}
			if epoch >= 0 && (epoch < rp.LastFetchedEpoch || end < rp.FetchOffset) {
				sp.DivergingEpoch.Epoch, sp.DivergingEpoch.EndOffset = epoch, end
				sp.LastStableOffset = p.LastStableOffset()
				sp.HighWatermark, sp.LogStartOffset = p.HighWatermark(), p.Log().LogStartOffset()
				return 0, nil, nil
			}
		}
		res, err = p.Read(partition.FetchParams{Offset: rp.FetchOffset, MaxBytes: maxBytes, LeaderEpoch: rp.CurrentLeaderEpoch,
			Isolation: isolation, MinOne: minOne})
	}
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = res.HighWatermark, res.LastStableOffset, res.LogStartOffset
	if res.AbortedTxns != nil {
		sp.AbortedTransactions = make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, len(res.AbortedTxns))
		for i, a := range res.AbortedTxns {
			sp.AbortedTransactions[i].ProducerID, sp.AbortedTransactions[i].FirstOffset = a.ProducerID, a.FirstOffset
		}
	}
	if err != nil {
		if !errors.Is(err, log.ErrOffsetOutOfRange) {
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
		}
		return 0, nil, err
	}
	if res.Slice.Size == 0 {
		return 0, nil, nil
	}
	sp.RecordBatches = sectionMarker(index)
	return res.Slice.Size, &section{file: res.Slice.File, pos: res.Slice.Pos, size: res.Slice.Size}, nil
}

// notLeader marks a partition this broker does not lead, pointing the
// client at the current leader (v12+).
func (s *Server) notLeader(sp *kmsg.FetchResponseTopicPartition, img *metadata.Image, topic string, part int32) {
	sp.ErrorCode = kerr.NotLeaderForPartition.Code
	sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = leaderOf(img, topic, part)
}

// leaderOf returns a partition's leader and leader epoch, or -1s.
func leaderOf(img *metadata.Image, topic string, part int32) (int32, int32) {
	if t := img.Topics.Get(topic); t != nil {
		if p := t.Partitions[part]; p != nil {
			return p.Leader, p.LeaderEpoch
		}
	}
	return -1, -1
}

// noPartitions answers a fetch on a node that hosts no partitions.
func (s *Server) noPartitions(req *Request, r *kmsg.FetchRequest) *kmsg.FetchResponse {
	resp := respFor(req).(*kmsg.FetchResponse)
	for _, rt := range r.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, kerr.NotLeaderForPartition.Code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// fetchFailed answers a whole request with err, as Kafka's error response
// for Fetch: the top-level error (v7+), and before v13 every partition's
// with a high watermark of -1.
func fetchFailed(req *Request, r *kmsg.FetchRequest, err *kerr.Error) *kmsg.FetchResponse {
	resp := respFor(req).(*kmsg.FetchResponse)
	resp.ErrorCode, resp.SessionID = err.Code, r.SessionID
	if req.Version >= 13 {
		return resp
	}
	for _, rt := range r.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition, sp.ErrorCode, sp.HighWatermark = rp.Partition, err.Code, -1
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
