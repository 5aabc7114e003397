package quorum

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"weir/internal/vfs"
)

// quorum-state holds the Raft hard state as JSON, replaced atomically:
//
//	{"leaderEpoch":7,"votedId":2,"commitIndex":1234,"data_version":0}
//
// leaderEpoch is the Raft term, votedId the node.id voted for in it (-1
// for none), commitIndex the last known commit index (a hint: a restarted
// node relearns it from the leader, so it is written only along with a
// term or vote change and at shutdown).
const stateFile = "quorum-state"

type quorumState struct {
	LeaderEpoch uint64 `json:"leaderEpoch"`
	VotedID     int64  `json:"votedId"`
	CommitIndex uint64 `json:"commitIndex"`
	DataVersion int    `json:"data_version"`
}

func readHardState(fsys vfs.FS, dir string) (*pb.HardState, error) {
	data, err := vfs.ReadFile(fsys, filepath.Join(dir, stateFile))
	if os.IsNotExist(err) {
		return &pb.HardState{}, nil
	}
	if err != nil {
		return nil, err
	}
	var st quorumState
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", stateFile, err)
	}
	vote := uint64(0)
	if st.VotedID >= 0 {
		vote = raftID(int32(st.VotedID))
	}
	return &pb.HardState{Term: proto.Uint64(st.LeaderEpoch), Vote: proto.Uint64(vote), Commit: proto.Uint64(st.CommitIndex)}, nil
}

func writeHardState(fsys vfs.FS, dir string, hs *pb.HardState) error {
	st := quorumState{LeaderEpoch: hs.GetTerm(), VotedID: -1, CommitIndex: hs.GetCommit()}
	if hs.GetVote() != 0 {
		st.VotedID = int64(nodeID(hs.GetVote()))
	}
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return vfs.WriteFileAtomic(fsys, filepath.Join(dir, stateFile), data)
}

// raftID maps a Kafka node.id to a Raft id, which cannot be 0.
func raftID(node int32) uint64 { return uint64(node) + 1 }

// nodeID maps a Raft id back to a node.id.
func nodeID(id uint64) int32 { return int32(id - 1) }
