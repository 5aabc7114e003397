// Package controller is the metadata state machine of the controller role:
// it checks admin requests against the current image and turns them into
// metadata records, which the quorum commits to the metadata log. Every
// change to topics, partitions, configs, brokers and producer id blocks
// goes through here; nothing else writes metadata.
//
// Requests are handled one at a time, each by run (op.go): a build
// function of the image plans the records and the answer, and run commits
// them. The controller's image includes all of its own committed writes
// before it takes the next request, because the quorum delivers committed
// batches (to Publish) before Append returns.
package controller

import (
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/config"
	"weir/internal/metadata"
	"weir/internal/quorum"
)

// Quorum commits batches of metadata records.
type Quorum interface {
	// Append commits records as one batch and returns the offset of the
	// last one, after the batch has been delivered to subscribers.
	Append(records []metadata.Record) (int64, error)
	// EndOffset is the offset the next record will get.
	EndOffset() int64
	// Status reports, among others, whether this node is the active
	// controller.
	Status() quorum.Status
}

// Config is what the controller needs from the broker configuration.
type Config struct {
	Static    *config.Broker
	ClusterID string
}

// Controller is the metadata state machine. See the package comment.
type Controller struct {
	cfg    Config
	quorum Quorum
	lg     *slog.Logger

	mu    sync.Mutex // one request at a time
	image atomic.Pointer[metadata.Image]
	// sessions are the brokers' heartbeat deadlines, kept by the active
	// controller only, in quorum term sessionsTerm; see brokers.go. smu
	// guards them (heartbeats renew them without mu); under both, mu
	// comes first.
	smu          sync.Mutex
	sessions     map[int32]session
	sessionsTerm uint64
	// waiting counts the heartbeats of each registration that arrived
	// and are not answered yet (guarded by smu).
	waiting map[brokerEpoch]int
	// fastFenced is the broker epoch at which FenceUnreachable last
	// fenced each broker (guarded by mu).
	fastFenced map[int32]int64
	// elections and uncleanElections count the leader changes this
	// node committed as the active controller (ElectionCounts).
	elections, uncleanElections atomic.Uint64
}

// ElectionCounts are the leader elections this node committed while it
// was the active controller, all of them and the unclean ones: a
// partition change naming a new leader, and one naming a RECOVERING
// leader (chosen outside the ISR).
func (c *Controller) ElectionCounts() (all, unclean uint64) {
	return c.elections.Load(), c.uncleanElections.Load()
}

// New returns a controller writing through q; call Publish with every
// committed batch (including the replay at start-up).
func New(cfg Config, q Quorum, lg *slog.Logger) *Controller {
	c := &Controller{cfg: cfg, quorum: q, lg: lg, sessions: map[int32]session{}, waiting: map[brokerEpoch]int{}, fastFenced: map[int32]int64{}}
	c.image.Store(metadata.Empty())
	return c
}

// Publish applies a committed batch to the controller's image.
func (c *Controller) Publish(b quorum.Committed) error {
	img, _, err := c.image.Load().Apply(b.Records, b.LastOffset)
	if err != nil {
		return err
	}
	c.image.Store(img)
	return nil
}

// Image is the controller's current image.
func (c *Controller) Image() *metadata.Image { return c.image.Load() }

// commit appends records (at least one) as one batch; the caller (run)
// holds c.mu. Unclean elections among them (the only changes that set a
// RECOVERING leader) are logged once committed.
func (c *Controller) commit(recs []metadata.Record) (int64, error) {
	last, err := c.quorum.Append(recs)
	if err != nil {
		return last, err
	}
	img := c.Image()
	for _, r := range recs {
		if pc, ok := r.(*metadata.PartitionChangeRecord); ok && pc.Leader >= 0 {
			c.elections.Add(1)
		}
		if pc, ok := r.(*metadata.PartitionChangeRecord); ok && pc.LeaderRecoveryState == recovering && pc.Leader >= 0 {
			c.uncleanElections.Add(1)
			topic := pc.TopicId.String()
			if t := img.TopicsByID.Get(pc.TopicId); t != nil {
				topic = t.Name
			}
			c.lg.Warn("unclean leader election: records acknowledged by the old ISR may be lost",
				"topic", topic, "partition", pc.PartitionId, "leader", pc.Leader)
		}
	}
	return last, nil
}

// requireActive fails with quorum.ErrNotLeader unless this node is the
// active controller, whose image is the latest: a request checked against
// another node's image could be answered from stale state.
func (c *Controller) requireActive() error {
	if !c.quorum.Status().Active {
		return quorum.ErrNotLeader
	}
	return nil
}

// MetadataVersion is the metadata.version feature level weir writes: the
// level of Kafka 4.0 (4.0-IV3), whose record versions weir reads and writes.
const MetadataVersion int16 = 25

// GroupVersion is the group.version feature level weir writes: 1, the
// KIP-848 consumer group protocol.
const GroupVersion int16 = 1

// Bootstrap writes the first records of a new cluster's metadata log: the
// finalized feature levels, then extra (the bootstrap file's SCRAM users).
// The active controller calls it when it takes over; it does nothing once
// metadata.version is set.
func (c *Controller) Bootstrap(extra []metadata.Record) error {
	_, err := run(c, func(img *metadata.Image) (result[struct{}], error) { return bootstrap(img, extra), nil })
	return err
}

// bootstrap builds Bootstrap.
func bootstrap(img *metadata.Image, extra []metadata.Record) result[struct{}] {
	if _, ok := img.Features["metadata.version"]; ok {
		return result[struct{}]{}
	}
	return result[struct{}]{Records: append([]metadata.Record{
		&metadata.FeatureLevelRecord{Name: "metadata.version", FeatureLevel: MetadataVersion},
		// group.version 1 enables the KIP-848 consumer protocol, as in
		// a new Kafka 4.0 cluster.
		&metadata.FeatureLevelRecord{Name: "group.version", FeatureLevel: GroupVersion},
	}, extra...)}
}

// ProducerIDBlockSize is how many producer ids a broker gets at a time.
const ProducerIDBlockSize = 1000

// ProducerIDBlock is a block of producer ids: [First, First+Size).
type ProducerIDBlock struct {
	First int64
	Size  int32
}

// AllocateProducerIDs hands broker a block of producer ids, unique across
// the cluster, of ProducerIDBlockSize ids.
func (c *Controller) AllocateProducerIDs(broker int32, epoch int64) (ProducerIDBlock, error) {
	return run(c, func(img *metadata.Image) (result[ProducerIDBlock], error) {
		return allocateProducerIDs(img, broker, epoch)
	})
}

// allocateProducerIDs builds AllocateProducerIDs.
func allocateProducerIDs(img *metadata.Image, broker int32, epoch int64) (result[ProducerIDBlock], error) {
	var res result[ProducerIDBlock]
	if b := img.Brokers[broker]; b == nil || b.Epoch != epoch {
		return res, kerr.StaleBrokerEpoch
	}
	first := img.NextProducerID
	next := first + ProducerIDBlockSize
	if next < first {
		return res, errors.New("controller: producer ids exhausted")
	}
	rec := metadata.NewProducerIdsRecord()
	rec.BrokerId, rec.BrokerEpoch, rec.NextProducerId = broker, epoch, next
	res.Records, res.Answer = []metadata.Record{rec}, ProducerIDBlock{First: first, Size: ProducerIDBlockSize}
	return res, nil
}

func newUUID() metadata.Uuid {
	var u metadata.Uuid
	for {
		if _, err := rand.Read(u[:]); err != nil {
			panic(fmt.Sprintf("controller: reading random bytes: %v", err))
		}
		// Kafka reserves the all-zero id and ids whose base64 form starts
		// with '-' (they read as command-line flags).
		if u != (metadata.Uuid{}) && u.String()[0] != '-' {
			return u
		}
	}
}
