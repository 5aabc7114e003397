package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/controller"
	"weir/internal/kafka"
	"weir/internal/nodeclient"
)

// lifecycle is the broker side of KIP-631: it registers this broker with
// the active controller, heartbeats every broker.heartbeat.interval.ms
// with the broker's metadata offset, re-registers when the controller has
// forgotten it, and asks for a controlled shutdown when the node stops.
// It also routes the node's other calls to the active controller: its own
// controller when active, else the active one's controller listener.
type lifecycle struct {
	s           *Server
	incarnation [16]byte

	epoch  atomic.Int64
	fenced atomic.Bool
	// wantFence is sent in heartbeats while the broker opens its logs
	// and replicas after registering, as Kafka's broker does until it is
	// ready to be unfenced: the session stays alive, the broker fenced.
	wantFence atomic.Bool
	// shuttingDown is set when the controlled shutdown starts: from then
	// on every heartbeat asks to shut down, as Kafka's broker's do, so
	// the regular ones never ask to be unfenced again.
	shuttingDown atomic.Bool
	unfenced     chan struct{} // closed the first time the broker is unfenced
	once         sync.Once
	// answered (unix ns) is when the controller last answered a
	// heartbeat (0: never).
	answered atomic.Int64

	// previousEpoch is the broker epoch of the previous run, from the
	// clean shutdown marker (-1: it crashed). Set before Start.
	previousEpoch int64

	// Connections to the controllers, one set for the broker's own calls
	// (registration, heartbeats, producer ids) and one for forwarded
	// requests, so a slow forwarded request never delays a heartbeat.
	mu       sync.Mutex
	conns    map[int32]*nodeclient.Conn
	forwards map[int32]*nodeclient.Conn
}

func newLifecycle(s *Server) *lifecycle {
	l := &lifecycle{s: s, unfenced: make(chan struct{}), conns: map[int32]*nodeclient.Conn{}, forwards: map[int32]*nodeclient.Conn{}}
	l.incarnation = newIncarnation()
	l.epoch.Store(-1)
	l.fenced.Store(true)
	return l
}

var errNoController = errors.New("no active controller known")

// lastEpoch is the broker epoch of the last registration (-1: none); nil
// safe.
func (l *lifecycle) lastEpoch() int64 {
	if l == nil {
		return -1
	}
	return l.epoch.Load()
}

// target returns the connection to the active controller, or nil when it
// is this node's own.
func (l *lifecycle) target() (*nodeclient.Conn, error) {
	return l.connTo(l.conns, "weir-broker")
}

func (l *lifecycle) connTo(pool map[int32]*nodeclient.Conn, clientID string) (*nodeclient.Conn, error) {
	leader, local := l.s.leader()
	if local {
		return nil, nil
	}
	if leader < 0 || leader == l.s.cfg.NodeID {
		return nil, errNoController
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := pool[leader]; c != nil {
		return c, nil
	}
	for _, v := range l.s.cfg.QuorumVoters {
		if v.ID == leader {
			c := nodeclient.New(v.Address(), fmt.Sprintf("%s-%d", clientID, l.s.cfg.NodeID), l.s.dialController)
			pool[leader] = c
			return c, nil
		}
	}
	return nil, fmt.Errorf("controller %d is not among controller.quorum.voters", leader)
}

// Local implements kafka.Forwarder.
func (l *lifecycle) Local() bool {
	_, local := l.s.leader()
	return local
}

// Forward implements kafka.Forwarder.
func (l *lifecycle) Forward(ctx context.Context, body []byte) ([]byte, error) {
	c, err := l.connTo(l.forwards, "weir-forward")
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, errors.New("the active controller is local")
	}
	return c.RoundTrip(ctx, kafka.ForwardAPIKey, 0, false, body)
}

// allocateProducerIDs gets a block of producer ids from the active
// controller.
func (l *lifecycle) allocateProducerIDs() (int64, int32, error) {
	c, err := l.target()
	if err != nil {
		return 0, 0, err
	}
	if c == nil {
		block, err := l.s.controller.AllocateProducerIDs(l.s.cfg.NodeID, l.epoch.Load())
		return block.First, block.Size, err
	}
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.BrokerID, req.BrokerEpoch = l.s.cfg.NodeID, l.epoch.Load()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Call(ctx, req)
	if err != nil {
		return 0, 0, err
	}
	r := resp.(*kmsg.AllocateProducerIDsResponse)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return 0, 0, err
	}
	return r.ProducerIDStart, r.ProducerIDLen, nil
}

func (l *lifecycle) registrationRequest() (*kmsg.BrokerRegistrationRequest, error) {
	eps, err := l.s.endpoints()
	if err != nil {
		return nil, err
	}
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.SetVersion(4)
	req.BrokerID, req.ClusterID, req.IncarnationID = l.s.cfg.NodeID, l.s.clusterID, l.incarnation
	for _, e := range eps {
		req.Listeners = append(req.Listeners, kmsg.BrokerRegistrationRequestListener{Name: e.Name, Host: e.Host, Port: e.Port, SecurityProtocol: e.SecurityProtocol})
	}
	for _, name := range slices.Sorted(maps.Keys(controller.SupportedFeatures)) {
		r := controller.SupportedFeatures[name]
		req.Features = append(req.Features, kmsg.BrokerRegistrationRequestFeature{Name: name, MinSupportedVersion: r.Min, MaxSupportedVersion: r.Max})
	}
	if l.s.cfg.Rack != "" {
		rack := l.s.cfg.Rack
		req.Rack = &rack
	}
	// The epoch of this process's last registration, else of the run
	// before it if that ended cleanly (-1 after a crash).
	req.PreviousBrokerEpoch = l.epoch.Load()
	if req.PreviousBrokerEpoch < 0 {
		req.PreviousBrokerEpoch = l.previousEpoch
	}
	return req, nil
}

// register registers the broker, retrying until it succeeds or ctx ends.
func (l *lifecycle) register(ctx context.Context) error {
	req, err := l.registrationRequest()
	if err != nil {
		return err
	}
	for {
		epoch, err := l.registerOnce(ctx, req)
		if err == nil {
			l.epoch.Store(epoch)
			l.fenced.Store(true)
			l.s.lg.Info("registered with the controller", "broker_epoch", epoch)
			return nil
		}
		l.s.lg.Debug("registration failed; retrying", "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("registering with the controller: %w (last error: %v)", ctx.Err(), err)
		case <-time.After(l.s.cfg.BrokerHeartbeatInterval / 4):
		}
	}
}

func (l *lifecycle) registerOnce(ctx context.Context, req *kmsg.BrokerRegistrationRequest) (int64, error) {
	c, err := l.target()
	if err != nil {
		return 0, err
	}
	if c == nil {
		return l.s.controller.RegisterBroker(req, time.Now())
	}
	ctx, cancel := context.WithTimeout(ctx, l.callTimeout())
	defer cancel()
	resp, err := c.Call(ctx, req)
	if err != nil {
		return 0, err
	}
	r := resp.(*kmsg.BrokerRegistrationResponse)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return 0, err
	}
	return r.BrokerEpoch, nil
}

// callTimeout bounds a registration or heartbeat call. A controller that
// stops answering (paused, partitioned) must not hold the broker past the
// point where it could still reach the next active controller within its
// session.
func (l *lifecycle) callTimeout() time.Duration {
	return min(2*l.s.cfg.BrokerHeartbeatInterval, l.s.cfg.BrokerSessionTimeout/2)
}

// heartbeat sends one heartbeat and notes the answer.
func (l *lifecycle) heartbeat(ctx context.Context, wantShutdown bool) (*kmsg.BrokerHeartbeatResponse, error) {
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.SetVersion(2)
	req.BrokerID, req.BrokerEpoch = l.s.cfg.NodeID, l.epoch.Load()
	req.CurrentMetadataOffset, req.WantShutdown = l.s.publisher.appliedOffset(), wantShutdown || l.shuttingDown.Load()
	req.WantFence = l.wantFence.Load() && !req.WantShutdown
	c, err := l.target()
	if err != nil {
		return nil, err
	}
	var resp *kmsg.BrokerHeartbeatResponse
	if c == nil {
		if resp, err = l.s.controller.BrokerHeartbeat(req, time.Now); err != nil {
			return nil, err
		}
	} else {
		ctx, cancel := context.WithTimeout(ctx, l.callTimeout())
		defer cancel()
		out, err := c.Call(ctx, req)
		if err != nil {
			return nil, err
		}
		resp = out.(*kmsg.BrokerHeartbeatResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return nil, err
		}
	}
	l.answered.Store(time.Now().UnixNano())
	l.fenced.Store(resp.IsFenced)
	if !resp.IsFenced {
		l.once.Do(func() { close(l.unfenced) })
	}
	return resp, nil
}

// run heartbeats until ctx ends, re-registering when the controller no
// longer knows this broker's epoch.
func (l *lifecycle) run(ctx context.Context) {
	t := time.NewTicker(l.s.cfg.BrokerHeartbeatInterval)
	defer t.Stop()
	for {
		_, err := l.heartbeat(ctx, false)
		if errors.Is(err, kerr.StaleBrokerEpoch) {
			l.s.lg.Warn("the controller fenced this broker's registration; registering again")
			if err := l.register(ctx); err != nil {
				return
			}
			continue
		}
		if err != nil && ctx.Err() == nil {
			l.s.lg.Debug("heartbeat failed", "err", err)
		}
		if err == nil {
			l.reportOffline(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// keepAlive heartbeats, asking to stay fenced, until stop is closed; done
// is closed when it returns. The broker runs it while it opens its logs
// and replicas, which can outlast its session.
func (l *lifecycle) keepAlive(ctx context.Context, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	l.wantFence.Store(true)
	defer l.wantFence.Store(false)
	t := time.NewTicker(l.s.cfg.BrokerHeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := l.heartbeat(ctx, false); err != nil && ctx.Err() == nil {
			l.s.lg.Debug("heartbeat failed", "err", err)
		}
	}
}

// awaitUnfenced waits until the controller has unfenced this broker,
// heartbeating meanwhile (run is not started yet).
func (l *lifecycle) awaitUnfenced(ctx context.Context) error {
	for {
		if _, err := l.heartbeat(ctx, false); err != nil {
			l.s.lg.Debug("heartbeat failed", "err", err)
		}
		if !l.fenced.Load() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting to be unfenced: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// controlledShutdown asks the controller to move this broker's leaderships
// away, until it says the broker may stop or the time runs out.
func (l *lifecycle) controlledShutdown(timeout time.Duration) {
	if l.epoch.Load() < 0 || !l.s.cfg.ControlledShutdownEnable {
		return
	}
	l.shuttingDown.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		resp, err := l.heartbeat(ctx, true)
		if err == nil && resp.ShouldShutdown {
			l.s.lg.Info("controlled shutdown complete")
			return
		}
		select {
		case <-ctx.Done():
			l.s.lg.Warn("controlled shutdown did not complete in time", "last_error", err)
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (l *lifecycle) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		c.Close()
	}
	for _, c := range l.forwards {
		c.Close()
	}
}
