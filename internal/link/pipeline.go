package link

import (
	"context"

	"weir/internal/record"
)

// pipeline is the Source of one partition's loop: it keeps the next fetch
// in flight while the step appends what the last one returned. After an
// answer holding whole batches that end at offset n, it sends the fetch
// from n at once, and hands its answer to the step's next Fetch if that
// asks for the same topic, partition, leader epoch, offset and size; any
// other Fetch drops it (its request ends on its own) and goes to the
// source. Copying a backlog then waits for one round trip to the source
// per fetch, overlapped with the append, instead of a round trip and then
// the append. The answer is the one the source would have given a moment
// earlier: no more than a fetch sent later may see.
//
// A pipeline belongs to one loop (one goroutine); the Source under it is
// used concurrently.
type pipeline struct {
	Source
	next *prefetch
}

type prefetch struct {
	topic       string
	part, epoch int32
	offset      int64
	maxBytes    int32
	done        chan struct{}
	fetched     Fetched
	err         error
}

func (p *pipeline) Fetch(ctx context.Context, topic string, part, epoch int32, offset int64, maxBytes int32) (Fetched, error) {
	next := p.next
	p.next = nil
	var f Fetched
	var err error
	if next != nil && next.topic == topic && next.part == part && next.epoch == epoch && next.offset == offset && next.maxBytes == maxBytes {
		select {
		case <-next.done:
		case <-ctx.Done():
			return Fetched{}, ctx.Err()
		}
		f, err = next.fetched, next.err
	} else {
		f, err = p.Source.Fetch(ctx, topic, part, epoch, offset, maxBytes)
	}
	if err != nil || f.Err != nil {
		return f, err
	}
	if end, ok := wholeEnd(f.Records); ok {
		n := &prefetch{topic: topic, part: part, epoch: epoch, offset: end, maxBytes: maxBytes, done: make(chan struct{})}
		p.next = n
		go func() {
			defer close(n.done)
			n.fetched, n.err = p.Source.Fetch(ctx, topic, part, epoch, end, maxBytes)
		}()
	}
	return f, nil
}

// wholeEnd is the offset after the last whole batch of a fetch answer,
// false when it holds none.
func wholeEnd(b []byte) (int64, bool) {
	end, ok := int64(0), false
	for len(b) > 0 {
		batch, rest, err := record.Next(b)
		if err != nil {
			break
		}
		end, ok = batch.NextOffset(), true
		b = rest
	}
	return end, ok
}
