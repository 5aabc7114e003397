package kafka

import "github.com/twmb/franz-go/pkg/kmsg"

// Keys referred to outside the table.
const (
	produceKey     = 0
	apiVersionsKey = 18
)

// apiTable lists every API this broker serves, with the version range it
// advertises in ApiVersions. Produce is advertised from v0 although v0-v2
// carry legacy message sets: librdkafka only enables gzip, snappy and lz4
// when Produce v0 is in range, and FindCoordinator v0 gates its lz4 too.
func (s *Server) apiTable() map[int16]api {
	return map[int16]api{
		0:  {0, 11, s.handleProduce},
		1:  {4, 17, s.handleFetch},
		2:  {1, 9, s.handleListOffsets},
		3:  {0, 12, s.handleMetadata},
		10: {0, 6, s.handleFindCoordinator},
		18: {0, 4, s.handleAPIVersions},
		19: {0, 7, s.handleCreateTopics},
		20: {0, 6, s.handleDeleteTopics},
		21: {0, 2, s.handleDeleteRecords},
		22: {0, 5, s.handleInitProducerID},
		23: {0, 4, s.handleOffsetForLeaderEpoch},
		32: {0, 4, s.handleDescribeConfigs},
		33: {0, 2, s.handleAlterConfigs},
		35: {0, 4, s.handleDescribeLogDirs},
		37: {0, 3, s.handleCreatePartitions},
		44: {0, 1, s.handleIncrementalAlterConfigs},
		60: {0, 1, s.handleDescribeCluster},
	}
}

// respFor returns the response type for a request, at the request's version.
func respFor(req *Request) kmsg.Response {
	r := req.Body.ResponseKind()
	r.SetVersion(req.Version)
	return r
}
