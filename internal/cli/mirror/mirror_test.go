package mirror

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"weir/internal/cli/clitest"
)

// weir mirror stops before connecting on a file it cannot honour, naming
// the key.
func TestMirrorRefusesConfig(t *testing.T) {
	dir := t.TempDir()
	head := "clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = 127.0.0.1:2\nA->B.enabled = true\n"
	for extra, want := range map[string]string{
		"A.sasl.kerberos.service.name = kafka\n": "A.sasl.kerberos.service.name: not supported yet",
		"A.security.protocol = SASL_SSL\n":       "cluster A: client property sasl.mechanism: GSSAPI is not supported",
		"A.consumer.security.protocol = SSL\n":   "A.consumer.security.protocol: weir's mirror takes security settings per cluster",
		"exactly.once.support = always\n":        "exactly.once.support: invalid value",
		"offset.lag.max = many\n":                "offset.lag.max: invalid value",
		"A->B.use.defaults.from = both\n":        "A->B.use.defaults.from: invalid value",
	} {
		file := filepath.Join(dir, "mm2.properties")
		if err := os.WriteFile(file, []byte(head+extra), 0o644); err != nil {
			t.Fatal(err)
		}
		r := weir.Run(t, "mirror", "--config", file)
		if r.Code != 1 || !strings.Contains(r.Err, want) {
			t.Errorf("%q: exit %d, stderr %q, want %q", extra, r.Code, r.Err, want)
		}
	}
	if r := weir.Run(t, "mirror", "status"); r.Code != 1 || !strings.Contains(r.Err, "Missing required option: --config") {
		t.Errorf("status without --config: exit %d, stderr %q", r.Code, r.Err)
	}
	if r := weir.Run(t, "mirror"); r.Code != 1 || !strings.Contains(r.Err, "Missing required option: --config") {
		t.Errorf("no --config: exit %d, stderr %q", r.Code, r.Err)
	}
}

// weir is the command line these tests run.
var weir = clitest.Weir{NewCommand}
