package server

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/log"
	"weir/internal/testwait"
)

// fakeCoordinator answers AddPartitionsToTxn on a loopback port: each
// request is reported on reqs, and answered when release delivers the
// answer for it.
type fakeCoordinator struct {
	ln      net.Listener
	reqs    chan *kmsg.AddPartitionsToTxnRequest
	release chan *kmsg.AddPartitionsToTxnResponse
}

func startFakeCoordinator(t *testing.T) *fakeCoordinator {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeCoordinator{ln: ln, reqs: make(chan *kmsg.AddPartitionsToTxnRequest, 10), release: make(chan *kmsg.AddPartitionsToTxnResponse)}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go f.serve(c)
		}
	}()
	return f
}

func (f *fakeCoordinator) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		var size [4]byte
		if _, err := io.ReadFull(br, size[:]); err != nil {
			return
		}
		frame := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(br, frame); err != nil {
			return
		}
		key, version := int16(binary.BigEndian.Uint16(frame)), int16(binary.BigEndian.Uint16(frame[2:]))
		corr := frame[4:8]
		idLen := int(binary.BigEndian.Uint16(frame[8:]))
		body := frame[10+idLen+1:] // flexible: an empty tag buffer
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.SetVersion(version)
		if key != 24 || version != 4 || req.ReadFrom(body) != nil {
			return
		}
		f.reqs <- req
		resp := <-f.release
		resp.SetVersion(version)
		out := append(append([]byte{0, 0, 0, 0}, corr...), 0)
		out = resp.AppendTo(out)
		binary.BigEndian.PutUint32(out, uint32(len(out)-4))
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// answer answers every partition of req with code (per transactional id).
func answer(req *kmsg.AddPartitionsToTxnRequest, codes map[string]int16) *kmsg.AddPartitionsToTxnResponse {
	resp := kmsg.NewPtrAddPartitionsToTxnResponse()
	for _, tx := range req.Transactions {
		rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rt.TransactionalID = tx.TransactionalID
		for _, t := range tx.Topics {
			tt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			tt.Topic = t.Topic
			for _, p := range t.Partitions {
				tp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				tp.Partition, tp.ErrorCode = p, codes[tx.TransactionalID]
				tt.Partitions = append(tt.Partitions, tp)
			}
			rt.Topics = append(rt.Topics, tt)
		}
		resp.Transactions = append(resp.Transactions, rt)
	}
	return resp
}

func txnIDs(req *kmsg.AddPartitionsToTxnRequest) string {
	var ids []string
	for _, tx := range req.Transactions {
		if !tx.VerifyOnly {
			ids = append(ids, "not-verify-only")
		}
		ids = append(ids, fmt.Sprintf("%s/%d/%d", tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch))
	}
	sort.Strings(ids)
	return strings.Join(ids, " ")
}

type verifyOutcome struct {
	codes map[log.TopicPartition]int16
	err   error
}

func TestTxnVerifierBatchesPerCoordinator(t *testing.T) {
	f := startFakeCoordinator(t)
	v := &txnVerifier{locate: func(string) (int32, string, error) { return 1, f.ln.Addr().String(), nil },
		clientID: "test", timeout: 5 * time.Second, nodes: map[int32]*verifyNode{}}
	defer v.close()
	tp := func(p int32) log.TopicPartition { return log.TopicPartition{Topic: "t", Partition: p} }
	verify := func(id string, epoch int16, parts ...log.TopicPartition) chan verifyOutcome {
		out := make(chan verifyOutcome, 1)
		go func() {
			codes, err := v.VerifyTxn(context.Background(), id, 7, epoch, parts)
			out <- verifyOutcome{codes, err}
		}()
		return out
	}
	first := verify("a", 0, tp(0), tp(1))
	req := <-f.reqs
	if got := txnIDs(req); got != "a/7/0" || len(req.Transactions[0].Topics[0].Partitions) != 2 {
		t.Fatalf("first request %s %+v", got, req.Transactions)
	}
	// While it is out, checks queue: one per transactional id, the newest
	// epoch winning.
	b := verify("b", 0, tp(2))
	testwait.Until(t, 10*time.Second, "one queued verification", func() bool { return v.queued(1) == 1 })
	c1 := verify("c", 1, tp(3))
	testwait.Until(t, 10*time.Second, "two queued verifications", func() bool { return v.queued(1) == 2 })
	c2 := verify("c", 2, tp(3))
	if r := <-c1; r.err != nil || r.codes[tp(3)] != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("replaced by a newer epoch: %+v", r)
	}
	c3 := verify("c", 2, tp(3))
	if r := <-c2; !errors.Is(r.err, errVerifyRetry) {
		t.Fatalf("replaced by the same epoch: %+v", r)
	}
	if r := <-verify("c", 1, tp(3)); r.codes[tp(3)] != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("older than the queued one: %+v", r)
	}
	f.release <- answer(req, map[string]int16{"a": 0})
	if r := <-first; r.err != nil || len(r.codes) != 2 || r.codes[tp(0)] != 0 {
		t.Fatalf("first: %+v", r)
	}
	req = <-f.reqs
	if got := txnIDs(req); got != "b/7/0 c/7/2" {
		t.Fatalf("second request %s", got)
	}
	f.release <- answer(req, map[string]int16{"b": kerr.InvalidTxnState.Code})
	if r := <-b; r.err != nil || r.codes[tp(2)] != kerr.InvalidTxnState.Code {
		t.Fatalf("b: %+v", r)
	}
	if r := <-c3; r.err != nil || r.codes[tp(3)] != 0 {
		t.Fatalf("c: %+v", r)
	}
	// A top-level error answers every check of the request.
	d := verify("d", 0, tp(0))
	req = <-f.reqs
	resp := answer(req, nil)
	resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	f.release <- resp
	if r := <-d; !errors.Is(r.err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("top-level error: %+v", r)
	}
	// A coordinator that cannot be reached fails the check.
	f.ln.Close()
	v.close()
	v2 := &txnVerifier{locate: func(string) (int32, string, error) { return 1, f.ln.Addr().String(), nil },
		clientID: "test", timeout: time.Second, nodes: map[int32]*verifyNode{}}
	if _, err := v2.VerifyTxn(context.Background(), "e", 7, 0, []log.TopicPartition{tp(0)}); err == nil {
		t.Fatal("verified with no coordinator listening")
	}
	v3 := &txnVerifier{locate: func(string) (int32, string, error) { return 0, "", kerr.CoordinatorNotAvailable },
		nodes: map[int32]*verifyNode{}}
	if _, err := v3.VerifyTxn(context.Background(), "e", 7, 0, nil); !errors.Is(err, kerr.CoordinatorNotAvailable) {
		t.Fatalf("no coordinator: %v", err)
	}
}

// queued is how many checks wait for node's next request.
func (v *txnVerifier) queued(node int32) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	if n := v.nodes[node]; n != nil {
		return len(n.queue)
	}
	return 0
}
