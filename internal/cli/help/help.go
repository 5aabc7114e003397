// Package help makes the root of weir's command tree: its name and
// --version, the help's flag rendering, and suggestions for mistyped flags
// and subcommands.
package help

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"weir/internal/version"
)

// Root is weir's root command over the commands cmds make: --version,
// the help's rendering of flags, and suggestions for mistyped flags and
// subcommands at every level. The command line (internal/cli) and the
// commands' tests (internal/cli/clitest) build the same root with it.
func Root(cmds ...func() *cobra.Command) *cobra.Command {
	root := &cobra.Command{
		Use:   "weir",
		Short: "weir is a Kafka-compatible streaming platform in one binary",
		Long: `weir speaks the Apache Kafka wire protocol, so stock Kafka clients and tools
work against it unchanged. One binary runs brokers and controllers and carries
the operator tools.`,
		Version:       version.String(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	for _, add := range cmds {
		root.AddCommand(add())
	}
	root.SetFlagErrorFunc(suggestFlag)
	root.SetUsageTemplate(strings.NewReplacer(".LocalFlags.FlagUsages", "flagUsages .LocalFlags",
		".InheritedFlags.FlagUsages", "flagUsages .InheritedFlags").Replace(root.UsageTemplate()))
	suggestSubcommands(root)
	return root
}

func init() { cobra.AddTemplateFunc("flagUsages", flagUsages) }

// flagUsages is pflag's FlagUsages, but a flag whose value may be left out
// and whose value then is blank (a mark the command tests for) shows as
// "--flag [type]" rather than with its blank value.
func flagUsages(fs *pflag.FlagSet) string {
	shown := pflag.NewFlagSet(fs.Name(), pflag.ContinueOnError)
	shown.SortFlags = fs.SortFlags
	fs.VisitAll(func(f *pflag.Flag) {
		if f.NoOptDefVal != "" && blank(f.NoOptDefVal) {
			name, usage := pflag.UnquoteUsage(f)
			c := *f
			c.NoOptDefVal, c.Usage, c.Value = "", usage, optionalValue{f.Value, "[" + name + "]"}
			f = &c
		}
		shown.AddFlag(f)
	})
	return shown.FlagUsages()
}

// optionalValue is a flag's value shown with another type name.
type optionalValue struct {
	pflag.Value
	typ string
}

func (v optionalValue) Type() string { return v.typ }

// blank reports whether s shows as nothing: spaces and control characters.
func blank(s string) bool {
	return strings.TrimFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) == ""
}

// suggestFlag adds to an unknown flag's error the command's flags it may
// have been meant for, as cobra does for commands.
func suggestFlag(cmd *cobra.Command, err error) error {
	msg := err.Error()
	var typed string
	switch {
	case strings.HasPrefix(msg, "unknown flag: --"):
		typed = strings.TrimPrefix(msg, "unknown flag: --")
	case strings.HasPrefix(msg, "unknown shorthand flag: "):
		// "unknown shorthand flag: 'x' in -xyz": a long flag with one dash?
		if _, arg, ok := strings.Cut(msg, " in -"); ok && len(arg) > 1 {
			typed = arg
		}
	}
	if typed == "" {
		return err
	}
	typed, _, _ = strings.Cut(typed, "=")
	var near []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && (levenshtein(typed, f.Name) <= 2 || strings.HasPrefix(f.Name, typed)) {
			near = append(near, "--"+f.Name)
		}
	})
	if len(near) == 0 {
		return err
	}
	return fmt.Errorf("%s\n\nDid you mean this?\n\t%s\n", msg, strings.Join(near, "\n\t"))
}

// levenshtein is the edit distance of a and b, ignoring case.
func levenshtein(a, b string) int {
	ra, rb := []rune(strings.ToLower(a)), []rune(strings.ToLower(b))
	prev := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur := make([]int, len(rb)+1)
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(rb)]
}

// suggestSubcommands makes every command below the root that has
// subcommands refuse an unknown one with cobra's suggestions (cobra makes
// them for the root's only), and show its help when given none.
func suggestSubcommands(root *cobra.Command) {
	for _, c := range root.Commands() {
		suggestBelow(c)
	}
}

func suggestBelow(c *cobra.Command) {
	if !c.HasSubCommands() {
		return
	}
	c.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if cmd.SuggestionsMinimumDistance <= 0 {
			cmd.SuggestionsMinimumDistance = 2 // cobra's default
		}
		if near := cmd.SuggestionsFor(args[0]); len(near) > 0 {
			msg += "\n\nDid you mean this?\n\t" + strings.Join(near, "\n\t") + "\n"
		}
		return errors.New(msg)
	}
	if !c.Runnable() {
		c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	}
	for _, s := range c.Commands() {
		suggestBelow(s)
	}
}
