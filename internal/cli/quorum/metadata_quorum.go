// Package quorum is weir metadata-quorum, like kafka-metadata-quorum.sh.
package quorum

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/cli/tool"
	"weir/internal/metadata"
)

// quorumClientOpts are added to the command's client (tests pin versions).
var quorumClientOpts []kgo.Opt

type metadataQuorumFlags struct {
	bootstrapServer, bootstrapController, commandConfig string
}

func NewCommand() *cobra.Command {
	var f metadataQuorumFlags
	cmd := &cobra.Command{
		Use:   "metadata-quorum",
		Short: "Describe the KRaft metadata quorum (and change its voters where supported), like kafka-metadata-quorum.sh",
		Long: `metadata-quorum shows the state of the metadata quorum: the controllers that
hold the cluster metadata log (__cluster_metadata) as a Raft quorum, which of
them leads, and how far each one has replicated the log. It sends
DescribeQuorum and prints exactly what Apache Kafka's kafka-metadata-quorum.sh
prints, so it works against weir and Kafka alike.

Connect through a broker with --bootstrap-server (the request goes to the
controller the broker names) or to the controllers themselves with
--bootstrap-controller (each is asked in turn until the leader of the quorum
answers, so list them all). Exactly one of the two is required.

  describe --status        a summary of the quorum
  describe --replication   one row per replica of the metadata log
  add-controller           add a voter (KIP-853): not supported by weir's
  remove-controller        remove a voter      static quorum; see their --help

--status prints:

  ClusterId              the cluster id (DescribeCluster)
  LeaderId               node id of the leader of the quorum
  LeaderEpoch            its epoch: the Raft term, one more each election
  HighWatermark          offset after the last committed metadata record
  MaxFollowerLag         how many offsets the furthest-behind voter lags the
                         leader's log end offset
  MaxFollowerLagTimeMs   how long ago that voter was last caught up, relative
                         to the leader (0 when the leader is the furthest
                         behind, -1 when unknown)
  CurrentVoters          the voters, as {"id": N, "directoryId": "...",
                         "endpoints": ["LISTENER://host:port"]}; directoryId
                         is left out for voters fixed by
                         controller.quorum.voters, endpoints when the node
                         answered DescribeQuorum v0 or v1
  CurrentObservers       the replicas that follow the log without voting
                         (brokers), in the same form

--replication prints a table, the leader first, then the other voters
(Follower) and the observers (Observer): NodeId, DirectoryId, LogEndOffset,
Lag (behind the leader's log end offset), LastFetchTimestamp and
LastCaughtUpTimestamp (ms since the epoch; -1 when unknown; with
--human-readable "N ms ago"), Status.

` + tool.CommandConfigHelp,
		Example: `  # a summary, through any broker
  weir metadata-quorum --bootstrap-server localhost:9092 describe --status

  # replication of the metadata log, asking the controllers directly
  weir metadata-quorum --bootstrap-controller c1:9093,c2:9093,c3:9093 describe --replication

  # the same with times relative to now
  weir metadata-quorum --bootstrap-server localhost:9092 describe --replication --human-readable`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.bootstrapServer, "bootstrap-server", "", "broker(s) to connect through, host:port[,host:port]")
	pf.StringVar(&f.commandConfig, "command-config", "", "a client properties file (PLAINTEXT settings only: see weir topics --help)")
	pf.StringVar(&f.bootstrapController, "bootstrap-controller", "", "controller(s) to connect to, host:port[,host:port]")
	cmd.AddCommand(newMetadataQuorumDescribeCommand(&f), newMetadataQuorumAddControllerCommand(&f), newMetadataQuorumRemoveControllerCommand(&f))
	return cmd
}

func newMetadataQuorumDescribeCommand(f *metadataQuorumFlags) *cobra.Command {
	var status, replication, humanReadable bool
	cmd := &cobra.Command{
		Use:   "describe (--status | --replication [--human-readable])",
		Short: "Describe the metadata quorum: --status or --replication",
		Long: `describe prints the quorum summary (--status) or the replication table
(--replication) of kafka-metadata-quorum.sh; see weir metadata-quorum --help
for what each field means.`,
		Example: `  weir metadata-quorum --bootstrap-server localhost:9092 describe --status
  weir metadata-quorum --bootstrap-server localhost:9092 describe --replication`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case status && replication:
				return errors.New("Only one of --status or --replication should be specified with describe sub-command")
			case status && humanReadable:
				return errors.New("The option --human-readable is only supported along with --replication")
			case !status && !replication:
				return errors.New("One of --status or --replication must be specified with describe sub-command")
			}
			qc, err := dialQuorum(cmd, f)
			if err != nil {
				return err
			}
			defer qc.tc.Close()
			ctx, cancel := qc.tc.Context(cmd)
			defer cancel()
			out := cmd.OutOrStdout()
			if replication {
				q, err := qc.describeQuorum(ctx)
				if err != nil {
					return err
				}
				return writeQuorumReplication(out, q, humanReadable, time.Now())
			}
			clusterID, err := qc.clusterID(ctx)
			if err != nil {
				return err
			}
			q, err := qc.describeQuorum(ctx)
			if err != nil {
				return err
			}
			return writeQuorumStatus(out, clusterID, q)
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.BoolVar(&status, "status", false, "a short summary of the quorum")
	fl.BoolVar(&replication, "replication", false, "the replication state of each replica of the metadata log")
	fl.BoolVar(&humanReadable, "human-readable", false, "with --replication: show times as \"N ms ago\"")
	return cmd
}

// quorumClient sends the tool's requests: through the cluster's routing
// (to the controller a broker names) with --bootstrap-server, or to the
// listed controllers in turn with --bootstrap-controller.
type quorumClient struct {
	cl         *kgo.Client
	tc         *tool.Client
	controller bool
}

func dialQuorum(cmd *cobra.Command, f *metadataQuorumFlags) (*quorumClient, error) {
	addrs, controller := f.bootstrapServer, false
	switch {
	case f.bootstrapServer != "" && f.bootstrapController != "":
		return nil, errors.New("--bootstrap-server and --bootstrap-controller cannot be used together")
	case f.bootstrapController != "":
		addrs, controller = f.bootstrapController, true
	case f.bootstrapServer == "":
		return nil, errors.New("one of --bootstrap-server or --bootstrap-controller is required")
	}
	var seeds []string
	for _, a := range strings.Split(addrs, ",") {
		if a = strings.TrimSpace(a); a != "" {
			seeds = append(seeds, a)
		}
	}
	conn := tool.ConnFlags{BootstrapServer: strings.Join(seeds, ","), CommandConfig: f.commandConfig}
	tc, err := conn.Connect(cmd, "weir-metadata-quorum", "describeMetadataQuorum", quorumClientOpts...)
	if err != nil {
		return nil, err
	}
	return &quorumClient{cl: tc.Kgo, tc: tc, controller: controller}, nil
}

// clusterID asks DescribeCluster (of brokers, or of controllers), and falls
// back to Metadata where DescribeCluster fails.
func (qc *quorumClient) clusterID(ctx context.Context) (string, error) {
	dc := kmsg.NewPtrDescribeClusterRequest()
	var resp kmsg.Response
	var err error
	if qc.controller {
		dc.EndpointType = 2
		resp, err = qc.firstSeed(ctx, dc, nil)
	} else {
		resp, err = dc.RequestWith(ctx, qc.cl)
	}
	if err == nil {
		r := resp.(*kmsg.DescribeClusterResponse)
		if err = kerr.ErrorForCode(r.ErrorCode); err == nil && r.ClusterID != "" {
			return r.ClusterID, nil
		}
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{}
	var mresp kmsg.Response
	var merr error
	if qc.controller {
		mresp, merr = qc.firstSeed(ctx, md, nil)
	} else {
		mresp, merr = md.RequestWith(ctx, qc.cl)
	}
	if merr == nil && mresp.(*kmsg.MetadataResponse).ClusterID != nil {
		return *mresp.(*kmsg.MetadataResponse).ClusterID, nil
	}
	if err == nil {
		err = merr
	}
	if err == nil {
		err = errors.New("no cluster id in the answer")
	}
	return "", fmt.Errorf("describing the cluster: %w", err)
}

// firstSeed sends req to each seed in turn and returns the first answer
// that accept takes (accept nil: any answer). When every seed answered but
// none was accepted, the first answer is returned for the caller to
// explain; when none answered, the first error.
func (qc *quorumClient) firstSeed(ctx context.Context, req kmsg.Request, accept func(kmsg.Response) error) (kmsg.Response, error) {
	var refused kmsg.Response
	var firstErr error
	for _, b := range qc.cl.SeedBrokers() {
		resp, err := b.Request(ctx, req)
		switch {
		case err != nil:
			if firstErr == nil {
				firstErr = err
			}
		case accept == nil || accept(resp) == nil:
			return resp, nil
		case refused == nil:
			refused = resp
		}
		if ctx.Err() != nil {
			break
		}
	}
	if refused != nil {
		return refused, nil
	}
	return nil, firstErr
}

// quorumInfo is a DescribeQuorum answer as Kafka's admin client reads it.
type quorumInfo struct {
	leaderID    int32
	leaderEpoch int32
	hw          int64
	voters      []kmsg.DescribeQuorumResponseTopicPartitionReplicaState
	observers   []kmsg.DescribeQuorumResponseTopicPartitionReplicaState
	endpoints   map[int32][]string // node id -> LISTENER://host:port (v2)
}

func (qc *quorumClient) describeQuorum(ctx context.Context) (*quorumInfo, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = metadata.LogTopic
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = []kmsg.DescribeQuorumRequestTopic{rt}
	var resp kmsg.Response
	var err error
	if qc.controller {
		resp, err = qc.firstSeed(ctx, req, func(r kmsg.Response) error {
			_, err := readQuorum(r.(*kmsg.DescribeQuorumResponse))
			return err
		})
	} else {
		resp, err = req.RequestWith(ctx, qc.cl)
	}
	if err != nil {
		return nil, fmt.Errorf("describing the metadata quorum: %w", err)
	}
	return readQuorum(resp.(*kmsg.DescribeQuorumResponse))
}

// readQuorum checks a DescribeQuorum answer as Kafka's admin client does:
// no error, and exactly __cluster_metadata partition 0.
func readQuorum(resp *kmsg.DescribeQuorumResponse) (*quorumInfo, error) {
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("describing the metadata quorum: %w%s", err, messageSuffix(resp.ErrorMessage))
	}
	if len(resp.Topics) != 1 || resp.Topics[0].Topic != metadata.LogTopic || len(resp.Topics[0].Partitions) != 1 ||
		resp.Topics[0].Partitions[0].Partition != 0 {
		return nil, fmt.Errorf("describing the metadata quorum: the answer is not about %s-0 alone", metadata.LogTopic)
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		if errors.Is(err, kerr.NotLeaderForPartition) {
			leader := "no leader is known"
			if p.LeaderID >= 0 {
				leader = fmt.Sprintf("the leader is node %d", p.LeaderID)
			}
			return nil, fmt.Errorf("describing the metadata quorum: NOT_LEADER_OR_FOLLOWER: the node asked is not the leader of the quorum; %s (epoch %d)", leader, p.LeaderEpoch)
		}
		return nil, fmt.Errorf("describing the metadata quorum: %w%s", err, messageSuffix(p.ErrorMessage))
	}
	q := &quorumInfo{leaderID: p.LeaderID, leaderEpoch: p.LeaderEpoch, hw: p.HighWatermark,
		voters: p.CurrentVoters, observers: p.Observers, endpoints: map[int32][]string{}}
	for _, n := range resp.Nodes {
		for _, l := range n.Listeners {
			q.endpoints[n.NodeID] = append(q.endpoints[n.NodeID], raftEndpoint(l.Name, l.Host, l.Port))
		}
	}
	if q.leader() == nil {
		return nil, fmt.Errorf("describing the metadata quorum: the leader, node %d, is not among the voters", p.LeaderID)
	}
	return q, nil
}

func messageSuffix(m *string) string {
	if m == nil || *m == "" {
		return ""
	}
	return ": " + *m
}

// leader is the leader's replica state among the voters.
func (q *quorumInfo) leader() *kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
	for i := range q.voters {
		if q.voters[i].ReplicaID == q.leaderID {
			return &q.voters[i]
		}
	}
	return nil
}

// raftEndpoint is LISTENER://host:port, the host in brackets when it is an
// IPv6 address.
func raftEndpoint(listener, host string, port uint16) string {
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return listener + "://" + host + ":" + strconv.Itoa(int(port))
}

// uuidString is a Kafka Uuid as Kafka prints it: URL-safe base64 without
// padding.
func uuidString(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// writeQuorumStatus prints kafka-metadata-quorum.sh's describe --status.
func writeQuorumStatus(w io.Writer, clusterID string, q *quorumInfo) error {
	leader := q.leader()
	// The voter with the lowest log end offset, the first of equals.
	furthest := &q.voters[0]
	for i := range q.voters {
		if q.voters[i].LogEndOffset < furthest.LogEndOffset {
			furthest = &q.voters[i]
		}
	}
	lagTimeMs := int64(-1)
	switch {
	case furthest == leader:
		lagTimeMs = 0
	case leader.LastCaughtUpTimestamp != -1 && furthest.LastCaughtUpTimestamp != -1:
		lagTimeMs = leader.LastCaughtUpTimestamp - furthest.LastCaughtUpTimestamp
	}
	_, err := fmt.Fprintf(w, "ClusterId:              %s\n"+
		"LeaderId:               %d\n"+
		"LeaderEpoch:            %d\n"+
		"HighWatermark:          %d\n"+
		"MaxFollowerLag:         %d\n"+
		"MaxFollowerLagTimeMs:   %d\n"+
		"CurrentVoters:          %s\n"+
		"CurrentObservers:       %s\n",
		clusterID, q.leaderID, q.leaderEpoch, q.hw, leader.LogEndOffset-furthest.LogEndOffset, lagTimeMs,
		q.replicaList(q.voters), q.replicaList(q.observers))
	return err
}

// replicaList is a list of replicas as the tool prints CurrentVoters:
// [{"id": 1, "directoryId": "...", "endpoints": ["CONTROLLER://h:9093"]}, ...]
// with the directory id left out when zero and the endpoints when none.
func (q *quorumInfo) replicaList(rs []kmsg.DescribeQuorumResponseTopicPartitionReplicaState) string {
	var b strings.Builder
	b.WriteString("[")
	for i, r := range rs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `{"id": %d`, r.ReplicaID)
		if r.ReplicaDirectoryID != [16]byte{} {
			fmt.Fprintf(&b, `, "directoryId": "%s"`, uuidString(r.ReplicaDirectoryID))
		}
		if eps := q.endpoints[r.ReplicaID]; len(eps) > 0 {
			b.WriteString(`, "endpoints": ["` + strings.Join(eps, `", "`) + `"]`)
		}
		b.WriteString("}")
	}
	b.WriteString("]")
	return b.String()
}

// writeQuorumReplication prints kafka-metadata-quorum.sh's describe
// --replication: the leader, the other voters, the observers; each cell
// padded to its column's width and followed by a tab, as Kafka prints it.
func writeQuorumReplication(w io.Writer, q *quorumInfo, humanReadable bool, now time.Time) error {
	leader := q.leader()
	var rows [][]string
	add := func(r *kmsg.DescribeQuorumResponseTopicPartitionReplicaState, status string) error {
		fetch, err := quorumTimestamp(r.LastFetchTimestamp, humanReadable, now, "last fetch")
		if err != nil {
			return err
		}
		caughtUp, err := quorumTimestamp(r.LastCaughtUpTimestamp, humanReadable, now, "last caught up")
		if err != nil {
			return err
		}
		rows = append(rows, []string{strconv.Itoa(int(r.ReplicaID)), uuidString(r.ReplicaDirectoryID),
			strconv.FormatInt(r.LogEndOffset, 10), strconv.FormatInt(leader.LogEndOffset-r.LogEndOffset, 10),
			fetch, caughtUp, status})
		return nil
	}
	if err := add(leader, "Leader"); err != nil {
		return err
	}
	for i := range q.voters {
		if q.voters[i].ReplicaID != q.leaderID {
			if err := add(&q.voters[i], "Follower"); err != nil {
				return err
			}
		}
	}
	for i := range q.observers {
		if err := add(&q.observers[i], "Observer"); err != nil {
			return err
		}
	}
	header := []string{"NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp", "LastCaughtUpTimestamp", "Status"}
	widths := make([]int, len(header))
	for _, r := range append([][]string{header}, rows...) {
		for i, c := range r {
			widths[i] = max(widths[i], len(c))
		}
	}
	var b strings.Builder
	for _, r := range append([][]string{header}, rows...) {
		for i, c := range r {
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", widths[i]-len(c)))
			b.WriteByte('\t')
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// quorumTimestamp shows a timestamp in ms: -1 when unknown, else the
// number, or with humanReadable "N ms ago" (an error, as in Kafka, when it
// is not between the epoch and now: the clocks disagree).
func quorumTimestamp(ms int64, humanReadable bool, now time.Time, what string) (string, error) {
	switch {
	case ms == -1:
		return "-1", nil
	case !humanReadable:
		return strconv.FormatInt(ms, 10), nil
	case ms <= 0 || ms > now.UnixMilli():
		return "", fmt.Errorf("Error while computing relative time, possible drift in system clock.\n"+
			"Current timestamp is %d, %s timestamp is %d", now.UnixMilli(), what, ms)
	}
	return fmt.Sprintf("%d ms ago", now.UnixMilli()-ms), nil
}
