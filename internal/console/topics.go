package console

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// pageSize is how many topics one page of the list shows.
const pageSize = 50

type topicRow struct {
	Name            string
	Internal        bool
	Partitions      int
	RF              int
	UnderReplicated int
	UnderMinISR     int
	MinISR          string // "" when the config could not be read
	Size            int64
	SizeKnown       bool
	Err             string
}

type topicsData struct {
	Query        string
	Internal     bool // internal topics listed too
	Rows         []topicRow
	Matched      int // topics that match the query
	Total        int // topics in the metadata
	Page, Pages  int
	Prev, Next   string // the other pages' URLs, "" at the ends
	ConfigErr    string
	SizesErr     string
	DefaultParts string
}

// topics is the topic list: a search by substring and pages of
// pageSize topics, filtered and cut on the server from one cached
// Metadata answer; only the shown page's configs are asked for.
func (c *Console) topics(w http.ResponseWriter, r *http.Request, s *session) {
	ctx, cancel := reqCtx(r)
	defer cancel()
	q := r.URL.Query()
	d := &topicsData{Query: strings.TrimSpace(q.Get("q")), Internal: q.Get("internal") == "1"}
	meta, err := c.metadata(ctx, s.cl)
	if err != nil {
		c.renderErr(w, s, "topics", http.StatusBadGateway, err, d)
		return
	}
	d.Total = len(meta.Topics)
	names := make([]string, 0, len(meta.Topics))
	for name, t := range meta.Topics {
		if (t.IsInternal || strings.HasPrefix(name, "__")) && !d.Internal {
			continue
		}
		if d.Query != "" && !strings.Contains(strings.ToLower(name), strings.ToLower(d.Query)) {
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	d.Matched = len(names)
	d.Pages = max(1, (len(names)+pageSize-1)/pageSize)
	d.Page, _ = strconv.Atoi(q.Get("page"))
	d.Page = min(max(d.Page, 1), d.Pages)
	from, to := (d.Page-1)*pageSize, min(d.Page*pageSize, len(names))
	shown := names[from:to]
	link := func(page int) string {
		v := q
		v.Set("page", strconv.Itoa(page))
		return "/topics?" + v.Encode()
	}
	if d.Page > 1 {
		d.Prev = link(d.Page - 1)
	}
	if d.Page < d.Pages {
		d.Next = link(d.Page + 1)
	}
	minISR := map[string]int{}
	if len(shown) > 0 {
		rcs, err := s.cl.adm.DescribeTopicConfigs(ctx, shown...)
		if err != nil {
			d.ConfigErr = errText(err)
		}
		for _, rc := range rcs {
			for _, cv := range rc.Configs {
				if cv.Key == "min.insync.replicas" && cv.Value != nil {
					if n, err := strconv.Atoi(*cv.Value); err == nil {
						minISR[rc.Name] = n
					}
				}
			}
		}
	}
	sizes, sizesErr := c.topicSizes(ctx, s.cl)
	if sizesErr != nil {
		d.SizesErr = errText(sizesErr)
	}
	for _, name := range shown {
		t := meta.Topics[name]
		row := topicRow{Name: name, Internal: t.IsInternal, Partitions: len(t.Partitions)}
		if t.Err != nil {
			row.Err = errText(t.Err)
		}
		mi, haveMin := minISR[name]
		if haveMin {
			row.MinISR = strconv.Itoa(mi)
		}
		for _, p := range t.Partitions {
			row.RF = max(row.RF, len(p.Replicas))
			if len(p.ISR) < len(p.Replicas) {
				row.UnderReplicated++
			}
			if haveMin && len(p.ISR) < mi {
				row.UnderMinISR++
			}
		}
		row.Size, row.SizeKnown = sizes[name]
		d.Rows = append(d.Rows, row)
	}
	c.render(w, s, "topics", http.StatusOK, d)
}

// topicSizes is the bytes on disk of each topic over all its replicas.
func (c *Console) topicSizes(ctx context.Context, cl *client) (map[string]int64, error) {
	dirs, err := c.logDirs(ctx, cl)
	if err != nil {
		return nil, err
	}
	sizes := map[string]int64{}
	dirs.Each(func(d kadm.DescribedLogDir) {
		for t, ps := range d.Topics {
			for _, p := range ps {
				sizes[t] += p.Size
			}
		}
	})
	return sizes, nil
}

type partitionRow struct {
	Partition    int32
	Leader       int32
	Epoch        int32
	Replicas     []int32
	ISR          []int32
	ELR          []int32
	LastKnownELR []int32
	Offline      []int32
	Preferred    bool // the leader is the first replica
	Start, End   int64
	OffsetsErr   string
	Sizes        []replicaSize
	UnderRepl    bool
	UnderMinISR  bool
}

type replicaSize struct {
	Broker int32
	Size   int64
	Known  bool
}

type configRow struct {
	Name, Value, Source string
	Sensitive           bool
}

type topicData struct {
	Name       string
	ID         string
	Internal   bool
	Partitions []partitionRow
	Configs    []configRow
	ConfigErr  string
	ELRErr     string
	SizesErr   string
	MinISR     int
	NotLeaders int // partitions led by another than their preferred replica
}

// readTopic asks for one topic's partitions, offsets, sizes and configs.
func (c *Console) readTopic(ctx context.Context, cl *client, name string) (*topicData, error) {
	meta, err := cl.adm.Metadata(ctx, name)
	if err != nil {
		return nil, err
	}
	t, ok := meta.Topics[name]
	if !ok {
		return nil, kerr.UnknownTopicOrPartition
	}
	if t.Err != nil {
		return nil, t.Err
	}
	d := &topicData{Name: name, ID: t.ID.String(), Internal: t.IsInternal}
	rcs, err := cl.adm.DescribeTopicConfigs(ctx, name)
	if err == nil {
		var rc kadm.ResourceConfig
		rc, err = rcs.On(name, nil)
		if err == nil {
			err = rc.Err
		}
		for _, cv := range rc.Configs {
			v := ""
			if cv.Value != nil {
				v = *cv.Value
			}
			if cv.Key == "min.insync.replicas" {
				d.MinISR, _ = strconv.Atoi(v)
			}
			d.Configs = append(d.Configs, configRow{Name: cv.Key, Value: v, Source: cv.Source.String(), Sensitive: cv.Sensitive})
		}
		sort.Slice(d.Configs, func(i, j int) bool { return d.Configs[i].Name < d.Configs[j].Name })
	}
	if err != nil {
		d.ConfigErr = errText(err)
	}
	elr := c.readELR(ctx, cl, name, d)
	starts, errS := cl.adm.ListStartOffsets(ctx, name)
	ends, errE := cl.adm.ListEndOffsets(ctx, name)
	set := kadm.TopicsSet{}
	for _, p := range t.Partitions {
		set.Add(name, p.Partition)
	}
	dirs, errD := cl.adm.DescribeAllLogDirs(ctx, set)
	if errD != nil {
		d.SizesErr = errText(errD)
	}
	for _, p := range t.Partitions.Sorted() {
		row := partitionRow{Partition: p.Partition, Leader: p.Leader, Epoch: p.LeaderEpoch, Replicas: p.Replicas, ISR: p.ISR,
			Offline: p.OfflineReplicas, UnderRepl: len(p.ISR) < len(p.Replicas), UnderMinISR: d.MinISR > 0 && len(p.ISR) < d.MinISR}
		row.Preferred = len(p.Replicas) > 0 && p.Leader == p.Replicas[0]
		if !row.Preferred {
			d.NotLeaders++
		}
		if e, ok := elr[p.Partition]; ok {
			row.ELR, row.LastKnownELR = e[0], e[1]
		}
		switch {
		case errS != nil:
			row.OffsetsErr = errText(errS)
		case errE != nil:
			row.OffsetsErr = errText(errE)
		default:
			so, _ := starts.Lookup(name, p.Partition)
			eo, _ := ends.Lookup(name, p.Partition)
			row.Start, row.End = so.Offset, eo.Offset
			if so.Err != nil {
				row.OffsetsErr = errText(so.Err)
			} else if eo.Err != nil {
				row.OffsetsErr = errText(eo.Err)
			}
		}
		for _, b := range p.Replicas {
			rs := replicaSize{Broker: b}
			if errD == nil {
				if lp, ok := dirs[b].LookupPartition(name, p.Partition); ok {
					rs.Size, rs.Known = lp.Size, true
				}
			}
			row.Sizes = append(row.Sizes, rs)
		}
		d.Partitions = append(d.Partitions, row)
	}
	return d, nil
}

// readELR asks DescribeTopicPartitions for each partition's eligible
// leader replicas and last known ELR (empty when the feature is off).
func (c *Console) readELR(ctx context.Context, cl *client, name string, d *topicData) map[int32][2][]int32 {
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	rt.Topic = name
	req.Topics = append(req.Topics, rt)
	req.ResponsePartitionLimit = 2000
	out := map[int32][2][]int32{}
	for {
		resp, err := req.RequestWith(ctx, cl.kgo)
		if err != nil {
			d.ELRErr = "DescribeTopicPartitions: " + errText(err)
			return out
		}
		for _, t := range resp.Topics {
			if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
				d.ELRErr = "DescribeTopicPartitions: " + errText(err)
				return out
			}
			for _, p := range t.Partitions {
				out[p.Partition] = [2][]int32{p.EligibleLeaderReplicas, p.LastKnownELR}
			}
		}
		if resp.NextCursor == nil {
			return out
		}
		cur := kmsg.NewDescribeTopicPartitionsRequestCursor()
		cur.Topic, cur.Partition = resp.NextCursor.Topic, resp.NextCursor.Partition
		req.Cursor = &cur
	}
}

// topic is one topic's page.
func (c *Console) topic(w http.ResponseWriter, r *http.Request, s *session) {
	ctx, cancel := reqCtx(r)
	defer cancel()
	name := r.PathValue("topic")
	d, err := c.readTopic(ctx, s.cl, name)
	if err != nil {
		c.renderErr(w, s, "topic", http.StatusBadGateway, fmt.Errorf("topic %s: %w", name, err), &topicData{Name: name})
		return
	}
	c.render(w, s, "topic", http.StatusOK, d)
}
