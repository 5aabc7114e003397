package console

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/reassign"
)

type movingRow struct {
	Topic                      string
	Partition                  int32
	Replicas, Adding, Removing []int32
}

type progressRow struct {
	Key        string // "topic-partition/broker", the live update's key
	Name       string
	Broker     int32
	Have, Want int64
	Percent    int
}

type reassignData struct {
	Moving   []movingRow
	Progress []progressRow
}

// readReassignments lists every reassignment in progress
// (ListPartitionReassignments of all partitions) and the bytes each
// adding replica has caught up (reassign.Progress: DescribeLogDirs of the
// moving partitions), as `weir reassign-partitions --execute --wait`
// shows them.
func readReassignments(ctx context.Context, cl *client) (*reassignData, error) {
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	req.TimeoutMillis = 15000
	resp, err := req.RequestWith(ctx, cl.kgo)
	if err == nil {
		if err = kerr.ErrorForCode(resp.ErrorCode); err != nil && resp.ErrorMessage != nil {
			err = fmt.Errorf("%w: %s", err, *resp.ErrorMessage)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("ListPartitionReassignments: %w", err)
	}
	d := &reassignData{}
	var moving []kadm.ListPartitionReassignmentsResponse
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			moving = append(moving, kadm.ListPartitionReassignmentsResponse{Topic: t.Topic, Partition: p.Partition,
				Replicas: p.Replicas, AddingReplicas: p.AddingReplicas, RemovingReplicas: p.RemovingReplicas})
		}
	}
	slices.SortFunc(moving, func(a, b kadm.ListPartitionReassignmentsResponse) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	for _, m := range moving {
		d.Moving = append(d.Moving, movingRow{Topic: m.Topic, Partition: m.Partition, Replicas: m.Replicas, Adding: m.AddingReplicas, Removing: m.RemovingReplicas})
	}
	progress, err := reassign.Progress(ctx, cl.adm, moving)
	if err != nil {
		return nil, fmt.Errorf("DescribeLogDirs: %w", err)
	}
	for _, p := range progress {
		d.Progress = append(d.Progress, progressRow{Key: p.Name() + "/" + strconv.Itoa(int(p.Broker)), Name: p.Name(), Broker: p.Broker,
			Have: p.Have, Want: p.Want, Percent: int(p.Percent())})
	}
	return d, nil
}

// reassignments is the page of the reassignments in progress.
func (c *Console) reassignments(w http.ResponseWriter, r *http.Request, s *session) {
	ctx, cancel := reqCtx(r)
	defer cancel()
	d, err := readReassignments(ctx, s.cl)
	if err != nil {
		c.renderErr(w, s, "reassignments", http.StatusBadGateway, err, &reassignData{})
		return
	}
	c.render(w, s, "reassignments", http.StatusOK, d)
}

// reassignNumbers are the live numbers of the reassignments page: per
// moving replica ("topic-partition/broker") its percentage and its
// bytes, and how many partitions are still moving.
type reassignNumbers struct {
	Moving   int               `json:"moving"`
	Values   map[string]int    `json:"values"`
	Brokers  map[string]string `json:"brokers"` // "have-KEY" -> the bytes as text
	Finished bool              `json:"finished"`
}

// reassignmentEvents streams the progress of the moving replicas.
func (c *Console) reassignmentEvents(w http.ResponseWriter, r *http.Request, s *session) {
	c.stream(w, r, func() (any, error) {
		ctx, cancel := reqCtx(r)
		defer cancel()
		d, err := readReassignments(ctx, s.cl)
		if err != nil {
			return nil, err
		}
		n := reassignNumbers{Moving: len(d.Moving), Values: map[string]int{}, Brokers: map[string]string{}, Finished: len(d.Moving) == 0}
		for _, p := range d.Progress {
			n.Values[p.Key] = p.Percent
			n.Brokers["have-"+p.Key] = humanBytes(p.Have) + " of " + humanBytes(p.Want)
		}
		return n, nil
	})
}
