package kafka

// DescribeLogDirs, versions 0-4.
//
// For each log directory: the partitions it holds (all, or those asked
// for) with their size in bytes and offset lag (0 on a leader), and from
// v4 the directory's total and usable bytes.

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"

	"weir/internal/acl"
	"weir/internal/log"
)

func (s *Server) handleDescribeLogDirs(req *Request) *Reply {
	r := req.Body.(*kmsg.DescribeLogDirsRequest)
	resp := respFor(req).(*kmsg.DescribeLogDirsResponse)
	if !s.authorizedCluster(req, acl.OpDescribe) {
		// As Kafka: no directories, and from v3 the error.
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return done(resp)
	}
	want := func(tp log.TopicPartition) bool { return true }
	if r.Topics != nil {
		set := map[log.TopicPartition]bool{}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				set[log.TopicPartition{Topic: t.Topic, Partition: p}] = true
			}
		}
		want = func(tp log.TopicPartition) bool { return set[tp] }
	}
	byDir := map[string]map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition{}
	for _, d := range s.cfg.Broker.LogDirs {
		byDir[d] = map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition{}
	}
	for _, p := range s.deps.Partitions.All() {
		tp := p.TopicPartition()
		if !want(tp) {
			continue
		}
		dir := s.deps.Logs.DirOf(tp)
		if byDir[dir] == nil {
			continue
		}
		dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		dp.Partition, dp.Size = tp.Partition, p.Log().Size()
		dp.OffsetLag = max(0, p.Log().LogEndOffset()-p.HighWatermark())
		if p.IsLeader() {
			dp.OffsetLag = 0
		}
		byDir[dir][tp.Topic] = append(byDir[dir][tp.Topic], dp)
	}
	for _, d := range s.cfg.Broker.LogDirs {
		rd := kmsg.NewDescribeLogDirsResponseDir()
		rd.Dir, rd.TotalBytes, rd.UsableBytes = d, -1, -1
		var st unix.Statfs_t
		if unix.Statfs(d, &st) == nil {
			rd.TotalBytes = int64(st.Blocks) * int64(st.Bsize)
			rd.UsableBytes = int64(st.Bavail) * int64(st.Bsize)
		}
		topics := make([]string, 0, len(byDir[d]))
		for t := range byDir[d] {
			topics = append(topics, t)
		}
		sort.Strings(topics)
		for _, t := range topics {
			dt := kmsg.NewDescribeLogDirsResponseDirTopic()
			dt.Topic = t
			dt.Partitions = byDir[d][t]
			sort.Slice(dt.Partitions, func(i, j int) bool { return dt.Partitions[i].Partition < dt.Partitions[j].Partition })
			rd.Topics = append(rd.Topics, dt)
		}
		resp.Dirs = append(resp.Dirs, rd)
	}
	return done(resp)
}
