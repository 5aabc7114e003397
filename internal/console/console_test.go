package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"weir/internal/acl"
	"weir/internal/console"
	"weir/internal/servertest"
)

// browser is an HTTP client with a cookie jar, as a browser keeps the
// session cookie.
type browser struct {
	t    *testing.T
	base string
	hc   *http.Client
}

func newBrowser(t *testing.T, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: base, hc: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
}

func (b *browser) get(path string) (int, string) {
	b.t.Helper()
	resp, err := b.hc.Get(b.base + path)
	if err != nil {
		b.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func (b *browser) post(path string, form url.Values) (int, string) {
	b.t.Helper()
	resp, err := b.hc.PostForm(b.base+path, form)
	if err != nil {
		b.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// csrf is the CSRF token of a page.
func csrf(t *testing.T, page string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token in the page:\n%s", page)
	}
	return m[1]
}

func must(t *testing.T, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Fatalf(format, args...)
	}
}

func adminOf(t *testing.T, addr string, opts ...kgo.Opt) *kadm.Client {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// topicExists asks a new client (franz-go reuses a recent Metadata
// answer for the same topics) whether topic exists.
func topicExists(t *testing.T, addr, topic string, opts ...kgo.Opt) bool {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	tds, err := kadm.NewClient(cl).ListTopics(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	return tds.Has(topic)
}

// TestConsoleServedByNode runs the console of a node with
// weir.console.listener set, through every page and action, comparing
// what the pages show with the Admin API's answers.
func TestConsoleServedByNode(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{"weir.console.listener": "http://127.0.0.1:0"}})
	must(t, n.Server.ConsoleAddr() != nil, "no console address")
	adm := adminOf(t, n.Addr)
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	cl, _ := kgo.NewClient(kgo.SeedBrokers(n.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	for i := range 7 {
		r := &kgo.Record{Topic: "orders", Partition: 1, Key: []byte(fmt.Sprint("k", i)), Value: []byte(fmt.Sprintf(`{"n":%d}`, i)),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}}}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	b := newBrowser(t, "http://"+n.Server.ConsoleAddr().String())

	// Overview: the broker, the quorum, the features.
	code, page := b.get("/")
	must(t, code == 200, "overview: %d\n%s", code, page)
	must(t, strings.Contains(page, n.Server.ClusterID()), "overview lacks the cluster id")
	must(t, strings.Contains(page, `data-live="leaders-1" class="num">3<`), "overview: broker 1 should lead 3 partitions:\n%s", page)
	must(t, strings.Contains(page, "metadata.version"), "overview lacks the finalized metadata.version")
	must(t, strings.Contains(page, "<td>Leader</td>"), "overview lacks the quorum leader")
	must(t, !strings.Contains(page, `class="error"`), "overview shows an error:\n%s", page)

	// The event stream sends the numbers at once.
	resp, err := b.hc.Get(b.base + "/events/overview")
	must(t, err == nil, "events: %v", err)
	buf := make([]byte, 4096)
	nr, _ := io.ReadAtLeast(resp.Body, buf, 20)
	resp.Body.Close()
	must(t, strings.HasPrefix(string(buf[:nr]), "event: update\ndata: {") && strings.Contains(string(buf[:nr]), `"partitions":3`),
		"event stream: %q", buf[:nr])

	// Topics and one topic, with kadm's offsets.
	code, page = b.get("/topics?q=ORD")
	must(t, code == 200 && strings.Contains(page, `data-topic="orders"`), "topics: %d\n%s", code, page)
	code, page = b.get("/topics/orders")
	must(t, code == 200, "topic: %d\n%s", code, page)
	ends, _ := adm.ListEndOffsets(ctx, "orders")
	for p := int32(0); p < 3; p++ {
		o, _ := ends.Lookup("orders", p)
		must(t, strings.Contains(page, fmt.Sprintf(`<td class="num" data-end>%d</td>`, o.Offset)), "topic page lacks end offset %d of partition %d", o.Offset, p)
	}
	must(t, strings.Contains(page, `data-config="min.insync.replicas"`), "topic page lacks its configs")

	// Messages: bounded, in JSON, from an offset.
	code, page = b.get("/topics/orders/messages?partition=1&from=offset&offset=2&format=json&max=3")
	must(t, code == 200, "messages: %d\n%s", code, page)
	must(t, strings.Contains(page, "3 records from partition 1, next offset 5"), "messages summary:\n%s", page)
	must(t, strings.Contains(page, "&#34;n&#34;: 2") && !strings.Contains(page, "&#34;n&#34;: 5"), "messages: wrong records:\n%s", page)
	// A read past the last record stops at the high watermark at once.
	code, page = b.get("/topics/orders/messages?partition=1&max=100")
	must(t, code == 200 && strings.Contains(page, "7 records from partition 1, next offset 7; at the end of the partition."), "read to the end:\n%s", page)
	code, page = b.get("/topics/orders/messages?partition=0")
	must(t, code == 200 && strings.Contains(page, "0 records from partition 0; the partition is empty."), "empty partition:\n%s", page)
	code, page = b.get("/topics/orders/messages?partition=1&format=hex&max=1")
	must(t, code == 200 && strings.Contains(page, "6b 30"), "hex messages (key k0):\n%s", page)

	// An action without the CSRF token changes nothing.
	code, _ = b.post("/actions/create-topic", url.Values{"topic": {"nope"}, "confirm": {"yes"}})
	must(t, code == 403, "create without CSRF: %d", code)
	// With it: a confirmation first, then the topic.
	_, page = b.get("/topics")
	token := csrf(t, page)
	code, page = b.post("/actions/create-topic", url.Values{"csrf": {token}, "topic": {"made"}, "partitions": {"2"}, "configs": {"retention.ms=60000"}})
	must(t, code == 200 && strings.Contains(page, "Please confirm"), "create: %d\n%s", code, page)
	must(t, !topicExists(t, n.Addr, "made"), "the topic exists before the confirmation")
	code, page = b.post("/actions/create-topic", url.Values{"csrf": {token}, "confirm": {"yes"}, "topic": {"made"}, "partitions": {"2"}, "configs": {"retention.ms=60000"}})
	must(t, code == 200 && strings.Contains(page, "Created topic made."), "create confirmed: %d\n%s", code, page)
	must(t, topicExists(t, n.Addr, "made"), "the topic was not created")
	tds, err := adm.ListTopics(ctx, "made")
	must(t, err == nil && len(tds["made"].Partitions) == 2, "made: %v %v", tds, err)

	// Alter a config.
	code, page = b.post("/actions/alter-config", url.Values{"csrf": {token}, "confirm": {"yes"}, "topic": {"made"}, "key": {"retention.ms"}, "value": {"120000"}, "op": {"set"}})
	must(t, code == 200 && strings.Contains(page, "Done: Set retention.ms=120000"), "alter: %d\n%s", code, page)
	rcs, _ := adm.DescribeTopicConfigs(ctx, "made")
	rc, _ := rcs.On("made", nil)
	for _, c := range rc.Configs {
		if c.Key == "retention.ms" {
			must(t, c.Value != nil && *c.Value == "120000", "retention.ms = %v", c.Value)
		}
	}

	// Preferred election: already preferred on one node.
	code, page = b.post("/actions/elect-leaders", url.Values{"csrf": {token}, "confirm": {"yes"}, "topic": {"made"}})
	must(t, code == 200 && strings.Contains(page, "0 partitions elected, 2 already led"), "elect: %d\n%s", code, page)

	// A group's lag, then a reset with its dry run.
	offs := kadm.Offsets{}
	offs.AddOffset("orders", 1, 3, -1)
	if _, err := adm.CommitOffsets(ctx, "readers", offs); err != nil {
		t.Fatal(err)
	}
	code, page = b.get("/groups")
	must(t, code == 200 && strings.Contains(page, `data-group="readers"`), "groups: %d\n%s", code, page)
	code, page = b.get("/groups/readers")
	must(t, code == 200 && strings.Contains(page, `data-live-lag="orders/1">4<`), "group lag (7-3): %d\n%s", code, page)
	code, page = b.post("/actions/reset-offsets", url.Values{"csrf": {token}, "group": {"readers"}, "topic": {"orders"}, "to": {"earliest"}})
	must(t, code == 200 && strings.Contains(page, "dry run") && strings.Contains(page, "<td>3</td><td>0</td>"), "reset dry run: %d\n%s", code, page)
	fo, _ := adm.FetchOffsets(ctx, "readers")
	o, _ := fo.Lookup("orders", 1)
	must(t, o.At == 3, "the dry run moved the offset to %d", o.At)
	code, page = b.post("/actions/reset-offsets", url.Values{"csrf": {token}, "confirm": {"yes"}, "group": {"readers"}, "topic": {"orders"}, "to": {"earliest"}})
	must(t, code == 200 && strings.Contains(page, "Reset 3 offsets of group readers."), "reset: %d\n%s", code, page)
	fo, _ = adm.FetchOffsets(ctx, "readers")
	o, _ = fo.Lookup("orders", 1)
	must(t, o.At == 0, "reset to earliest: offset %d", o.At)

	// Delete.
	code, page = b.post("/actions/delete-topic", url.Values{"csrf": {token}, "confirm": {"yes"}, "topic": {"made"}})
	must(t, code == 200 && strings.Contains(page, "Deleted topic made."), "delete: %d\n%s", code, page)
	must(t, !topicExists(t, n.Addr, "made"), "the topic is still there")
}

// TestTopicsSearchAndPaging pages through many topics, filtered on the
// server.
func TestTopicsSearchAndPaging(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{"weir.console.listener": "127.0.0.1:0"}})
	adm := adminOf(t, n.Addr)
	var names []string
	for i := range 130 {
		names = append(names, fmt.Sprintf("t%03d", i))
	}
	names = append(names, "other")
	if _, err := adm.CreateTopics(context.Background(), 1, 1, nil, names...); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, "http://"+n.Server.ConsoleAddr().String())
	_, page := b.get("/topics?q=t0")
	must(t, strings.Contains(page, "100 of 131 topics · page 1 of 2"), "search t0:\n%s", page)
	must(t, strings.Contains(page, `data-topic="t049"`) && !strings.Contains(page, `data-topic="t050"`), "page 1 holds t000..t049")
	must(t, strings.Contains(page, `href="/topics?page=2&amp;q=t0"`), "page 1 links page 2:\n%s", page)
	_, page = b.get("/topics?q=t0&page=2")
	must(t, strings.Contains(page, `data-topic="t099"`) && !strings.Contains(page, `data-topic="t049"`) && !strings.Contains(page, `data-topic="t100"`), "page 2:\n%s", page)
	_, page = b.get("/topics?page=3")
	must(t, strings.Contains(page, `data-topic="t130"`) == false && strings.Contains(page, `data-topic="other"`) == false, "page 3 of 3 holds t100..t129:\n%s", page)
	must(t, strings.Contains(page, `data-topic="t129"`), "page 3:\n%s", page)
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestSASLLoginAndSessions: with SASL on the listener the console asks
// for a login, checks it with the broker, acts with the user's rights
// (an authorization error shows and changes nothing) and forgets idle
// sessions.
func TestSASLLoginAndSessions(t *testing.T) {
	users := `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" ` +
		`user_admin="admin-secret" user_alice="alice-secret";`
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{
		"listener.security.protocol.map":                 "PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"sasl.enabled.mechanisms":                        "PLAIN",
		"sasl.mechanism.inter.broker.protocol":           "PLAIN",
		"listener.name.plaintext.plain.sasl.jaas.config": users,
		"authorizer.class.name":                          acl.ClassName,
		"super.users":                                    "User:admin;User:ANONYMOUS",
	}})
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	c, err := console.New(console.Config{Bootstrap: n.Addr, Mechanisms: []string{"PLAIN"}, SessionIdle: time.Minute, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv := httptest.NewServer(c.Handler())
	defer srv.Close()
	admin := kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())

	b := newBrowser(t, srv.URL)
	code, page := b.get("/topics")
	must(t, code == 200 && strings.Contains(page, `<label for="password">`), "no login form: %d\n%s", code, page)
	code, page = b.post("/login", url.Values{"user": {"alice"}, "password": {"wrong"}, "mechanism": {"PLAIN"}, "next": {"/topics"}})
	must(t, code == 401 && strings.Contains(page, "Login failed"), "wrong password: %d\n%s", code, page)
	must(t, c.Sessions() == 0, "a failed login made a session")
	code, page = b.post("/login", url.Values{"user": {"alice"}, "password": {"alice-secret"}, "mechanism": {"PLAIN"}, "next": {"/topics"}})
	must(t, code == 200 && strings.Contains(page, "Signed in as <strong>alice</strong>"), "login: %d\n%s", code, page)
	code, page = b.post("/actions/create-topic", url.Values{"csrf": {csrf(t, page)}, "confirm": {"yes"}, "topic": {"forbidden"}})
	must(t, code == 403 && strings.Contains(page, "TOPIC_AUTHORIZATION_FAILED"), "alice creates a topic: %d\n%s", code, page)
	must(t, !topicExists(t, n.Addr, "forbidden", admin), "alice created a topic without rights")

	// Idle past SessionIdle: the session and its client are gone.
	clock.Add(2 * time.Minute)
	must(t, c.Sessions() == 0, "the idle session lives on")
	code, page = b.get("/topics")
	must(t, code == 200 && strings.Contains(page, `<label for="password">`), "after expiry: %d\n%s", code, page)

	// admin may.
	code, page = b.post("/login", url.Values{"user": {"admin"}, "password": {"admin-secret"}, "mechanism": {"PLAIN"}, "next": {"/topics"}})
	must(t, code == 200, "admin login: %d", code)
	code, page = b.post("/actions/create-topic", url.Values{"csrf": {csrf(t, page)}, "confirm": {"yes"}, "topic": {"allowed"}})
	must(t, code == 200 && strings.Contains(page, "Created topic allowed."), "admin creates a topic: %d\n%s", code, page)
	// A foreign next is not followed.
	_, page = b.post("/logout", url.Values{"csrf": {csrf(t, page)}})
	must(t, strings.Contains(page, `<label for="password">`), "logout")
	must(t, c.Sessions() == 0, "logout left the session")
}
