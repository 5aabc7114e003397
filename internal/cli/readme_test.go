package cli

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"weir/internal/cli/help"
)

// TestReadmeToolsTable keeps README.md's table of tools equal to the
// subcommands that mirror a Kafka or Confluent script (their Short says
// "like SCRIPT"): each such command has a row naming its script, and each
// row names such a command.
func TestReadmeToolsTable(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{} // command: its Kafka cell
	for _, m := range regexp.MustCompile("(?m)^\\| `weir ([a-z-]+)` \\| (.*) \\|$").FindAllStringSubmatch(string(readme), -1) {
		rows[m[1]] = m[2]
	}
	like := regexp.MustCompile(`like (Confluent's )?(\S+)$`)
	for _, c := range help.Root(commands...).Commands() {
		m := like.FindStringSubmatch(c.Short)
		cell, listed := rows[c.Name()]
		delete(rows, c.Name())
		switch {
		case m == nil && listed:
			t.Errorf("README.md lists weir %s, which mirrors no Kafka script (its help: %q)", c.Name(), c.Short)
		case m == nil:
		case !listed:
			t.Errorf("README.md's table of tools has no row for weir %s (%s)", c.Name(), m[2])
		case !strings.HasPrefix(cell, m[1]+"`"+m[2]+"`"):
			t.Errorf("README.md: weir %s is %q, its help says %s%s", c.Name(), cell, m[1], m[2])
		}
	}
	for name := range rows {
		t.Errorf("README.md lists weir %s, which is not a command", name)
	}
}
