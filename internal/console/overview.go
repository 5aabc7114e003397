package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// overview is the cluster overview page.
func (c *Console) overview(w http.ResponseWriter, r *http.Request, s *session) {
	ctx, cancel := reqCtx(r)
	defer cancel()
	d, err := c.readOverview(ctx, s.cl)
	if err != nil {
		c.renderErr(w, s, "overview", http.StatusBadGateway, err, &overviewData{})
		return
	}
	c.render(w, s, "overview", http.StatusOK, d)
}

// overviewEvents streams the overview's live numbers as server-sent
// events, one "overview" event per sample interval, until the browser
// goes away or the console closes. The streams of one client share their
// reads (liveOverview).
func (c *Console) overviewEvents(w http.ResponseWriter, r *http.Request, s *session) {
	c.stream(w, r, func() (any, error) {
		ctx, cancel := reqCtx(r)
		defer cancel()
		d, err := c.liveOverview(ctx, s.cl)
		if err != nil {
			return nil, err
		}
		n := overviewNumbers{Topics: d.Topics, Partitions: d.Partitions, UnderReplicated: d.UnderReplicated, Offline: d.Offline,
			MessagesPerSec: d.MessagesPerSec, Sparkline: d.Sparkline, Brokers: map[string]string{}, QuorumHW: d.QuorumHW,
			Lags: map[string]int64{}}
		for _, b := range d.Brokers {
			id := strconv.Itoa(int(b.ID))
			n.Brokers["leaders-"+id] = strconv.Itoa(b.Leaders)
			n.Brokers["replicas-"+id] = strconv.Itoa(b.Replicas)
			n.Brokers["state-"+id] = b.State
		}
		for _, v := range d.Voters {
			n.Lags[strconv.Itoa(int(v.ID))] = v.Lag
		}
		return n, nil
	})
}

// stream sends read's answer as a JSON event at once and then every
// SampleEvery; an error is sent as an "error" event and the stream goes
// on (the cluster may come back).
func (c *Console) stream(w http.ResponseWriter, r *http.Request, read func() (any, error)) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	t := time.NewTicker(c.cfg.SampleEvery)
	defer t.Stop()
	for {
		v, err := read()
		event, data := "update", []byte(nil)
		if err != nil {
			event, data = "failure", mustJSON(errText(err))
		} else {
			data = mustJSON(v)
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data); err != nil {
			return
		}
		fl.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-c.close:
			return
		case <-t.C:
		}
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only the console's own types are marshalled
	}
	return b
}
