package kafka_test

// Transactions with IBM/sarama: its transactional producer commits and
// aborts at old and new protocol versions (0.11 sends InitProducerId,
// AddPartitionsToTxn and EndTxn v0; 3.x their newer versions), and its
// consume-transform-produce step commits a group's offsets in the
// transaction (AddOffsetsToTxn, TxnOffsetCommit). A read_committed
// sarama consumer sees the committed messages only.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestSaramaTransactionalProducer(t *testing.T) {
	n := grpNode(t, nil)
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	for _, v := range []sarama.KafkaVersion{sarama.V0_11_0_0, sarama.V2_8_0_0, sarama.V3_6_0_0} {
		t.Run(v.String(), func(t *testing.T) {
			topic := "sarama-txn-" + v.String()
			cliCreateTopic(t, ctx, adm, topic, 2, nil)
			cfg := saramaConfig(v)
			cfg.Producer.Idempotent = true
			cfg.Producer.Transaction.ID = "sarama-txn-" + v.String()
			cfg.Net.MaxOpenRequests = 1
			p, err := sarama.NewSyncProducer([]string{n.Addr}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			send := func(tag string, commit bool) {
				t.Helper()
				if err := p.BeginTxn(); err != nil {
					t.Fatal(err)
				}
				var msgs []*sarama.ProducerMessage
				for i := range 20 {
					msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: int32(i % 2), Value: sarama.StringEncoder(fmt.Sprintf("%s-%d", tag, i))})
				}
				if err := p.SendMessages(msgs); err != nil {
					t.Fatal(err)
				}
				if commit {
					err = p.CommitTxn()
				} else {
					err = p.AbortTxn()
				}
				if err != nil {
					t.Fatalf("ending %s: %v", tag, err)
				}
			}
			send("c1", true)
			send("a1", false)
			send("c2", true)

			rc := saramaConfig(v)
			rc.Consumer.IsolationLevel = sarama.ReadCommitted
			got := map[string]int{}
			for _, ms := range saramaConsume(t, ctx, n.Addr, rc, topic, sarama.OffsetOldest, map[int32]int{0: 20, 1: 20}) {
				for _, m := range ms {
					tag, _, _ := strings.Cut(string(m.Value), "-")
					got[tag]++
				}
			}
			if got["c1"] != 20 || got["c2"] != 20 || got["a1"] != 0 {
				t.Fatalf("read_committed consumed %v, want c1 and c2 only", got)
			}
			d, err := txcSettled(t, ctx, adm, cfg.Producer.Transaction.ID)
			if err != nil || d[cfg.Producer.Transaction.ID].State != "CompleteCommit" {
				t.Fatalf("DescribeTransactions: %+v %v", d, err)
			}
		})
	}
}

// Consume-transform-produce: each consumed message is copied in a
// transaction that also commits the group's offset of it; an aborted
// step leaves the offset where it was.
func TestSaramaTransactionalOffsets(t *testing.T) {
	n := grpNode(t, nil)
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	in, out, group := "sarama-ctp-in", "sarama-ctp-out", "sarama-ctp"
	cliCreateTopic(t, ctx, adm, in, 1, nil)
	cliCreateTopic(t, ctx, adm, out, 1, nil)
	src := cliFranz(t, n.Addr, kgo.DefaultProduceTopic(in))
	for i := range 6 {
		if err := src.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "m-%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cfg := saramaConfig(sarama.V2_8_0_0)
	cfg.Producer.Idempotent = true
	cfg.Producer.Transaction.ID = "sarama-ctp"
	cfg.Net.MaxOpenRequests = 1
	p, err := sarama.NewSyncProducer([]string{n.Addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	rc := saramaConfig(sarama.V2_8_0_0)
	rc.Consumer.IsolationLevel = sarama.ReadCommitted
	msgs := saramaConsume(t, ctx, n.Addr, rc, in, sarama.OffsetOldest, map[int32]int{0: 6})[0]
	for i, m := range msgs {
		if err := p.BeginTxn(); err != nil {
			t.Fatal(err)
		}
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: out, Partition: 0, Value: sarama.ByteEncoder(m.Value)}); err != nil {
			t.Fatal(err)
		}
		if err := p.AddMessageToTxn(m, group, nil); err != nil {
			t.Fatal(err)
		}
		if i == 5 {
			err = p.AbortTxn() // the last step fails: its offset stays behind
		} else {
			err = p.CommitTxn()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup(in, 0); !ok || o.At != 5 {
		t.Fatalf("committed offset %+v, want 5 (the aborted step's record is next)", o)
	}
	got := saramaConsume(t, ctx, n.Addr, rc, out, sarama.OffsetOldest, map[int32]int{0: 5})[0]
	for i, m := range got {
		if string(m.Value) != fmt.Sprintf("m-%d", i) {
			t.Fatalf("output %d is %q", i, m.Value)
		}
	}
	end, err := adm.ListCommittedOffsets(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	// 5 committed records, 1 aborted, and 6 markers.
	if o, _ := end.Lookup(out, 0); o.Offset != 12 {
		t.Fatalf("last stable offset of the output %d, want 12", o.Offset)
	}
}
