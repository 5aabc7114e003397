package server

import (
	"bytes"
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/controller"
	"weir/internal/log"
	"weir/internal/metadata"
)

// offlineReportMax bounds the partitions of one offline report; the next
// heartbeat reports the rest.
const offlineReportMax = 2000

// offlineReport returns the AssignReplicasToDirs request (to the LOST
// directory) for this broker's replicas whose logs are offline and that
// img still has leading, or in an ISR with other members, or nil when
// there are none: the controller must move them away (see
// controller/offline_replicas.go).
func offlineReport(img *metadata.Image, self int32, epoch int64, offline []log.TopicPartition) *kmsg.AssignReplicasToDirsRequest {
	byTopic := map[metadata.Uuid][]int32{}
	n := 0
	for _, tp := range offline {
		t := img.Topics.Get(tp.Topic)
		if t == nil || n == offlineReportMax {
			continue
		}
		p := t.Partitions[tp.Partition]
		if p == nil || p.Leader != self && !(slices.Contains(p.ISR, self) && len(p.ISR) > 1) {
			continue
		}
		byTopic[t.ID] = append(byTopic[t.ID], tp.Partition)
		n++
	}
	if n == 0 {
		return nil
	}
	req := kmsg.NewPtrAssignReplicasToDirsRequest()
	req.BrokerID, req.BrokerEpoch = self, epoch
	dir := kmsg.NewAssignReplicasToDirsRequestDirectory()
	dir.ID = controller.LostDir
	for _, id := range slices.SortedFunc(maps.Keys(byTopic), func(a, b metadata.Uuid) int { return bytes.Compare(a[:], b[:]) }) {
		rt := kmsg.NewAssignReplicasToDirsRequestDirectoryTopic()
		rt.TopicID = id
		ps := byTopic[id]
		slices.Sort(ps)
		for _, p := range ps {
			rp := kmsg.NewAssignReplicasToDirsRequestDirectoryTopicPartition()
			rp.Partition = p
			rt.Partitions = append(rt.Partitions, rp)
		}
		dir.Topics = append(dir.Topics, rt)
	}
	req.Directories = append(req.Directories, dir)
	return req
}

// reportOffline tells the active controller of this broker's offline
// replicas that still lead or sit in an ISR (see offlineReport). It runs
// after each heartbeat, so a report that fails, or a replica elected again
// (when the broker is unfenced), is reported at the next one.
func (l *lifecycle) reportOffline(ctx context.Context) {
	failed := l.s.partitions.AllOffline()
	if len(failed) == 0 {
		return
	}
	req := offlineReport(l.s.publisher.Image(), l.s.cfg.NodeID, l.epoch.Load(), failed)
	if req == nil {
		return
	}
	n := 0
	for _, t := range req.Directories[0].Topics {
		n += len(t.Partitions)
	}
	c, err := l.target()
	if err != nil {
		l.s.lg.Debug("cannot report offline replicas", "err", err)
		return
	}
	var resp *kmsg.AssignReplicasToDirsResponse
	if c == nil {
		resp, err = l.s.controller.AssignReplicasToDirs(req)
	} else {
		ctx, cancel := context.WithTimeout(ctx, l.callTimeout())
		defer cancel()
		var out kmsg.Response
		if out, err = c.Call(ctx, req); err == nil {
			resp = out.(*kmsg.AssignReplicasToDirsResponse)
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
	}
	if err != nil {
		l.s.lg.Warn("reporting offline replicas to the controller failed; retrying at the next heartbeat", "replicas", n, "err", err)
		return
	}
	l.s.lg.Warn("reported offline replicas to the controller, which moves their leadership and ISR membership away", "replicas", n)
}
