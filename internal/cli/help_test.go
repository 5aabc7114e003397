package cli

import (
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"weir/internal/cli/clitest"
	"weir/internal/cli/help"
	"weir/internal/version"
)

// Every command's help renders its flags cleanly: no value name with a
// space in it (pflag takes a back-quoted word of the usage as the value's
// name, a quoted command among them), no blank value shown for a flag
// given without one, and no stray control characters.
func TestHelpRendersEveryFlagCleanly(t *testing.T) {
	blankValue := regexp.MustCompile(`\[="?\s*"?\]`)
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		n++
		help := c.UsageString()
		if blankValue.MatchString(help) {
			t.Errorf("%s --help shows a blank value: %q", c.CommandPath(), blankValue.FindString(help))
		}
		if i := strings.IndexFunc(help, func(r rune) bool { return r < ' ' && r != '\n' && r != '\t' }); i >= 0 {
			t.Errorf("%s --help has control character %q", c.CommandPath(), help[i])
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if name, _ := pflag.UnquoteUsage(f); strings.ContainsAny(name, " \t") {
				t.Errorf("%s --%s: value name %q (a back-quoted phrase in its usage)", c.CommandPath(), f.Name, name)
			}
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(help.Root(commands...))
	if n < 40 {
		t.Fatalf("walked %d commands only", n)
	}
}

// The renderings the walk above guards against, on the flags that had them.
func TestHelpRenderings(t *testing.T) {
	for _, c := range []struct {
		args []string
		want *regexp.Regexp
	}{
		{[]string{"consumer-groups", "--help"}, regexp.MustCompile(`(?m)^      --state \[string\] +with --describe`)},
		{[]string{"consumer-groups", "--help"}, regexp.MustCompile(`(?m)^      --type \[string\] +with --list`)},
		{[]string{"storage", "format", "--help"}, regexp.MustCompile(`(?m)^  -t, --cluster-id string +the cluster id \(from "weir storage random-uuid"\)`)},
	} {
		if r := weir.Run(t, c.args...); r.Code != 0 || !c.want.MatchString(r.Out) {
			t.Errorf("%v: exit %d, want %s in:\n%s%s", c.args, r.Code, c.want, r.Out, r.Err)
		}
	}
}

// A mistyped flag or subcommand, anywhere in the tree, gets the ones it
// may have been meant for.
func TestSuggestions(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"topics", "--bootstrap-servr", "h:1", "--list"}, "Error: unknown flag: --bootstrap-servr\n\nDid you mean this?\n\t--bootstrap-server\n"},
		{[]string{"topics", "--lst"}, "Did you mean this?\n\t--list\n"},
		{[]string{"topics", "-list"}, "Error: unknown shorthand flag: 'l' in -list\n\nDid you mean this?\n\t--list\n"},
		{[]string{"transactions", "--bootstrap-sever", "h:1", "list"}, "Did you mean this?\n\t--bootstrap-server\n"}, // an inherited flag
		{[]string{"topcis"}, "Error: unknown command \"topcis\" for \"weir\"\n\nDid you mean this?\n\ttopics\n"},
		{[]string{"storage", "formt"}, "Error: unknown command \"formt\" for \"weir storage\"\n\nDid you mean this?\n\tformat\n"},
		{[]string{"transactions", "--bootstrap-server", "h:1", "lst"}, "Error: unknown command \"lst\" for \"weir transactions\"\n\nDid you mean this?\n\tlist\n"},
		{[]string{"metadata-quorum", "--bootstrap-server", "h:1", "describ"}, "Did you mean this?\n\tdescribe\n"},
	} {
		if r := weir.Run(t, c.args...); r.Code != 1 || !strings.Contains(r.Err, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, r.Code, r.Err, c.want)
		}
	}
	if r := weir.Run(t, "topics", "--zzzzzzzz"); r.Err != "Error: unknown flag: --zzzzzzzz\n" {
		t.Errorf("a flag like none: stderr %q", r.Err)
	}
	if r := weir.Run(t, "storage"); r.Code != 0 || !strings.Contains(r.Out, "Available Commands:") {
		t.Errorf("storage alone: exit %d, want its help:\n%s%s", r.Code, r.Out, r.Err)
	}
}

func TestVersionFlag(t *testing.T) {
	if r := weir.Run(t, "--version"); r.Code != 0 || r.Out != "weir version "+version.String()+"\n" || !strings.HasPrefix(version.String(), version.Release) {
		t.Errorf("--version: exit %d, %q", r.Code, r.Out)
	}
}

// weir is the whole command line, for the tests of this package.
var weir = clitest.Weir(commands)
