package console_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/clustertest"
	"weir/internal/servertest"
	"weir/internal/testwait"
)

// TestBrowserOperations: the transactions, cluster links and
// reassignments pages of a three-node cluster's console in Chromium,
// against DescribeTransactions, the link admin API and
// ListPartitionReassignments; then a mirror topic promoted from the
// page.
func TestBrowserOperations(t *testing.T) {
	ctx := chrome(t)
	dir := artifacts(t)
	src := servertest.Start(t, servertest.Options{})
	c := clustertest.New(t, clustertest.Options{Nodes: 3, Overrides: map[string]string{"weir.console.listener": "127.0.0.1:0"}})
	bg, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl := c.Client(t, kgo.ProducerBatchCompression(kgo.NoCompression()))
	adm := kadm.NewClient(cl)
	base := "http://" + c.Node(0).Server.ConsoleAddr().String()
	dst := c.Node(0).Addr

	// Transactions: one left open.
	if _, err := adm.CreateTopic(bg, 2, 3, nil, "ledger"); err != nil {
		t.Fatal(err)
	}
	openTxn(t, bg, dst, "ledger-writer", "ledger")
	ds, err := adm.DescribeTransactions(bg, "ledger-writer")
	if err != nil || ds["ledger-writer"].Err != nil {
		t.Fatalf("DescribeTransactions: %v %v", err, ds)
	}
	run(t, ctx, "transactions", chromedp.Navigate(base+"/transactions"), chromedp.WaitVisible(chromedp.CSS(`tr[data-txn="ledger-writer"]`)))
	want := ds["ledger-writer"]
	if got := text(t, ctx, `tr[data-txn="ledger-writer"] [data-state]`); got != want.State {
		t.Errorf("transactions: state %q, DescribeTransactions says %q", got, want.State)
	}
	if got := text(t, ctx, `tr[data-txn="ledger-writer"] [data-pid]`); got != strconv.FormatInt(want.ProducerID, 10) {
		t.Errorf("transactions: producer id %s, DescribeTransactions says %d", got, want.ProducerID)
	}
	if got := text(t, ctx, `tr[data-txn="ledger-writer"] [data-partitions]`); !strings.HasPrefix(got, "ledger-") {
		t.Errorf("transactions: partitions %q", got)
	}
	run(t, ctx, "filter", chromedp.SetValue(chromedp.CSS("#state"), "CompleteCommit"), chromedp.Click(chromedp.CSS(`#txn-filter button`)))
	waitFor(t, ctx, `location.search.includes("state=CompleteCommit") && document.readyState === "complete" && document.querySelector('tr[data-txn="ledger-writer"]') === null`)
	run(t, ctx, "unfilter", chromedp.Navigate(base+"/transactions?hanging=1"), chromedp.WaitVisible(chromedp.CSS(`tr[data-txn="ledger-writer"]`)))
	checkAccessible(t, ctx, "transactions")
	shot(t, ctx, dir, "transactions")

	// A mirror of the source's topic.
	sadm := adminOf(t, src.Addr)
	if _, err := sadm.CreateTopic(bg, 3, 1, nil, "events"); err != nil {
		t.Fatal(err)
	}
	scl, _ := kgo.NewClient(kgo.SeedBrokers(src.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer scl.Close()
	for i := range 9 {
		if err := scl.ProduceSync(bg, &kgo.Record{Topic: "events", Partition: int32(i % 3), Value: []byte("e")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	la := linkAdmin(t, dst)
	mirrorOf(t, bg, la, src.Addr, "events", map[int32]int64{0: 3, 1: 3, 2: 3})
	ms, err := la.ListMirrors(bg, "", []string{"events"})
	if err != nil || len(ms) != 1 {
		t.Fatalf("list-mirrors: %v %v", ms, err)
	}
	run(t, ctx, "links", chromedp.Navigate(base+"/links"), chromedp.WaitVisible(chromedp.CSS(`tr[data-mirror="events"]`)))
	if got := text(t, ctx, `tr[data-mirror="events"] [data-state]`); got != ms[0].State {
		t.Errorf("links: state %q, list-mirrors says %q", got, ms[0].State)
	}
	var lag int64
	for _, p := range la.Lags(bg, ms[0]) {
		lag += p.Lag
	}
	if got := text(t, ctx, `tr[data-mirror="events"] [data-lag]`); got != strconv.FormatInt(lag, 10) {
		t.Errorf("links: lag %s, the admin API's watermarks give %d", got, lag)
	}
	if got := text(t, ctx, `tr[data-link="dr"] [data-mirrors]`); got != "1" {
		t.Errorf("links: link dr has %s mirrors", got)
	}
	run(t, ctx, "partitions", chromedp.Click(chromedp.CSS(`tr.detail summary`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-mirror-parts="events"] tr[data-partition="2"]`)))
	if got := text(t, ctx, `[data-mirror-parts="events"] tr[data-partition="2"] [data-source-hw]`); got != "3" {
		t.Errorf("links: partition 2's source high watermark %s", got)
	}
	checkAccessible(t, ctx, "links")
	shot(t, ctx, dir, "links")

	// Promote it from the page.
	run(t, ctx, "promote", chromedp.Click(chromedp.CSS(`tr[data-mirror="events"] form.promote button`)), chromedp.WaitVisible(chromedp.CSS("#confirm")))
	if ms, _ := la.ListMirrors(bg, "", []string{"events"}); len(ms) != 1 || ms[0].State != "ACTIVE" {
		t.Fatalf("the confirmation changed the mirror: %+v", ms)
	}
	checkAccessible(t, ctx, "promote confirmation")
	shot(t, ctx, dir, "promote-confirm")
	run(t, ctx, "confirm promote", chromedp.Click(chromedp.CSS(`#confirm button`)), chromedp.WaitVisible(chromedp.CSS(".flash")))
	if got := text(t, ctx, ".flash"); got != "Mirror topic events promoted: it is writable now." {
		t.Errorf("after promote: %q", got)
	}
	if ms, _ := la.ListMirrors(bg, "", []string{"events"}); len(ms) != 1 || ms[0].State != "STOPPED (promoted)" {
		t.Errorf("after the promotion the admin API says %+v", ms)
	}
	if got := text(t, ctx, `tr[data-mirror="events"] [data-state]`); got != "STOPPED (promoted)" {
		t.Errorf("links after the promotion: state %q", got)
	}
	shot(t, ctx, dir, "promoted")

	// A reassignment held back by a replication throttle.
	if _, err := adm.CreateTopic(bg, 1, 1, map[string]*string{"leader.replication.throttled.replicas": kadm.StringPtr("*"),
		"follower.replication.throttled.replicas": kadm.StringPtr("*")}, "moving"); err != nil {
		t.Fatal(err)
	}
	var rates []kadm.AlterConfig
	for _, k := range []string{"leader.replication.throttled.rate", "follower.replication.throttled.rate"} {
		rates = append(rates, kadm.AlterConfig{Name: k, Value: kadm.StringPtr("20000")})
	}
	if _, err := adm.AlterBrokerConfigs(bg, rates, 1, 2, 3); err != nil {
		t.Fatal(err)
	}
	value := make([]byte, 64<<10)
	for range 32 { // 2 MiB: 100 s at 20 kB/s
		if err := cl.ProduceSync(bg, &kgo.Record{Topic: "moving", Value: value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	md, err := adm.Metadata(bg, "moving")
	if err != nil {
		t.Fatal(err)
	}
	leader := md.Topics["moving"].Partitions[0].Leader
	target := leader%3 + 1
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("moving", 0, []int32{leader, target})
	if rs, err := adm.AlterPartitionAssignments(bg, req); err != nil || rs.Error() != nil {
		t.Fatalf("AlterPartitionAssignments: %v %v", err, rs)
	}
	var set kadm.TopicsSet
	set.Add("moving", 0)
	lr, err := adm.ListPartitionReassignments(bg, set)
	if err != nil {
		t.Fatal(err)
	}
	ongoing := lr["moving"][0]
	run(t, ctx, "reassignments", chromedp.Navigate(base+"/reassignments"), chromedp.WaitVisible(chromedp.CSS(`tr[data-moving="moving-0"]`)))
	if got := text(t, ctx, `tr[data-moving="moving-0"] td:nth-of-type(2)`); got != fmt.Sprint(ongoing.AddingReplicas[0]) {
		t.Errorf("reassignments: adding %q, ListPartitionReassignments says %v", got, ongoing.AddingReplicas)
	}
	key := fmt.Sprintf("moving-0/%d", target)
	pct := eval[float64](t, ctx, fmt.Sprintf(`document.querySelector('[data-progress="%s"] progress').value`, key))
	if pct < 0 || pct >= 100 {
		t.Errorf("reassignments: broker %d's progress %v%% while the throttle holds it", target, pct)
	}
	// The live stream updates the bars.
	run(t, ctx, "live progress", chromedp.WaitVisible(chromedp.CSS(`[data-stream][data-updated]`)))
	if got := text(t, ctx, `[data-live="have-`+key+`"]`); !strings.HasSuffix(got, " of 2.0 MiB") {
		t.Errorf("reassignments: copied %q, want a part of the leader's 2.0 MiB", got)
	}
	checkAccessible(t, ctx, "reassignments")
	shot(t, ctx, dir, "reassignments")
	// Lift the throttle so the move ends with the test.
	for i := range rates {
		rates[i].Op, rates[i].Value = kadm.DeleteConfig, nil
	}
	adm.AlterBrokerConfigs(bg, rates, 1, 2, 3)
	testwait.For(t, time.Minute, "the reassignment to end", func() error {
		lr, err := adm.ListPartitionReassignments(bg, set)
		if err == nil && len(lr["moving"]) > 0 {
			err = fmt.Errorf("still moving: %+v", lr["moving"][0])
		}
		return err
	})
	run(t, ctx, "reassignments done", chromedp.Navigate(base+"/reassignments"), chromedp.WaitVisible(chromedp.CSS("#moving")))
	if got := text(t, ctx, "#n-moving"); got != "0" {
		t.Errorf("reassignments after the move: %s moving", got)
	}
}
