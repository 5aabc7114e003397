package tool

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The warning names the node as Kafka's client does (bootstrap servers -1,
// -2, ...; brokers by id) and its address as Java prints a socket address,
// and comes at most once per address per unreachableEvery.
func TestUnreachableHookRateLimit(t *testing.T) {
	var got []string
	h := NewUnreachableWarner(func(msg string) { got = append(got, msg) })
	now := time.Unix(1000, 0)
	h.now = func() time.Time { return now }
	refused := func(ip string, port int) error {
		return fmt.Errorf("unable to dial: %w", &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.ParseIP(ip), Port: port}, Err: errors.New("connect: connection refused")})
	}
	seed0 := kgo.BrokerMetadata{NodeID: math.MinInt32, Host: "127.0.0.1", Port: 9092}
	seed1 := kgo.BrokerMetadata{NodeID: math.MinInt32 + 1, Host: "localhost", Port: 9093}
	broker := kgo.BrokerMetadata{NodeID: 4, Host: "b4.example", Port: 9094}
	h.OnBrokerConnect(seed0, 0, nil, refused("127.0.0.1", 9092))
	h.OnBrokerConnect(seed1, 0, nil, refused("127.0.0.1", 9093))
	h.OnBrokerConnect(broker, 0, nil, fmt.Errorf("unable to dial: %w", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("lookup b4.example: no such host")}))
	h.OnBrokerConnect(seed0, 0, nil, nil)              // connected: nothing to say
	h.OnBrokerConnect(seed0, 0, nil, context.Canceled) // the command ended
	now = now.Add(unreachableEvery - time.Millisecond)
	h.OnBrokerConnect(seed0, 0, nil, refused("127.0.0.1", 9092)) // too soon
	now = now.Add(time.Millisecond)
	h.OnBrokerConnect(seed0, 0, nil, refused("127.0.0.1", 9092))
	const tail = " could not be established. Node may not be available."
	want := []string{
		"Connection to node -1 (/127.0.0.1:9092)" + tail,
		"Connection to node -2 (localhost/127.0.0.1:9093)" + tail,
		"Connection to node 4 (b4.example/<unresolved>:9094)" + tail,
		"Connection to node -1 (/127.0.0.1:9092)" + tail,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
