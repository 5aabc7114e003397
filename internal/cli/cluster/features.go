package cluster

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/cli/tool"
	"weir/internal/controller"
)

// metadataVersions are the names of metadata.version's feature levels, as
// Kafka's MetadataVersion prints them (level 1 is the first).
var metadataVersions = []string{"3.0-IV1", "3.1-IV0", "3.2-IV0", "3.3-IV0", "3.3-IV1", "3.3-IV2", "3.3-IV3",
	"3.4-IV0", "3.5-IV0", "3.5-IV1", "3.5-IV2", "3.6-IV0", "3.6-IV1", "3.6-IV2", "3.7-IV0", "3.7-IV1", "3.7-IV2",
	"3.7-IV3", "3.7-IV4", "3.8-IV0", "3.9-IV0", "4.0-IV0", "4.0-IV1", "4.0-IV2", "4.0-IV3"}

// minimumBootstrapMetadataLevel is the lowest metadata.version a KRaft
// cluster can be formatted with (3.3-IV3).
const minimumBootstrapMetadataLevel = 7

type featuresFlags struct {
	conn                tool.ConnFlags
	bootstrapController string
	metadata            string
	features            []string
	dryRun, unsafe      bool
}

func NewFeaturesCommand() *cobra.Command {
	f := &featuresFlags{}
	cmd := &cobra.Command{
		Use:   "features (--bootstrap-server HOST:PORT | --bootstrap-controller HOST:PORT) (describe | upgrade | downgrade | disable)",
		Short: "Describe and change the cluster's feature levels, like kafka-features.sh",
		Long: `features manages the finalized feature levels (metadata.version,
group.version, eligible.leader.replicas.version, ...) with the subcommands,
flags, output and exit codes of Apache Kafka's kafka-features.sh, against
weir or Kafka alike:

  describe    one line per feature the brokers support:
              Feature: metadata.version  SupportedMinVersion: 3.3-IV3  SupportedMaxVersion: 4.0-IV3  ...
              (in columns of 40 and 15 characters, as Kafka 4.4 prints them)
  upgrade     --metadata VERSION and/or --feature NAME=LEVEL (repeatable) [--dry-run]
  downgrade   the same, [--unsafe] to allow a downgrade that loses metadata
  disable     --feature NAME (repeatable): downgrade to level 0

Each change prints "<feature> was upgraded to <level>." (or "can be" with
--dry-run) or "Could not upgrade <feature> to <level>. <reason>", then
"N out of M operation(s) failed." on stderr and exit code 1 if any failed.
weir supports metadata.version 3.3-IV3 to 4.0-IV3 at a single finalized
level (4.0-IV3), group.version and eligible.leader.replicas.version.

` + tool.CommandConfigHelp,
		Example: `  weir features --bootstrap-server localhost:9092 describe

  # turn on eligible leader replicas (KIP-966)
  weir features --bootstrap-server localhost:9092 upgrade --feature eligible.leader.replicas.version=1

  # check a change without making it
  weir features --bootstrap-server localhost:9092 downgrade --feature group.version=0 --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return tool.UsageError(cmd, "Command line error: too few arguments. Type --help for help.")
		},
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.conn.BootstrapServer, "bootstrap-server", "", "the Kafka server(s) to connect to, host:port[,host:port]")
	pf.StringVar(&f.bootstrapController, "bootstrap-controller", "", "the KRaft controllers to connect to, host:port[,host:port]")
	pf.StringVar(&f.conn.CommandConfig, "command-config", "", "a client properties file")
	for _, sub := range []struct{ name, short string }{
		{"describe", "Describes the current active feature flags."},
		{"upgrade", "Upgrade one or more feature flags."},
		{"downgrade", "Downgrade one or more feature flags."},
		{"disable", "Disable one or more feature flags. This is the same as downgrading the version to zero."},
	} {
		c := &cobra.Command{
			Use:   sub.name,
			Short: sub.short,
			Args:  cobra.NoArgs,
			RunE:  func(cmd *cobra.Command, _ []string) error { return runFeatures(cmd, f, sub.name) },
		}
		fl := c.Flags()
		if sub.name == "upgrade" || sub.name == "downgrade" {
			fl.StringVar(&f.metadata, "metadata", "", "the metadata.version to go to, e.g. 3.7-IV4")
		}
		if sub.name != "describe" {
			fl.StringArrayVar(&f.features, "feature", nil, "a feature change, NAME=LEVEL (disable: NAME); repeatable")
			fl.BoolVar(&f.dryRun, "dry-run", false, "validate the change without making it")
		}
		if sub.name == "downgrade" || sub.name == "disable" {
			fl.BoolVar(&f.unsafe, "unsafe", false, "allow a downgrade that may irreversibly lose metadata")
		}
		cmd.AddCommand(c)
	}
	return cmd
}

// levelString prints a feature level as Kafka's tool does: metadata.version
// by its name.
func levelString(feature string, level int16) string {
	if feature == "metadata.version" {
		if level >= 1 && int(level) <= len(metadataVersions) {
			return metadataVersions[level-1]
		}
		return "UNKNOWN " + strconv.Itoa(int(level))
	}
	return strconv.Itoa(int(level))
}

// metadataLevel parses a metadata.version name: "3.7-IV4", or "3.7" for the
// last level of that release.
func metadataLevel(s string) (int16, bool) {
	found := int16(-1)
	for i, v := range metadataVersions {
		if v == s || strings.HasPrefix(v, s+"-IV") {
			found = int16(i + 1)
		}
	}
	return found, found > 0
}

func runFeatures(cmd *cobra.Command, f *featuresFlags, op string) error {
	fail := tool.FailTo(cmd.ErrOrStderr())
	has := cmd.Flags().Changed
	switch {
	case has("bootstrap-server") && has("bootstrap-controller"):
		return fail("Command line error: argument --bootstrap-controller: not allowed with argument --bootstrap-server. Type --help for help.")
	case !has("bootstrap-server") && !has("bootstrap-controller"):
		return fail("Command line error: one of the arguments --bootstrap-server --bootstrap-controller is required. Type --help for help.")
	case has("bootstrap-controller"):
		f.conn.BootstrapServer = f.bootstrapController
	}
	type update struct {
		name  string
		level int16
	}
	var updates []update
	seen := map[string]bool{}
	if f.metadata != "" {
		level, ok := metadataLevel(f.metadata)
		if !ok || level < minimumBootstrapMetadataLevel || level > controller.MetadataVersion {
			return fail(fmt.Sprintf("Unsupported metadata version %s. Supported metadata versions are %s", f.metadata,
				strings.Join(metadataVersions[minimumBootstrapMetadataLevel-1:controller.MetadataVersion], ", ")))
		}
		updates, seen["metadata.version"] = append(updates, update{"metadata.version", level}), true
	}
	for _, s := range f.features {
		u := update{name: s}
		if op != "disable" {
			i := strings.IndexByte(s, '=')
			if i < 0 {
				return fail("Can't parse feature=level string " + s + ": equals sign not found.")
			}
			levelStr := strings.TrimSpace(s[i+1:])
			n, err := strconv.ParseInt(levelStr, 10, 16)
			if err != nil {
				return fail("Can't parse feature=level string " + s + ": unable to parse " + levelStr + " as a short.")
			}
			u = update{strings.TrimSpace(s[:i]), int16(n)}
		}
		if seen[u.name] {
			return fail("Feature " + u.name + " was specified more than once.")
		}
		seen[u.name] = true
		updates = append(updates, u)
	}
	if op != "describe" && len(updates) == 0 {
		return fail("You must specify at least one feature to " + op)
	}
	tc, err := f.conn.Connect(cmd, "weir-features", tool.Either(op == "describe", "describeFeatures", "updateFeatures"))
	if err != nil {
		return fail(err.Error())
	}
	defer tc.Close()
	ctx, cancel := tc.Context(cmd)
	defer cancel()
	out := cmd.OutOrStdout()

	if op == "describe" {
		resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, tc.Kgo)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err != nil {
			return fail(tool.DescribeErr(tool.KafkaError(err, nil)))
		}
		finalized := map[string]int16{}
		for _, ff := range resp.FinalizedFeatures {
			finalized[ff.Name] = ff.MaxVersionLevel
		}
		epoch := "-"
		if resp.FinalizedFeaturesEpoch >= 0 {
			epoch = strconv.FormatInt(resp.FinalizedFeaturesEpoch, 10)
		}
		supported := map[string]kmsg.ApiVersionsResponseSupportedFeature{}
		for _, sf := range resp.SupportedFeatures {
			supported[sf.Name] = sf
		}
		for _, name := range slices.Sorted(maps.Keys(supported)) {
			sf := supported[name]
			fmt.Fprintf(out, "Feature: %-40s  SupportedMinVersion: %-15s  SupportedMaxVersion: %-15s  FinalizedVersionLevel: %-15s  Epoch: %s\n",
				name, levelString(name, sf.MinVersion), levelString(name, sf.MaxVersion), levelString(name, finalized[name]), epoch)
		}
		return nil
	}

	upgradeType := int8(1)
	if op != "upgrade" {
		upgradeType = 2
		if f.unsafe {
			upgradeType = 3
		}
	}
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.TimeoutMillis, req.ValidateOnly = int32(tc.RequestTimeout.Milliseconds()), f.dryRun
	for _, u := range updates {
		ru := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		ru.Feature, ru.MaxVersionLevel, ru.UpgradeType = u.name, u.level, upgradeType
		ru.AllowDowngrade = upgradeType != 1
		req.FeatureUpdates = append(req.FeatureUpdates, ru)
	}
	resp, err := req.RequestWith(ctx, tc.Kgo)
	errs := map[string]error{}
	switch {
	case err != nil:
		for _, u := range updates {
			errs[u.name] = tool.KafkaError(err, nil)
		}
	case resp.ErrorCode != 0:
		for _, u := range updates {
			errs[u.name] = tool.KafkaError(kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
		}
	default:
		for _, r := range resp.Results {
			if e := kerr.ErrorForCode(r.ErrorCode); e != nil {
				errs[r.Feature] = tool.KafkaError(e, r.ErrorMessage)
			}
		}
	}
	slices.SortFunc(updates, func(a, b update) int { return strings.Compare(a.name, b.name) })
	failures := 0
	for _, u := range updates {
		if e := errs[u.name]; e != nil {
			failures++
			helper := "Could not "
			if f.dryRun {
				helper = "Can not "
			}
			what := op + " " + u.name + " to " + strconv.Itoa(int(u.level))
			if op == "disable" {
				what = "disable " + u.name
			}
			var je *tool.JavaError
			msg := e.Error()
			if errors.As(e, &je) {
				msg = je.Msg
			}
			fmt.Fprintf(out, "%s%s. %s\n", helper, what, msg)
			continue
		}
		verb := " was "
		if f.dryRun {
			verb = " can be "
		}
		obj := op + "d to " + strconv.Itoa(int(u.level)) + "."
		if op == "disable" {
			obj = "disabled."
		}
		fmt.Fprintln(out, u.name+verb+obj)
	}
	if failures > 0 {
		return fail(fmt.Sprintf("%d out of %d operation(s) failed.", failures, len(updates)))
	}
	return nil
}
