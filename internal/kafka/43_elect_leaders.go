package kafka

// ElectLeaders, versions 0-2.
//
// Forwarded to the controller, which runs preferred (v0, or type 0) or
// unclean (type 1) elections; see controller/elections.go. Topics null
// means every partition, and then only partitions that needed an election
// are listed. A failure of the whole request (an unknown election type,
// NOT_CONTROLLER) is the top-level error (v1+) and every named partition's.
// The answer waits until this broker's metadata has the new leaders. Past
// 1 MiB of error messages, partitions get their codes only
// (maxMessageBytes).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
	"weir/internal/controller"
)

func (s *Server) handleElectLeaders(req *Request) *Reply {
	r := req.Body.(*kmsg.ElectLeadersRequest)
	resp := respFor(req).(*kmsg.ElectLeadersResponse)
	var results []controller.TopicResult
	var last int64
	var err error = kerr.ClusterAuthorizationFailed // ALTER on the cluster
	if s.authorizedCluster(req, acl.OpAlter) {
		out, e := s.deps.Controller.ElectLeaders(r)
		results, last, err = out.Topics, out.Offset, e
	}
	if err != nil {
		code := errorCode(err)
		if code == kerr.UnknownServerError.Code {
			s.lg.Error("elect leaders", "err", err)
		}
		if req.Version >= 1 {
			resp.ErrorCode = code
		}
		results = failAll(r.Topics, err)
	} else if err := s.awaitMetadata(req.Ctx, last, time.Duration(r.TimeoutMillis)*time.Millisecond); err != nil {
		timedOut(results)
	}
	var msgs messageBudget
	for _, tr := range results {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = tr.Topic
		for _, pr := range tr.Partitions {
			rp := kmsg.NewElectLeadersResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = pr.Partition, errorCode(pr.Err), msgs.message(pr.Err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return done(resp)
}

// failAll gives every partition named err.
func failAll(topics []kmsg.ElectLeadersRequestTopic, err error) []controller.TopicResult {
	out := make([]controller.TopicResult, len(topics))
	for i, t := range topics {
		out[i].Topic = t.Topic
		for _, p := range t.Partitions {
			out[i].Partitions = append(out[i].Partitions, controller.PartitionResult{Partition: p, Err: err})
		}
	}
	return out
}

// timedOut marks the successes of results REQUEST_TIMED_OUT: committed,
// but not yet in this broker's metadata.
func timedOut(results []controller.TopicResult) {
	for i := range results {
		for j := range results[i].Partitions {
			if results[i].Partitions[j].Err == nil {
				results[i].Partitions[j].Err = kerr.RequestTimedOut
			}
		}
	}
}
