// Command reqfuzz runs the request fuzzer (internal/reqfuzz) against a
// cluster of weir processes on 127.0.0.1 for a duration, then restarts the
// cluster and checks that every canary record is readable and that a
// consumer group and transactions work. It builds weir from this checkout
// unless --weir names a binary, prints the seed first, and on a failure
// prints the last frames sent, keeps the nodes' data and logs, and exits 1.
//
//	go run ./bench/reqfuzz --nodes 3 --duration 30m
//	go run ./bench/reqfuzz --nodes 3 --seed 42 --requests 51234   # replay a failure
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"weir/internal/reqfuzz"
)

func main() {
	var (
		nodes    = flag.Int("nodes", 3, "combined broker+controller nodes")
		duration = flag.Duration("duration", 30*time.Minute, "how long to fuzz before the restart and final check")
		requests = flag.Int("requests", 0, "stop after this many requests (0: no limit)")
		seed     = flag.Uint64("seed", 0, "seed (0: from the clock)")
		maxRSS   = flag.Int64("max-rss-mib", reqfuzz.DefaultMaxRSS>>20, "bound on each node's resident memory, MiB")
		binary   = flag.String("weir", "", "weir binary (default: build ./cmd/weir)")
		dir      = flag.String("dir", "", "directory for the nodes' data and logs (default: a new temporary one)")
	)
	flag.Parse()
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())
	}
	fmt.Printf("reqfuzz: seed %d, %d nodes, %v\n", *seed, *nodes, *duration)
	if err := run(*nodes, *duration, *requests, *seed, *maxRSS<<20, *binary, *dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(nodes int, duration time.Duration, requests int, seed uint64, maxRSS int64, binary, dir string) (err error) {
	if dir == "" {
		if dir, err = os.MkdirTemp("", "reqfuzz"); err != nil {
			return err
		}
	}
	defer func() {
		if err != nil {
			fmt.Fprintf(os.Stderr, "reqfuzz: the nodes' data and logs are kept in %s\n", dir)
		} else {
			os.RemoveAll(dir)
		}
	}()
	if binary == "" {
		binary = filepath.Join(dir, "weir")
		if out, err := exec.Command("go", "build", "-o", binary, "weir/cmd/weir").CombinedOutput(); err != nil {
			return fmt.Errorf("building weir: %v\n%s", err, out)
		}
	}
	c, err := reqfuzz.StartCluster(binary, dir, nodes)
	if err != nil {
		return err
	}
	defer c.Kill()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stats, err := reqfuzz.Run(ctx, c, reqfuzz.Config{Seed: seed, Duration: duration, Requests: requests,
		MaxRSS: maxRSS, Restart: true, Log: os.Stdout})
	if stats != nil {
		fmt.Print(stats)
	}
	return err
}
