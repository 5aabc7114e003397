package kafka

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/controller"
	"weir/internal/log"
	"weir/internal/partition"
	"weir/internal/quorum"
	"weir/internal/record"
)

// errorCode maps an error from below the protocol layer to its Kafka error
// code. It is the only place such mapping happens. Unknown errors are
// UNKNOWN_SERVER_ERROR, and are logged by the caller.
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	var te *controller.TopicError
	if errors.As(err, &te) {
		return te.Code.Code
	}
	var code *kerr.Error
	switch {
	case errors.Is(err, record.ErrCorrupt), errors.Is(err, record.ErrShort):
		code = kerr.CorruptMessage
	case errors.Is(err, record.ErrBatchTooLarge), errors.Is(err, record.ErrTooLarge):
		code = kerr.MessageTooLarge
	case errors.Is(err, record.ErrInvalidRecord), errors.Is(err, record.ErrMagic):
		code = kerr.InvalidRecord
	case errors.Is(err, record.ErrInvalidTimestamp):
		code = kerr.InvalidTimestamp
	case errors.Is(err, log.ErrOutOfOrderSequence):
		code = kerr.OutOfOrderSequenceNumber
	case errors.Is(err, log.ErrInvalidProducerEpoch):
		code = kerr.InvalidProducerEpoch
	case errors.Is(err, log.ErrInvalidTxnState):
		code = kerr.InvalidTxnState
	case errors.Is(err, log.ErrCoordinatorFenced):
		code = kerr.TransactionCoordinatorFenced
	case errors.Is(err, log.ErrOffsetOutOfRange):
		code = kerr.OffsetOutOfRange
	case errors.Is(err, partition.ErrNotLeader):
		code = kerr.NotLeaderForPartition
	case errors.Is(err, partition.ErrFencedLeaderEpoch):
		code = kerr.FencedLeaderEpoch
	case errors.Is(err, partition.ErrUnknownLeaderEpoch):
		code = kerr.UnknownLeaderEpoch
	case errors.Is(err, partition.ErrNotEnoughReplicas):
		code = kerr.NotEnoughReplicas
	case errors.Is(err, partition.ErrNotEnoughReplicasAfterAppend):
		code = kerr.NotEnoughReplicasAfterAppend
	case errors.Is(err, partition.ErrMirrorReadOnly):
		code = kerr.InvalidRequest
	case errors.Is(err, partition.ErrPolicyViolation):
		code = kerr.PolicyViolation
	case errors.Is(err, partition.ErrStorage):
		code = kerr.KafkaStorageError
	case errors.Is(err, context.DeadlineExceeded):
		code = kerr.RequestTimedOut
	case errors.Is(err, quorum.ErrNotLeader):
		// This node's controller lost (or never had) the quorum's
		// leadership: the client finds the active one and retries.
		code = kerr.NotController
	default:
		code = kerr.UnknownServerError
	}
	return code.Code
}

// logUnexpected logs a whole request's failure unless it is one the
// request itself earned (a Kafka error code other than
// UNKNOWN_SERVER_ERROR).
func (s *Server) logUnexpected(what string, err error) {
	if errorCode(err) == kerr.UnknownServerError.Code {
		s.lg.Error(what, "err", err)
	}
}

// KafkaError is errorCode as a *kerr.Error, for components that report
// failures to a state machine in Kafka's terms (the group coordinator's
// writes to __consumer_offsets). nil stays nil.
func KafkaError(err error) error {
	if err == nil {
		return nil
	}
	if e := kerr.ErrorForCode(errorCode(err)); e != nil {
		return e
	}
	return kerr.UnknownServerError
}

// errorMessage is the message to return with err, or nil for success.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	m := err.Error()
	return &m
}

// maxMessageBytes bounds the error messages of an answer that gives one
// per partition named (ElectLeaders, AlterPartitionReassignments): past
// it, messages are left out (null), the codes still sent. Each message
// names its topic, as Kafka's do, so a request naming millions of
// partitions of a topic with a long name would otherwise get messages
// hundreds of times its size.
const maxMessageBytes = 1 << 20

// messageBudget renders error messages while fewer than maxMessageBytes
// have been.
type messageBudget int

func (b *messageBudget) message(err error) *string {
	if err == nil || *b >= maxMessageBytes {
		return nil
	}
	m := errorMessage(err)
	*b += messageBudget(len(*m))
	return m
}

// codedError is a Kafka error code with the message Kafka sends with it.
type codedError struct {
	code *kerr.Error
	msg  string
}

func (e *codedError) Error() string { return e.msg }
func (e *codedError) Unwrap() error { return e.code }

// txnVerifyError turns the outcome of a KIP-890 check into the error a
// Produce of version produceVersion answers, as Kafka's
// AddPartitionsToTxnManager and ReplicaManager do: code is what the
// transaction coordinator said of the partition, err a failure to ask it
// (a *kerr.Error is a top-level error code of its answer). nil: the
// partition is in the transaction.
func txnVerifyError(code int16, err error, produceVersion int16) error {
	if err != nil {
		var ke *kerr.Error
		switch {
		case errors.Is(err, kerr.ClusterAuthorizationFailed):
			code = kerr.InvalidTxnState.Code
		case errors.As(err, &ke):
			code = ke.Code
		default:
			code = kerr.NetworkException.Code
		}
	}
	switch code {
	case 0:
		return nil
	case kerr.ProducerFenced.Code:
		code = kerr.InvalidProducerEpoch.Code
	case kerr.TransactionAbortable.Code:
		if produceVersion <= 10 {
			code = kerr.InvalidTxnState.Code // clients before KIP-890 do not know it
		}
	}
	ke, _ := kerr.ErrorForCode(code).(*kerr.Error)
	switch code {
	case kerr.InvalidTxnState.Code:
		return &codedError{ke, "Partition was not added to the transaction"}
	case kerr.NetworkException.Code, kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code,
		kerr.NotCoordinator.Code, kerr.ConcurrentTransactions.Code:
		// Retriable for every client version, without a metadata refresh.
		return &codedError{kerr.NotEnoughReplicas, "Unable to verify the partition has been added to the transaction. Underlying error: " + ke.Message}
	default:
		if ke == nil {
			return kerr.UnknownServerError
		}
		return ke
	}
}
