package server

// Fast fencing (weir.fast.fencing.enable): the active controller need not
// wait broker.session.timeout.ms to fence a broker whose process is gone.
// A SIGKILLed (or crashed) process's sockets are closed by its kernel, so
// the controller sees the connection that carried the broker's heartbeats
// close, and a connection attempt to the broker's address is refused:
// nothing listens there any more. Either clue alone is weak (a broker
// closes a connection whose call timed out; a refused dial may come from
// a firewall), so the controller acts only on both:
//
//   - a hint: the broker closed or reset its heartbeat connection
//     (kafka.Deps.BrokerConnLost), or this node just became the active
//     controller (it has no connections yet, and a dead former controller
//     would otherwise get a full session, as would this node's own
//     broker as registered by its previous process, before a crash,
//     which the restarted broker's registration must wait out);
//   - a probe: this node dials the broker's inter-broker listener and the
//     dial is refused (ECONNREFUSED). A dial that connects is tried again
//     twice, 100 ms apart: a dying process closes its sockets one after
//     another, so its listener may still accept for a moment after its
//     heartbeat connection closed, but not for long; a timeout or any
//     other error proves nothing, and the session timeout stays in
//     charge. This node's previous process needs no dial when it was
//     registered at an address this process now serves (a fixed port):
//     no other process can listen there;
//   - then controller.FenceUnreachable fences it as an expired session
//     would, provided it is still registered under the same epoch,
//     unfenced, and sent no heartbeat since the hint, and was not fenced
//     this way at that epoch before.
//
// Why a wrong fence is harmless is in docs/ARCHITECTURE.md (Fast
// fencing): it is the same commit as a session expiry, a clean election
// from the ISR, and a live broker unfences with its next heartbeat.

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/metadata"
	"weir/internal/quorum"
)

// fastFencer runs the probes of the active controller (see the file
// comment).
type fastFencer struct {
	s  *Server
	mu sync.Mutex
	// ctx is set once the node runs and cleared when it stops; probes
	// run only in between.
	ctx context.Context
	wg  sync.WaitGroup
}

// start lets probes run until ctx ends; stop waits for those under way.
func (f *fastFencer) start(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ctx = ctx
}

func (f *fastFencer) stop() {
	f.mu.Lock()
	f.ctx = nil
	f.mu.Unlock()
	f.wg.Wait()
}

// connLost is kafka.Deps.BrokerConnLost of the controller listeners.
func (f *fastFencer) connLost(broker int32, epoch int64) {
	f.suspect(broker, epoch, time.Now())
}

// suspectAll probes every unfenced broker but this process's own
// registration: a controller that just became active has heard none of
// them yet.
func (f *fastFencer) suspectAll() {
	now := time.Now()
	for id, b := range f.s.controller.Image().Brokers {
		if !b.Fenced {
			f.suspect(id, b.Epoch, now)
		}
	}
}

// previousIncarnation reports whether b is this node's broker registered
// by an earlier process (one that crashed: a clean shutdown leaves it
// fenced), which this process's own registration must wait out.
func (f *fastFencer) previousIncarnation(b *metadata.Broker) bool {
	l := f.s.lifecycle
	return l != nil && b.ID == f.s.cfg.NodeID && b.IncarnationID != l.incarnation
}

// servesEndpoint reports whether this process serves e, an advertised
// inter-broker endpoint: then no other process listens there.
func (f *fastFencer) servesEndpoint(e metadata.BrokerEndpoint) bool {
	own, err := f.s.endpoints()
	if err != nil {
		return false
	}
	for _, o := range own {
		if o.Name == e.Name && o.Host == e.Host && o.Port == e.Port {
			return true
		}
	}
	return false
}

// suspect probes broker, registered at epoch, which gave a hint at since
// that it died.
func (f *fastFencer) suspect(broker int32, epoch int64, since time.Time) {
	if !f.s.cfg.FastFencing {
		return
	}
	if b := f.s.controller.Image().Brokers[broker]; broker == f.s.cfg.NodeID && (b == nil || !f.previousIncarnation(b)) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ctx == nil {
		return
	}
	ctx := f.ctx
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		f.probe(ctx, broker, epoch, since)
	}()
}

// probe dials broker's inter-broker listener and, when the dial is
// refused, asks the controller to fence it.
func (f *fastFencer) probe(ctx context.Context, broker int32, epoch int64, since time.Time) {
	s := f.s
	if !s.quorum.Status().Active {
		return
	}
	b := s.controller.Image().Brokers[broker]
	if b == nil || b.Fenced || b.Epoch != epoch {
		return
	}
	e, ok := b.Endpoint(s.cfg.InterBrokerListenerName)
	if !ok {
		return
	}
	addr := net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port)))
	// This node's previous process at the address this one now serves
	// is as gone as one whose address refuses connections.
	if !(f.previousIncarnation(b) && f.servesEndpoint(e)) &&
		!refuses(ctx, func(ctx context.Context) error { return f.dial(ctx, addr) }, 100*time.Millisecond) {
		return
	}
	fenced, err := s.controller.FenceUnreachable(broker, epoch, since)
	switch {
	case err != nil && !errors.Is(err, quorum.ErrNotLeader) && !errors.Is(err, kerr.NotController):
		s.lg.Error("fencing a broker found dead", "broker", broker, "err", err)
	case fenced && f.previousIncarnation(b):
		s.lg.Info("fenced this node's broker as its previous process registered it, before that session ran out",
			"broker", broker, "broker_epoch", epoch, "addr", addr)
	case fenced:
		s.lg.Info("fenced a broker before its session ran out: its connection closed and its address refuses connections",
			"broker", broker, "broker_epoch", epoch, "addr", addr, "after", time.Since(since).Round(time.Millisecond))
	}
}

// refuses reports whether an address refuses connections: a dial is
// refused (ECONNREFUSED) before three dials, pause apart, connect. Any
// other dial error proves nothing (false).
func refuses(ctx context.Context, dial func(context.Context) error, pause time.Duration) bool {
	for attempt := 0; ; attempt++ {
		err := dial(ctx)
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			return true
		case err != nil || attempt == 2:
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(pause):
		}
	}
}

// dial connects to addr and closes the connection at once.
func (f *fastFencer) dial(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, min(time.Second, f.s.cfg.BrokerSessionTimeout/3))
	defer cancel()
	nc, err := f.s.opts.Dial(ctx, "tcp", addr)
	if err == nil {
		nc.Close()
	}
	return err
}
