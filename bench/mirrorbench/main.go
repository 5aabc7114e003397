// Command mirrorbench is bench/mirror.sh's helper. Two modes:
//
//	pipe: the ceiling for a mirror: consume every partition of --topic on
//	--source from the start and produce each record to the same partition
//	of --to on --target (acks=all, idempotent, as MM2's producer), until
//	--records are acknowledged.
//
//	wait: consume --topic on --target (read_committed) from the start and
//	print, once --records records have arrived, the throughput from the
//	first record to the last:
//
//	RESULT records=N bytes=B seconds=S mb_s=X rec_s=Y  (MB = 2^20 bytes of values)
//
// (records and bytes counted after the first record, which starts the
// clock).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	mode := flag.String("mode", "", "pipe or wait")
	source := flag.String("source", "", "pipe: the source's bootstrap server")
	target := flag.String("target", "", "the target's bootstrap server")
	topic := flag.String("topic", "", "pipe: the source topic; wait: the target topic")
	to := flag.String("to", "", "pipe: the target topic (same partition count)")
	records := flag.Int64("records", 0, "records to copy or wait for")
	timeout := flag.Duration("timeout", 30*time.Minute, "give up after this long")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	var err error
	switch *mode {
	case "pipe":
		err = pipe(ctx, *source, *target, *topic, *to, *records)
	case "wait":
		err = wait(ctx, *target, *topic, *records)
	default:
		err = errors.New("--mode pipe or wait")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mirrorbench:", err)
		os.Exit(1)
	}
}

func pipe(ctx context.Context, source, target, topic, to string, records int64) error {
	src, err := kgo.NewClient(kgo.SeedBrokers(source), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := kgo.NewClient(kgo.SeedBrokers(target), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return err
	}
	defer dst.Close()
	var (
		mu    sync.Mutex
		acked int64
		perr  error
		done  = make(chan struct{})
	)
	for sent := int64(0); sent < records; {
		fs := src.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		fs.EachRecord(func(r *kgo.Record) {
			if sent >= records {
				return
			}
			sent++
			dst.Produce(ctx, &kgo.Record{Topic: to, Partition: r.Partition, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp},
				func(_ *kgo.Record, err error) {
					mu.Lock()
					defer mu.Unlock()
					if err != nil && perr == nil {
						perr = err
					}
					if acked++; acked == records {
						close(done)
					}
				})
		})
	}
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return perr
}

func wait(ctx context.Context, target, topic string, records int64) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(target), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.MetadataMinAge(100*time.Millisecond), kgo.MetadataMaxAge(time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	var (
		n, counted, bytes int64
		first             time.Time
	)
	for n < records {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%d of %d records arrived: %w", n, records, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			n++
			if first.IsZero() {
				first = time.Now()
				return
			}
			counted++
			bytes += int64(len(r.Value))
		})
	}
	secs := time.Since(first).Seconds()
	fmt.Printf("RESULT records=%d bytes=%d seconds=%.3f mb_s=%.1f rec_s=%.0f\n", counted, bytes, secs,
		float64(bytes)/secs/(1<<20), float64(counted)/secs)
	return nil
}
