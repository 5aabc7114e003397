package console_test

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"weir/internal/console"
	"weir/internal/servertest"
	"weir/internal/testwait"
)

var listOffsetsRE = regexp.MustCompile(`(?m)^kafka_network_requestmetrics_requests_total\{request="ListOffsets",version="\d+"\} (\d+)$`)

// listOffsetsServed is how many ListOffsets requests the node has
// answered, from its /metrics.
func listOffsetsServed(t *testing.T, metrics string) int {
	resp, err := http.Get("http://" + metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	n := 0
	for _, m := range listOffsetsRE.FindAllStringSubmatch(string(body), -1) {
		v, _ := strconv.Atoi(m[1])
		n += v
	}
	return n
}

// TestOverviewStreamsShareOneRefresh: tabs streaming the overview at the
// same moment cost one refresh (one ListOffsets of every partition), not
// one each.
func TestOverviewStreamsShareOneRefresh(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{"weir.metrics.listener": "127.0.0.1:0"}})
	now := time.Unix(1_700_000_000, 0)
	c, err := console.New(console.Config{Bootstrap: n.Addr, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv := httptest.NewServer(c.Handler())
	defer srv.Close()
	metrics := n.Server.MetricsAddr().String()
	before := listOffsetsServed(t, metrics)
	const tabs = 8
	var wg sync.WaitGroup
	errs := make(chan error, tabs)
	for range tabs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			jar, _ := cookiejar.New(nil)
			resp, err := (&http.Client{Jar: jar}).Get(srv.URL + "/events/overview")
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || line != "event: update\n" {
				errs <- errors.New("first event: " + line)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	testwait.Until(t, 10*time.Second, "the refresh's ListOffsets to be counted", func() bool { return listOffsetsServed(t, metrics) > before })
	if got := listOffsetsServed(t, metrics) - before; got != 1 {
		t.Errorf("%d tabs sent %d ListOffsets requests, want 1 shared refresh", tabs, got)
	}
}
