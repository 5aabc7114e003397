package kafka

// The group APIs (JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
// OffsetCommit, OffsetFetch, DescribeGroups, ListGroups, DeleteGroups,
// OffsetDelete, and KIP-848's ConsumerGroupHeartbeat and
// ConsumerGroupDescribe; OffsetCommit through 08_offset_commit.go and
// TxnOffsetCommit through 28_txn_offset_commit.go)
// are answered by the group coordinator (package group),
// whose files state each API's rules. The handler forwards the decoded
// request and completes the reply when the coordinator answers, which for
// a JoinGroup may be a whole rebalance later; replies still leave the
// connection in request order.

import (
	"net"
)

// clientHost is the peer address as Kafka shows it in group descriptions.
func clientHost(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	return "/" + host
}
