package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.yaml.in/yaml/v3"
)

// exportedFamilies are the metric names a node can export, as PromQL
// sees them: every family of a registry whose source reports something of
// every kind and whose counters all moved, with a histogram's _bucket,
// _sum and _count.
func exportedFamilies(t *testing.T) map[string]bool {
	t.Helper()
	src := &fakeSource{
		reps: []ReplicaStatus{{Topic: "a", Partition: 0, Leader: true, Replicas: 3, ISR: 2, MinISR: 2},
			{Topic: "a", Partition: 1, LeaderID: 2, Replicas: 3, ISR: 3, MinISR: 2, Lag: 3}, {Topic: "b", Offline: true}},
		ctl:    ControllerStatus{Active: true, Topics: 1, Partitions: 2, ActiveBrokers: 3},
		links:  LinkStatus{Links: 1, MirrorTopics: 1, Topics: []MirrorTopicStatus{{Link: "l", Topic: "m", State: "active"}}, Partitions: []MirrorPartitionStatus{{Link: "l", Topic: "m"}}},
		quotas: []ClientQuotaStatus{{Type: "produce"}, {Type: "fetch"}, {Type: "request"}, {Type: "controller_mutation"}},
		logs:   []LogStatus{{Topic: "a"}},
		raft:   RaftStatus{Voter: true, ControllerApplied: 1, BrokerApplied: 1},
		coord: CoordinatorStatus{Transactions: map[string]int64{"Ongoing": 1}, OffsetCommits: 1, OffsetExpirations: 1,
			OffsetDeletions: 1, ClassicRebalances: 1, ConsumerRebalances: 1, ProducerIDBlocks: 1, ProducerIDs: 1,
			Lag: []ConsumerLag{{Group: "g", Topic: "a", Partition: 0, Lag: 1}}},
	}
	m := New(src, Options{})
	m.LogFlushed(time.Millisecond)
	m.RaftCommitted(time.Millisecond, 1)
	m.RaftElected(time.Millisecond)
	tc := m.Topics.Acquire("a")
	tc.Produced(1, 1)
	now := time.Now()
	m.Requests.Observe(&Request{Key: 0, Version: 9, Read: now, Handled: now, Returned: now, Completed: now, Writing: now, Sent: now})
	m.Requests.Error(0, 0, 1)
	m.Requests.Waiting(true, 1)
	l := m.Requests.Listener("PLAINTEXT")
	l.Opened()
	l.AuthFailed()
	l.Authenticated()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, mf := range mfs {
		n := mf.GetName()
		out[n] = true
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			out[n+"_bucket"], out[n+"_sum"], out[n+"_count"] = true, true, true
		}
	}
	return out
}

var (
	promStrings  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	promMatchers = regexp.MustCompile(`\{[^}]*\}`)
	promRanges   = regexp.MustCompile(`\[[^\]]*\]`)
	// promNumbers are numbers and durations (5m).
	promNumbers = regexp.MustCompile(`\b[0-9][0-9a-zA-Z_.]*`)
	// promLabelLists are the label lists of by, without, on, ignoring,
	// group_left and group_right.
	promLabelLists = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promIdent      = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	promKeywords   = []string{"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset", "inf", "nan"}
)

// promMetrics are the metric names a PromQL expression reads: its
// identifiers that are neither functions, keywords, label names nor
// inside strings, label matchers or ranges.
func promMetrics(expr string) []string {
	e := promStrings.ReplaceAllString(expr, `""`)
	e = promMatchers.ReplaceAllString(e, "")
	e = promRanges.ReplaceAllString(e, "")
	e = promLabelLists.ReplaceAllString(e, "")
	e = promNumbers.ReplaceAllString(e, "")
	var out []string
	for _, id := range promIdent.FindAllString(e, -1) {
		if strings.HasSuffix(id, "(") || slices.Contains(promKeywords, strings.ToLower(id)) {
			continue
		}
		out = append(out, id)
	}
	return out
}

func TestPromMetrics(t *testing.T) {
	got := promMetrics(`histogram_quantile(0.99, sum by (request, le) (rate(x_bucket{job=~"$job",a="b}"}[$__rate_interval]))) - on() group_right() y > 0 and z offset 5m`)
	if want := []string{"x_bucket", "y", "z"}; !slices.Equal(got, want) {
		t.Fatalf("promMetrics = %v, want %v", got, want)
	}
}

// prometheusOwn are the series Prometheus makes itself for every target.
var prometheusOwn = map[string]bool{"up": true}

// checkExpr fails the test unless expr reads at least one metric and
// only ones weir exports.
func checkExpr(t *testing.T, where, expr string, families map[string]bool) {
	t.Helper()
	names := promMetrics(expr)
	if len(names) == 0 {
		t.Errorf("%s: %q reads no metric", where, expr)
	}
	for _, n := range names {
		if !families[n] && !prometheusOwn[n] {
			t.Errorf("%s: %q reads %s, which weir does not export", where, expr, n)
		}
	}
}

// The Grafana dashboard and the Prometheus alert rules of ops/ parse, and
// every query and alert reads only metrics weir exports.
func TestDashboardAndAlertsUseExportedMetrics(t *testing.T) {
	families := exportedFamilies(t)

	data, err := os.ReadFile("../../ops/grafana/weir.json")
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Title      string `json:"title"`
		Type       string `json:"type"`
		Datasource *struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	}
	var dash struct {
		Title      string  `json:"title"`
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name, Type string
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("ops/grafana/weir.json: %v", err)
	}
	if !slices.ContainsFunc(dash.Templating.List, func(v struct{ Name, Type string }) bool { return v.Name == "datasource" && v.Type == "datasource" }) {
		t.Error("the dashboard has no datasource variable")
	}
	queries := 0
	var read []string // the metrics the panels read
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: datasource is not the variable", p.Title)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			checkExpr(t, "panel "+p.Title, q.Expr, families)
			read = append(read, promMetrics(q.Expr)...)
			queries++
		}
	}

	data, err = os.ReadFile("../../ops/prometheus/weir-alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&rules); err != nil {
		t.Fatalf("ops/prometheus/weir-alerts.yml: %v", err)
	}
	var alerts []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("rule %+v lacks a name, severity or summary", r)
			}
			if r.For != "" {
				if _, err := time.ParseDuration(r.For); err != nil {
					t.Errorf("alert %s: for %q: %v", r.Alert, r.For, err)
				}
			}
			checkExpr(t, "alert "+r.Alert, r.Expr, families)
			alerts = append(alerts, r.Alert)
		}
	}
	sort.Strings(alerts)
	for _, want := range []string{"WeirUnderReplicatedPartitions", "WeirUnderMinIsrPartitions", "WeirOfflinePartitions", "WeirNoActiveController", "WeirRaftWithoutLeader", "WeirBrokerNotReady", "WeirMirrorLagGrowing", "WeirConsumerLagGrowing"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("no alert %s (have %v)", want, alerts)
		}
	}
	// The consumer lag has panels, per group and per group and topic.
	for _, want := range []string{"weir_group_consumer_lag", "weir_group_consumer_lag_sum"} {
		if !slices.Contains(read, want) {
			t.Errorf("no panel reads %s", want)
		}
	}
	t.Logf("%d dashboard queries and %d alerts checked against %d metric names", queries, len(alerts), len(families))
}
