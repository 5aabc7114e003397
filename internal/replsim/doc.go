// Package replsim is a deterministic simulation of ISR replication: one
// controller and three brokers hosting one partition (replication factor 3,
// min.insync.replicas=2), driven by a seeded scheduler with a simulated
// clock. It runs the real code, not a model of it:
//
//   - the controller is internal/controller's state machine over an
//     in-memory quorum (every Append commits at once, as in the controller's
//     own tests): broker registration, heartbeats, session fencing
//     (FenceStaleBrokers), elections on fencing and unfencing, unclean
//     election, and AlterPartition;
//   - each broker is internal/log's Manager over a vfstest.MemFS and
//     internal/partition's Manager, fed the committed metadata batches in
//     order through metadata.Image.Apply and Manager.Apply, as the broker's
//     publisher does; its replicas replicate through Partition.ReadForFollower
//     (leader) and fetcher.Apply (follower), propose ISR changes through the
//     Replication hooks, and shrink the ISR on replica.lag.time.max.ms;
//   - producers send idempotent batches built with internal/record, acks=all
//     and acks=1, through Partition.Append, with the produce handler's
//     acks=all wait and timeout.
//
// Everything between nodes is a message on the scheduler's queue: fetch
// requests and answers (with the leader's long poll), produce requests and
// answers, AlterPartition, registrations, heartbeats and metadata fetches.
// Faults are chosen by the seed: messages dropped, delayed, reordered
// (random latency) and duplicated; links cut; brokers paused (their events
// wait), crashed (the log directory replaced by a crash clone that keeps only
// what was synced, with torn tails, reopened through log.Manager.Load) and
// restarted; brokers fenced by the controller when their heartbeats stop.
// Between faults come an admin's DeleteRecords at the leader, a controller
// failover (a new quorum term: sessions start over) and log flushes.
// After every step the invariants of DESIGN.md are checked (see check.go);
// at the end faults stop, the cluster heals and quiesces, and every
// acknowledged acks=all record must be on the leader exactly once, in order.
//
// Most seeds keep within Kafka's failure assumption: at most one broker is
// impaired (down, paused, cut from the controller, or restarted and not yet
// back in the ISR) at a time, and never the last healthy ISR member. A share
// of seeds ("chaos") drops that guard and allows unclean leader election;
// there the durability checks relax once data loss becomes legitimate.
// Outside chaos seeds, registrations and heartbeats are lost only to cut
// links (random loss would fence healthy brokers behind the guard's back).
// In every seed an AlterPartition request reaches the controller before
// its sender gives up and sends it again, or never: weir, like Kafka,
// takes INELIGIBLE_REPLICA to mean the change was not applied, which an
// earlier send applied after the refused retry would contradict.
//
// Not modelled: the Raft quorum itself (one always-available controller
// whose failover only resets the sessions), more than one partition or
// topic, consumers and read_committed, transactions, reassignment,
// preferred-leader rebalancing, controlled shutdown, time and size
// retention, disk errors, replication quotas, fetch sessions, producers
// with more than one request in flight, and the wire encoding of requests
// (messages carry the decoded values). A follower's ListOffsets call after
// OFFSET_OUT_OF_RANGE is answered at once from the leader's current state.
// The produce and fetch handlers of internal/kafka are mirrored in a few
// lines (they need a connection), calling the same partition methods in the
// same order. log.Manager.Load opens logs on goroutines it waits for; the
// controller draws topic ids from crypto/rand; neither changes what a seed
// does.
package replsim
