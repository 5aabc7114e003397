package config

import (
	"errors"
	"maps"
	"strings"
	"testing"
)

func TestParseListener(t *testing.T) {
	tests := []struct {
		in      string
		want    Listener
		addr    string
		wantErr string
	}{
		{in: "PLAINTEXT://localhost:9092", want: Listener{Name: "PLAINTEXT", Host: "localhost", Port: 9092}, addr: "localhost:9092"},
		{in: " plaintext://:9092 ", want: Listener{Name: "PLAINTEXT", Port: 9092}, addr: ":9092"},
		{in: "CLIENT://0.0.0.0:9092", want: Listener{Name: "CLIENT", Host: "0.0.0.0", Port: 9092}, addr: "0.0.0.0:9092"},
		{in: "SSL://[::1]:9093", want: Listener{Name: "SSL", Host: "::1", Port: 9093}, addr: "[::1]:9093"},
		{in: "SSL://[fe80::1%eth0]:9093", want: Listener{Name: "SSL", Host: "fe80::1%eth0", Port: 9093}, addr: "[fe80::1%eth0]:9093"},
		{in: "INTERNAL-1://broker-1.example.com:0", want: Listener{Name: "INTERNAL-1", Host: "broker-1.example.com", Port: 0}, addr: "broker-1.example.com:0"},
		{in: "localhost:9092", wantErr: "NAME://host:port"},
		{in: "://localhost:9092", wantErr: "NAME://host:port"},
		{in: "BAD NAME://h:1", wantErr: "invalid name"},
		{in: "A://localhost", wantErr: "missing port"},
		{in: "A://localhost:", wantErr: "invalid port"},
		{in: "A://localhost:65536", wantErr: "invalid port"},
		{in: "A://localhost:-1", wantErr: "invalid port"},
		{in: "A://localhost:+1", wantErr: "invalid port"},
		{in: "A://::1:9092", wantErr: "must be enclosed in brackets"},
		{in: "A://[::1:9092", wantErr: "invalid IPv6"},
		{in: "A://[nothost]:9092", wantErr: "invalid IPv6"},
		{in: "A://ho/st:9092", wantErr: "invalid host"},
	}
	for _, tt := range tests {
		got, err := ParseListener(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q: got %+v, %v; want error %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q: got %+v, %v; want %+v", tt.in, got, err, tt.want)
			continue
		}
		if got.Address() != tt.addr || got.String() != tt.want.Name+"://"+tt.addr {
			t.Errorf("%q: Address %q String %q", tt.in, got.Address(), got.String())
		}
	}
}

func TestParseListeners(t *testing.T) {
	ls, err := ParseListeners("A://:1, ,B://h:2,")
	if err != nil || len(ls) != 2 || ls[0].Name != "A" || ls[1].Host != "h" {
		t.Fatalf("got %+v, %v", ls, err)
	}
	if ls, err := ParseListeners(""); err != nil || ls != nil {
		t.Errorf("empty: %v %v", ls, err)
	}
	if _, err := ParseListeners("A://:1,oops"); err == nil {
		t.Error("want error")
	}
}

func TestParseVoter(t *testing.T) {
	v, err := ParseVoter("3@[::1]:9093")
	if err != nil || v != (Voter{ID: 3, Host: "::1", Port: 9093}) || v.Address() != "[::1]:9093" {
		t.Fatalf("got %+v, %v", v, err)
	}
	for in, want := range map[string]string{
		"localhost:9093":   "id@host:port",
		"x@localhost:9093": "invalid id",
		"-1@localhost:1":   "invalid id",
		"1@:9093":          "no host",
		"1@localhost":      "missing port",
	} {
		if _, err := ParseVoter(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", in, err, want)
		}
	}
}

func TestParseSecurityProtocolMap(t *testing.T) {
	m, err := ParseSecurityProtocolMap(" internal:ssl , EXTERNAL:SASL_SSL,,")
	want := map[string]string{"INTERNAL": "SSL", "EXTERNAL": "SASL_SSL"}
	if err != nil || !maps.Equal(m, want) {
		t.Fatalf("got %v, %v", m, err)
	}
	m, err = ParseSecurityProtocolMap(DefaultSecurityProtocolMap)
	if err != nil || len(m) != 5 || m["CONTROLLER"] != "PLAINTEXT" || m["SASL_SSL"] != "SASL_SSL" {
		t.Errorf("default map: %v, %v", m, err)
	}
	for in, want := range map[string]string{
		"A":             "LISTENER:PROTOCOL",
		":SSL":          "LISTENER:PROTOCOL",
		"A:TLS":         "unknown security protocol",
		"A:SSL,a:SSL":   "more than once",
		"A:PLAINTEXT,B": "LISTENER:PROTOCOL",
	} {
		if _, err := ParseSecurityProtocolMap(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", in, err, want)
		}
	}
}

func TestParseMetricsListener(t *testing.T) {
	good := map[string]string{
		"":                      "",
		"0.0.0.0:9309":          "0.0.0.0:9309",
		"http://0.0.0.0:9309":   "0.0.0.0:9309",
		"HTTP://localhost:0":    "localhost:0",
		":9309":                 ":9309",
		"http://[::1]:9309":     "[::1]:9309",
		" http://127.0.0.1:80 ": "127.0.0.1:80",
	}
	for in, want := range good {
		got, err := ParseMetricsListener(in)
		if err != nil || got != want {
			t.Errorf("ParseMetricsListener(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"9309", "https://0.0.0.0:9309", "http://0.0.0.0:9309/metrics", "host:99999", "::1:9309", "PLAINTEXT://h:1"} {
		if got, err := ParseMetricsListener(in); err == nil {
			t.Errorf("ParseMetricsListener(%q) = %q, want an error", in, got)
		}
	}
}

func TestLoadBrokerMetricsListener(t *testing.T) {
	b, _, err := LoadBroker(map[string]string{KeyMetricsListener: "http://127.0.0.1:9309"})
	if err != nil || b.MetricsListener != "127.0.0.1:9309" {
		t.Fatalf("MetricsListener = %v, %v", b, err)
	}
	if b, _, _ := LoadBroker(nil); b.MetricsListener != "" {
		t.Errorf("default MetricsListener = %q, want disabled", b.MetricsListener)
	}
	_, _, err = LoadBroker(map[string]string{KeyMetricsListener: "0.0.0.0"})
	var ce *Error
	if !errors.As(err, &ce) || ce.Kind != InvalidValue || ce.Name != KeyMetricsListener {
		t.Errorf("invalid value: %v", err)
	}
}

// weir.metrics.aggregation is partition by default, takes topic, and
// refuses anything else.
func TestMetricsAggregation(t *testing.T) {
	if b, _, err := LoadBroker(nil); err != nil || b.MetricsAggregation != "partition" {
		t.Fatalf("default = %q, %v; want partition", b.MetricsAggregation, err)
	}
	if b, _, err := LoadBroker(map[string]string{KeyMetricsAggregation: "topic"}); err != nil || b.MetricsAggregation != "topic" {
		t.Fatalf("topic = %q, %v", b.MetricsAggregation, err)
	}
	_, _, err := LoadBroker(map[string]string{KeyMetricsAggregation: "group"})
	var ce *Error
	if !errors.As(err, &ce) || ce.Kind != InvalidValue || ce.Name != KeyMetricsAggregation {
		t.Errorf("weir.metrics.aggregation=group: %v, want an invalid value", err)
	}
}

func TestLoadBrokerConsoleListener(t *testing.T) {
	b, _, err := LoadBroker(map[string]string{KeyConsoleListener: "http://127.0.0.1:9644"})
	if err != nil || b.ConsoleListener != "127.0.0.1:9644" {
		t.Fatalf("ConsoleListener = %v, %v", b, err)
	}
	if b, _, _ := LoadBroker(nil); b.ConsoleListener != "" {
		t.Errorf("default ConsoleListener = %q, want disabled", b.ConsoleListener)
	}
	for _, in := range []string{"0.0.0.0", "https://127.0.0.1:9644", "127.0.0.1:9644/console"} {
		_, _, err = LoadBroker(map[string]string{KeyConsoleListener: in})
		var ce *Error
		if !errors.As(err, &ce) || ce.Kind != InvalidValue || ce.Name != KeyConsoleListener {
			t.Errorf("%q: %v", in, err)
		}
	}
}
