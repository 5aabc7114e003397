package link

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/nodeclient"
)

// AdminClient is a client of the cluster link admin API of a
// destination cluster, as `weir cluster-links`, `weir mirrors` and the
// web console use it: admin calls over connections of its own (Dial
// does the TLS and the SASL login of the caller's credentials, so the
// broker authorizes the caller), and Adm, a Kafka admin client of the
// same cluster with the same credentials, for offsets and metadata.
type AdminClient struct {
	// Bootstrap is the destination's host:port[,host:port].
	Bootstrap string
	ClientID  string
	Dial      nodeclient.Dialer
	// RequestTimeout bounds each admin call to one server.
	RequestTimeout time.Duration
	Adm            *kadm.Client
	// Plaintext: Dial does neither TLS nor SASL (an unreachable
	// server's error then suggests the client settings).
	Plaintext bool
	// Hint is what the error of a plaintext client that reached no
	// server suggests, e.g. "give the client settings with
	// --command-config".
	Hint string
}

// Admin sends one call of the cluster link admin API to the first
// bootstrap server that answers, and returns the answer, or its error
// (with its Kafka error code's name) when it failed as a whole. A
// retriable error (NOT_CONTROLLER while the controller moves, ...) is
// retried until ctx ends, as Kafka's admin client retries.
func (l *AdminClient) Admin(ctx context.Context, req *AdminRequest) (*AdminResponse, error) {
	for {
		resp, err := l.AdminAt(ctx, l.Bootstrap, req)
		if resp == nil || resp.ErrorCode == 0 || !kerr.IsRetriable(kerr.ErrorForCode(resp.ErrorCode)) {
			return resp, err
		}
		select {
		case <-ctx.Done():
			return resp, err
		case <-time.After(adminRetryBackoff):
		}
	}
}

// adminRetryBackoff is the wait before a retriable admin call is sent
// again (retry.backoff.ms's default).
const adminRetryBackoff = 100 * time.Millisecond

// AdminAt is Admin with the servers of bootstrap, each called within
// RequestTimeout.
func (l *AdminClient) AdminAt(ctx context.Context, bootstrap string, req *AdminRequest) (*AdminResponse, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var last error
	for _, addr := range splitServers(bootstrap) {
		c := nodeclient.New(addr, l.ClientID, l.Dial)
		rctx, cancel := context.WithTimeout(ctx, l.RequestTimeout)
		raw, err := c.RoundTrip(rctx, AdminAPIKey, 0, false, body)
		cancel()
		c.Close()
		if err != nil {
			last = err
			continue
		}
		var resp AdminResponse
		if err := json.Unmarshal(raw, &resp); err != nil {
			return nil, fmt.Errorf("%s answered something other than weir's cluster link admin API (is it weir?): %v", addr, err)
		}
		if resp.ErrorCode != 0 {
			return &resp, AdminError(resp.ErrorCode, resp.ErrorMessage)
		}
		return &resp, nil
	}
	switch {
	case last == nil:
		return nil, errors.New("no bootstrap server given")
	case l.Plaintext && l.Hint != "":
		return nil, fmt.Errorf("cannot reach %s: %v (if its listener needs TLS or SASL, %s)", bootstrap, last, l.Hint)
	}
	return nil, fmt.Errorf("cannot reach %s: %v", bootstrap, last)
}

func splitServers(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// AdminError is an admin answer's error: "Error: NAME: message".
func AdminError(code int16, msg string) error {
	name := "UNKNOWN"
	if e := kerr.ErrorForCode(code); e != nil {
		var ke *kerr.Error
		if errors.As(e, &ke) {
			name = ke.Message
		}
	}
	return fmt.Errorf("Error: %s: %s", name, msg)
}

// TopicResults is the failed topics of a per-topic answer, one a line.
func TopicResults(resp *AdminResponse) error {
	var errs []string
	for _, r := range resp.Results {
		if r.ErrorCode != 0 {
			errs = append(errs, AdminError(r.ErrorCode, r.ErrorMessage).Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return nil
}

// ListLinks describes the links (all when name is "").
func (l *AdminClient) ListLinks(ctx context.Context, name string) ([]LinkInfo, error) {
	resp, err := l.Admin(ctx, &AdminRequest{Op: "list-links", Link: name})
	if err != nil {
		return nil, err
	}
	return resp.Links, nil
}

// ListMirrors describes the mirror topics (of linkName and of topics,
// when given).
func (l *AdminClient) ListMirrors(ctx context.Context, linkName string, topics []string) ([]MirrorInfo, error) {
	resp, err := l.Admin(ctx, &AdminRequest{Op: "list-mirrors", Link: linkName, Topics: topics})
	if err == nil {
		err = TopicResults(resp)
	}
	if err != nil {
		return nil, err
	}
	return resp.Mirrors, nil
}

// SourceOffsets asks the destination to read the high watermarks of a
// mirror's source topic through its link (the link has the source's
// address and security settings).
func (l *AdminClient) SourceOffsets(ctx context.Context, m MirrorInfo) (map[int32]int64, error) {
	if m.Link == "" {
		return nil, fmt.Errorf("the link of mirror topic %s is deleted", m.Topic)
	}
	resp, err := l.Admin(ctx, &AdminRequest{Op: "source-offsets", Link: m.Link, Topics: []string{m.SourceTopic}})
	if err != nil {
		return nil, err
	}
	return resp.Offsets[m.SourceTopic], nil
}

// EndOffsets are the high watermarks of the destination's topics.
func (l *AdminClient) EndOffsets(ctx context.Context, topics ...string) (kadm.ListedOffsets, error) {
	lo, err := l.Adm.ListEndOffsets(ctx, topics...)
	if err == nil {
		err = lo.Error()
	}
	return lo, err
}

// MirrorLag is one partition of a mirror topic: the mirror's and the
// source's high watermarks (-1: unavailable) and the lag (-1 unless
// both are known).
type MirrorLag struct {
	Partition            int32
	MirrorHW, SourceHW   int64
	Lag                  int64
	MirrorErr, SourceErr error
}

// Lags reads each partition's high watermarks of mirror m on both
// clusters; the source's are read only while m is ACTIVE or PAUSED
// (else SourceErr says "stopped").
func (l *AdminClient) Lags(ctx context.Context, m MirrorInfo) []MirrorLag {
	dst, derr := l.EndOffsets(ctx, m.Topic)
	var src map[int32]int64
	serr := errors.New("stopped")
	if m.State == "ACTIVE" || m.State == "PAUSED" {
		src, serr = l.SourceOffsets(ctx, m)
	}
	out := make([]MirrorLag, 0, m.Partitions)
	for p := range m.Partitions {
		r := MirrorLag{Partition: p, MirrorHW: -1, SourceHW: -1, Lag: -1, MirrorErr: derr, SourceErr: serr}
		if d, ok := dst.Lookup(m.Topic, p); derr == nil && ok {
			r.MirrorHW = d.Offset
		} else if derr == nil {
			r.MirrorErr = errors.New("no answer for the partition")
		}
		if s, ok := src[p]; serr == nil && ok {
			r.SourceHW = s
		} else if serr == nil {
			r.SourceErr = errors.New("no answer for the partition")
		}
		if r.MirrorHW >= 0 && r.SourceHW >= 0 {
			r.Lag = max(0, r.SourceHW-r.MirrorHW)
		}
		out = append(out, r)
	}
	return out
}

// StopMirrors promotes (state StatePromoted) or fails over
// (StateFailedOver) mirror topics: for a promotion it waits until each
// mirror's high watermark reaches its source's as of now, and for one
// consumer offset sync of their links; then it pauses them, asks each
// partition's leader, once it has applied the pause, for the latest
// epoch in its log, and has the controller stop them with those epochs
// (see StopMirror in internal/controller). A leadership that moved in
// between is read again. It returns when ctx ends at the latest.
func (l *AdminClient) StopMirrors(ctx context.Context, topics []string, state string) error {
	mirrors, err := l.ListMirrors(ctx, "", topics)
	if err != nil {
		return err
	}
	if state == StatePromoted {
		for _, m := range mirrors {
			target, err := l.SourceOffsets(ctx, m)
			if err != nil {
				return fmt.Errorf("mirror topic %s: cannot read the source's offsets (use --failover if the source is gone): %v", m.Topic, err)
			}
			if err := l.awaitMirror(ctx, m, target); err != nil {
				return err
			}
		}
		// The consumer offsets as of now, for the groups moving over.
		synced := map[string]bool{}
		for _, m := range mirrors {
			if !synced[m.Link] {
				synced[m.Link] = true
				if _, err := l.Admin(ctx, &AdminRequest{Op: "sync-offsets", Link: m.Link}); err != nil {
					return err
				}
			}
		}
	}
	paused, err := l.Admin(ctx, &AdminRequest{Op: "pause-mirrors", Topics: topics})
	if err == nil {
		err = TopicResults(paused)
	}
	if err != nil {
		return err
	}
	for {
		epochs, leaders, err := l.mirrorEpochs(ctx, mirrors, paused.MetadataOffset)
		if err == nil {
			var resp *AdminResponse
			resp, err = l.Admin(ctx, &AdminRequest{Op: "stop-mirrors", Topics: topics, State: state,
				Epochs: epochs, LeaderEpochs: leaders})
			if err == nil {
				if err = TopicResults(resp); err == nil {
					return nil
				}
			}
			if !strings.Contains(err.Error(), "read it again") {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the mirrors are paused, but their leaders' epochs could not be read (retry, or --resume): %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// mirrorEpochs asks the leader of every partition of mirrors for the
// latest epoch in its log and its leader epoch, once it has applied the
// metadata at offset.
func (l *AdminClient) mirrorEpochs(ctx context.Context, mirrors []MirrorInfo, offset int64) (map[string]map[int32]int32, map[string]map[int32]int32, error) {
	var topics []string
	for _, m := range mirrors {
		topics = append(topics, m.Topic)
	}
	md, err := l.Adm.Metadata(ctx, topics...)
	if err != nil {
		return nil, nil, err
	}
	addrs := map[int32]string{}
	for _, b := range md.Brokers {
		addrs[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
	}
	epochs, leaders := map[string]map[int32]int32{}, map[string]map[int32]int32{}
	asked := map[int32]bool{}
	for _, m := range mirrors {
		for p := range m.Partitions {
			pd, ok := md.Topics[m.Topic].Partitions[p]
			if !ok || pd.Leader < 0 {
				return nil, nil, fmt.Errorf("%s-%d has no leader", m.Topic, p)
			}
			if asked[pd.Leader] {
				continue
			}
			asked[pd.Leader] = true
			resp, err := l.AdminAt(ctx, addrs[pd.Leader], &AdminRequest{Op: "mirror-epochs", Topics: topics, MinOffset: offset})
			if err != nil {
				return nil, nil, err
			}
			for t, es := range resp.Epochs {
				if epochs[t] == nil {
					epochs[t], leaders[t] = map[int32]int32{}, map[int32]int32{}
				}
				for part, e := range es {
					epochs[t][part], leaders[t][part] = e, resp.LeaderEpochs[t][part]
				}
			}
		}
	}
	for _, m := range mirrors {
		for p := range m.Partitions {
			if _, ok := epochs[m.Topic][p]; !ok {
				return nil, nil, fmt.Errorf("the leader of %s-%d moved: read it again", m.Topic, p)
			}
		}
	}
	return epochs, leaders, nil
}

// awaitMirror waits until every partition of mirror m has reached the
// source's high watermark in target.
func (l *AdminClient) awaitMirror(ctx context.Context, m MirrorInfo, target map[int32]int64) error {
	for {
		lo, err := l.EndOffsets(ctx, m.Topic)
		behind := err != nil
		if err == nil {
			for p, s := range target {
				if d, ok := lo.Lookup(m.Topic, p); !ok || d.Offset < s {
					behind = true
				}
			}
		}
		if !behind {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("mirror topic %s did not catch up with its source in time: %v", m.Topic, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
