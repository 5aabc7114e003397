package kafka_test

// Transactions with kcat, that is librdkafka: kcat cannot produce in a
// transaction, but its read_committed consumer must skip aborted
// transactions (from the fetch's aborted transaction lists) and control
// batches, and stop at the last stable offset, in data a franz-go
// transactional producer wrote.

import (
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestKcatReadCommitted(t *testing.T) {
	kcat := kcatPath(t)
	n := cliNode(t, nil)
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	topic := "txc-kcat"
	cliCreateTopic(t, ctx, adm, topic, 2, nil)
	p := txcProducer(t, n.Addr, "txc-kcat", topic)
	txcTxn(t, ctx, p, "c1", 20, true)
	txcTxn(t, ctx, p, "a1", 20, false)
	txcTxn(t, ctx, p, "c2", 20, true)
	// An open transaction: read_committed stops before it.
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("open-0")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	read := func(isolation string) map[string]int {
		out := runKcat(t, ctx, kcat, nil, "-b", n.Addr, "-C", "-t", topic, "-o", "beginning", "-e", "-q",
			"-X", "isolation.level="+isolation, "-f", "%s\n")
		var recs []*kgo.Record
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if l != "" {
				recs = append(recs, &kgo.Record{Value: []byte(l)})
			}
		}
		return txcTags(recs)
	}
	got := read("read_committed")
	if got["c1"] != 20 || got["c2"] != 20 || len(got) != 2 {
		t.Fatalf("kcat read_committed read %v, want c1 and c2 only", sortedTags(got))
	}
	got = read("read_uncommitted")
	if got["c1"] != 20 || got["c2"] != 20 || got["a1"] != 20 || got["open"] != 1 {
		t.Fatalf("kcat read_uncommitted read %v, want everything", sortedTags(got))
	}
	if err := p.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
}

func sortedTags(m map[string]int) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+strconv.Itoa(v))
	}
	sort.Strings(out)
	return out
}
