package kafka

// The cluster link admin API (weir's own; see internal/link/admin.go for
// the frame and the ops). Reads are answered from this broker's image;
// changes are carried out by the active controller, forwarded to it like
// Kafka's admin requests when the local controller is not active (the
// forward body is api key | version 0 | two empty strings (no principal:
// the broker authorized it, ALTER on the cluster, DESCRIBE for the
// lists) | the JSON request), and answered
// once this broker's image has them. create-mirror first asks the source
// cluster, through the link, for the source topic's partition count.

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/acl"
	"weir/internal/controller"
	"weir/internal/link"
	"weir/internal/metadata"
)

// linkAdminTimeout bounds an admin call, the source lookup included.
const linkAdminTimeout = 30 * time.Second

func (s *Server) handleLinkAdmin(req *Request) *Reply {
	var areq link.AdminRequest
	if err := json.Unmarshal(req.Raw, &areq); err != nil {
		return s.linkAnswer(link.AdminResponse{ErrorCode: kerr.InvalidRequest.Code,
			ErrorMessage: fmt.Sprintf("malformed cluster link admin request: %v", err)})
	}
	op := acl.OpAlter
	if areq.Op == "list-links" || areq.Op == "list-mirrors" {
		op = acl.OpDescribe
	}
	if !s.authorizedCluster(req, op) {
		return s.linkAnswer(link.AdminResponse{ErrorCode: kerr.ClusterAuthorizationFailed.Code, ErrorMessage: kerr.ClusterAuthorizationFailed.Message})
	}
	rep := newReply()
	go func() {
		ctx, cancel := context.WithTimeout(req.Ctx, linkAdminTimeout)
		defer cancel()
		resp := s.linkAdmin(ctx, &areq)
		rep.raw, _ = json.Marshal(resp)
		close(rep.ready)
	}()
	return rep
}

func (s *Server) linkAnswer(resp link.AdminResponse) *Reply {
	b, _ := json.Marshal(resp)
	return &Reply{ready: closedChan, raw: b}
}

func (s *Server) linkAdmin(ctx context.Context, r *link.AdminRequest) link.AdminResponse {
	img := s.deps.Metadata.Image()
	switch r.Op {
	case "list-links":
		return listLinks(img, r.Link)
	case "list-mirrors":
		return listMirrors(img, r.Link, r.Topics)
	case "mirror-epochs":
		return s.mirrorEpochs(ctx, r)
	case "source-offsets":
		l := img.LinkByName(r.Link)
		if l == nil {
			return adminErr(kerr.InvalidRequest, fmt.Sprintf("Cluster link '%s' does not exist.", r.Link))
		}
		offs, err := link.SourceEndOffsets(ctx, l, r.Topics)
		if err != nil {
			return adminErr(kerr.InvalidRequest, fmt.Sprintf("cannot read the source's offsets through cluster link '%s': %v", r.Link, err))
		}
		return link.AdminResponse{Offsets: offs}
	case "create-mirror":
		if len(r.Topics) != 1 {
			return adminErr(kerr.InvalidRequest, "create-mirror names one mirror topic")
		}
		l := img.LinkByName(r.Link)
		if l == nil {
			return adminErr(kerr.InvalidRequest, fmt.Sprintf("Cluster link '%s' does not exist.", r.Link))
		}
		if r.SourceTopic == "" {
			// With a cluster.link.prefix, the mirror is named prefix +
			// source topic.
			r.SourceTopic = strings.TrimPrefix(r.Topics[0], l.Configs["cluster.link.prefix"])
		}
		n, cfg, err := link.SourceTopic(ctx, l, r.SourceTopic)
		if err != nil {
			return adminErr(kerr.InvalidRequest, fmt.Sprintf("cannot read source topic %s through cluster link '%s': %v", r.SourceTopic, r.Link, err))
		}
		r.Partitions, r.Configs = n, cfg
	case "create-link", "delete-link", "pause-mirrors", "resume-mirrors", "stop-mirrors", "sync-offsets":
	default:
		return adminErr(kerr.InvalidRequest, fmt.Sprintf("unknown cluster link admin op %q", r.Op))
	}
	resp, offset, err := s.linkChange(ctx, r)
	if err != nil {
		return adminErrFor(err)
	}
	if err := s.awaitMetadata(ctx, offset, linkAdminTimeout); err != nil {
		return adminErr(kerr.RequestTimedOut, "the change is committed, but this broker's metadata did not catch up with it in time")
	}
	resp.MetadataOffset = max(offset, s.deps.Metadata.Image().Offset)
	return resp
}

// mirrorEpochs answers, once this broker has applied r.MinOffset, the
// latest log epoch and the leader epoch of each partition of the paused
// mirror topics r.Topics that this broker leads. A leader that has applied
// the pause appends no more mirrored batches (partition.AppendMirrored
// checks under the leadership lock), so the epochs are final while the
// leadership lasts.
func (s *Server) mirrorEpochs(ctx context.Context, r *link.AdminRequest) link.AdminResponse {
	if err := s.deps.Metadata.WaitFor(ctx, r.MinOffset); err != nil {
		return adminErr(kerr.RequestTimedOut, "this broker's metadata did not reach the pause in time")
	}
	resp := link.AdminResponse{Epochs: map[string]map[int32]int32{}, LeaderEpochs: map[string]map[int32]int32{}}
	for _, p := range s.deps.Partitions.All() {
		tp, st := p.TopicPartition(), p.State()
		if !slices.Contains(r.Topics, tp.Topic) || !p.IsLeader() || !st.Mirror.ReadOnly || st.Mirror.Active {
			continue
		}
		if resp.Epochs[tp.Topic] == nil {
			resp.Epochs[tp.Topic], resp.LeaderEpochs[tp.Topic] = map[int32]int32{}, map[int32]int32{}
		}
		resp.Epochs[tp.Topic][tp.Partition] = p.Log().LatestEpoch()
		resp.LeaderEpochs[tp.Topic][tp.Partition] = st.LeaderEpoch
	}
	return resp
}

// linkChange has the active controller carry out a change: here, or
// forwarded.
func (s *Server) linkChange(ctx context.Context, r *link.AdminRequest) (link.AdminResponse, int64, error) {
	if s.deps.Forward != nil && !s.deps.Forward.Local() {
		body, _ := json.Marshal(r)
		enc := binary.BigEndian.AppendUint16(nil, uint16(link.AdminAPIKey))
		enc = binary.BigEndian.AppendUint16(enc, 0)
		for range 3 { // no principal, host or client id: authorized here (see forward.go)
			enc = kbin.AppendString(enc, "")
		}
		out, err := s.deps.Forward.Forward(ctx, append(enc, body...))
		if err != nil {
			return link.AdminResponse{}, -1, fmt.Errorf("%w: %v", kerr.NotController, err)
		}
		if len(out) < 8 {
			return link.AdminResponse{}, -1, errors.New("short answer from the active controller")
		}
		var resp link.AdminResponse
		if err := json.Unmarshal(out[8:], &resp); err != nil {
			return resp, -1, fmt.Errorf("bad answer from the active controller: %w", err)
		}
		return resp, int64(binary.BigEndian.Uint64(out)), nil
	}
	if s.deps.Controller == nil {
		return link.AdminResponse{}, -1, kerr.NotController
	}
	resp, offset := s.linkControllerOp(r)
	return resp, offset, nil
}

// handleForwardedLinkAdmin carries out a forwarded change as the active
// controller: the answer is the image offset after it, then the JSON
// answer.
func (s *Server) handleForwardedLinkAdmin(raw []byte) *Reply {
	var r link.AdminRequest
	if err := json.Unmarshal(raw, &r); err != nil {
		s.lg.Warn("malformed forwarded cluster link request", "err", err)
		return &Reply{ready: closedChan, none: true, closeConn: true}
	}
	resp, offset := s.linkControllerOp(&r)
	b, _ := json.Marshal(resp)
	return &Reply{ready: closedChan, raw: append(binary.BigEndian.AppendUint64(nil, uint64(offset)), b...)}
}

// linkControllerOp runs a change on the local controller and returns the
// answer and the offset to wait for.
func (s *Server) linkControllerOp(r *link.AdminRequest) (link.AdminResponse, int64) {
	c := s.deps.Controller
	last := int64(-1)
	one := func(done controller.Committed, err error) link.AdminResponse {
		if err != nil {
			s.logUnexpected("cluster link admin", err)
			return adminErrFor(err)
		}
		last = max(last, done.Offset)
		return link.AdminResponse{}
	}
	perTopic := func(fn func(topic string) (controller.Committed, error)) link.AdminResponse {
		var resp link.AdminResponse
		for _, t := range r.Topics {
			done, err := fn(t)
			res := link.TopicResult{Topic: t}
			if err != nil {
				s.logUnexpected("cluster link admin", err)
				res.ErrorCode, res.ErrorMessage = errorCode(err), err.Error()
			} else {
				last = max(last, done.Offset)
			}
			resp.Results = append(resp.Results, res)
		}
		return resp
	}
	var resp link.AdminResponse
	switch r.Op {
	case "create-link":
		resp = one(c.CreateClusterLink(r.Link, r.Configs, r.ValidateOnly))
	case "delete-link":
		resp = one(c.DeleteClusterLink(r.Link))
	case "sync-offsets":
		if s.deps.LinkSync == nil {
			return adminErr(kerr.NotController, "this node runs no cluster link tasks"), -1
		}
		ctx, cancel := context.WithTimeout(context.Background(), linkAdminTimeout)
		defer cancel()
		if err := s.deps.LinkSync.SyncOffsets(ctx, r.Link); err != nil {
			return adminErr(kerr.InvalidRequest, fmt.Sprintf("syncing the consumer offsets of cluster link '%s': %v", r.Link, err)), -1
		}
	case "create-mirror":
		if len(r.Topics) != 1 {
			return adminErr(kerr.InvalidRequest, "create-mirror names one mirror topic"), -1
		}
		resp = perTopic(func(t string) (controller.Committed, error) {
			return c.CreateMirrorTopic(controller.MirrorTopic{Topic: t, Link: r.Link, SourceTopic: r.SourceTopic,
				Partitions: r.Partitions, ReplicationFactor: r.ReplicationFactor, Configs: r.Configs})
		})
	case "pause-mirrors", "resume-mirrors":
		state := metadata.MirrorPaused
		if r.Op == "resume-mirrors" {
			state = metadata.MirrorActive
		}
		resp = perTopic(func(t string) (controller.Committed, error) { return c.SetMirrorState(t, state) })
	case "stop-mirrors":
		var state int8
		switch r.State {
		case link.StatePromoted:
			state = metadata.MirrorPromoted
		case link.StateFailedOver:
			state = metadata.MirrorFailedOver
		default:
			return adminErr(kerr.InvalidRequest, fmt.Sprintf("stop-mirrors state must be %q or %q", link.StatePromoted, link.StateFailedOver)), -1
		}
		resp = perTopic(func(t string) (controller.Committed, error) {
			return c.StopMirror(t, state, r.Epochs[t], r.LeaderEpochs[t])
		})
	default:
		return adminErr(kerr.InvalidRequest, fmt.Sprintf("op %q is not a change", r.Op)), -1
	}
	return resp, last
}

func adminErrFor(err error) link.AdminResponse {
	return link.AdminResponse{ErrorCode: errorCode(err), ErrorMessage: err.Error()}
}

func adminErr(code *kerr.Error, msg string) link.AdminResponse {
	if code == nil {
		code = kerr.UnknownServerError
	}
	return link.AdminResponse{ErrorCode: code.Code, ErrorMessage: msg}
}

func listLinks(img *metadata.Image, name string) link.AdminResponse {
	var resp link.AdminResponse
	for _, l := range img.Links {
		if name == "" || l.Name == name {
			cfg := maps.Clone(l.Configs)
			for k := range cfg {
				if link.SensitiveConfigs[k] {
					cfg[k] = link.HiddenValue
				}
			}
			resp.Links = append(resp.Links, link.LinkInfo{Name: l.Name, ID: l.ID.String(), Configs: cfg})
		}
	}
	if name != "" && len(resp.Links) == 0 {
		return adminErr(kerr.InvalidRequest, fmt.Sprintf("Cluster link '%s' does not exist.", name))
	}
	slices.SortFunc(resp.Links, func(a, b link.LinkInfo) int { return cmpString(a.Name, b.Name) })
	return resp
}

func listMirrors(img *metadata.Image, linkName string, topics []string) link.AdminResponse {
	var resp link.AdminResponse
	for id, m := range img.Mirrors {
		t := img.TopicsByID.Get(id)
		name := ""
		if l := img.Links[m.LinkID]; l != nil {
			name = l.Name
		}
		if t == nil || linkName != "" && name != linkName || len(topics) > 0 && !slices.Contains(topics, t.Name) {
			continue
		}
		resp.Mirrors = append(resp.Mirrors, link.MirrorInfo{Topic: t.Name, Link: name, SourceTopic: m.SourceTopic,
			State: metadata.MirrorStateName(m.State), Partitions: int32(len(t.Partitions))})
	}
	slices.SortFunc(resp.Mirrors, func(a, b link.MirrorInfo) int { return cmpString(a.Topic, b.Topic) })
	for _, t := range topics {
		if !slices.ContainsFunc(resp.Mirrors, func(m link.MirrorInfo) bool { return m.Topic == t }) {
			resp.Results = append(resp.Results, link.TopicResult{Topic: t, ErrorCode: kerr.UnknownTopicOrPartition.Code,
				ErrorMessage: fmt.Sprintf("Topic '%s' is not a mirror topic.", t)})
		}
	}
	return resp
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
