package server

import (
	"context"
	"errors"
	"time"

	"weir/internal/quorum"
)

// rebalanceLeaders moves leaderships back to preferred replicas every
// leader.imbalance.check.interval.seconds while this node is the active
// controller (controller.RebalanceLeaders), when
// auto.leader.rebalance.enable is set.
func (s *Server) rebalanceLeaders(ctx context.Context) {
	if !s.cfg.AutoLeaderRebalanceEnable {
		return
	}
	t := time.NewTicker(s.cfg.LeaderImbalanceCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if !s.quorum.Status().Active {
				continue
			}
			if _, err := s.controller.RebalanceLeaders(); err != nil && !errors.Is(err, quorum.ErrNotLeader) {
				s.lg.Error("rebalancing leaders", "err", err)
			}
		}
	}
}
