package console

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"weir/internal/txnadmin"

	"github.com/twmb/franz-go/pkg/kadm"
)

// txnStates are Kafka's transaction states, the filter's choices.
var txnStates = []string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "PrepareEpochFence", "Dead"}

// maxDescribed bounds the transactional ids one page describes.
const maxDescribed = 500

type txnRow struct {
	ID, State       string
	Coordinator     int32
	ProducerID      int64
	ProducerEpoch   int16
	TimeoutMs       int32
	Start, Duration string // "None" without a current transaction
	Partitions      []string
	Err             string
}

type hangingRow struct {
	Topic                      string
	Partition                  int32
	ProducerID                 int64
	ProducerEpoch              int16
	CoordinatorEpoch           int32
	StartOffset, LastTimestamp int64
	Minutes                    int64
}

type txnsData struct {
	States     []string
	State      string // the filter, "" for every state
	Query      string // a transactional id substring
	Rows       []txnRow
	Listed     int // listed before the substring filter
	Cut        bool
	MaxTimeout int  // find-hanging's --max-transaction-timeout, minutes
	Searched   bool // the hanging search ran (hanging=1)
	Hanging    []hangingRow
	HangingErr string
}

// transactions lists the transactional ids (ListTransactions, filtered by
// state on the broker), describes them (DescribeTransactions) and shows
// the hanging transactions as `weir transactions find-hanging` finds
// them, over every topic (partitions without a leader skipped).
func (c *Console) transactions(w http.ResponseWriter, r *http.Request, s *session) {
	ctx, cancel := reqCtx(r)
	defer cancel()
	q := r.URL.Query()
	d := &txnsData{States: txnStates, State: q.Get("state"), Query: strings.TrimSpace(q.Get("q")), MaxTimeout: 15}
	if v, err := strconv.Atoi(q.Get("max-timeout")); err == nil && v >= 0 {
		d.MaxTimeout = v
	}
	var states []string
	if d.State != "" {
		if !slices.Contains(txnStates, d.State) {
			c.renderErr(w, s, "transactions", http.StatusBadRequest, fmt.Errorf("state %q is not a transaction state", d.State), d)
			return
		}
		states = []string{d.State}
	}
	now := c.cfg.Now()
	var hanging []kadm.DescribedProducer
	if d.Searched = q.Get("hanging") == "1"; d.Searched {
		var herr error
		hanging, herr = txnadmin.FindHanging(ctx, s.cl.kgo, s.cl.adm, txnadmin.Scope{Broker: -1, SkipOffline: true},
			time.Duration(d.MaxTimeout)*time.Minute, now)
		if herr != nil {
			d.HangingErr = errText(herr)
		}
	}
	for _, h := range hanging {
		d.Hanging = append(d.Hanging, hangingRow{Topic: h.Topic, Partition: h.Partition, ProducerID: h.ProducerID,
			ProducerEpoch: h.ProducerEpoch, CoordinatorEpoch: h.CoordinatorEpoch, StartOffset: h.CurrentTxnStartOffset,
			LastTimestamp: h.LastTimestamp, Minutes: (now.UnixMilli() - h.LastTimestamp) / 60000})
	}
	listed, err := s.cl.adm.ListTransactions(ctx, nil, states)
	if err != nil && len(listed) == 0 {
		c.renderErr(w, s, "transactions", http.StatusBadGateway, fmt.Errorf("ListTransactions: %w", err), d)
		return
	}
	var ids []string
	for _, l := range listed.Sorted() {
		d.Listed++
		if d.Query == "" || strings.Contains(strings.ToLower(l.TxnID), strings.ToLower(d.Query)) {
			ids = append(ids, l.TxnID)
		}
	}
	if len(ids) > maxDescribed {
		ids, d.Cut = ids[:maxDescribed], true
	}
	described, derr := s.cl.adm.DescribeTransactions(ctx, ids...)
	for _, id := range ids {
		l := listed[id]
		row := txnRow{ID: id, State: l.State, Coordinator: l.Coordinator, ProducerID: l.ProducerID, Start: "None", Duration: "None"}
		if t, ok := described[id]; ok && t.Err == nil {
			row.State, row.Coordinator, row.ProducerID, row.ProducerEpoch, row.TimeoutMs = t.State, t.Coordinator, t.ProducerID, t.ProducerEpoch, t.TimeoutMillis
			if t.StartTimestamp >= 0 {
				row.Start = time.UnixMilli(t.StartTimestamp).UTC().Format("2006-01-02 15:04:05.000 UTC")
				row.Duration = now.Sub(time.UnixMilli(t.StartTimestamp)).Truncate(time.Millisecond).String()
			}
			for _, tp := range t.Topics.Sorted() {
				for _, p := range tp.Partitions {
					row.Partitions = append(row.Partitions, tp.Topic+"-"+strconv.Itoa(int(p)))
				}
			}
		} else if ok {
			row.Err = errText(t.Err)
		} else if derr != nil {
			row.Err = errText(derr)
		}
		d.Rows = append(d.Rows, row)
	}
	status := http.StatusOK
	if err != nil {
		c.renderErr(w, s, "transactions", status, fmt.Errorf("ListTransactions (some coordinators): %w", err), d)
		return
	}
	c.render(w, s, "transactions", status, d)
}
