package kafka

// ApiVersions, versions 0-4.
//
// Lists every API and version range from the api table. A request at a
// version above 4 is answered at v0 with UNSUPPORTED_VERSION and the list,
// so the client can retry at a version both sides know (KIP-511). From v3
// the client's software name and version must match Kafka's pattern, or
// the answer is INVALID_REQUEST. Finalized features carry metadata.version.

import (
	"regexp"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/controller"
)

var softwarePattern = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func (s *Server) handleAPIVersions(req *Request) *Reply {
	r := req.Body.(*kmsg.ApiVersionsRequest)
	resp := respFor(req).(*kmsg.ApiVersionsResponse)
	if req.Version >= 3 && (!softwarePattern.MatchString(r.ClientSoftwareName) || !softwarePattern.MatchString(r.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return done(resp)
	}
	s.fillAPIVersions(resp)
	if req.Version >= 3 {
		img := s.deps.Metadata.Image()
		for name, r := range controller.SupportedFeatures {
			resp.SupportedFeatures = append(resp.SupportedFeatures, kmsg.ApiVersionsResponseSupportedFeature{Name: name, MinVersion: r.Min, MaxVersion: r.Max})
		}
		sort.Slice(resp.SupportedFeatures, func(i, j int) bool { return resp.SupportedFeatures[i].Name < resp.SupportedFeatures[j].Name })
		resp.FinalizedFeaturesEpoch = img.Offset
		for name, level := range img.Features {
			resp.FinalizedFeatures = append(resp.FinalizedFeatures,
				kmsg.ApiVersionsResponseFinalizedFeature{Name: name, MinVersionLevel: level, MaxVersionLevel: level})
		}
	}
	return done(resp)
}

func (s *Server) fillAPIVersions(resp *kmsg.ApiVersionsResponse) {
	for key, a := range s.apis {
		resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: key, MinVersion: a.min, MaxVersion: a.max})
	}
	sort.Slice(resp.ApiKeys, func(i, j int) bool { return resp.ApiKeys[i].ApiKey < resp.ApiKeys[j].ApiKey })
}

// unsupportedAPIVersions answers an ApiVersions request of an unknown
// version at v0 (KIP-511).
func (s *Server) unsupportedAPIVersions() *Reply {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	s.fillAPIVersions(resp)
	return done(resp)
}
