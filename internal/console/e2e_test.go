package console_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"weir/internal/acl"
	"weir/internal/clustertest"
	"weir/internal/testwait"
)

// The end-to-end tests drive Debian's chromium, headless, with chromedp.

// chrome starts a headless Chromium for the test, with a fresh profile
// and everything that would reach the internet off, or skips the test
// when the binary is missing (CI installs it).
func chrome(t *testing.T) context.Context {
	t.Helper()
	bin := ""
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		t.Skip("skipping the console's browser tests: no chromium binary on PATH (apt-get install chromium)")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900),
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true), chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelC(); cancelA() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// artifacts is where the screenshots go: $WEIR_TEST_ARTIFACTS/console
// when set (CI keeps it), else a temporary directory.
func artifacts(t *testing.T) string {
	dir := t.TempDir()
	if a := os.Getenv("WEIR_TEST_ARTIFACTS"); a != "" {
		dir = filepath.Join(a, "console")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("console screenshots in %s", dir)
	return dir
}

// shot saves a screenshot of the whole page as dir/name.png.
func shot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// run runs the steps, each page's at most 30 seconds.
func run(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// waitFor waits until the JavaScript expression is true on the page,
// evaluating it afresh each time: a page being replaced by a navigation
// fails an evaluation, which is then tried again on the new page.
func waitFor(t *testing.T, ctx context.Context, expr string) {
	t.Helper()
	testwait.For(t, 30*time.Second, expr, func() error {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		if err == nil && !ok {
			err = errors.New("false")
		}
		return err
	})
}

// eval is the value of a JavaScript expression on the page.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// text is the text of the element sel.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("reading %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

// checkAccessible fails when a visible form control has no label, a
// table no header cells, or the page no h1.
func checkAccessible(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	problems := eval[[]string](t, ctx, `(() => {
		const out = [];
		document.querySelectorAll("input, select, textarea").forEach(el => {
			if (el.type === "hidden") return;
			const labelled = (el.id && document.querySelector('label[for="' + el.id + '"]')) || el.getAttribute("aria-label") || el.closest("label");
			if (!labelled) out.push("control without a label: " + (el.name || el.outerHTML));
		});
		document.querySelectorAll("table").forEach(tb => {
			if (!tb.querySelector("th")) out.push("table without header cells: " + tb.id);
			if (!tb.querySelector("caption")) out.push("table without a caption: " + tb.id);
		});
		if (!document.querySelector("h1")) out.push("no h1");
		return out;
	})()`)
	if len(problems) > 0 {
		t.Errorf("%s: %s", page, strings.Join(problems, "; "))
	}
}

// checkFocus tabs from the top of the page: the skip link takes the
// keyboard focus first, and the focus is drawn.
func checkFocus(t *testing.T, ctx context.Context) {
	t.Helper()
	run(t, ctx, "tabbing", chromedp.KeyEvent(kb.Tab))
	active := eval[string](t, ctx, `document.activeElement.textContent.trim()`)
	outline := eval[string](t, ctx, `getComputedStyle(document.activeElement).outlineStyle`)
	if active != "Skip to content" || outline == "none" {
		t.Errorf("first Tab: focus on %q with outline %q, want the skip link with a visible outline", active, outline)
	}
}

// TestBrowserPages: a three-node cluster's console, page by page in
// Chromium, against kadm's answers; then a topic created from the page.
func TestBrowserPages(t *testing.T) {
	ctx := chrome(t)
	dir := artifacts(t)
	c := clustertest.New(t, clustertest.Options{Nodes: 3, Overrides: map[string]string{"weir.console.listener": "127.0.0.1:0"},
		NodeOverrides: map[int32]map[string]string{1: {"broker.rack": "rack-a"}, 2: {"broker.rack": "rack-b"}, 3: {"broker.rack": "rack-c"}}})
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	bg := context.Background()
	if _, err := adm.CreateTopic(bg, 6, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "payments"); err != nil {
		t.Fatal(err)
	}
	for i := range 25 {
		r := &kgo.Record{Topic: "payments", Partition: int32(i % 6), Key: []byte(fmt.Sprint("id-", i)), Value: []byte(fmt.Sprintf(`{"amount":%d}`, i*10))}
		if err := cl.ProduceSync(bg, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	offs := kadm.Offsets{}
	offs.AddOffset("payments", 0, 1, -1)
	if _, err := adm.CommitOffsets(bg, "billing", offs); err != nil {
		t.Fatal(err)
	}
	base := "http://" + c.Node(0).Server.ConsoleAddr().String()

	// Overview.
	meta, err := adm.Metadata(bg)
	if err != nil {
		t.Fatal(err)
	}
	parts := 0
	for _, td := range meta.Topics {
		parts += len(td.Partitions)
	}
	run(t, ctx, "overview", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#brokers")))
	brokers := eval[int](t, ctx, `document.querySelectorAll("#brokers tbody tr").length`)
	if brokers != 3 {
		t.Errorf("overview: %d brokers, want 3", brokers)
	}
	if got := text(t, ctx, "#n-partitions"); got != strconv.Itoa(parts) {
		t.Errorf("overview: %s partitions, kadm says %d", got, parts)
	}
	if got := text(t, ctx, `[data-broker="2"] td:nth-of-type(2)`); got != "rack-b" {
		t.Errorf("overview: broker 2's rack %q", got)
	}
	voters := eval[int](t, ctx, `document.querySelectorAll("#quorum tbody tr").length`)
	if voters != 3 {
		t.Errorf("overview: %d quorum voters, want 3", voters)
	}
	// The event stream has updated the page at least once.
	run(t, ctx, "live update", chromedp.WaitVisible(chromedp.CSS(`[data-stream][data-updated]`)))
	checkAccessible(t, ctx, "overview")
	checkFocus(t, ctx)
	shot(t, ctx, dir, "overview")

	// Topics.
	run(t, ctx, "topics", chromedp.Navigate(base+"/topics"), chromedp.WaitVisible(chromedp.CSS("#q")),
		chromedp.SendKeys(chromedp.CSS("#q"), "pay"), chromedp.Submit(chromedp.CSS("#q")))
	// The unfiltered list has the row too: wait for the page the search loaded.
	waitFor(t, ctx, `location.search.includes("q=pay") && document.readyState === "complete" && document.querySelector('tr[data-topic="payments"]') !== null`)
	if got := text(t, ctx, `tr[data-topic="payments"] td:nth-of-type(1)`); got != "6" {
		t.Errorf("topics: payments has %s partitions", got)
	}
	if got := text(t, ctx, `tr[data-topic="payments"] td:nth-of-type(2)`); got != "3" {
		t.Errorf("topics: payments has RF %s", got)
	}
	checkAccessible(t, ctx, "topics")
	shot(t, ctx, dir, "topics")

	// One topic: end offsets as kadm lists them.
	ends, err := adm.ListEndOffsets(bg, "payments")
	if err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "topic", chromedp.Click(chromedp.CSS(`tr[data-topic="payments"] a`)), chromedp.WaitVisible(chromedp.CSS("#partitions")))
	for p := int32(0); p < 6; p++ {
		o, _ := ends.Lookup("payments", p)
		if got := text(t, ctx, fmt.Sprintf(`tr[data-partition="%d"] [data-end]`, p)); got != strconv.FormatInt(o.Offset, 10) {
			t.Errorf("topic: partition %d ends at %s, kadm says %d", p, got, o.Offset)
		}
	}
	if got := text(t, ctx, `tr[data-partition="0"] td:last-child`); strings.Contains(got, "?") {
		t.Errorf("topic: partition 0's replica sizes %q", got)
	}
	checkAccessible(t, ctx, "topic")
	shot(t, ctx, dir, "topic")

	// Messages of partition 1 as JSON.
	run(t, ctx, "messages", chromedp.Navigate(base+"/topics/payments/messages"), chromedp.WaitVisible(chromedp.CSS("#browse")),
		chromedp.SetValue(chromedp.CSS("#partition"), "1"), chromedp.SetValue(chromedp.CSS("#format"), "json"),
		chromedp.Click(chromedp.CSS(`#browse button`)), chromedp.WaitVisible(chromedp.CSS("#messages")))
	rows := eval[int](t, ctx, `document.querySelectorAll("#messages tbody tr").length`)
	o1, _ := ends.Lookup("payments", 1)
	if int64(rows) != o1.Offset {
		t.Errorf("messages: %d rows, partition 1 holds %d records", rows, o1.Offset)
	}
	if got := text(t, ctx, "#messages tbody tr td:nth-of-type(3)"); !strings.Contains(got, `"amount": 10`) {
		t.Errorf("messages: first value %q", got)
	}
	checkAccessible(t, ctx, "messages")
	shot(t, ctx, dir, "messages")

	// Groups and a group's lag.
	run(t, ctx, "groups", chromedp.Navigate(base+"/groups"), chromedp.WaitVisible(chromedp.CSS(`tr[data-group="billing"]`)))
	checkAccessible(t, ctx, "groups")
	shot(t, ctx, dir, "groups")
	o0, _ := ends.Lookup("payments", 0)
	run(t, ctx, "group", chromedp.Click(chromedp.CSS(`tr[data-group="billing"] a`)), chromedp.WaitVisible(chromedp.CSS("#lag")))
	if got := text(t, ctx, `[data-live-lag="payments/0"]`); got != strconv.FormatInt(o0.Offset-1, 10) {
		t.Errorf("group: lag %s on partition 0, want %d", got, o0.Offset-1)
	}
	checkAccessible(t, ctx, "group")
	shot(t, ctx, dir, "group")

	// Create a topic from the page: a confirmation, then the topic.
	run(t, ctx, "create form", chromedp.Navigate(base+"/topics"), chromedp.WaitVisible(chromedp.CSS("#new-topic")),
		chromedp.SendKeys(chromedp.CSS("#new-topic"), "from-browser"), chromedp.SendKeys(chromedp.CSS("#new-partitions"), "4"),
		chromedp.Click(chromedp.CSS(`#create-topic button`)), chromedp.WaitVisible(chromedp.CSS("#confirm")))
	if topicExistsOn(t, c, "from-browser") {
		t.Fatal("the topic exists before the confirmation")
	}
	checkAccessible(t, ctx, "confirm")
	shot(t, ctx, dir, "confirm")
	run(t, ctx, "confirm", chromedp.Click(chromedp.CSS(`#confirm button`)), chromedp.WaitVisible(chromedp.CSS(".flash")))
	if got := text(t, ctx, ".flash"); got != "Created topic from-browser." {
		t.Errorf("after create: %q", got)
	}
	if !topicExistsOn(t, c, "from-browser") {
		t.Fatal("the topic was not created")
	}
	shot(t, ctx, dir, "created")
}

// topicExistsOn asks a new client of the cluster whether topic exists.
func topicExistsOn(t *testing.T, c *clustertest.Cluster, topic string, opts ...kgo.Opt) bool {
	t.Helper()
	return topicExists(t, c.Node(0).Addr, topic, opts...)
}

// TestBrowserUnauthorized: with SASL and the authorizer on, a user
// without rights logs in, tries to create a topic, sees the
// authorization error, and nothing changes.
func TestBrowserUnauthorized(t *testing.T) {
	ctx := chrome(t)
	dir := artifacts(t)
	users := `org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="broker-secret" ` +
		`user_broker="broker-secret" user_alice="alice-secret";`
	c := clustertest.New(t, clustertest.Options{Nodes: 3, Overrides: map[string]string{
		"weir.console.listener":                           "127.0.0.1:0",
		"listener.security.protocol.map":                  "PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
		"sasl.enabled.mechanisms":                         "PLAIN",
		"sasl.mechanism.inter.broker.protocol":            "PLAIN",
		"sasl.mechanism.controller.protocol":              "PLAIN",
		"listener.name.plaintext.plain.sasl.jaas.config":  users,
		"listener.name.controller.plain.sasl.jaas.config": users,
		"authorizer.class.name":                           acl.ClassName,
		"super.users":                                     "User:broker",
	}})
	base := "http://" + c.Node(0).Server.ConsoleAddr().String()
	run(t, ctx, "login", chromedp.Navigate(base+"/topics"), chromedp.WaitVisible(chromedp.CSS("#password")))
	checkAccessible(t, ctx, "login")
	shot(t, ctx, dir, "login")
	run(t, ctx, "log in", chromedp.SendKeys(chromedp.CSS("#user"), "alice"), chromedp.SendKeys(chromedp.CSS("#password"), "alice-secret"),
		chromedp.Submit(chromedp.CSS("#password")), chromedp.WaitVisible(chromedp.CSS("#new-topic")),
		chromedp.SendKeys(chromedp.CSS("#new-topic"), "alice-topic"),
		chromedp.Click(chromedp.CSS(`#create-topic button`)), chromedp.WaitVisible(chromedp.CSS("#confirm")),
		chromedp.Click(chromedp.CSS(`#confirm button`)), chromedp.WaitVisible(chromedp.CSS(".error")))
	if got := text(t, ctx, ".error"); !strings.Contains(got, "TOPIC_AUTHORIZATION_FAILED") {
		t.Errorf("alice's create: %q, want an authorization error", got)
	}
	shot(t, ctx, dir, "unauthorized")
	if topicExistsOn(t, c, "alice-topic", kgo.SASL(plain.Auth{User: "broker", Pass: "broker-secret"}.AsMechanism())) {
		t.Fatal("alice created a topic without rights")
	}
}
