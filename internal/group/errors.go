package group

import "github.com/twmb/franz-go/pkg/kerr"

// The Kafka error codes the coordinator answers with.
var (
	errNotCoordinator            = kerr.NotCoordinator.Code
	errLoadInProgress            = kerr.CoordinatorLoadInProgress.Code
	errCoordinatorNotAvailable   = kerr.CoordinatorNotAvailable.Code
	errInvalidGroupID            = kerr.InvalidGroupID.Code
	errUnknownMemberID           = kerr.UnknownMemberID.Code
	errInvalidSessionTimeout     = kerr.InvalidSessionTimeout.Code
	errRebalanceInProgress       = kerr.RebalanceInProgress.Code
	errIllegalGeneration         = kerr.IllegalGeneration.Code
	errInconsistentGroupProtocol = kerr.InconsistentGroupProtocol.Code
	errMemberIDRequired          = kerr.MemberIDRequired.Code
	errFencedInstanceID          = kerr.FencedInstanceID.Code
	errGroupMaxSizeReached       = kerr.GroupMaxSizeReached.Code
	errGroupIDNotFound           = kerr.GroupIDNotFound.Code
	errNonEmptyGroup             = kerr.NonEmptyGroup.Code
	errOffsetMetadataTooLarge    = kerr.OffsetMetadataTooLarge.Code
	errGroupSubscribedToTopic    = kerr.GroupSubscribedToTopic.Code
	errUnstableOffsetCommit      = kerr.UnstableOffsetCommit.Code
)
