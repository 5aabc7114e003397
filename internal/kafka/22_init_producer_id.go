package kafka

// InitProducerId, versions 0-5.
//
// An idempotent producer (no transactional id) gets a fresh producer id at
// epoch 0, also when it asks to bump the epoch of an id it had (v3+,
// KIP-360), as Kafka does. Ids come in blocks from the controller, so they
// are unique across the cluster. A transactional id goes to the
// transaction coordinator (package txn), which states the rules. With an
// authorizer, a transactional id needs WRITE on it (else
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED), and an idempotent producer
// IDEMPOTENT_WRITE on the cluster or WRITE on some topic (KIP-679; else
// CLUSTER_AUTHORIZATION_FAILED), as in Kafka.

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
)

// producerIDs hands out ids from blocks allocated by the controller.
type producerIDs struct {
	alloc func() (first int64, n int32, err error)

	mu   sync.Mutex
	next int64
	end  int64
}

func (p *producerIDs) nextID() (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next >= p.end {
		first, n, err := p.alloc()
		if err != nil {
			return -1, err
		}
		p.next, p.end = first, first+int64(n)
	}
	id := p.next
	p.next++
	return id, nil
}

func (s *Server) handleInitProducerID(req *Request) *Reply {
	r := req.Body.(*kmsg.InitProducerIDRequest)
	resp := respFor(req).(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	switch {
	case r.TransactionalID != nil && !s.authorized(req, acl.OpWrite, acl.ResourceTransactionalID, *r.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return done(resp)
	case r.TransactionalID == nil && !s.authorizedCluster(req, acl.OpIdempotentWrite) && !s.authorizedAny(req, acl.OpWrite, acl.ResourceTopic):
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return done(resp)
	}
	if r.TransactionalID != nil {
		if s.deps.Txns == nil {
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return done(resp)
		}
		return s.handleTxnRequest(req)
	}
	id, err := s.pids.nextID()
	if err != nil {
		s.lg.Error("allocating producer ids", "err", err)
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		return done(resp)
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return done(resp)
}
