package kafka_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A thousand connections from other addresses send random bytes, frames
// without end, or nothing at all, while a normal client produces and
// consumes. The broker closes every one of them (idle ones after
// connections.max.idle.ms, the ones over an address's limit at once) and
// keeps serving the client.
func TestGarbageConnectionsLeaveTheBrokerServing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 240*time.Second)
	defer cancel()
	const maxRequest = 256 << 10
	n := cliNode(t, map[string]string{
		"connections.max.idle.ms":          "2000",
		"socket.request.max.bytes":         fmt.Sprint(maxRequest),
		"max.connections.per.ip":           "300",
		"max.connections.per.ip.overrides": "127.0.0.9:5",
	})
	adm := cliAdmin(t, n.Addr)
	cliCreateTopic(t, ctx, adm, "steady", 1, nil)
	_, port, _ := net.SplitHostPort(n.Addr)

	// The attackers: 250 connections from each of 127.0.0.2-5, and 20
	// from 127.0.0.9, whose limit is 5.
	var closed, refused atomic.Int64
	var wg sync.WaitGroup
	attack := func(id int, from string) {
		defer wg.Done()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", port))
		if err != nil {
			t.Errorf("attacker %d from %s: %v", id, from, err)
			return
		}
		defer c.Close()
		rng := rand.New(rand.NewSource(int64(id)))
		buf := make([]byte, 16<<10)
		switch id % 3 {
		case 0: // random bytes
			rng.Read(buf)
			go c.Write(buf)
		case 1: // a frame that never ends: an announced size, then bytes
			size := uint32(maxRequest)
			if id%2 == 0 {
				size = 1 << 31 // over socket.request.max.bytes
			}
			go func() {
				binary.BigEndian.PutUint32(buf, size)
				for {
					if _, err := c.Write(buf); err != nil {
						return
					}
					rng.Read(buf)
				}
			}()
		case 2: // nothing at all
		}
		// The broker closes it: the read ends with EOF or a reset.
		c.SetReadDeadline(time.Now().Add(180 * time.Second))
		_, err = io.Copy(io.Discard, c)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("attacker %d from %s (kind %d): the broker did not close the connection", id, from, id%3)
			return
		}
		closed.Add(1)
	}
	id := 0
	for _, from := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"} {
		for i := 0; i < 250; i++ {
			wg.Add(1)
			go attack(id, from)
			id++
		}
	}
	for i := 0; i < 20; i++ {
		wg.Add(1)
		id++
		go func(id int) {
			defer wg.Done()
			c, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.9")}}).DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", port))
			if err != nil {
				t.Errorf("127.0.0.9: %v", err)
				return
			}
			defer c.Close()
			c.SetReadDeadline(time.Now().Add(180 * time.Second))
			if _, err := io.Copy(io.Discard, c); err == nil || !isTimeout(err) {
				refused.Add(1)
			}
		}(id)
	}

	// Meanwhile, a normal client produces and consumes.
	steady := func(round int) {
		t.Helper()
		cl := cliFranz(t, n.Addr, kgo.DefaultProduceTopic("steady"), kgo.ConsumeTopics("steady"),
			kgo.ProducerBatchMaxBytes(64<<10), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		const records = 200
		for i := 0; i < records; i++ {
			r := &kgo.Record{Value: []byte(fmt.Sprintf("round %d record %d", round, i))}
			cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("round %d: produce: %v", round, err)
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatalf("round %d: flush: %v", round, err)
		}
		seen := 0
		for seen < records*(round+1) {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("round %d: consumed %d of %d: %v", round, seen, records*(round+1), err)
			}
			fs.EachError(func(_ string, _ int32, err error) { t.Errorf("round %d: fetch: %v", round, err) })
			seen += fs.NumRecords()
		}
		cl.Close()
	}
	start := time.Now()
	steady(0)
	wg.Wait()
	t.Logf("all closed %v after the attack began", time.Since(start))
	if closed.Load() != 1000 {
		t.Fatalf("%d of 1000 garbage connections closed by the broker", closed.Load())
	}
	if refused.Load() < 15 {
		t.Fatalf("%d connections from 127.0.0.9 closed, want at least the 15 over its limit of 5", refused.Load())
	}
	// Afterwards the broker serves as before.
	steady(1)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
