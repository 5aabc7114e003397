package server

import (
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/acl"
	"weir/internal/controller"
	"weir/internal/link"
)

// newLinkSyncer returns the runner of the cluster links' periodic tasks
// (link.Syncer), which work while this node is the active controller:
// they read the sources and commit what follows from them through the
// local controller, and consumer offsets through a client of this
// cluster's brokers, reached as brokers reach each other.
func (s *Server) newLinkSyncer() *link.Syncer {
	return link.NewSyncer(link.SyncConfig{
		Image:  s.controller.Image,
		Active: func() bool { return s.quorum.Status().Active },
		SyncMirror: func(u link.MirrorUpdate) error {
			_, err := s.controller.SyncMirror(controller.MirrorSync{Topic: u.Topic, SourceTopic: u.SourceTopic,
				Configs: u.Configs, Partitions: u.Partitions})
			return err
		},
		CreateMirror: func(linkName string, u link.MirrorUpdate) error {
			_, err := s.controller.CreateMirrorTopic(controller.MirrorTopic{Topic: u.Topic, Link: linkName, SourceTopic: u.SourceTopic,
				Partitions: u.Partitions, ReplicationFactor: -1, Configs: u.Configs})
			return err
		},
		CreateACLs: func(bs []acl.Binding) error {
			res, err := s.controller.CreateAcls(bs)
			return errors.Join(append(res.Errs, err)...)
		},
		DeleteACLs: func(fs []acl.Filter) error {
			res, err := s.controller.DeleteAcls(fs)
			for _, d := range res.Filters {
				err = errors.Join(err, d.Err)
			}
			return err
		},
		Local:  s.localClient,
		Logger: s.lg.With("component", "cluster-link-sync"),
	})
}

// localClient returns a new client of this cluster, seeded with every
// registered broker's inter-broker endpoint and dialled with the
// inter-broker TLS and SASL settings.
func (s *Server) localClient() (*kgo.Client, error) {
	img := s.controller.Image()
	var seeds []string
	for _, b := range img.Brokers {
		if e, ok := b.Endpoint(s.cfg.InterBrokerListenerName); ok && !b.Fenced {
			seeds = append(seeds, net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))))
		}
	}
	if len(seeds) == 0 {
		return nil, errors.New("no unfenced broker to reach")
	}
	return kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.Dialer(s.dialBroker), kgo.ClientID(fmt.Sprintf("weir-cluster-link-sync-%d", s.cfg.NodeID)))
}
