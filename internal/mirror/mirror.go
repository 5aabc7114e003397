package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Run mirrors every enabled flow of cfg until ctx ends, and returns the
// first flow's error (which stops the others). It serves the metrics on
// cfg.MetricsListener, if set. extra options are added to every client
// (tests).
func Run(ctx context.Context, cfg *Config, log *slog.Logger, extra ...kgo.Opt) error {
	if len(cfg.Flows) == 0 {
		return errors.New("no flow is enabled: set A->B.enabled = true for at least one pair of clusters")
	}
	m := &metrics{}
	if cfg.MetricsListener != "" {
		stop, err := serveMetrics(cfg.MetricsListener, m, log)
		if err != nil {
			return err
		}
		defer stop()
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
		f.metrics = m.flow(fc.Source, fc.Target)
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

// serveMetrics serves m, the Go runtime's and the process's metrics on
// addr's /metrics until stop is called.
func serveMetrics(addr string, m *metrics, log *slog.Logger) (stop func(), err error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(m, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("weir.metrics.listener %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Info("serving metrics", "addr", "http://"+ln.Addr().String()+"/metrics")
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener failed", "addr", ln.Addr().String(), "err", err)
		}
	}()
	return func() { srv.Close() }, nil
}
