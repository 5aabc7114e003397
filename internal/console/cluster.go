package console

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// How long the lists reuse one answer: a page of the topic list, or a
// search, at 100,000 partitions costs one Metadata request per interval,
// however many pages are read.
const (
	metadataTTL = 2 * time.Second
	logDirsTTL  = 10 * time.Second
)

// cache holds a client's last Metadata and DescribeLogDirs answers. It is
// per client because what a user may see depends on the user's ACLs.
type cache struct {
	mu      sync.Mutex
	meta    kadm.Metadata
	metaAt  time.Time
	dirs    kadm.DescribedAllLogDirs
	dirsAt  time.Time
	samples []sample // the overview's throughput samples, oldest first
	// live is the overview the event streams last sent, read at liveAt;
	// refresh is held by the stream that reads the next one.
	live    *overviewData
	liveAt  time.Time
	refresh sync.Mutex
}

// sample is the sum of the log end offsets of every partition at a time.
type sample struct {
	at  time.Time
	sum int64
}

const maxSamples = 60

// metadata is the cluster's metadata for every topic the user may
// describe, at most metadataTTL old.
func (c *Console) metadata(ctx context.Context, cl *client) (kadm.Metadata, error) {
	cl.cache.mu.Lock()
	defer cl.cache.mu.Unlock()
	now := c.cfg.Now()
	if !cl.cache.metaAt.IsZero() && now.Sub(cl.cache.metaAt) < metadataTTL {
		return cl.cache.meta, nil
	}
	m, err := cl.adm.Metadata(ctx)
	if err != nil {
		return m, err
	}
	cl.cache.meta, cl.cache.metaAt = m, now
	return m, nil
}

// invalidate drops the cached answers after an action changed them.
func (cl *client) invalidate() {
	cl.cache.mu.Lock()
	cl.cache.metaAt, cl.cache.dirsAt = time.Time{}, time.Time{}
	cl.cache.mu.Unlock()
}

// logDirs is every broker's DescribeLogDirs answer, at most logDirsTTL
// old.
func (c *Console) logDirs(ctx context.Context, cl *client) (kadm.DescribedAllLogDirs, error) {
	cl.cache.mu.Lock()
	defer cl.cache.mu.Unlock()
	now := c.cfg.Now()
	if !cl.cache.dirsAt.IsZero() && now.Sub(cl.cache.dirsAt) < logDirsTTL {
		return cl.cache.dirs, nil
	}
	d, err := cl.adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		return d, err
	}
	cl.cache.dirs, cl.cache.dirsAt = d, now
	return d, nil
}

// brokerRow is one broker of the overview.
type brokerRow struct {
	ID                int32
	Host              string
	Port              int32
	Rack              string
	State             string // "unfenced" or "fenced"
	Controller        bool   // the broker DescribeCluster names as controller
	Leaders, Replicas int
	DiskUsed          int64
	DiskTotal         int64 // -1: not reported
	DirErr            string
}

// voterRow is one replica of the metadata quorum.
type voterRow struct {
	ID            int32
	Role          string // Leader, Follower or Observer
	LogEndOffset  int64
	Lag           int64
	LastCaughtUp  string
	LastFetchTime string
}

type feature struct {
	Name     string
	Level    int16
	Min, Max int16 // the supported range, as ApiVersions gives it
}

// overviewData is the overview page.
type overviewData struct {
	ClusterID        string
	ControllerID     int32
	Brokers          []brokerRow
	Topics           int
	Partitions       int
	UnderReplicated  int
	Offline          int
	QuorumLeader     int32
	QuorumEpoch      int32
	QuorumHW         int64
	Voters           []voterRow
	QuorumErr        string
	Features         []feature
	FeaturesEpoch    int64
	FeaturesErr      string
	DirsErr          string
	MessagesPerSec   string
	Sparkline        string // the SVG path of the throughput samples
	SparklineSamples int
}

// overviewNumbers are the live numbers the overview's event stream
// sends; the page's elements carry the same names in data-live.
type overviewNumbers struct {
	Topics          int               `json:"topics"`
	Partitions      int               `json:"partitions"`
	UnderReplicated int               `json:"underReplicated"`
	Offline         int               `json:"offline"`
	MessagesPerSec  string            `json:"messagesPerSec"`
	Sparkline       string            `json:"sparkline"`
	Brokers         map[string]string `json:"brokers"` // "leaders-ID", "replicas-ID", "state-ID"
	QuorumHW        int64             `json:"quorumHW"`
	Lags            map[string]int64  `json:"lags"` // voter id -> lag
}

// readOverview asks the cluster for everything the overview shows. The
// first error of the requests every part needs is returned; the parts
// that may fail on their own (quorum, features, log dirs) carry theirs.
func (c *Console) readOverview(ctx context.Context, cl *client) (*overviewData, error) {
	d := &overviewData{}
	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.Version = 2
	dc.IncludeFencedBrokers = true
	resp, err := dc.RequestWith(ctx, cl.kgo)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		return nil, fmt.Errorf("DescribeCluster: %w", err)
	}
	d.ClusterID, d.ControllerID = resp.ClusterID, resp.ControllerID
	meta, err := c.metadata(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("Metadata: %w", err)
	}
	leaders, replicas := map[int32]int{}, map[int32]int{}
	for _, t := range meta.Topics {
		if t.Err != nil {
			continue
		}
		d.Topics++
		for _, p := range t.Partitions {
			d.Partitions++
			if p.Leader >= 0 {
				leaders[p.Leader]++
			} else {
				d.Offline++
			}
			if len(p.ISR) < len(p.Replicas) {
				d.UnderReplicated++
			}
			for _, r := range p.Replicas {
				replicas[r]++
			}
		}
	}
	used, total, dirErr := map[int32]int64{}, map[int32]int64{}, map[int32]string{}
	if dirs, err := c.logDirs(ctx, cl); err != nil {
		d.DirsErr = errText(err)
	} else {
		for b, ds := range dirs {
			total[b] = -1
			for _, dir := range ds {
				if dir.Err != nil {
					dirErr[b] = fmt.Sprintf("%s: %v", dir.Dir, dir.Err)
					continue
				}
				used[b] += dir.Size()
				if dir.TotalBytes >= 0 {
					total[b] = max(total[b], 0) + dir.TotalBytes
				}
			}
		}
	}
	for _, b := range resp.Brokers {
		state := "unfenced"
		if b.IsFenced {
			state = "fenced"
		}
		rack := ""
		if b.Rack != nil {
			rack = *b.Rack
		}
		tb, ok := total[b.NodeID]
		if !ok {
			tb = -1
		}
		d.Brokers = append(d.Brokers, brokerRow{ID: b.NodeID, Host: b.Host, Port: b.Port, Rack: rack, State: state,
			Controller: b.NodeID == resp.ControllerID, Leaders: leaders[b.NodeID], Replicas: replicas[b.NodeID],
			DiskUsed: used[b.NodeID], DiskTotal: tb, DirErr: dirErr[b.NodeID]})
	}
	sort.Slice(d.Brokers, func(i, j int) bool { return d.Brokers[i].ID < d.Brokers[j].ID })
	c.readQuorum(ctx, cl, d)
	c.readFeatures(ctx, cl, d)
	d.MessagesPerSec, d.Sparkline, d.SparklineSamples = cl.throughput()
	return d, nil
}

// readQuorum fills the metadata quorum's part from DescribeQuorum.
func (c *Console) readQuorum(ctx context.Context, cl *client, d *overviewData) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = "__cluster_metadata"
	p := kmsg.NewDescribeQuorumRequestTopicPartition()
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl.kgo)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err == nil && (len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1) {
		err = fmt.Errorf("DescribeQuorum answered %d topics", len(resp.Topics))
	}
	if err != nil {
		d.QuorumErr = "DescribeQuorum: " + errText(err)
		return
	}
	qp := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(qp.ErrorCode); err != nil {
		d.QuorumErr = "DescribeQuorum: " + errText(err)
		return
	}
	d.QuorumLeader, d.QuorumEpoch, d.QuorumHW = qp.LeaderID, qp.LeaderEpoch, qp.HighWatermark
	add := func(rs []kmsg.DescribeQuorumResponseTopicPartitionReplicaState, observer bool) {
		for _, r := range rs {
			role := "Follower"
			switch {
			case observer:
				role = "Observer"
			case r.ReplicaID == qp.LeaderID:
				role = "Leader"
			}
			d.Voters = append(d.Voters, voterRow{ID: r.ReplicaID, Role: role, LogEndOffset: r.LogEndOffset,
				Lag: max(qp.HighWatermark-r.LogEndOffset, 0), LastCaughtUp: msAgo(c.cfg.Now(), r.LastCaughtUpTimestamp),
				LastFetchTime: msAgo(c.cfg.Now(), r.LastFetchTimestamp)})
		}
	}
	add(qp.CurrentVoters, false)
	add(qp.Observers, true)
}

// msAgo is a millisecond timestamp as an age ("" when unknown, -1).
func msAgo(now time.Time, ms int64) string {
	if ms < 0 {
		return "unknown"
	}
	return now.Sub(time.UnixMilli(ms)).Truncate(time.Millisecond).String() + " ago"
}

// readFeatures fills the finalized features from ApiVersions.
func (c *Console) readFeatures(ctx context.Context, cl *client, d *overviewData) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "weir-console", "1"
	resp, err := req.RequestWith(ctx, cl.kgo)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		d.FeaturesErr = "ApiVersions: " + errText(err)
		return
	}
	supported := map[string]kmsg.ApiVersionsResponseSupportedFeature{}
	for _, f := range resp.SupportedFeatures {
		supported[f.Name] = f
	}
	d.FeaturesEpoch = resp.FinalizedFeaturesEpoch
	for _, f := range resp.FinalizedFeatures {
		s := supported[f.Name]
		d.Features = append(d.Features, feature{Name: f.Name, Level: f.MaxVersionLevel, Min: s.MinVersion, Max: s.MaxVersion})
	}
	sort.Slice(d.Features, func(i, j int) bool { return d.Features[i].Name < d.Features[j].Name })
}

// liveOverview is the overview the event streams send. However many
// tabs stream it, a client reads it (and adds a throughput sample, the
// ListOffsets of every partition) at most once per half SampleEvery: the
// streams that ask meanwhile get the same answer, and those that ask
// while it is being read wait for it.
func (c *Console) liveOverview(ctx context.Context, cl *client) (*overviewData, error) {
	cl.cache.refresh.Lock()
	defer cl.cache.refresh.Unlock()
	cl.cache.mu.Lock()
	d, at := cl.cache.live, cl.cache.liveAt
	cl.cache.mu.Unlock()
	if d != nil && c.cfg.Now().Sub(at) < c.cfg.SampleEvery/2 {
		return d, nil
	}
	if err := c.addSample(ctx, cl); err != nil {
		return nil, err
	}
	d, err := c.readOverview(ctx, cl)
	if err != nil {
		return nil, err
	}
	cl.cache.mu.Lock()
	cl.cache.live, cl.cache.liveAt = d, c.cfg.Now()
	cl.cache.mu.Unlock()
	return d, nil
}

// addSample records the sum of every partition's end offset now.
func (c *Console) addSample(ctx context.Context, cl *client) error {
	ends, err := cl.adm.ListEndOffsets(ctx)
	if err != nil {
		return err
	}
	var sum int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil && o.Offset > 0 {
			sum += o.Offset
		}
	})
	cl.cache.mu.Lock()
	defer cl.cache.mu.Unlock()
	cl.cache.samples = append(cl.cache.samples, sample{at: c.cfg.Now(), sum: sum})
	if n := len(cl.cache.samples); n > maxSamples {
		cl.cache.samples = cl.cache.samples[n-maxSamples:]
	}
	return nil
}

// throughput is the last rate of messages in, the sparkline of the rates
// between samples and how many rates it draws.
func (cl *client) throughput() (string, string, int) {
	cl.cache.mu.Lock()
	defer cl.cache.mu.Unlock()
	s := cl.cache.samples
	if len(s) < 2 {
		return "—", "", 0
	}
	rates := make([]float64, 0, len(s)-1)
	for i := 1; i < len(s); i++ {
		dt := s[i].at.Sub(s[i-1].at).Seconds()
		if dt <= 0 {
			continue
		}
		rates = append(rates, max(float64(s[i].sum-s[i-1].sum), 0)/dt)
	}
	if len(rates) == 0 {
		return "—", "", 0
	}
	return fmt.Sprintf("%.1f", rates[len(rates)-1]), sparkPath(rates, sparkW, sparkH), len(rates)
}
