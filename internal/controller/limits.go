package controller

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/metadata"
)

// Limits on what one client request may ask of the controller, Kafka's
// (ReplicationControlManager.MAX_PARTITIONS_PER_BATCH and
// QuorumController.MAX_RECORDS_PER_USER_OP). Each is checked before the
// request's work is planned or allocated, so no request field can make the
// controller allocate more than these allow.
const (
	// MaxPartitionsPerRequest bounds the partitions one CreateTopics or
	// CreatePartitions request adds, over all its topics.
	MaxPartitionsPerRequest = 10000
	// MaxRecordsPerUserOp bounds the metadata records one client request
	// (an admin API) may commit; the brokers' own requests and the
	// controller's work are not bounded.
	MaxRecordsPerUserOp = 10000
)

var (
	// errTooManyPartitions fails every topic of a request adding more
	// than MaxPartitionsPerRequest partitions.
	errTooManyPartitions = topicErr(kerr.PolicyViolation, "Excessively large number of partitions per request.")
	// errExcessiveBatch fails a request that would commit more than
	// MaxRecordsPerUserOp records.
	errExcessiveBatch = topicErr(kerr.PolicyViolation, "Unable to perform excessively large batch operation.")
)

// userRecords collects the records of a client request, refusing more
// than MaxRecordsPerUserOp of them (as Kafka's BoundedList).
type userRecords []metadata.Record

// add appends recs, or fails with errExcessiveBatch (and appends nothing)
// when that would exceed the limit.
func (u *userRecords) add(recs ...metadata.Record) error {
	if len(*u)+len(recs) > MaxRecordsPerUserOp {
		return errExcessiveBatch
	}
	*u = append(*u, recs...)
	return nil
}
