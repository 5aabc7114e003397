package mirror

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Run mirrors every enabled flow of cfg until ctx ends, and returns the
// first flow's error (which stops the others). extra options are added to
// every client (tests).
func Run(ctx context.Context, cfg *Config, log *slog.Logger, extra ...kgo.Opt) error {
	if len(cfg.Flows) == 0 {
		return errors.New("no flow is enabled: set A->B.enabled = true for at least one pair of clusters")
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for _, fc := range cfg.Flows {
		f, err := newFlow(fc, cfg.Clusters, log, extra)
		if err != nil {
			cancel(err)
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer f.close()
			log.Info("mirror flow started", "flow", fc.Name())
			if err := f.run(ctx); err != nil {
				log.Error("mirror flow stopped", "flow", fc.Name(), "err", err)
				cancel(err)
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
