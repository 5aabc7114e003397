package quorum

// metadata-quorum add-controller and remove-controller (KIP-853): the
// AddRaftVoter and RemoveRaftVoter requests of kafka-metadata-quorum.sh.
// weir's own quorum has a static voter set (controller.quorum.voters) and
// serves neither request, so against weir they fail, saying so; against a
// Kafka cluster with a dynamic quorum they do what Kafka's tool does.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/cli/tool"
	"weir/internal/config"
	"weir/internal/metadata"
	"weir/internal/server"
)

// staticQuorum is what the tool adds when the cluster serves no
// AddRaftVoter or RemoveRaftVoter.
const staticQuorum = `The cluster does not support dynamic KRaft quorums (KIP-853). weir's metadata quorum has a static voter set, controller.quorum.voters: weir does not support adding or removing controllers; change the voters by restarting every controller with the new list.`

func newMetadataQuorumAddControllerCommand(f *metadataQuorumFlags) *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "add-controller --command-config CONTROLLER.properties [--dry-run]",
		Short: "Add a controller to the quorum's voters (KIP-853; weir's quorum does not support it)",
		Long: `add-controller sends AddRaftVoter for the controller whose server properties
file --command-config names, as kafka-metadata-quorum.sh does: its node.id
(process.roles must include controller), the directory id in meta.properties
of its metadata.log.dir (else the first of log.dirs), and its endpoints for
controller.listener.names, from advertised.listeners, else listeners. The
controller must be formatted and running as an observer. Only the
controller's properties are read from the file; the tool connects with
default client settings.

weir's own metadata quorum has a static voter set (controller.quorum.voters)
and serves no AddRaftVoter: against weir the command fails with Kafka's
UnsupportedVersionException message and says so. It works against Apache
Kafka clusters with a dynamic quorum.`,
		Example: `  # add the controller configured in controller-4.properties
  weir metadata-quorum --bootstrap-controller c1:9093 --command-config controller-4.properties add-controller

  # only print what would be sent
  weir metadata-quorum --bootstrap-controller c1:9093 --command-config controller-4.properties add-controller --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fail := tool.FailTo(cmd.ErrOrStderr())
			if f.commandConfig == "" {
				return fail("You must supply the configuration file of the controller you are adding when using add-controller.")
			}
			props, err := tool.LoadProperties(f.commandConfig)
			if err != nil {
				return fail("Properties file " + f.commandConfig + " does not exist.")
			}
			req, err := addVoterRequest(props)
			if err != nil {
				return fail(err.Error())
			}
			endpoints := make([]string, len(req.Listeners))
			for i, l := range req.Listeners {
				endpoints[i] = config.Listener{Name: l.Name, Host: l.Host, Port: int(l.Port)}.String()
			}
			done := fmt.Sprintf(" controller %d with directory id %s and endpoints: %s", req.VoterID, uuidString(req.VoterDirectoryID), strings.Join(endpoints, ", "))
			if dryRun {
				fmt.Fprintln(cmd.OutOrStdout(), "DRY RUN of adding"+done)
				return nil
			}
			conn := *f
			conn.commandConfig = "" // server properties, not the client's
			if err := sendVoterChange(cmd, &conn, req, "ADD_RAFT_VOTER"); err != nil {
				return fail(err.Error())
			}
			fmt.Fprintln(cmd.OutOrStdout(), "Added"+done)
			return nil
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what would be done, without doing it")
	return cmd
}

func newMetadataQuorumRemoveControllerCommand(f *metadataQuorumFlags) *cobra.Command {
	var dryRun bool
	var id int32
	var dirID string
	cmd := &cobra.Command{
		Use:   "remove-controller --controller-id N --controller-directory-id ID [--dry-run]",
		Short: "Remove a controller from the quorum's voters (KIP-853; weir's quorum does not support it)",
		Long: `remove-controller sends RemoveRaftVoter for the voter with --controller-id and
--controller-directory-id (as describe --status prints them), as
kafka-metadata-quorum.sh does.

weir's own metadata quorum has a static voter set (controller.quorum.voters)
and serves no RemoveRaftVoter: against weir the command fails with Kafka's
UnsupportedVersionException message and says so. It works against Apache
Kafka clusters with a dynamic quorum.`,
		Example: `  weir metadata-quorum --bootstrap-controller c1:9093 remove-controller --controller-id 3 --controller-directory-id pZ3SRc0-QGG8BvbnSz4nnw
  weir metadata-quorum --bootstrap-server b1:9092 remove-controller -i 3 -d pZ3SRc0-QGG8BvbnSz4nnw --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fail := tool.FailTo(cmd.ErrOrStderr())
			for _, a := range []string{"controller-id/-i", "controller-directory-id/-d"} {
				if name, _, _ := strings.Cut(a, "/"); !cmd.Flags().Changed(name) {
					return tool.UsageError(cmd, "argument --"+a+" is required")
				}
			}
			if id < 0 {
				return fail("Invalid negative --controller-id: " + strconv.Itoa(int(id)))
			}
			dir, err := metadata.ParseUuid(dirID)
			if err != nil {
				return fail("Failed to parse --controller-directory-id: Input string with prefix `" + dirID + "` is not a valid Uuid")
			}
			prefix := "Removed "
			if dryRun {
				prefix = "DRY RUN of removing "
			} else {
				req := kmsg.NewPtrRemoveRaftVoterRequest()
				req.VoterID, req.VoterDirectoryID = id, dir
				if err := sendVoterChange(cmd, f, req, "REMOVE_RAFT_VOTER"); err != nil {
					return fail(err.Error())
				}
			}
			// Two spaces after the prefix, as Kafka's tool prints it.
			fmt.Fprintf(cmd.OutOrStdout(), "%s KRaft controller %d with directory id %s\n", prefix, id, dir)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.Int32VarP(&id, "controller-id", "i", 0, "REQUIRED: the id of the controller to remove")
	fl.StringVarP(&dirID, "controller-directory-id", "d", "", "REQUIRED: the directory id of the controller to remove")
	fl.BoolVar(&dryRun, "dry-run", false, "print what would be done, without doing it")
	return cmd
}

// addVoterRequest builds AddRaftVoter from a controller's server
// properties, with Kafka's tool's checks and messages.
func addVoterRequest(props map[string]string) (*kmsg.AddRaftVoterRequest, error) {
	const invalid = " Is this a valid controller configuration file?"
	v, ok := props["node.id"]
	if !ok {
		return nil, errors.New("node.id not found in configuration file." + invalid)
	}
	id, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil {
		return nil, fmt.Errorf("For input string: %q", v)
	}
	if id < 0 {
		return nil, errors.New("node.id was negative in configuration file." + invalid)
	}
	if !strings.Contains(props["process.roles"], "controller") {
		return nil, errors.New("process.roles did not contain 'controller' in configuration file." + invalid)
	}
	dir, ok := props["metadata.log.dir"]
	if !ok {
		dirs, has := props["log.dirs"]
		if !has {
			return nil, errors.New("Neither metadata.log.dir nor log.dirs were found." + invalid)
		}
		dir = strings.Split(strings.TrimSpace(dirs), ",")[0]
	}
	mp, formatted, err := server.ReadMetaProperties(dir)
	if err != nil || !formatted {
		return nil, errors.New("Unable to read meta.properties from " + filepath.Clean(dir))
	}
	if mp.DirectoryID == "" {
		return nil, errors.New("No directory id found in " + dir)
	}
	dirID, err := metadata.ParseUuid(mp.DirectoryID)
	if err != nil {
		return nil, fmt.Errorf("No directory id found in %s: %v", dir, err)
	}
	listeners := map[string]config.Listener{}
	for _, key := range []string{"listeners", "advertised.listeners"} {
		ls, err := config.ParseListeners(props[key])
		if err != nil {
			return nil, err
		}
		for _, l := range ls {
			listeners[l.Name] = l
		}
	}
	names, ok := props["controller.listener.names"]
	if !ok {
		return nil, errors.New("controller.listener.names was not found." + invalid)
	}
	req := kmsg.NewPtrAddRaftVoterRequest()
	req.VoterID, req.VoterDirectoryID = int32(id), dirID
	for _, name := range strings.Split(names, ",") {
		name = strings.ToUpper(strings.TrimSpace(name))
		l, ok := listeners[name]
		if !ok {
			return nil, errors.New("Cannot find information about controller listener name: " + name)
		}
		if l.Host == "" {
			l.Host = "localhost"
		}
		rl := kmsg.NewAddRaftVoterRequestListener()
		rl.Name, rl.Host, rl.Port = l.Name, l.Host, uint16(l.Port)
		req.Listeners = append(req.Listeners, rl)
	}
	return req, nil
}

// sendVoterChange sends AddRaftVoter or RemoveRaftVoter (api, Kafka's name
// of it) and returns the error Kafka's admin client would raise.
func sendVoterChange(cmd *cobra.Command, f *metadataQuorumFlags, req kmsg.Request, api string) error {
	qc, err := dialQuorum(cmd, f)
	if err != nil {
		return err
	}
	defer qc.tc.Close()
	ctx, cancel := qc.tc.Context(cmd)
	defer cancel()
	ok, err := qc.tc.Supports(ctx, req.Key())
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s\n%s", tool.Unsupported(api).(*tool.JavaError).String(), staticQuorum)
	}
	clusterID, err := qc.clusterID(ctx)
	if err != nil {
		return err
	}
	var resp kmsg.Response
	send := func(ctx context.Context) (kmsg.Response, error) {
		if qc.controller {
			return qc.firstSeed(ctx, req, func(r kmsg.Response) error { return voterChangeError(r) })
		}
		return qc.cl.Request(ctx, req)
	}
	switch r := req.(type) {
	case *kmsg.AddRaftVoterRequest:
		r.ClusterID, r.TimeoutMillis = &clusterID, int32(qc.tc.RequestTimeout.Milliseconds())
	case *kmsg.RemoveRaftVoterRequest:
		r.ClusterID = &clusterID
	}
	if resp, err = send(ctx); err != nil {
		return err
	}
	if err := voterChangeError(resp); err != nil {
		var je *tool.JavaError
		if errors.As(err, &je) {
			return errors.New(je.String())
		}
		return err
	}
	return nil
}

// voterChangeError is the error an AddRaftVoter or RemoveRaftVoter answer
// carries, as Kafka's admin client raises it.
func voterChangeError(resp kmsg.Response) error {
	switch r := resp.(type) {
	case *kmsg.AddRaftVoterResponse:
		return tool.KafkaError(kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	case *kmsg.RemoveRaftVoterResponse:
		return tool.KafkaError(kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
	return fmt.Errorf("unexpected answer %T", resp)
}
