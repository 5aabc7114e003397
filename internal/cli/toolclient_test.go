package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every Kafka-style tool reads --command-config, and refuses what weir's
// client does not do, before connecting.
func TestCommandConfigRefusesSecurity(t *testing.T) {
	dir := t.TempDir()
	ssl, sasl := filepath.Join(dir, "ssl.properties"), filepath.Join(dir, "sasl.properties")
	os.WriteFile(ssl, []byte("security.protocol=SSL\n"), 0o644)
	os.WriteFile(sasl, []byte("sasl.mechanism=PLAIN\n"), 0o644)
	bs := "127.0.0.1:1"
	for _, args := range [][]string{
		{"topics", "--bootstrap-server", bs, "--list"},
		{"configs", "--bootstrap-server", bs, "--describe", "--entity-type", "brokers"},
		{"consumer-groups", "--bootstrap-server", bs, "--list"},
		{"leader-election", "--bootstrap-server", bs, "--election-type", "preferred", "--all-topic-partitions"},
		{"transactions", "--bootstrap-server", bs, "list"},
		{"metadata-quorum", "--bootstrap-server", bs, "describe", "--status"},
	} {
		for file, want := range map[string]string{
			ssl:  "security.protocol: SSL is not supported yet: weir's tools connect with PLAINTEXT only",
			sasl: "client property sasl.mechanism is not supported yet: weir's tools connect with PLAINTEXT only",
		} {
			r := runTool(t, append(args, "--command-config", file)...)
			if r.code == 0 || !strings.Contains(r.err, want) {
				t.Errorf("%v with %s: exit %d, stderr %q, want %q", args, filepath.Base(file), r.code, r.err, want)
			}
		}
	}
}
