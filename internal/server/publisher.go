package server

import (
	"context"
	"sync"
	"sync/atomic"

	"weir/internal/metadata"
	"weir/internal/partition"
	"weir/internal/quorum"
)

// publisher is the broker side of the metadata log: it applies each
// committed batch to the broker's image, swaps the image atomically, and
// (once the replicas are loaded) hands the delta to the partition manager.
// A controller-only node has no partition manager: it keeps the image.
type publisher struct {
	img   atomic.Pointer[metadata.Image]
	parts *partition.Manager
	live  atomic.Bool
	// applied is the offset of the newest image the replicas have caught
	// up with too: its partitions exist and its leaders were told (so the
	// group coordinator has been elected for its __consumer_offsets
	// partitions). WaitFor waits for it, not for the image alone.
	applied atomic.Int64

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every publish
}

func newPublisher(parts *partition.Manager) *publisher {
	p := &publisher{parts: parts, changed: make(chan struct{})}
	p.img.Store(metadata.Empty())
	p.applied.Store(metadata.Empty().Offset)
	return p
}

// Image is the latest published image.
func (p *publisher) Image() *metadata.Image { return p.img.Load() }

// publish applies a committed batch. Batches arrive one at a time, in order.
func (p *publisher) publish(c quorum.Committed) error {
	base := p.Image()
	if c.Snapshot {
		// A snapshot is the whole state: start over from it.
		base = metadata.Empty()
	}
	img, delta, err := base.Apply(c.Records, c.LastOffset)
	if err != nil {
		return err
	}
	p.img.Store(img)
	var applyErr error
	if p.live.Load() {
		switch {
		case p.parts == nil:
		case c.Snapshot:
			applyErr = p.parts.Load(img)
		default:
			applyErr = p.parts.Apply(img, delta)
		}
		p.applied.Store(img.Offset)
	}
	p.mu.Lock()
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
	return applyErr
}

// startReconciling loads the replicas of the current image and applies
// every later batch to them.
func (p *publisher) startReconciling() error {
	img := p.Image()
	var err error
	if p.parts != nil {
		err = p.parts.Load(img)
	}
	p.applied.Store(img.Offset)
	p.live.Store(true)
	return err
}

// appliedOffset is the metadata offset the broker has caught up with,
// reported in heartbeats.
func (p *publisher) appliedOffset() int64 {
	if p.live.Load() {
		return p.applied.Load()
	}
	return p.Image().Offset
}

// waitImage blocks until the image includes offset (the replicas may not
// have caught up with it yet), or ctx is done.
func (p *publisher) waitImage(ctx context.Context, offset int64) error {
	for {
		p.mu.Lock()
		ch := p.changed
		p.mu.Unlock()
		if p.Image().Offset >= offset {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// WaitFor blocks until the image includes offset, and the replicas have
// been brought in step with it, or ctx is done. A handler that answers
// after WaitFor therefore never names a partition this broker has not
// created yet, nor a group coordinator that has not yet been elected.
func (p *publisher) WaitFor(ctx context.Context, offset int64) error {
	for {
		p.mu.Lock()
		ch := p.changed
		p.mu.Unlock()
		if p.applied.Load() >= offset {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
