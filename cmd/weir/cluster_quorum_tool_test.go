package main_test

// The operator's view of a controller crash: `weir metadata-quorum`
// names the active controller, and after a SIGKILL and a restart shows the
// node back among the voters with nothing left to replicate.

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/testwait"
)

// quorumStatus runs `weir metadata-quorum --bootstrap-server addrs
// describe --status` and returns its fields.
func quorumStatus(t *testing.T, addrs ...string) (map[string]string, error) {
	t.Helper()
	out, stderr, err := runWeir(t, "metadata-quorum", "--bootstrap-server", strings.Join(addrs, ","), "describe", "--status")
	if err != nil {
		return nil, fmt.Errorf("describe --status: %v: %s", err, stderr)
	}
	fields := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^(\w+):\s+(.*)$`).FindAllStringSubmatch(out, -1) {
		fields[m[1]] = m[2]
	}
	return fields, nil
}

// quorumReplica runs `weir metadata-quorum describe --replication` and
// returns node id's row: LogEndOffset, Lag and Status.
func quorumReplica(t *testing.T, id int32, addrs ...string) (end, lag int64, status string, err error) {
	t.Helper()
	out, stderr, err := runWeir(t, "metadata-quorum", "--bootstrap-server", strings.Join(addrs, ","), "describe", "--replication")
	if err != nil {
		return 0, 0, "", fmt.Errorf("describe --replication: %v: %s", err, stderr)
	}
	for _, line := range strings.Split(out, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) == 7 && f[0] == strconv.Itoa(int(id)) {
			end, _ = strconv.ParseInt(f[2], 10, 64)
			lag, _ = strconv.ParseInt(f[3], 10, 64)
			return end, lag, f[6], nil
		}
	}
	return 0, 0, "", fmt.Errorf("node %d is not in:\n%s", id, out)
}

// Three combined nodes; the one `weir metadata-quorum` names as leader is
// SIGKILLed. The tool then names another leader in a later epoch, topics
// are created and produced to through the survivors, and the killed node,
// started again, is unfenced in every node's Metadata and shown by
// `describe --replication` as a follower with no lag.
func TestControllerSIGKILLSeenThroughTheQuorumTool(t *testing.T) {
	nodes := startedCluster(t)
	var leader *clusterNode
	var epoch int
	testwait.For(t, 10*time.Second, "describe --status naming a leader", func() error {
		st, err := quorumStatus(t, nodes[0].addr)
		if err != nil {
			return err
		}
		id, _ := strconv.Atoi(st["LeaderId"])
		epoch, _ = strconv.Atoi(st["LeaderEpoch"])
		if id < 1 || id > len(nodes) {
			return fmt.Errorf("LeaderId %q", st["LeaderId"])
		}
		leader = nodes[id-1]
		return nil
	})
	if err := leader.p.signal(t, syscall.SIGKILL); err == nil {
		t.Fatal("weir exited cleanly after SIGKILL")
	}
	var survivors []string
	for _, n := range others(nodes, leader.id) {
		survivors = append(survivors, n.addr)
	}

	testwait.For(t, 15*time.Second, "a new leader", func() error {
		st, err := quorumStatus(t, survivors...)
		if err != nil {
			return err
		}
		if id, _ := strconv.Atoi(st["LeaderId"]); id == int(leader.id) || id < 1 {
			return fmt.Errorf("LeaderId %s", st["LeaderId"])
		}
		if e, _ := strconv.Atoi(st["LeaderEpoch"]); e <= epoch {
			return fmt.Errorf("LeaderEpoch %d, was %d before the crash", e, epoch)
		}
		return nil
	})
	// Once the dead broker is fenced, new partitions go to the survivors.
	testwait.For(t, 15*time.Second, "the killed broker fenced", func() error {
		brokers, _, err := others(nodes, leader.id)[0].metadata(t, "")
		if err == nil && slices.Contains(brokers, leader.id) {
			err = fmt.Errorf("brokers %v", brokers)
		}
		return err
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(survivors...), kgo.DefaultProduceTopic("after-kill"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 4, 1, nil, "after-kill"); err != nil {
		t.Fatalf("creating a topic through the survivors: %v", err)
	}
	for i := 0; i < 200; i++ {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatalf("producing through the survivors: %v", err)
		}
	}

	leader.start(t)
	testwait.For(t, 20*time.Second, "the restarted node unfenced everywhere", func() error {
		for _, n := range nodes {
			brokers, _, err := n.metadata(t, "")
			if err != nil {
				return fmt.Errorf("node %d: %w", n.id, err)
			}
			if !slices.Contains(brokers, leader.id) {
				return fmt.Errorf("node %d lists brokers %v", n.id, brokers)
			}
		}
		return nil
	})
	testwait.For(t, 20*time.Second, "the restarted node caught up", func() error {
		end, lag, status, err := quorumReplica(t, leader.id, survivors...)
		if err == nil && (lag != 0 || end <= 0 || status != "Follower") {
			err = fmt.Errorf("LogEndOffset %d, Lag %d, Status %s", end, lag, status)
		}
		return err
	})
	if got := endOffset(t, leader.addr, "after-kill"); got != 200 {
		t.Fatalf("the restarted node sees %d records in after-kill, want 200", got)
	}
}
