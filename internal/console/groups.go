package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

type groupRow struct {
	Name, State, Type, Coordinator string
}

type groupsData struct {
	Rows []groupRow
}

// groups lists the consumer groups (ListGroups).
func (c *Console) groups(w http.ResponseWriter, r *http.Request, s *session) {
	ctx, cancel := reqCtx(r)
	defer cancel()
	d := &groupsData{}
	gs, err := s.cl.adm.ListGroups(ctx)
	if err != nil {
		c.renderErr(w, s, "groups", http.StatusBadGateway, err, d)
		return
	}
	for _, g := range gs.Sorted() {
		d.Rows = append(d.Rows, groupRow{Name: g.Group, State: g.State, Type: g.GroupType, Coordinator: strconv.Itoa(int(g.Coordinator))})
	}
	c.render(w, s, "groups", http.StatusOK, d)
}

type memberRow struct {
	ID, ClientID, Host, Instance string
	Assigned                     string
}

type lagRow struct {
	Topic     string
	Partition int32
	Committed int64
	End       int64
	Lag       int64
	Member    string
	Err       string
}

type groupData struct {
	Name, State, Protocol, ProtocolType string
	Members                             []memberRow
	Lag                                 []lagRow
	TotalLag                            int64
	Topics                              []string // topics with commits, for the reset form
	Sparkline                           string
	SparklineSamples                    int
}

// readGroup describes a group with its lag (kadm.Lag: DescribeGroups,
// OffsetFetch and ListOffsets).
func (c *Console) readGroup(ctx context.Context, cl *client, name string) (*groupData, error) {
	lags, err := cl.adm.Lag(ctx, name)
	if err != nil {
		return nil, err
	}
	l, ok := lags[name]
	if !ok {
		return nil, fmt.Errorf("group %s: no answer", name)
	}
	if err := l.Error(); err != nil {
		return nil, err
	}
	d := &groupData{Name: name, State: l.State, Protocol: l.Protocol, ProtocolType: l.ProtocolType}
	for _, m := range l.Members {
		mr := memberRow{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost}
		if m.InstanceID != nil {
			mr.Instance = *m.InstanceID
		}
		if ca, ok := m.Assigned.AsConsumer(); ok {
			var parts []string
			for _, t := range ca.Topics {
				ps := make([]string, len(t.Partitions))
				for i, p := range t.Partitions {
					ps[i] = strconv.Itoa(int(p))
				}
				parts = append(parts, t.Topic+": "+strings.Join(ps, ", "))
			}
			mr.Assigned = strings.Join(parts, "; ")
		}
		d.Members = append(d.Members, mr)
	}
	topics := map[string]bool{}
	for _, ml := range l.Lag.Sorted() {
		row := lagRow{Topic: ml.Topic, Partition: ml.Partition, Committed: ml.Commit.At, End: ml.End.Offset, Lag: ml.Lag}
		if ml.Member != nil {
			row.Member = ml.Member.ClientID + " " + ml.Member.MemberID
		}
		if ml.Err != nil {
			row.Err = errText(ml.Err)
		}
		if ml.Lag > 0 {
			d.TotalLag += ml.Lag
		}
		topics[ml.Topic] = true
		d.Lag = append(d.Lag, row)
	}
	for t := range topics {
		d.Topics = append(d.Topics, t)
	}
	sort.Strings(d.Topics)
	return d, nil
}

// group is one group's page.
func (c *Console) group(w http.ResponseWriter, r *http.Request, s *session) {
	ctx, cancel := reqCtx(r)
	defer cancel()
	name := r.PathValue("group")
	d, err := c.readGroup(ctx, s.cl, name)
	if err != nil {
		c.renderErr(w, s, "group", http.StatusBadGateway, fmt.Errorf("group %s: %w", name, err), &groupData{Name: name})
		return
	}
	d.Sparkline, d.SparklineSamples = s.lagHistory(name, -1, c.cfg.Now())
	c.render(w, s, "group", http.StatusOK, d)
}

type groupNumbers struct {
	State     string           `json:"state"`
	TotalLag  int64            `json:"totalLag"`
	Lags      map[string]int64 `json:"lags"` // "topic/partition" -> lag
	Sparkline string           `json:"sparkline"`
}

// groupEvents streams a group's lag, and adds to its lag-over-time chart.
func (c *Console) groupEvents(w http.ResponseWriter, r *http.Request, s *session) {
	name := r.PathValue("group")
	c.stream(w, r, func() (any, error) {
		ctx, cancel := reqCtx(r)
		defer cancel()
		d, err := c.readGroup(ctx, s.cl, name)
		if err != nil {
			return nil, err
		}
		n := groupNumbers{State: d.State, TotalLag: d.TotalLag, Lags: map[string]int64{}}
		for _, l := range d.Lag {
			n.Lags[l.Topic+"/"+strconv.Itoa(int(l.Partition))] = l.Lag
		}
		n.Sparkline, _ = s.lagHistory(name, d.TotalLag, c.cfg.Now())
		return n, nil
	})
}

// lagHistory adds lag (unless negative) to the session's samples of a
// group's total lag and returns their sparkline and count. The session
// keeps the samples of the last group it watched.
func (s *session) lagHistory(group string, lag int64, now time.Time) (string, int) {
	s.cl.cache.mu.Lock()
	defer s.cl.cache.mu.Unlock()
	h := &s.lag
	if h.group != group {
		*h = lagSamples{group: group}
	}
	if lag >= 0 {
		h.values = append(h.values, float64(lag))
		if len(h.values) > maxSamples {
			h.values = h.values[len(h.values)-maxSamples:]
		}
	}
	return sparkPath(h.values, sparkW, sparkH), len(h.values)
}

type lagSamples struct {
	group  string
	values []float64
}

// resetOffsets resets a group's committed offsets on one topic (or every
// topic it has offsets for): the first POST is the dry run, a table of
// the current and new offsets; the confirmation commits the new ones.
// As Kafka's tool, it refuses a group with members.
func (c *Console) resetOffsets(w http.ResponseWriter, r *http.Request, s *session) {
	group, topic, to := r.PostFormValue("group"), r.PostFormValue("topic"), r.PostFormValue("to")
	back := "/groups/" + url.PathEscape(group)
	title := "Reset offsets of group " + group
	ctx, cancel := actCtx(r)
	defer cancel()
	d, err := c.readGroup(ctx, s.cl, group)
	if err != nil {
		c.failed(w, s, title, back, err)
		return
	}
	if d.State != "Empty" && d.State != "Dead" {
		c.failed(w, s, title, back, fmt.Errorf("assignments can only be reset if the group '%s' is inactive, but the current state is %s", group, d.State))
		return
	}
	topics := d.Topics
	if topic != "" {
		topics = []string{topic}
	}
	if len(topics) == 0 {
		c.failed(w, s, title, back, errors.New("the group has no committed offsets; name a topic"))
		return
	}
	var listed kadm.ListedOffsets
	switch {
	case to == "earliest":
		listed, err = s.cl.adm.ListStartOffsets(ctx, topics...)
	case to == "latest":
		listed, err = s.cl.adm.ListEndOffsets(ctx, topics...)
	case strings.HasPrefix(to, "timestamp:"):
		var t time.Time
		t, err = time.Parse(time.RFC3339, strings.TrimPrefix(to, "timestamp:"))
		if err == nil {
			listed, err = s.cl.adm.ListOffsetsAfterMilli(ctx, t.UnixMilli(), topics...)
		}
	case strings.HasPrefix(to, "offset:"):
		var n int64
		n, err = strconv.ParseInt(strings.TrimPrefix(to, "offset:"), 10, 64)
		if err == nil {
			listed, err = s.cl.adm.ListEndOffsets(ctx, topics...)
			for t, ps := range listed {
				for p, o := range ps {
					o.Offset = min(n, o.Offset) // past the end is the end, as Kafka's tool
					ps[p] = o
				}
				listed[t] = ps
			}
		}
	default:
		err = fmt.Errorf("reset to %q: earliest, latest, offset:N or timestamp:RFC3339", to)
	}
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		c.failed(w, s, title, back, err)
		return
	}
	current := map[string]int64{}
	for _, l := range d.Lag {
		current[l.Topic+"/"+strconv.Itoa(int(l.Partition))] = l.Committed
	}
	offsets := kadm.Offsets{}
	var rows [][]string
	for _, o := range sortedListed(listed) {
		offsets.AddOffset(o.Topic, o.Partition, o.Offset, -1)
		cur, ok := current[o.Topic+"/"+strconv.Itoa(int(o.Partition))]
		cs := "none"
		if ok && cur >= 0 {
			cs = strconv.FormatInt(cur, 10)
		}
		rows = append(rows, []string{o.Topic, strconv.Itoa(int(o.Partition)), cs, strconv.FormatInt(o.Offset, 10)})
	}
	if !confirmed(r) {
		c.render(w, s, "confirm", http.StatusOK, confirmData{Title: title + " (dry run)",
			What: []string{fmt.Sprintf("Commit these offsets for group %q. Nothing has changed yet.", group)},
			Head: []string{"Topic", "Partition", "Current offset", "New offset"}, Rows: rows,
			Action: "/actions/reset-offsets", Fields: formFields(r, "group", "topic", "to"), Back: back})
		return
	}
	resps, err := s.cl.adm.CommitOffsets(ctx, group, offsets)
	if err == nil {
		err = resps.Error()
	}
	if err != nil {
		c.failed(w, s, title, back, err)
		return
	}
	c.done(w, r, s, fmt.Sprintf("Reset %d offsets of group %s.", len(rows), group), back)
}

func sortedListed(l kadm.ListedOffsets) []kadm.ListedOffset {
	var out []kadm.ListedOffset
	l.Each(func(o kadm.ListedOffset) { out = append(out, o) })
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}
