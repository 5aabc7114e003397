// Package txn is the transaction coordinator of one broker (KIP-98, with
// KIP-360's epoch bumps, KIP-664's admin APIs and KIP-890's verification),
// written as a deterministic state machine: it opens no sockets, starts no
// goroutines, never sleeps and never reads the clock. Service drives it on a
// coordinator.Runtime.
//
// The coordinator of a transactional id is the leader of its
// __transaction_state partition (hash of the id, as Kafka computes it).
// Each transactional id has one record there, rewritten at every change of
// its state; the coordinator epoch, carried in every marker, is the leader
// epoch of that partition.
//
// # Inputs and outputs
//
// A Coordinator is not safe for concurrent use; one goroutine owns it.
// Every input is a method call that carries the current time, and returns
// a Ready value:
//
//	Handle(now, Request)              one InitProducerId (with a transactional
//	                                  id), AddPartitionsToTxn, AddOffsetsToTxn,
//	                                  EndTxn, DescribeTransactions or
//	                                  ListTransactions
//	SetTopics(topics)                 the cluster's topics and partition counts
//	Tick(now)                         timers: marker retries, the timed-out
//	                                  transaction sweep, id expiration
//	BeginLoad(now, p)                 this broker became leader of
//	                                  __transaction_state-p (again, if in a new
//	                                  epoch: what it served is dropped,
//	                                  NOT_COORDINATOR); its ids answer
//	                                  COORDINATOR_LOAD_IN_PROGRESS
//	LoadPartition(now, p, epoch, rs)  the partition's records, in log order, and
//	                                  its leader epoch; prepared transactions
//	                                  resume writing their markers (an
//	                                  undecodable record is skipped, and reported)
//	UnloadPartition(now, p)           leadership lost: NOT_COORDINATOR
//	Persisted(now, writeID, err)      a Write is durable (err nil) or failed
//	MarkersWritten(now, id, results)  outcome of (some partitions of) a
//	                                  MarkerRequest
//	SupplyProducerIDs(now, first, n)  a block of producer ids, as asked
//	ProducerIDsFailed(now)            none could be had
//
//	Ready.Responses   responses, each with the Token of its Request; a request
//	                  is answered exactly once, possibly by a later call (once
//	                  its record is durable, or once producer ids arrive)
//	Ready.Writes      records to append to __transaction_state-Partition (acks
//	                  all), reported back with Persisted
//	Ready.Markers     WriteTxnMarkers work: the driver sends each partition's
//	                  marker to its leader and reports with MarkersWritten
//	Ready.NeedProducerIDs  fetch a block of producer ids from the controller
//	Ready.Deadline    when to call Tick next (zero: no timer)
//
// Requests are franz-go kmsg structs with Version set; responses are kmsg
// structs of the same version, with error codes chosen as Kafka 3.x/4.x
// (transaction version 1) chooses them; each handler's file states its
// rules.
//
// # Transaction states
//
//	Empty --AddPartitions--> Ongoing --EndTxn--> PrepareCommit --markers--> CompleteCommit
//	                                        \--> PrepareAbort  --markers--> CompleteAbort
//	Complete* --AddPartitions--> Ongoing;  Empty/Complete* --InitProducerId--> Empty (epoch+1)
//	Ongoing --InitProducerId or timeout--> (PrepareEpochFence, epoch+1) --> PrepareAbort
//	Empty/Complete* --expiration--> Dead (tombstone, forgotten)
//
// Every change is prepared first (the transaction then has a pending
// transition, and other requests get CONCURRENT_TRANSACTIONS), written,
// and applied once its record is durable; a failed write drops it. A
// prepared decision is answered to the producer as soon as it is durable;
// the markers follow, and the transaction stays pending until
// CompleteCommit/CompleteAbort is durable.
//
// # Records in __transaction_state
//
// Kafka's layout (kmsg's TxnMetadataKey and TxnMetadataValue). Integers
// are big-endian; a string is an int16 length and UTF-8 bytes; an array an
// int32 count (-1: null).
//
//	key, version 0:
//	    | version int16 = 0 | transactional_id string |
//	value, version 0 (version 1, flexible, is read too):
//	    | version int16 = 0 | producer_id int64 | producer_epoch int16 |
//	    | transaction_timeout_ms int32 | state int8 |
//	    | partitions nullable array [ topic string | partition_ids [int32] ] |
//	    | last_update_timestamp_ms int64 | start_timestamp_ms int64 |
//
// state is 0 Empty, 1 Ongoing, 2 PrepareCommit, 3 PrepareAbort, 4
// CompleteCommit, 5 CompleteAbort (6 Dead and 7 PrepareEpochFence are
// never written). partitions is null in Empty, empty once complete, and
// written with topics in name order. A null value (tombstone) removes the
// transactional id; the last record of a key wins. Keys of other versions
// are skipped. The start timestamp is -1 before the first transaction.
package txn
