package server

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"weir/internal/metadata"
	"weir/internal/partition"
	"weir/internal/quorum"
)

// publisher is the broker side of the metadata log: it applies each
// committed batch to the broker's image and swaps the image atomically.
// Once the replicas are loaded, a reconciler goroutine hands each delta,
// in order, to the partition manager: creating thousands of partitions
// never holds up the quorum's goroutine that delivers commits (Raft, and
// the controller on a combined node). A controller-only node has no
// partition manager: it keeps the image.
type publisher struct {
	img   atomic.Pointer[metadata.Image]
	parts *partition.Manager
	lg    *slog.Logger
	// applied is the offset of the newest image the replicas have caught
	// up with too: its partitions exist and its leaders were told (so the
	// group coordinator has been elected for its __consumer_offsets
	// partitions). WaitFor waits for it, not for the image alone.
	applied atomic.Int64
	// topicsChanged, when set before the first publish, is called (in
	// the delivery goroutine, without blocking) with each image whose
	// topics changed: whole for a snapshot, else with the delta.
	topicsChanged func(img *metadata.Image, delta *metadata.Delta, whole bool)
	// groupConfigsChanged, set likewise, is called with each image whose
	// GROUP configs changed: whole for a snapshot, else with the groups
	// the delta changed.
	groupConfigsChanged func(img *metadata.Image, groups []string, whole bool)

	mu      sync.Mutex
	live    bool          // the reconciler takes the deltas
	queue   []reconcile   // deltas not yet handed to the replicas
	wake    chan struct{} // signalled when queue grows
	changed chan struct{} // closed and replaced on every publish and reconcile
}

// reconcile is one committed batch for the replicas: a whole image
// (snapshot) or a delta.
type reconcile struct {
	img   *metadata.Image
	delta *metadata.Delta // nil: load the whole image
}

func newPublisher(parts *partition.Manager, lg *slog.Logger) *publisher {
	p := &publisher{parts: parts, lg: lg, changed: make(chan struct{}), wake: make(chan struct{}, 1)}
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
	p.mu.Lock()
	p.img.Store(img)
	switch {
	case !p.live:
	case p.parts == nil:
		p.applied.Store(img.Offset)
	case c.Snapshot:
		p.enqueueLocked(reconcile{img: img})
	default:
		p.enqueueLocked(reconcile{img: img, delta: delta})
	}
	p.signalLocked()
	p.mu.Unlock()
	if p.topicsChanged != nil && (c.Snapshot || len(delta.ChangedTopics) > 0 || len(delta.DeletedTopics) > 0) {
		p.topicsChanged(img, delta, c.Snapshot)
	}
	if p.groupConfigsChanged != nil {
		var groups []string
		for r := range delta.ChangedConfigs {
			if r.Type == metadata.ResourceGroup {
				groups = append(groups, r.Name)
			}
		}
		if c.Snapshot || len(groups) > 0 {
			p.groupConfigsChanged(img, groups, c.Snapshot)
		}
	}
	return nil
}

func (p *publisher) enqueueLocked(r reconcile) {
	p.queue = append(p.queue, r)
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *publisher) signalLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// startReconciling loads the replicas of the current image, and starts
// the reconciler, which applies every later batch to them until ctx is
// done (wg tracks it). It returns once the replicas are loaded.
func (p *publisher) startReconciling(ctx context.Context, wg *sync.WaitGroup) error {
	p.mu.Lock()
	img := p.Image()
	p.live = true
	p.mu.Unlock()
	var err error
	if p.parts != nil {
		err = p.parts.Load(img)
	}
	p.mu.Lock()
	// A controller-only node applies the commits published since.
	p.applied.Store(max(p.applied.Load(), img.Offset))
	p.signalLocked()
	p.mu.Unlock()
	if p.parts != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.reconcileLoop(ctx)
		}()
	}
	return err
}

// reconcileLoop hands queued batches to the replicas, in order.
func (p *publisher) reconcileLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		}
		p.mu.Lock()
		q := p.queue
		p.queue = nil
		p.mu.Unlock()
		for _, r := range q {
			if ctx.Err() != nil {
				return
			}
			var err error
			if r.delta == nil {
				err = p.parts.Load(r.img)
			} else {
				err = p.parts.Apply(r.img, r.delta)
			}
			if err != nil {
				p.lg.Error("reconciling the replicas with the metadata", "offset", r.img.Offset, "err", err)
			}
			p.mu.Lock()
			p.applied.Store(r.img.Offset)
			p.signalLocked()
			p.mu.Unlock()
		}
	}
}

// appliedOffset is the metadata offset the broker has caught up with,
// reported in heartbeats.
func (p *publisher) appliedOffset() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live {
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

// awaitUnfencedApplied blocks until an image shows broker id unfenced
// and the replicas have caught up with it, or ctx is done.
func (p *publisher) awaitUnfencedApplied(ctx context.Context, id int32) error {
	for {
		p.mu.Lock()
		ch := p.changed
		p.mu.Unlock()
		img := p.Image()
		if b := img.Brokers[id]; b != nil && !b.Fenced {
			return p.WaitFor(ctx, img.Offset)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
