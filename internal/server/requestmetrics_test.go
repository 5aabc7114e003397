package server_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"weir/internal/config"
	"weir/internal/servertest"
	"weir/internal/testwait"
)

// RequestMetrics: requests by name and version, error codes by Kafka's
// name as errorCounts counts them, and the time a Fetch waits for
// fetch.min.bytes in RemoteTimeMs; connection counts per listener.
func TestRequestMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{config.KeyMetricsListener: "http://127.0.0.1:0"}})
	addr := n.Server.MetricsAddr().String()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "ok"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "strict"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if code := produceRaw(t, ctx, cl, "ok", 1, batch(t, 1, 10)); code != 0 {
			t.Fatal(kerr.ErrorForCode(code))
		}
	}
	if code := produceRaw(t, ctx, cl, "strict", -1, batch(t, 1, 10)); code != kerr.NotEnoughReplicas.Code {
		t.Fatalf("acks=all under min.insync.replicas: %v", kerr.ErrorForCode(code))
	}

	// A fetch past the data waits max.wait.ms for fetch.min.bytes.
	md, err := adm.Metadata(ctx, "ok")
	if err != nil {
		t.Fatal(err)
	}
	const wait = 300
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.MinBytes, req.MaxWaitMillis = -1, 1<<20, 1, wait
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = "ok", md.Topics["ok"].ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes = 3, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	start := time.Now()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 || len(resp.Topics[0].Partitions[0].RecordBatches) != 0 {
		t.Fatalf("long poll: %v, %+v", err, resp)
	}
	if took := time.Since(start); took < wait*time.Millisecond {
		t.Fatalf("the fetch came back after %v, before its max wait", took)
	}
	fetchVersion := strconv.Itoa(int(req.GetVersion()))

	// A request is counted once its response is written, just after the
	// client may have read it.
	var s map[string]float64
	testwait.For(t, 10*time.Second, "the fetch counted", func() error {
		s = samples(t, addr)
		if v := s[`kafka_network_requestmetrics_totaltimems_count{request="FetchConsumer"}`]; v != 1 {
			return fmt.Errorf("%v fetches timed", v)
		}
		return nil
	})
	for name, want := range map[string]float64{
		`kafka_network_requestmetrics_errors_total{error="NONE",request="Produce"}`:                           3,
		`kafka_network_requestmetrics_errors_total{error="NOT_ENOUGH_REPLICAS",request="Produce"}`:            1,
		`kafka_network_requestmetrics_requests_total{request="FetchConsumer",version="` + fetchVersion + `"}`: 1,
		`kafka_network_requestmetrics_errors_total{error="NONE",request="Fetch"}`:                             2, // top level and partition
		`kafka_network_requestmetrics_remotetimems_count{request="FetchConsumer"}`:                            1,
		`kafka_network_requestmetrics_totaltimems_count{request="Produce"}`:                                   4,
		`kafka_network_requestmetrics_localtimems_count{request="Produce"}`:                                   4,
		`kafka_server_delayedoperationpurgatory_purgatorysize{delayedOperation="Fetch"}`:                      0,
		`kafka_server_delayedoperationpurgatory_purgatorysize{delayedOperation="Produce"}`:                    0,
	} {
		if v, ok := s[name]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", name, v, ok, want)
		}
	}
	if v := s[`kafka_network_requestmetrics_remotetimems_sum{request="FetchConsumer"}`]; v < wait {
		t.Errorf("the fetch's remote time is %v ms, want at least its %d ms wait", v, wait)
	}
	if v := s[`kafka_network_requestmetrics_remotetimems_bucket{request="FetchConsumer",le="250"}`]; v != 0 {
		t.Errorf("the fetch's remote time is in the 250 ms bucket (%v)", v)
	}
	if v := s[`kafka_network_requestmetrics_totaltimems_sum{request="FetchConsumer"}`]; v < wait {
		t.Errorf("the fetch's total time is %v ms, want at least %d", v, wait)
	}
	if v := s[`kafka_network_requestmetrics_requestbytes_sum{request="Produce"}`]; v <= 4*10 {
		t.Errorf("request bytes of the produces %v", v)
	}
	var conns, created, produces float64
	for name, v := range s {
		if strings.HasPrefix(name, `kafka_network_requestmetrics_requests_total{request="Produce",version="`) {
			produces += v
		}
		if strings.HasPrefix(name, "kafka_server_socket_server_metrics_connection_count{") {
			conns += v
		}
		if strings.HasPrefix(name, "kafka_server_socket_server_metrics_connection_creation_total{") {
			created += v
		}
	}
	if produces != 4 {
		t.Errorf("%v produce requests over all versions, want 4", produces)
	}
	if conns < 1 || created < conns {
		t.Errorf("connections: %v open, %v created", conns, created)
	}
}

// A SASL login with a wrong password counts as a failed authentication of
// the listener, a good one as successful.
func TestFailedAuthenticationMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	users := `org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="broker-secret" user_broker="broker-secret" user_client="client-secret";`
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{
		config.KeyMetricsListener:                        "http://127.0.0.1:0",
		"listener.security.protocol.map":                 "PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"sasl.enabled.mechanisms":                        "PLAIN",
		"sasl.mechanism.inter.broker.protocol":           "PLAIN",
		"listener.name.plaintext.plain.sasl.jaas.config": users,
		"connection.failed.authentication.delay.ms":      "0",
	}})
	login := func(pass string) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr), kgo.SASL(plain.Auth{User: "client", Pass: pass}.AsMechanism()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		return cl.Ping(ctx)
	}
	if err := login("wrong"); err == nil {
		t.Fatal("a wrong password logged in")
	}
	if err := login("client-secret"); err != nil {
		t.Fatal(err)
	}
	s := samples(t, n.Server.MetricsAddr().String())
	const labels = `{listener="PLAINTEXT",networkProcessor="0"}`
	if f := s["kafka_server_socket_server_metrics_failed_authentication_total"+labels]; f < 1 {
		t.Errorf("failed authentications %v, want at least 1", f)
	}
	if ok := s["kafka_server_socket_server_metrics_successful_authentication_total"+labels]; ok < 1 {
		t.Errorf("successful authentications %v, want at least 1", ok)
	}
}
