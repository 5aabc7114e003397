package server

import (
	"context"

	"weir/internal/controller"
	"weir/internal/link"
)

// syncLinks runs the cluster links' periodic tasks (link.Syncer) while
// this node is the active controller: they read the sources and commit
// what follows from them through the local controller.
func (s *Server) syncLinks(ctx context.Context) {
	link.NewSyncer(link.SyncConfig{
		Image:  s.controller.Image,
		Active: func() bool { return s.quorum.Status().Active },
		SyncMirror: func(u link.MirrorUpdate) error {
			_, err := s.controller.SyncMirror(controller.MirrorSync{Topic: u.Topic, SourceTopic: u.SourceTopic,
				Configs: u.Configs, Partitions: u.Partitions})
			return err
		},
		Logger: s.lg.With("component", "cluster-link-sync"),
	}).Run(ctx)
}
