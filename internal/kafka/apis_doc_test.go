package kafka

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"weir/internal/partition"
)

// TestCompatibilityTableMatchesAPIs keeps the weir column of
// docs/COMPATIBILITY.md's API table equal to what the listeners of a
// combined node serve (a broker listener's APIs and a controller
// listener's): a version or range, or "—" for an API served on neither.
func TestCompatibilityTableMatchesAPIs(t *testing.T) {
	type (
		txns        struct{ Txns }
		raft        struct{ Raft }
		metadataLog struct{ MetadataLog }
	)
	broker := &Server{deps: Deps{Partitions: &partition.Manager{}, Txns: txns{}}}
	controller := &Server{deps: Deps{Raft: raft{}, MetadataLog: metadataLog{}}}
	served := map[int16]string{}
	for _, s := range []*Server{broker, controller} {
		for key, a := range s.apiTable() {
			served[key] = strconv.Itoa(int(a.min))
			if a.max != a.min {
				served[key] += "-" + strconv.Itoa(int(a.max))
			}
		}
	}
	doc, err := os.ReadFile("../../docs/COMPATIBILITY.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile(`(?m)^\| (\d+) \| (\w+) \| \w+ \| [^|]+ \| ([^|]+) \|$`).FindAllStringSubmatch(string(doc), -1)
	if len(rows) < 50 {
		t.Fatalf("found %d rows of the API table in COMPATIBILITY.md; has its layout changed?", len(rows))
	}
	listed := map[int16]bool{}
	for _, r := range rows {
		key, _ := strconv.Atoi(r[1])
		listed[int16(key)] = true
		want, ok := served[int16(key)]
		if !ok {
			want = "—"
		}
		if got := r[3]; got != want {
			t.Errorf("COMPATIBILITY.md: %s (%d) has weir %q, the listeners serve %q", r[2], key, got, want)
		}
	}
	for key := range served {
		if !listed[key] {
			t.Errorf("COMPATIBILITY.md's API table has no row for API key %d, which weir serves", key)
		}
	}
}
