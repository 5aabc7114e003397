package tool

// How every tool says it cannot reach the cluster: the warning Kafka's
// NetworkClient logs for a failed connection, in the tools' log4j form on
// standard error, and, for the admin tools, the wait for a reachable node
// that ends as Kafka's admin client's does.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// unreachableEvery is the least time between two warnings about one
// address (Kafka warns at every attempt, about once a second).
const unreachableEvery = 10 * time.Second

// UnreachableHook is a kgo hook that warns of each failed connection to a
// broker: the first at once, then at most one per address per
// unreachableEvery.
type UnreachableHook struct {
	warn func(msg string)
	now  func() time.Time // tests

	mu   sync.Mutex
	last map[string]time.Time
}

// NewUnreachableHook returns the hook that warns on w as Kafka's tools log,
// with the client's log prefix (Kafka's "[AdminClient clientId=x] ").
func NewUnreachableHook(w io.Writer, prefix string) *UnreachableHook {
	h := NewUnreachableWarner(nil)
	h.warn = func(msg string) {
		fmt.Fprintf(w, "[%s] WARN %s%s (org.apache.kafka.clients.NetworkClient)\n", h.now().Format("2006-01-02 15:04:05,000"), prefix, msg)
	}
	return h
}

// NewUnreachableWarner returns the hook that gives its warnings to warn.
func NewUnreachableWarner(warn func(msg string)) *UnreachableHook {
	return &UnreachableHook{warn: warn, now: time.Now, last: map[string]time.Time{}}
}

// OnBrokerConnect implements kgo.HookBrokerConnect.
func (h *UnreachableHook) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" || errors.Is(err, context.Canceled) {
		return
	}
	addr := net.JoinHostPort(meta.Host, strconv.Itoa(int(meta.Port)))
	now := h.now()
	h.mu.Lock()
	last, seen := h.last[addr]
	quiet := seen && now.Sub(last) < unreachableEvery
	if !quiet {
		h.last[addr] = now
	}
	h.mu.Unlock()
	if !quiet {
		h.warn(fmt.Sprintf("Connection to node %d (%s) could not be established. Node may not be available.", kafkaNodeID(meta.NodeID), socketAddress(meta, op)))
	}
}

// kafkaNodeID is the node id Kafka's client gives a broker: franz-go
// numbers the bootstrap servers from math.MinInt32, Kafka from -1 down.
func kafkaNodeID(id int32) int32 {
	if id < 0 {
		return -(id - math.MinInt32) - 1
	}
	return id
}

// socketAddress is the broker's address as Java's InetSocketAddress
// prints it: host/ip:port, the host empty when it is the address itself,
// the ip <unresolved> when the name did not resolve.
func socketAddress(meta kgo.BrokerMetadata, op *net.OpError) string {
	port := strconv.Itoa(int(meta.Port))
	tcp, ok := op.Addr.(*net.TCPAddr)
	if !ok {
		return meta.Host + "/<unresolved>:" + port
	}
	host := meta.Host
	if ip := net.ParseIP(host); ip != nil && ip.Equal(tcp.IP) {
		host = ""
	}
	return host + "/" + net.JoinHostPort(tcp.IP.String(), port)
}

// Kafka's reconnect.backoff.ms and reconnect.backoff.max.ms defaults: the
// wait between two attempts to reach a node.
const (
	reconnectBackoff    = 50 * time.Millisecond
	reconnectBackoffMax = time.Second
)

// await waits until a broker answers, for up to the command's timeout
// (default.api.timeout.ms), as Kafka's admin client waits for a node to
// send a call to; the hook warns of the nodes it cannot reach meanwhile.
// It ends with Kafka's TimeoutException naming call when none answered,
// and returns nil at once on any error but a failed connection (the
// tool's requests report those).
func (t *Client) await(call string) error {
	ctx, cancel := context.WithTimeout(context.Background(), t.Timeout)
	defer cancel()
	backoff := reconnectBackoff
	for {
		err := t.Kgo.Ping(ctx)
		var op *net.OpError
		if err == nil || ctx.Err() == nil && (!errors.As(err, &op) || op.Op != "dial") {
			return nil
		}
		wait := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			wait.Stop()
			return &JavaError{Class: "TimeoutException", Msg: "Timed out waiting for a node assignment. Call: " + call}
		case <-wait.C:
		}
		backoff = min(2*backoff, reconnectBackoffMax)
	}
}

// ConsumerPrefix and producerPrefix are the log prefixes of Kafka's
// consumer and producer.
func ConsumerPrefix(clientID, group string) string {
	if group == "" {
		group = "null"
	}
	return "[Consumer clientId=" + clientID + ", groupId=" + group + "] "
}

func ProducerPrefix(clientID string) string { return "[Producer clientId=" + clientID + "] " }
