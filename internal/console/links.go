package console

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"weir/internal/link"
)

type linkRow struct {
	Name, ID, Source string
	Configs          []field
	Mirrors          int
}

type mirrorPartRow struct {
	Partition          int32
	MirrorHW, SourceHW int64 // -1: unavailable
	Lag                int64 // -1: unknown
}

type mirrorRow struct {
	Topic, Link, Source, State string
	Partitions                 int32
	Lag                        int64 // the partitions' total, -1 when unknown
	SourceErr                  string
	Parts                      []mirrorPartRow
	Promotable                 bool // ACTIVE or PAUSED: it can be promoted
}

type linksData struct {
	Links   []linkRow
	Mirrors []mirrorRow
}

// links lists the cluster links and mirror topics of this cluster, over
// weir's cluster link admin API (list-links, list-mirrors), with each
// mirror's high watermarks on both sides and its lag (the source's read
// through the link with source-offsets while the mirror is ACTIVE or
// PAUSED), as `weir mirrors --describe` shows them.
func (c *Console) links(w http.ResponseWriter, r *http.Request, s *session) {
	ctx, cancel := reqCtx(r)
	defer cancel()
	d := &linksData{}
	ls, err := s.cl.links.ListLinks(ctx, "")
	if err != nil {
		c.renderErr(w, s, "links", http.StatusBadGateway, fmt.Errorf("list-links: %w", err), d)
		return
	}
	ms, err := s.cl.links.ListMirrors(ctx, "", nil)
	if err != nil {
		c.renderErr(w, s, "links", http.StatusBadGateway, fmt.Errorf("list-mirrors: %w", err), d)
		return
	}
	per := map[string]int{}
	slices.SortFunc(ms, func(a, b link.MirrorInfo) int { return strings.Compare(a.Topic, b.Topic) })
	for _, m := range ms {
		per[m.Link]++
		row := mirrorRow{Topic: m.Topic, Link: m.Link, Source: m.SourceTopic, State: m.State, Partitions: m.Partitions,
			Promotable: m.State == "ACTIVE" || m.State == "PAUSED"}
		known := true
		for _, p := range s.cl.links.Lags(ctx, m) {
			if p.Lag < 0 {
				known = false
			} else {
				row.Lag += p.Lag
			}
			if p.SourceErr != nil && row.SourceErr == "" && row.Promotable {
				row.SourceErr = errText(p.SourceErr)
			}
			row.Parts = append(row.Parts, mirrorPartRow{Partition: p.Partition, MirrorHW: p.MirrorHW, SourceHW: p.SourceHW, Lag: p.Lag})
		}
		if !known {
			row.Lag = -1
		}
		d.Mirrors = append(d.Mirrors, row)
	}
	slices.SortFunc(ls, func(a, b link.LinkInfo) int { return strings.Compare(a.Name, b.Name) })
	for _, l := range ls {
		row := linkRow{Name: l.Name, ID: l.ID, Source: l.Configs["bootstrap.servers"], Mirrors: per[l.Name]}
		for _, k := range slices.Sorted(maps.Keys(l.Configs)) {
			row.Configs = append(row.Configs, field{k, l.Configs[k]})
		}
		d.Links = append(d.Links, row)
	}
	c.render(w, s, "links", http.StatusOK, d)
}

// promoteTimeout bounds a promotion: the wait for the mirror to catch up
// with its source, the offset sync and the stop.
const promoteTimeout = 60 * time.Second

// promoteMirror promotes a mirror topic as `weir mirrors --promote`
// does (link.AdminClient.StopMirrors): once it has caught up with what
// its source had when asked (and, when its link syncs consumer offsets,
// once they are synced), it stops mirroring and becomes writable.
func (c *Console) promoteMirror(w http.ResponseWriter, r *http.Request, s *session) {
	topic := r.PostFormValue("topic")
	title := "Promote mirror topic " + topic
	if !confirmed(r) {
		c.render(w, s, "confirm", http.StatusOK, confirmData{Title: title,
			What: []string{fmt.Sprintf("Wait until mirror topic %q has everything its source has committed now (and its link has synced the consumer offsets), then stop mirroring it.", topic),
				"The topic becomes writable on this cluster and no longer follows its source. This cannot be undone."},
			Action: "/actions/promote-mirror", Fields: formFields(r, "topic"), Back: "/links", Danger: true})
		return
	}
	ctx, cancel := contextWithTimeout(r, promoteTimeout)
	defer cancel()
	if err := s.cl.links.StopMirrors(ctx, []string{topic}, link.StatePromoted); err != nil {
		c.failed(w, s, title, "/links", err)
		return
	}
	c.done(w, r, s, fmt.Sprintf("Mirror topic %s promoted: it is writable now.", topic), "/links#mirror-"+url.PathEscape(topic))
}
