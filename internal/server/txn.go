package server

// The transaction coordinator's wiring: its __transaction_state log, the
// connections its markers go out on, and its configuration.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	"weir/internal/kafka"
	"weir/internal/log"
	"weir/internal/metadata"
	"weir/internal/nodeclient"
	"weir/internal/partition"
	"weir/internal/record"
	"weir/internal/txn"
)

// openTxn creates the transaction coordinator, which loads a
// __transaction_state partition when this broker becomes its leader.
func (s *Server) openTxn() {
	timeout := s.cfg.RequestTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	s.txnNet = &txnCluster{s: s, conns: map[int32]*txnConn{}}
	cfg := txnConfig(s.cfg)
	cfg.Stats = s.txnStats
	s.txns = txn.NewService(cfg,
		&txnStateLog{parts: s.partitions, timeout: timeout, now: time.Now}, s.txnNet,
		s.lg.With("component", "transaction-coordinator"), time.Now, timeout, s.metrics.Counters.TxnRecordsSkipped)
	s.partitions.OnLeadership(func(tp log.TopicPartition, leader bool, epoch int32) {
		if tp.Topic != kafka.TransactionStateTopic {
			return
		}
		if leader {
			s.txns.Elected(tp.Partition, epoch)
		} else {
			s.txns.Resigned(tp.Partition)
		}
	})
}

// txnConfig maps the broker's transaction settings onto the
// coordinator's.
func txnConfig(b *config.Broker) txn.Config {
	c := txn.DefaultConfig()
	c.StatePartitions = b.TransactionStateLogNumPartitions
	c.OffsetsPartitions = b.OffsetsTopicNumPartitions
	c.MaxTimeout = b.TransactionMaxTimeout
	c.IDExpiration = b.TransactionalIDExpiration
	c.AbortTimedOutInterval = b.TransactionAbortTimedOutInterval
	c.RemoveExpiredInterval = b.TransactionRemoveExpiredInterval
	return c
}

// txnStateLog is __transaction_state for the coordinator: appends go
// through the partition with acks=all, and loading reads the partition's
// records to its log end.
type txnStateLog struct {
	parts   *partition.Manager
	timeout time.Duration // request.timeout.ms, as Kafka's appends wait
	now     func() time.Time
}

func (l *txnStateLog) partition(p int32) *partition.Partition {
	return l.parts.Get(log.TopicPartition{Topic: kafka.TransactionStateTopic, Partition: p})
}

func (l *txnStateLog) Append(p int32, recs []txn.Record, done func(error)) {
	part := l.partition(p)
	if part == nil {
		done(kerr.NotLeaderForPartition)
		return
	}
	now := l.now().UnixMilli()
	rs := make([]record.Record, len(recs))
	for i, r := range recs {
		rs[i] = record.Record{OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
	}
	h := record.NewBatchHeader()
	h.BaseTimestamp, h.MaxTimestamp = now, now
	b, err := record.Build(h, rs, 0)
	if err != nil {
		done(kafka.KafkaError(err))
		return
	}
	res, err := part.Append(b, partition.AcksAll, nil)
	if err != nil {
		done(kafka.KafkaError(err))
		return
	}
	if res.Wait == nil {
		done(nil)
		return
	}
	go func() {
		t := time.NewTimer(l.timeout)
		defer t.Stop()
		select {
		case err := <-res.Wait:
			done(kafka.KafkaError(err))
		case <-t.C:
			done(kerr.RequestTimedOut)
		}
	}()
}

func (l *txnStateLog) ReadAll(p int32) ([]txn.Record, error) {
	part := l.partition(p)
	if part == nil {
		return nil, kerr.NotLeaderForPartition
	}
	var out []txn.Record
	name := fmt.Sprintf("%s-%d", kafka.TransactionStateTopic, p)
	err := scanRecords(name, part.Log(), part.Log().LogEndOffset(), func(b record.Batch, r *record.Record) error {
		if !b.Attributes().Control() {
			out = append(out, txn.Record{Key: r.Key, Value: r.Value})
		}
		return nil
	})
	return out, err
}

// txnCluster is the rest of the broker as the coordinator sees it.
type txnCluster struct {
	s *Server

	mu    sync.Mutex
	conns map[int32]*txnConn
}

type txnConn struct {
	addr string
	conn *nodeclient.Conn
}

func (c *txnCluster) Image() *metadata.Image { return c.s.publisher.Image() }

func (c *txnCluster) AllocateProducerIDs() (int64, int32, error) {
	if c.s.lifecycle == nil {
		return 0, 0, errors.New("this node allocates no producer ids")
	}
	return c.s.lifecycle.allocateProducerIDs()
}

// WriteTxnMarkers sends markers to a broker's inter-broker listener. The
// coordinator's senders use one connection per broker, one request at a
// time.
func (c *txnCluster) WriteTxnMarkers(ctx context.Context, broker int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error) {
	addr, ok := c.s.brokerAddress(broker)
	if !ok {
		return nil, fmt.Errorf("broker %d has no %s endpoint", broker, c.s.cfg.InterBrokerListenerName)
	}
	c.mu.Lock()
	tc := c.conns[broker]
	if tc == nil || tc.addr != addr {
		if tc != nil {
			tc.conn.Close()
		}
		tc = &txnConn{addr: addr, conn: nodeclient.New(addr, fmt.Sprintf("weir-txn-markers-%d", c.s.cfg.NodeID), c.s.dialBroker)}
		c.conns[broker] = tc
	}
	c.mu.Unlock()
	resp, err := tc.conn.Call(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.WriteTxnMarkersResponse), nil
}

// close closes the connections.
func (c *txnCluster) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, tc := range c.conns {
		tc.conn.Close()
	}
}
