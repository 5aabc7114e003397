package nodeclient

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/testwait"
)

// silentPeer accepts connections and never answers, like a paused node.
func silentPeer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return ln.Addr().String()
}

// A call waiting behind a stuck one gives up when its context ends, and
// the stuck one ends at its own deadline.
func TestCallsWaitTheirTurnOnlyAsLongAsTheirContext(t *testing.T) {
	c := New(silentPeer(t), "test", nil)
	defer c.Close()
	stuck := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := c.RoundTrip(ctx, 18, 0, false, nil)
		stuck <- err
	}()
	testwait.Until(t, 10*time.Second, "the first call to hold the connection", func() bool { return len(c.turn) > 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.RoundTrip(ctx, 18, 0, false, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting call: %v, want its deadline", err)
	}
	var ne net.Error
	if err := <-stuck; !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("stuck call: %v, want a timeout", err)
	}
}

// Close fails the call in flight at once, and every later call.
func TestCloseAbortsTheCallInFlight(t *testing.T) {
	c := New(silentPeer(t), "test", nil)
	done := make(chan error, 1)
	go func() {
		_, err := c.RoundTrip(context.Background(), 18, 0, false, nil)
		done <- err
	}()
	testwait.Until(t, 10*time.Second, "the client to connect", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.nc != nil
	})
	c.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the aborted call succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not abort the call in flight")
	}
	if _, err := c.RoundTrip(context.Background(), 18, 0, false, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("call after Close: %v, want ErrClosed", err)
	}
}

// answeringPeer answers every request with the next of answers, encoded
// as a response to the request's correlation id.
func answeringPeer(t *testing.T, answers ...kmsg.Response) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		for _, a := range answers {
			var size [4]byte
			if _, err := io.ReadFull(c, size[:]); err != nil {
				return
			}
			req := make([]byte, binary.BigEndian.Uint32(size[:]))
			if _, err := io.ReadFull(c, req); err != nil {
				return
			}
			frame := binary.BigEndian.AppendUint32(make([]byte, 4), binary.BigEndian.Uint32(req[4:8]))
			if a.IsFlexible() {
				frame = append(frame, 0)
			}
			frame = a.AppendTo(frame)
			binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
			if _, err := c.Write(frame); err != nil {
				return
			}
		}
	}()
	return ln.Addr().String()
}

func fetchAnswer(records []byte) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(15)
	rt := kmsg.NewFetchResponseTopic()
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.RecordBatches = records
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
	return resp
}

// CallReusing reads answers into the caller's buffer: the first one
// sizes it, a smaller one reuses it, a larger one grows it; each decodes
// with its record bytes pointing into the buffer.
func TestCallReusingReadsIntoTheCallersBuffer(t *testing.T) {
	small, large := bytes.Repeat([]byte("a"), 1000), bytes.Repeat([]byte("b"), 3000)
	c := New(answeringPeer(t, fetchAnswer(large), fetchAnswer(small), fetchAnswer(append(large, large...))), "test", nil)
	defer c.Close()
	var buf []byte
	call := func(want []byte) {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(15)
		resp, err := c.CallReusing(context.Background(), req, &buf)
		if err != nil {
			t.Fatal(err)
		}
		got := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches
		if !bytes.Equal(got, want) {
			t.Fatalf("records %q..., want %q...", got[:min(len(got), 8)], want[:8])
		}
		all := buf[:cap(buf)]
		for i := range all {
			all[i] = 'z'
		}
		if got[0] != 'z' || got[len(got)-1] != 'z' {
			t.Fatal("the records are not in the caller's buffer")
		}
	}
	call(large)
	first := &buf[:1][0]
	call(small)
	if &buf[:1][0] != first {
		t.Fatal("a smaller answer did not reuse the buffer")
	}
	call(append(large, large...))
	if cap(buf) < 6000 {
		t.Fatalf("the buffer did not grow for a larger answer: cap %d", cap(buf))
	}
}
