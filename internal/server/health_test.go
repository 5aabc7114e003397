package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"weir/internal/config"
)

// A broker's /readyz answers 503 with the reason until it is registered,
// caught up and unfenced, 200 then, and 503 again when the controller has
// not answered its heartbeats for a session or it shuts down.
func TestReadinessFollowsTheBrokerLifecycle(t *testing.T) {
	s := &Server{cfg: &config.Broker{BrokerSessionTimeout: 9 * time.Second}}
	s.lifecycle = newLifecycle(s)
	l := s.lifecycle
	probe := func(wantCode int, wantReason string) {
		t.Helper()
		w := httptest.NewRecorder()
		reason, ok := s.readiness()
		health(w, ok, reason)
		var body struct{ Status, Reason string }
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
			t.Fatal(err)
		}
		if w.Code != wantCode || !strings.Contains(body.Reason, wantReason) {
			t.Fatalf("readyz: %d %+v, want %d and a reason with %q", w.Code, body, wantCode, wantReason)
		}
	}
	probe(http.StatusServiceUnavailable, "not registered")
	l.epoch.Store(7)
	probe(http.StatusServiceUnavailable, "catching up")
	s.started.Store(true)
	probe(http.StatusServiceUnavailable, "fenced by the controller")
	l.answered.Store(time.Now().UnixNano())
	l.fenced.Store(false)
	probe(http.StatusOK, "registered, unfenced and caught up")
	l.answered.Store(time.Now().Add(-10 * time.Second).UnixNano())
	probe(http.StatusServiceUnavailable, "no heartbeat answered")
	l.answered.Store(time.Now().UnixNano())
	l.shuttingDown.Store(true)
	probe(http.StatusServiceUnavailable, "shutting down")
}
