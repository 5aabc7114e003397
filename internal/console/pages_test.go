package console_test

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/link"
	"weir/internal/servertest"
	"weir/internal/testwait"
	"weir/internal/txntest"
)

// openTxn begins a transaction of txnID on topic and leaves it open.
func openTxn(t *testing.T, ctx context.Context, addr, txnID, topic string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID(txnID), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, kgo.StringRecord("open")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return cl
}

// TestTransactionsPage: the page lists the transactional ids with what
// DescribeTransactions says, filters them by state, and shows the
// hanging transaction find-hanging finds.
func TestTransactionsPage(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{"weir.console.listener": "127.0.0.1:0",
		"transaction.partition.verification.enable": "false"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := adminOf(t, n.Addr)
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, "orders", "hang"); err != nil {
		t.Fatal(err)
	}
	openTxn(t, ctx, n.Addr, "tx-open", "orders")
	cl, _ := kgo.NewClient(kgo.SeedBrokers(n.Addr))
	defer cl.Close()
	hangingPID, _ := txntest.OpenHanging(t, ctx, cl, cl, "tx-hang", "hang")

	ds, err := adm.DescribeTransactions(ctx, "tx-open", "tx-hang")
	must(t, err == nil && ds["tx-open"].Err == nil, "DescribeTransactions: %v %v", err, ds)
	open := ds["tx-open"]
	b := newBrowser(t, "http://"+n.Server.ConsoleAddr().String())
	code, page := b.get("/transactions?max-timeout=0&hanging=1")
	must(t, code == 200 && !strings.Contains(page, `class="error"`), "transactions: %d\n%s", code, page)
	row := fmt.Sprintf(`<tr data-txn="tx-open"><th scope="row">tx-open</th><td data-state>Ongoing</td><td class="num">%d</td><td class="num" data-pid>%d</td><td class="num" data-epoch>%d</td><td class="num" data-timeout>%d</td>`,
		open.Coordinator, open.ProducerID, open.ProducerEpoch, open.TimeoutMillis)
	must(t, strings.Contains(page, row), "transactions lacks %s:\n%s", row, page)
	must(t, strings.Contains(page, `<td data-partitions>orders-0</td>`), "tx-open's partitions:\n%s", page)
	must(t, strings.Contains(page, `data-txn="tx-hang"`), "tx-hang not listed:\n%s", page)
	hang := fmt.Sprintf(`<tr data-hanging="hang-0"><th scope="row"><a href="/topics/hang">hang</a>-0</th><td class="num">%d</td>`, hangingPID)
	must(t, strings.Contains(page, hang), "the hanging transaction is not shown (%s):\n%s", hang, page)
	must(t, !strings.Contains(page, `data-hanging="orders-0"`), "tx-open's partition shown hanging:\n%s", page)

	// Filtered by state on the broker, and by id.
	_, page = b.get("/transactions?state=Ongoing&hanging=1")
	must(t, strings.Contains(page, `data-txn="tx-open"`) && !strings.Contains(page, `data-txn="tx-hang"`), "state=Ongoing:\n%s", page)
	must(t, strings.Contains(page, `<option value="Ongoing" selected>`), "the filter's state is not selected")
	// With the default 15 minutes, nothing hangs yet.
	must(t, strings.Contains(page, `<td colspan="7" class="ok">None.</td>`), "hanging within 15 minutes:\n%s", page)
	_, page = b.get("/transactions?q=HANG")
	must(t, strings.Contains(page, `id="hanging-off"`) && !strings.Contains(page, `id="hanging"`), "the hanging search ran unasked:\n%s", page)
	must(t, !strings.Contains(page, `data-txn="tx-open"`) && strings.Contains(page, `data-txn="tx-hang"`), "q=HANG:\n%s", page)
	code, _ = b.get("/transactions?state=Bogus")
	must(t, code == 400, "state=Bogus: %d", code)
}

// linkAdmin is a plain client of a node's cluster link admin API.
func linkAdmin(t *testing.T, addr string) *link.AdminClient {
	return &link.AdminClient{Bootstrap: addr, ClientID: "test", Dial: (&net.Dialer{}).DialContext, RequestTimeout: 30 * time.Second,
		Adm: adminOf(t, addr)}
}

// mirrorOf creates a link dr from dst to src and a mirror of src's
// topic on dst, and waits until it has caught up with the source.
func mirrorOf(t *testing.T, ctx context.Context, la *link.AdminClient, srcAddr, topic string, want map[int32]int64) {
	t.Helper()
	if _, err := la.Admin(ctx, &link.AdminRequest{Op: "create-link", Link: "dr", Configs: map[string]string{"bootstrap.servers": srcAddr}}); err != nil &&
		!strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	resp, err := la.Admin(ctx, &link.AdminRequest{Op: "create-mirror", Topics: []string{topic}, Link: "dr", ReplicationFactor: -1})
	if err == nil {
		err = link.TopicResults(resp)
	}
	if err != nil {
		t.Fatal(err)
	}
	testwait.For(t, time.Minute, "the mirror to catch up", func() error {
		lo, err := la.EndOffsets(ctx, topic)
		if err != nil {
			return err
		}
		for p, o := range want {
			if got, _ := lo.Lookup(topic, p); got.Offset != o {
				return fmt.Errorf("partition %d at %d, want %d", p, got.Offset, o)
			}
		}
		return nil
	})
}

// TestLinksPageAndPromote: the links page shows the link and the mirror
// with the admin API's state and the lag, and the promote action (after
// its confirmation) makes the mirror writable as mirrors --promote does.
func TestLinksPageAndPromote(t *testing.T) {
	src := servertest.Start(t, servertest.Options{})
	dst := servertest.Start(t, servertest.Options{Overrides: map[string]string{"weir.console.listener": "127.0.0.1:0"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sadm := adminOf(t, src.Addr)
	if _, err := sadm.CreateTopic(ctx, 2, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	scl, _ := kgo.NewClient(kgo.SeedBrokers(src.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer scl.Close()
	for i := range 5 {
		if err := scl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: int32(i % 2), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	la := linkAdmin(t, dst.Addr)
	mirrorOf(t, ctx, la, src.Addr, "orders", map[int32]int64{0: 3, 1: 2})

	b := newBrowser(t, "http://"+dst.Server.ConsoleAddr().String())
	code, page := b.get("/links")
	must(t, code == 200 && !strings.Contains(page, `class="error"`), "links: %d\n%s", code, page)
	links, _ := la.ListLinks(ctx, "dr")
	must(t, len(links) == 1 && strings.Contains(page, `<code>`+links[0].ID+`</code>`), "links page lacks link dr %v:\n%s", links, page)
	must(t, strings.Contains(page, `<td class="num" data-mirrors>1</td>`), "link dr's mirror count:\n%s", page)
	must(t, strings.Contains(page, `<td data-state>ACTIVE</td>`) && strings.Contains(page, `<td class="num" data-lag>0</td>`), "mirror state and lag:\n%s", page)
	must(t, strings.Contains(page, `<tr data-partition="0"><th scope="row">0</th><td class="num" data-mirror-hw>3</td><td class="num" data-source-hw>3</td>`), "partition 0's watermarks:\n%s", page)

	// Promote: a confirmation first, which changes nothing.
	token := csrf(t, page)
	code, page = b.post("/actions/promote-mirror", url.Values{"csrf": {token}, "topic": {"orders"}})
	must(t, code == 200 && strings.Contains(page, "Please confirm"), "promote: %d\n%s", code, page)
	ms, _ := la.ListMirrors(ctx, "", []string{"orders"})
	must(t, len(ms) == 1 && ms[0].State == "ACTIVE", "the confirmation changed the mirror: %+v", ms)
	code, page = b.post("/actions/promote-mirror", url.Values{"csrf": {token}, "confirm": {"yes"}, "topic": {"orders"}})
	must(t, code == 200 && strings.Contains(page, "Mirror topic orders promoted: it is writable now."), "promote confirmed: %d\n%s", code, page)
	ms, _ = la.ListMirrors(ctx, "", []string{"orders"})
	must(t, len(ms) == 1 && ms[0].State == "STOPPED (promoted)", "after the promotion: %+v", ms)
	must(t, strings.Contains(page, `<td data-state>STOPPED (promoted)</td>`) && !strings.Contains(page, `action="/actions/promote-mirror"`), "the page after the promotion:\n%s", page)
	dcl, _ := kgo.NewClient(kgo.SeedBrokers(dst.Addr), kgo.DefaultProduceTopic("orders"))
	defer dcl.Close()
	if err := dcl.ProduceSync(ctx, kgo.StringRecord("local")).FirstErr(); err != nil {
		t.Fatalf("the promoted topic is not writable: %v", err)
	}
	// Without the CSRF token nothing is promoted.
	code, _ = b.post("/actions/promote-mirror", url.Values{"confirm": {"yes"}, "topic": {"orders"}})
	must(t, code == 403, "promote without CSRF: %d", code)
}
