// Package kafka serves the Kafka wire protocol: it accepts connections,
// frames and decodes requests with franz-go's kmsg, runs one handler per
// API (one file each, named for the API key), and writes the responses in
// order. Kafka error codes are chosen in errors.go and nowhere else.
package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
	"weir/internal/config"
	"weir/internal/controller"
	"weir/internal/link"
	"weir/internal/log"
	"weir/internal/loglevel"
	"weir/internal/metadata"
	"weir/internal/metrics"
	"weir/internal/partition"
	"weir/internal/quorum"
	"weir/internal/quota"
)

// Controller is the controller as the request handlers see it: on a single
// node it is the local controller; in a cluster, a client of the active one.
type Controller interface {
	CreateTopics(req *kmsg.CreateTopicsRequest) (controller.CreateTopicsResult, error)
	DeleteTopics(refs []controller.TopicRef) (controller.DeleteTopicsResult, error)
	CreatePartitions(req *kmsg.CreatePartitionsRequest) (controller.CreatePartitionsResult, error)
	AlterConfigs(changes []controller.ConfigChange, validateOnly bool) (controller.AlterConfigsResult, error)
	AllocateProducerIDs(broker int32, epoch int64) (controller.ProducerIDBlock, error)
	RegisterBroker(req *kmsg.BrokerRegistrationRequest, now time.Time) (int64, error)
	BrokerHeartbeat(req *kmsg.BrokerHeartbeatRequest, now func() time.Time) (*kmsg.BrokerHeartbeatResponse, error)
	AlterPartition(req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error)
	AssignReplicasToDirs(req *kmsg.AssignReplicasToDirsRequest) (*kmsg.AssignReplicasToDirsResponse, error)
	ElectLeaders(req *kmsg.ElectLeadersRequest) (controller.ElectLeadersResult, error)
	AlterPartitionReassignments(req *kmsg.AlterPartitionAssignmentsRequest) (controller.ReassignmentsResult, error)
	ListPartitionReassignments(topics []kmsg.ListPartitionReassignmentsRequestTopic) ([]controller.Reassignment, error)
	UpdateFeatures(req *kmsg.UpdateFeaturesRequest) (controller.UpdateFeaturesResult, error)
	UnregisterBroker(broker int32) (controller.Committed, error)
	// Cluster links (controller/links.go).
	CreateClusterLink(name string, cfg map[string]string, validateOnly bool) (controller.Committed, error)
	DeleteClusterLink(name string) (controller.Committed, error)
	CreateMirrorTopic(m controller.MirrorTopic) (controller.Committed, error)
	SetMirrorState(topic string, state int8) (controller.Committed, error)
	StopMirror(topic string, state int8, logEpochs, leaderEpochs map[int32]int32) (controller.Committed, error)
	AlterUserScramCredentials(req *kmsg.AlterUserSCRAMCredentialsRequest) (controller.ScramCredentialsResult, error)
	CreateAcls(bindings []acl.Binding) (controller.CreateAclsResult, error)
	DeleteAcls(filters []acl.Filter) (controller.DeleteAclsResult, error)
	AlterClientQuotas(req *kmsg.AlterClientQuotasRequest) (controller.ClientQuotasResult, error)
}

// Groups is the group coordinator.
type Groups interface {
	// Handle answers a group request through done, possibly much later.
	Handle(ctx context.Context, clientID, clientHost string, body kmsg.Request, done func(kmsg.Response))
	// PartitionFor is the __consumer_offsets partition owning a group.
	PartitionFor(groupID string) int32
	// CommitTxnOffsets is Handle for a TxnOffsetCommit whose transactional
	// write carries the KIP-890 check: with verify, it may open the
	// producer's transaction in __consumer_offsets only with guard (from
	// the partition's StartTxnVerification, confirmed by the transaction
	// coordinator).
	CommitTxnOffsets(ctx context.Context, clientID, clientHost string, r *kmsg.TxnOffsetCommitRequest,
		verify bool, guard uint64, done func(kmsg.Response))
	// TxnMarker reports a COMMIT (commit) or ABORT marker of producerID
	// committed at offset of __consumer_offsets-p; WriteTxnMarkers calls it
	// for those partitions once the marker's append is committed, before
	// answering. Later group requests see its effect.
	TxnMarker(p int32, producerID int64, commit bool, offset int64)
}

// Raft receives the Raft messages other controllers send on the
// controller listener.
type Raft interface {
	Receive(body []byte) error
}

// Quorum is the metadata quorum as DescribeQuorum reports it.
type Quorum interface {
	Status() quorum.Status
}

// Metadata is the broker's view of the metadata log.
type Metadata interface {
	// Image is the latest published image.
	Image() *metadata.Image
	// WaitFor blocks until the published image includes offset and this
	// broker's replicas (and the coordinators elected with them) have
	// caught up with it, or ctx ends.
	WaitFor(ctx context.Context, offset int64) error
}

// Config is what the protocol layer needs to know about its broker.
type Config struct {
	Broker       *config.Broker
	ClusterID    string
	ListenerName string
	// MaxRequestSize is socket.request.max.bytes.
	MaxRequestSize int32
	// TLS, when set, is the configuration of an SSL listener: every
	// connection runs TLS. Fetch responses are then copied through the
	// TLS record layer instead of sent by sendfile(2).
	TLS *tls.Config
	// SASL, when set, makes every connection authenticate with SASL
	// first (SASL_PLAINTEXT and SASL_SSL listeners; see sasl.go).
	SASL *SASLConfig
	// Authorizer, when set, authorizes every request (acls.go); nil
	// allows everything.
	Authorizer *acl.Authorizer
	// Conns are the node's connection limits, shared by its listeners
	// (nil: none; connquota.go).
	Conns *ConnQuotas
	// MaxIdle is connections.max.idle.ms: a connection that reads and
	// writes nothing that long is closed (<= 0: never).
	MaxIdle time.Duration
}

// Deps are the broker services the handlers call.
type Deps struct {
	Partitions *partition.Manager
	Logs       *log.Manager
	Metadata   Metadata
	Controller Controller
	Groups     Groups
	Txns       Txns   // the transaction coordinator (nil: not served)
	Quorum     Quorum // when set, DescribeQuorum is served
	// Raft is set on controller listeners only.
	Raft Raft
	// MetadataLog is set on controller listeners: observers fetch it.
	MetadataLog MetadataLog
	// BrokerConnLost, if set (on controller listeners), is called when a
	// broker closes or resets a connection on which the controller
	// accepted its heartbeat (with the broker's id and epoch): a hint
	// that it died. It must not block.
	BrokerConnLost func(broker int32, epoch int64)
	// LinkSync runs a cluster link's consumer offset sync on demand (for
	// a promotion); set with Controller.
	LinkSync interface {
		SyncOffsets(ctx context.Context, link string) error
	}
	// Forward reaches the active controller (nil: this node's is the only
	// one).
	Forward Forwarder
	// ReplicationQuota throttles the leader side of replication (nil:
	// never).
	ReplicationQuota *quota.Replication
	// ClientQuotas enforces the client quotas (nil: none; quota.go).
	ClientQuotas *quota.Clients
	// ProducerIDs fetches a block of producer ids from the active
	// controller.
	ProducerIDs func() (first int64, n int32, err error)
	// TxnVerifier checks transactional produces with their coordinator
	// (KIP-890); nil: no check.
	TxnVerifier TxnVerifier
	// Metrics counts the BrokerTopicMetrics and RequestMetrics (nil: not
	// counted).
	Metrics *metrics.Metrics
	// Loggers are this node's loggers, the BROKER_LOGGER config resource
	// (nil: not served).
	Loggers *loglevel.Levels
	Logger  *slog.Logger
	Now     func() time.Time
}

// Server serves one listener.
type Server struct {
	cfg  Config
	deps Deps
	lg   *slog.Logger
	apis map[int16]api
	// internal are weir's own APIs (version 0 only): their bodies are not
	// Kafka messages and ApiVersions does not list them.
	internal map[int16]func(*Request) *Reply
	pids     producerIDs
	// reqs and listener count the RequestMetrics and the connections
	// (nil without Deps.Metrics).
	reqs     *metrics.RequestStats
	listener *metrics.ListenerStats
	// raftWarned is when a refused Raft frame was last logged (unix ns).
	raftWarned atomic.Int64

	mu    sync.Mutex
	ln    net.Listener
	conns map[*conn]struct{}
	wg    sync.WaitGroup
	// stop is closed by Close: an accept waiting for a connection slot
	// gives up.
	stop     chan struct{}
	stopOnce sync.Once
}

// New returns a server; call Serve with a listener.
func New(cfg Config, deps Deps) *Server {
	if deps.Now == nil {
		deps.Now = time.Now
	}
	s := &Server{cfg: cfg, deps: deps, lg: deps.Logger, conns: map[*conn]struct{}{}, stop: make(chan struct{})}
	if deps.Metrics != nil {
		s.reqs = deps.Metrics.Requests
		s.listener = s.reqs.Listener(cfg.ListenerName)
	}
	s.apis = s.apiTable()
	s.internal = map[int16]func(*Request) *Reply{}
	if deps.Raft != nil {
		s.internal[quorum.RaftAPIKey] = s.handleRaft
		s.internal[ForwardAPIKey] = s.handleForward
	}
	if deps.Partitions != nil {
		s.internal[link.AdminAPIKey] = s.handleLinkAdmin
	}
	s.pids.alloc = deps.ProducerIDs
	return s
}

// Serve accepts connections until the listener is closed.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return err
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
			// socket.send/receive.buffer.bytes; -1 keeps the kernel's
			// autotuned buffers.
			if n := s.cfg.Broker.SocketSendBufferBytes; n > 0 {
				tc.SetWriteBuffer(int(n))
			}
			if n := s.cfg.Broker.SocketReceiveBufferBytes; n > 0 {
				tc.SetReadBuffer(int(n))
			}
		}
		ip := remoteIP(nc)
		if ok, closeIn := s.cfg.Conns.admit(s.stop, s.cfg.ListenerName, ip); !ok {
			if closeIn > 0 {
				// Over its address's connection rate: closed once the
				// rate is back within the quota, so it cannot retry at
				// once (as Kafka's delayed close).
				s.lg.Debug("connection throttled: its address is over its connection_creation_rate", "remote", nc.RemoteAddr().String(), "close_in", closeIn)
				time.AfterFunc(closeIn, func() { nc.Close() })
				continue
			}
			s.lg.Debug("connection refused: too many from its address", "remote", nc.RemoteAddr().String())
			nc.Close()
			continue
		}
		if s.cfg.TLS != nil {
			nc = tls.Server(nc, s.cfg.TLS)
		}
		ctx, cancel := context.WithCancel(context.Background())
		c := &conn{srv: s, nc: nc, replies: make(chan *Reply, maxInFlight), ctx: ctx, cancel: cancel}
		c.touch()
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		s.cfg.Conns.track(c, s.cfg.ListenerName)
		s.listener.Opened()
		go func() {
			defer s.wg.Done()
			c.serve()
			s.listener.Closed()
			s.cfg.Conns.release(c, ip)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

// Close stops accepting, closes every connection and waits for them.
func (s *Server) Close() {
	s.stopOnce.Do(func() { close(s.stop) })
	s.mu.Lock()
	if s.ln != nil {
		s.ln.Close()
	}
	for c := range s.conns {
		c.close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// api is one served API: its version range and handler.
type api struct {
	min, max int16
	handle   func(*Request) *Reply
}

// dispatch runs the handler of a decoded request, here or at the active
// controller.
func (s *Server) dispatch(req *Request) *Reply {
	if req.Raw != nil {
		return s.internal[req.Key](req)
	}
	if rep := s.maybeForward(req); rep != nil {
		return rep
	}
	handle := s.apis[req.Key].handle
	if rep := s.mutationQuota(req, handle); rep != nil {
		return rep
	}
	return handle(req)
}

// handleRaft passes another controller's Raft messages to the quorum. The
// sender expects no answer.
func (s *Server) handleRaft(req *Request) *Reply {
	if !s.authorizedCluster(req, acl.OpClusterAction) {
		s.lg.Warn("refusing raft frames: the sender lacks CLUSTER_ACTION", "principal", req.Principal, "remote", req.RemoteAddr)
		return &Reply{ready: closedChan, none: true, closeConn: true}
	}
	if err := s.deps.Raft.Receive(req.Raw); err != nil {
		// The sender redials at once; one warning a minute is enough.
		if now := s.deps.Now().UnixNano(); now-s.raftWarned.Load() > int64(time.Minute) {
			s.raftWarned.Store(now)
			s.lg.Warn("refused raft frame", "remote", req.RemoteAddr, "err", err)
		}
		return &Reply{ready: closedChan, none: true, closeConn: true}
	}
	return &Reply{ready: closedChan, none: true}
}
