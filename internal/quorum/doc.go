// Package quorum is the controllers' Raft quorum over the cluster metadata
// log, built on go.etcd.io/raft/v3 (pre-vote and check-quorum on). It
// replicates batches of metadata records among the voters of
// controller.quorum.voters and delivers each committed batch, in order, to
// its subscribers (the controller's state machine and the broker's image
// publisher): the same contract as the single-voter log it replaced.
//
// # Raft on Kafka's log
//
// The Raft log is the partition log __cluster_metadata-0 in
// metadata.log.dir (package log), so it has Kafka's layout: one Raft entry
// is one record batch, with the Raft term as the partition leader epoch and
// offsets assigned in order. A proposal is a batch of metadata records (one
// record each and no producer, as Kafka writes them; the leader knows its
// proposals' entries by their bytes and then their Raft indexes); the
// empty entry a new leader appends
// is a control batch with a LeaderChange record. Raft indexes and Kafka
// offsets differ (a batch holds many records), so the node keeps, for the
// entries since the last snapshot, the offset of each entry's batch.
//
// Every node starts from the same synthesized state: a Raft snapshot at
// index 1, term 1, whose configuration is controller.quorum.voters. The
// first batch of the log is entry 2. Raft node ids are node.id + 1, as
// Raft reserves 0.
//
// # On disk, in metadata.log.dir
//
//	__cluster_metadata-0/%020d.log ...          the Raft log (package log)
//	__cluster_metadata-0/quorum-state           term and vote (see state.go)
//	__cluster_metadata-0/%020d-%010d.checkpoint  snapshots (see snapshot.go),
//	                                             named for end offset and epoch
//
// A snapshot is taken when metadata.log.max.record.bytes.between.snapshots
// bytes were applied since the last one, or
// metadata.log.max.snapshot.interval.ms passed; the log before it is then
// deleted. A restart loads the newest snapshot and replays the log after it.
//
// Entries reach disk (fsync) before the messages that acknowledge them are
// sent, and the term and vote before any message of the new term: Raft's
// persistence rules.
package quorum
