package kafka

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/log"
	"weir/internal/metadata"
	"weir/internal/partition"
)

// leaderPartition returns the local replica of tp, or the error a client
// should get (see missingPartition).
func (s *Server) leaderPartition(img *metadata.Image, tp log.TopicPartition) (*partition.Partition, error) {
	if p := s.deps.Partitions.Get(tp); p != nil {
		return p, nil
	}
	return nil, s.missingPartition(img, tp)
}

// missingPartition is the error for a partition without a local replica:
// KAFKA_STORAGE_ERROR when its log here could not be opened (as Kafka
// answers for a replica in a failed log directory),
// UNKNOWN_TOPIC_OR_PARTITION when the image has no such partition,
// NOT_LEADER_OR_FOLLOWER when another broker hosts it.
func (s *Server) missingPartition(img *metadata.Image, tp log.TopicPartition) error {
	if err := s.deps.Partitions.Offline(tp); err != nil {
		return err
	}
	if t := img.Topics.Get(tp.Topic); t != nil && t.Partitions[tp.Partition] != nil {
		return partition.ErrNotLeader
	}
	return kerr.UnknownTopicOrPartition
}

// awaitMetadata waits until this broker's image includes a committed
// metadata offset, so that an admin request's effect is visible here when
// its response arrives. It gives up after timeout (or 30 s when <= 0).
func (s *Server) awaitMetadata(ctx context.Context, offset int64, timeout time.Duration) error {
	if offset < 0 {
		return nil
	}
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return s.deps.Metadata.WaitFor(ctx, offset)
}
