// Package group is the group coordinator of one broker, for classic groups
// and for consumer groups of the new protocol (KIP-848, server-side
// assignment; the consumer_*.go files), written as a deterministic state
// machine: it opens no sockets, starts no goroutines, never sleeps and never
// reads the clock. Service drives it on a coordinator.Runtime, which does
// the I/O. The Coordinator is a shard of two managers, as Kafka's
// GroupCoordinatorShard: groupManager (groups.go; the groups and their
// requests) and offsetManager (offsets.go, txn_offsets.go; committed and
// transactional offsets).
//
// # Inputs and outputs
//
// A Coordinator is not safe for concurrent use; one goroutine owns it. Every
// input is a method call that carries the current time, and every call
// returns a Ready value, in the manner of etcd raft's Ready:
//
//	Handle(now, Request)              one JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
//	                                  OffsetCommit, TxnOffsetCommit, OffsetFetch,
//	                                  DescribeGroups, ListGroups, DeleteGroups,
//	                                  OffsetDelete, ConsumerGroupHeartbeat or
//	                                  ConsumerGroupDescribe
//	SetTopics(now, topics)            the broker's topics (name -> id, partition count)
//	                                  changed; call it before serving and on every
//	                                  metadata image change. Consumer groups use it for
//	                                  their assignments.
//	Tick(now)                         timers: session, rebalance, initial delay, pending
//	                                  sync, new member join, offsets retention
//	BeginLoad(now, p)                 this broker became leader of __consumer_offsets-p;
//	                                  its groups answer COORDINATOR_LOAD_IN_PROGRESS (a
//	                                  partition served already, re-elected, is served
//	                                  until LoadPartition replaces it)
//	LoadPartition(now, p, records)    the partition's records, in log order, with their
//	                                  offsets and batch attributes, control records
//	                                  included; the groups and offsets are rebuilt and
//	                                  served from now on (an undecodable record is
//	                                  skipped, and reported)
//	UnloadPartition(now, p)           leadership lost; its groups answer NOT_COORDINATOR
//	Persisted(now, writeID, offset, err)
//	                                  the records of a Write are durable from offset on
//	                                  (err == nil) or could not be written
//	TxnMarker(now, p, producerID, commit, offset)
//	                                  a COMMIT or ABORT marker of a producer is durable
//	                                  at offset of p: its pending transactional offsets
//	                                  are committed or dropped (txn_offsets.go)
//
//	Ready.Responses   responses to send, each with the Token of its Request. A request
//	                  is answered exactly once, possibly by a later call: a JoinGroup
//	                  waits for its rebalance, a follower's SyncGroup for the leader's
//	                  assignment, a commit or delete for its records to persist.
//	Ready.Writes      records to append to __consumer_offsets-Partition, in order, each
//	                  Write as one batch (a transactional batch of a producer for a
//	                  TxnOffsetCommit). The driver reports each back with
//	                  Persisted(ID, offset, err).
//	Ready.Deadline    when to call Tick next; zero means no timer is pending. A deadline
//	                  at or before now means "call Tick now".
//
// The driver's loop (coordinator.Runtime) is therefore: feed an input, send Responses, append
// Writes (reporting each with Persisted once durable, or failed), and arrange
// to call Tick at Deadline. Writes of one partition must be appended in the
// order they are returned. Handle panics on a request type it does not serve:
// that is a wiring bug, not bad input.
//
// Requests are franz-go kmsg structs with Version set; responses are kmsg
// structs of the same version. Error codes are Kafka's, chosen as Kafka 3.x/4.x
// choose them (see the comment of each handler). Persisted's err should wrap a
// *kerr.Error naming the append failure (NOT_LEADER_OR_FOLLOWER, ...); Kafka's
// translation of append errors into group errors is applied here.
//
// Offsets are applied to the in-memory state when their records persist, so
// OffsetFetch never returns an offset that a crash could lose; transactional
// offsets (TxnOffsetCommit) once their transaction's COMMIT marker is
// durable too.
//
// # Records in __consumer_offsets
//
// Keys and values are Kafka's (kmsg's OffsetCommitKey/Value and
// GroupMetadataKey/Value). Integers are big-endian; a string is an int16
// length and UTF-8 bytes (length -1 is null); bytes are an int32 length and
// the bytes.
//
//	offset commit key, version 1 (0 is read too):
//	    | version int16 = 1 | group string | topic string | partition int32 |
//	offset commit value, version 3 (written unless a retention time was given):
//	    | version int16 = 3 | offset int64 | leader_epoch int32 | metadata string |
//	    | commit_timestamp int64 |
//	offset commit value, version 1 (a v2-v4 OffsetCommit with retention_time_ms):
//	    | version int16 = 1 | offset int64 | metadata string | commit_timestamp int64 |
//	    | expire_timestamp int64 |
//	group metadata key, version 2:
//	    | version int16 = 2 | group string |
//	group metadata value, version 3 (0-4 are read):
//	    | version int16 = 3 | protocol_type string | generation int32 |
//	    | protocol nullable string | leader nullable string |
//	    | current_state_timestamp int64 | member count int32 | members... |
//	  member: | member_id string | group_instance_id nullable string |
//	    | client_id string | client_host string | rebalance_timeout int32 |
//	    | session_timeout int32 | subscription bytes | assignment bytes |
//
// Consumer groups (KIP-848) are kept in Kafka 4.0's records, keyed by the
// record type in the version field. Keys are not flexible; every value is
// version 0 and flexible (KIP-482): compact strings and arrays carry
// length+1 as an unsigned varint (0 is null), a uuid is 16 bytes, and each
// struct ends with a tagged field section (written empty: a varint 0;
// tags are skipped when read). Topics are written in topic id order.
//
//	key 3:  | version int16 = 3 | group string |
//	  value: | version int16 = 0 | epoch int32 | tags |            (group epoch)
//	key 4:  | version int16 = 4 | group string |                   (subscription metadata)
//	  value: | version int16 = 0 | topics [topic_id uuid | name string |
//	         |   partitions int32 | racks [partition int32 | racks [string] | tags] |
//	         |   tags] | tags |                                     (racks written empty)
//	key 5:  | version int16 = 5 | group string | member string |
//	  value: | version int16 = 0 | instance_id nullable string | rack_id nullable string |
//	         | client_id string | client_host string | subscribed_topic_names [string] |
//	         | subscribed_topic_regex nullable string | rebalance_timeout_ms int32 |
//	         | server_assignor nullable string | tags |
//	key 6:  | version int16 = 6 | group string |
//	  value: | version int16 = 0 | assignment_epoch int32 | tags |
//	key 7:  | version int16 = 7 | group string | member string |   (target assignment)
//	  value: | version int16 = 0 | topics [topic_id uuid | partitions [int32] | tags] | tags |
//	key 8:  | version int16 = 8 | group string | member string |   (current assignment)
//	  value: | version int16 = 0 | member_epoch int32 | previous_member_epoch int32 |
//	         | state int8 | assigned topics [..as key 7..] | pending_revocation [..] | tags |
//	key 16: | version int16 = 16 | group string | regex string |  (resolved regex)
//	  value: | version int16 = 0 | topics [string] | version int64 | timestamp int64 | tags |
//
// A heartbeat writes, in this order, what changed: the member's key 5, the
// key 4 and key 3 of a new group epoch, the key 7 of every member whose
// target changed and key 6, then the member's key 8. A member that goes
// is tombstoned with its keys 8, 7, 5 (then a new key 3); a deleted group
// with its keys 6, 4, 16 and 3. The state member (key 8) is 0 Stable, 1
// UnrevokedPartitions, 2 UnreleasedPartitions.
//
// A null value is a tombstone: the offset, the member's record, or the
// whole group is deleted. LoadPartition replays the records in order, so the
// last record of a key wins and tombstones remove what came before; a group
// id is classic or consumer as its latest record says. Offset commits in a
// transactional batch are pending for its producer until a control record
// of that producer (key | version int16 = 0 | type int16: 0 ABORT, 1 COMMIT |)
// ends them; a COMMIT makes them committed unless the committed offset's
// record is later in the log. As in Kafka's replay, an offset commit
// record makes its group exist (empty and without protocol type when no
// other record describes it) until a tombstone of the group. Keys of other
// versions (share and streams group records) are skipped.
package group
