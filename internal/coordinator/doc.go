// Package coordinator is the runtime shared by the broker's coordinators
// (groups on __consumer_offsets, transactions on __transaction_state), in
// the manner of Kafka's CoordinatorRuntime: each coordinator is a
// deterministic state machine (a Shard) over the partitions of its
// internal topic, and a Runtime drives it on its own goroutine. The
// Runtime loads a partition's state by replaying its records when this
// broker becomes the partition's leader, feeds the shard requests, events
// and timer wake-ups, appends the shard's writes through the partition (a
// PartitionLog), reports their outcome back, and completes the responses
// the shard gives.
//
// The package also holds what the shards share: Output, the plumbing of
// each input (its time, the Ready being built, the writes in flight and
// their outcomes), Timers, the heap of their wake-ups, and PartitionFor,
// Kafka's mapping of a key to its partition.
package coordinator
