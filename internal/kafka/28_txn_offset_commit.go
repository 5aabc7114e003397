package kafka

// TxnOffsetCommit, versions 0-4 (v3+ carry the member, KIP-447).
//
// A transactional producer's offsets for a consumer group, counted once its
// transaction commits. As in Kafka's handler, partitions of topics (or
// partitions) the metadata image does not hold answer
// UNKNOWN_TOPIC_OR_PARTITION and the others go to the group coordinator
// (package group, txn_offsets.go), a partition named more than once only
// at its last mention (every mention gets its answer). The coordinator
// checks the group and member,
// writes them as a transactional batch of the producer to
// __consumer_offsets, and answers once that batch is committed. The
// COMMIT or ABORT marker that WriteTxnMarkers writes to the group's
// __consumer_offsets partition ends them (group.Service.TxnMarker).
//
// With transaction.partition.verification.enable (KIP-890), when the
// producer has no transaction open in the group's __consumer_offsets
// partition yet, the transaction coordinator is first asked whether that
// partition is in the transaction (AddOffsetsToTxn put it there), and the
// write carries the guard of that check: a late commit can never leave
// pending offsets behind an ended transaction. Failures answer every
// partition as Kafka converts them for offset commits: not in the
// transaction INVALID_TXN_STATE, a fenced producer INVALID_PRODUCER_EPOCH,
// a coordinator that cannot be reached COORDINATOR_LOAD_IN_PROGRESS, one
// that cannot answer yet COORDINATOR_NOT_AVAILABLE. A stale producer epoch
// is also fenced by the log.
//
// With an authorizer, the transactional id needs WRITE (else
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition), the group
// READ (else GROUP_AUTHORIZATION_FAILED for every partition), and each
// topic READ (else TOPIC_AUTHORIZATION_FAILED for its partitions), as in
// Kafka.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
	"weir/internal/group"
	"weir/internal/log"
)

func (s *Server) handleTxnOffsetCommit(req *Request) *Reply {
	r := req.Body.(*kmsg.TxnOffsetCommitRequest)
	img := s.deps.Metadata.Image()
	known := func(topic string, p int32) bool {
		t := img.Topics.Get(topic)
		return t != nil && t.Partitions[p] != nil
	}
	// A partition named more than once is committed once, at its last
	// mention (Kafka keys the commit by partition).
	type at struct{ topic, part int }
	where := map[string]int{}           // topic -> index in fwd.Topics
	seen := map[log.TopicPartition]at{} // partition -> its place in fwd
	fwd := *r
	fwd.Topics = nil
	var wholeDenied int16
	switch {
	case !s.authorized(req, acl.OpWrite, acl.ResourceTransactionalID, r.TransactionalID):
		wholeDenied = kerr.TransactionalIDAuthorizationFailed.Code
	case !s.authorized(req, acl.OpRead, acl.ResourceGroup, r.Group):
		wholeDenied = kerr.GroupAuthorizationFailed.Code
	}
	denied := map[string]bool{}
	for _, t := range r.Topics {
		if wholeDenied == 0 && !s.authorized(req, acl.OpRead, acl.ResourceTopic, t.Topic) {
			denied[t.Topic] = true
		}
		for _, p := range t.Partitions {
			if wholeDenied != 0 || denied[t.Topic] || !known(t.Topic, p.Partition) {
				continue
			}
			tp := log.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			if a, ok := seen[tp]; ok {
				fwd.Topics[a.topic].Partitions[a.part] = p
				continue
			}
			i, ok := where[t.Topic]
			if !ok {
				ft := t
				ft.Partitions = nil
				i = len(fwd.Topics)
				where[t.Topic] = i
				fwd.Topics = append(fwd.Topics, ft)
			}
			seen[tp] = at{i, len(fwd.Topics[i].Partitions)}
			fwd.Topics[i].Partitions = append(fwd.Topics[i].Partitions, p)
		}
	}
	// answer merges the coordinator's codes (nil: none asked) into a
	// response in the request's order.
	answer := func(got *kmsg.TxnOffsetCommitResponse) kmsg.Response {
		codes := make(map[string]map[int32]int16)
		if got != nil {
			for _, t := range got.Topics {
				if codes[t.Topic] == nil {
					codes[t.Topic] = make(map[int32]int16)
				}
				for _, p := range t.Partitions {
					codes[t.Topic][p.Partition] = p.ErrorCode
				}
			}
		}
		resp := respFor(req).(*kmsg.TxnOffsetCommitResponse)
		if got != nil {
			resp.ThrottleMillis = got.ThrottleMillis
		}
		for _, t := range r.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition = p.Partition
				switch {
				case wholeDenied != 0:
					rp.ErrorCode = wholeDenied
				case denied[t.Topic]:
					rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				case known(t.Topic, p.Partition):
					rp.ErrorCode = codes[t.Topic][p.Partition]
				default:
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	if len(fwd.Topics) == 0 {
		return done(answer(nil))
	}
	verify, guard, code := s.verifyTxnOffsetCommit(req, r)
	if code != 0 {
		resp := &kmsg.TxnOffsetCommitResponse{Version: r.Version}
		for _, t := range fwd.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return done(answer(resp))
	}
	rep := newReply()
	s.deps.Groups.CommitTxnOffsets(req.Ctx, req.ClientID, clientHost(req.RemoteAddr), &fwd, verify, uint64(guard),
		func(resp kmsg.Response) { rep.complete(answer(resp.(*kmsg.TxnOffsetCommitResponse))) })
	return rep
}

// verifyTxnOffsetCommit is the KIP-890 check of the group's
// __consumer_offsets partition: whether the write must carry a guard, the
// guard, and the code that fails the commit (0: go ahead). A partition
// not led here is left to the group coordinator, which answers
// NOT_COORDINATOR. It blocks while the coordinator is asked, as the
// produce check does.
func (s *Server) verifyTxnOffsetCommit(req *Request, r *kmsg.TxnOffsetCommitRequest) (bool, log.VerificationGuard, int16) {
	if !s.cfg.Broker.TransactionPartitionVerification || s.deps.TxnVerifier == nil {
		return false, log.NoGuard, 0
	}
	tp := log.TopicPartition{Topic: OffsetsTopic, Partition: s.deps.Groups.PartitionFor(r.Group)}
	p := s.deps.Partitions.Get(tp)
	if p == nil {
		return false, log.NoGuard, 0
	}
	guard, err := p.StartTxnVerification(r.ProducerID, r.ProducerEpoch)
	if err != nil || guard == log.NoGuard {
		return true, log.NoGuard, 0 // not led (the coordinator says so), or a transaction is open here
	}
	timeout := s.cfg.Broker.RequestTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(req.Ctx, timeout)
	defer cancel()
	codes, err := s.deps.TxnVerifier.VerifyTxn(ctx, r.TransactionalID, r.ProducerID, r.ProducerEpoch, []log.TopicPartition{tp})
	var ke *kerr.Error
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		return true, guard, 0 // the guard stands: the write proceeds unverified
	case err != nil && !errors.As(err, &ke):
		return true, guard, group.CommitErrorCode(kerr.NetworkException.Code)
	}
	if verr := txnVerifyError(codes[tp], err, 10); verr != nil {
		return true, guard, group.CommitErrorCode(errorCode(verr))
	}
	return true, guard, 0
}
