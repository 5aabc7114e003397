package txn

import "time"

// Config holds the broker settings the coordinator obeys. Kafka's key for
// each field is in its comment; DefaultConfig gives Kafka's defaults.
type Config struct {
	// StatePartitions is transaction.state.log.num.partitions: it decides
	// which __transaction_state partition (and so which coordinator) owns
	// a transactional id.
	StatePartitions int32
	// OffsetsPartitions is offsets.topic.num.partitions: AddOffsetsToTxn
	// adds the group's __consumer_offsets partition to the transaction.
	OffsetsPartitions int32
	// MaxTimeout is transaction.max.timeout.ms: a larger
	// transaction.timeout.ms in InitProducerId is INVALID_TRANSACTION_TIMEOUT.
	MaxTimeout time.Duration
	// IDExpiration is transactional.id.expiration.ms: a transactional id
	// with no transaction in progress that has not been used for this long
	// is removed.
	IDExpiration time.Duration
	// AbortTimedOutInterval is
	// transaction.abort.timed.out.transaction.cleanup.interval.ms: how
	// often ongoing transactions past their timeout are aborted.
	AbortTimedOutInterval time.Duration
	// RemoveExpiredInterval is
	// transaction.remove.expired.transaction.cleanup.interval.ms: how
	// often expired transactional ids are removed.
	RemoveExpiredInterval time.Duration
	// RetryBackoff is how long a marker that failed with a retriable error
	// (or a completion record that could not be written) waits before it
	// is sent again (Kafka's sender retries on its next poll; 100 ms is
	// retry.backoff.ms).
	RetryBackoff time.Duration
	// Stats, when set, receives the coordinator's metrics (stats.go).
	Stats *Stats
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		StatePartitions:       50,
		OffsetsPartitions:     50,
		MaxTimeout:            15 * time.Minute,
		IDExpiration:          7 * 24 * time.Hour,
		AbortTimedOutInterval: 10 * time.Second,
		RemoveExpiredInterval: time.Hour,
		RetryBackoff:          100 * time.Millisecond,
	}
}
