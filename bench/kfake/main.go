// Command kfake runs franz-go's in-memory fake Kafka cluster (kfake) on a
// fixed port until SIGTERM or SIGINT, as the reference broker for
// bench/vs-kfake.sh.
//
// kfake keeps every record in memory unless --data-dir is given, so its
// resident size grows with what is produced to it.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	var (
		port       = flag.Int("port", 9092, "port of the first broker; further brokers take the following ports")
		brokers    = flag.Int("brokers", 1, "number of brokers")
		partitions = flag.Int("partitions", 1, "partitions of auto-created topics, of topics created with -1 partitions, and of --topics")
		topics     = flag.String("topics", "", "comma-separated topics to create at start with --partitions partitions")
		autoCreate = flag.Bool("auto-create", true, "create topics that clients ask for in metadata requests")
		dataDir    = flag.String("data-dir", "", "persist to this directory instead of keeping everything only in memory")
		blackhole  = flag.Bool("blackhole-produce", false, "acknowledge produce requests without storing records (measures a producer's ceiling)")
		synthetic  = flag.Int("synthetic-fetch", 0, "if > 0, answer every fetch from a canned batch of this many-byte records (measures a consumer's ceiling)")
		logLevel   = flag.String("log-level", "none", "kfake log level: none, error, warn, info, debug")
		cpuProfile = flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
		tlsPEM     = flag.String("tls-keystore", "", "serve TLS with the certificate chain and private key of this PEM file")
		saslPlain  = flag.String("sasl-plain", "", "require a SASL PLAIN login as USER:PASSWORD")
	)
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: kfake [flags]\n\nRuns an in-memory franz-go kfake cluster until SIGTERM/SIGINT.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *brokers < 1 || *partitions < 1 {
		fmt.Fprintln(os.Stderr, "kfake: --brokers and --partitions must be at least 1")
		os.Exit(2)
	}

	ports := make([]int, *brokers)
	for i := range ports {
		ports[i] = *port + i
	}
	opts := []kfake.Opt{
		kfake.NumBrokers(*brokers),
		kfake.Ports(ports...),
		kfake.DefaultNumPartitions(*partitions),
	}
	if *autoCreate {
		opts = append(opts, kfake.AllowAutoTopicCreation())
	}
	if *topics != "" {
		var ts []string
		for _, t := range strings.Split(*topics, ",") {
			if t = strings.TrimSpace(t); t != "" {
				ts = append(ts, t)
			}
		}
		opts = append(opts, kfake.SeedTopics(int32(*partitions), ts...))
	}
	if *dataDir != "" {
		opts = append(opts, kfake.DataDir(*dataDir))
	}
	if *blackhole {
		opts = append(opts, kfake.BlackholeProduce())
	}
	if *synthetic > 0 {
		opts = append(opts, kfake.SyntheticFetch(kfake.SyntheticBatch{RecordBytes: *synthetic, RandomFrac: 1}))
	}
	if *tlsPEM != "" {
		pem, err := os.ReadFile(*tlsPEM)
		if err == nil {
			var cert tls.Certificate
			if cert, err = tls.X509KeyPair(pem, pem); err == nil {
				opts = append(opts, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{cert}}))
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "kfake: --tls-keystore:", err)
			os.Exit(2)
		}
	}
	if *saslPlain != "" {
		user, pass, ok := strings.Cut(*saslPlain, ":")
		if !ok {
			fmt.Fprintln(os.Stderr, "kfake: --sasl-plain wants USER:PASSWORD")
			os.Exit(2)
		}
		opts = append(opts, kfake.EnableSASL(), kfake.Superuser("PLAIN", user, pass))
	}
	if lvl, ok := map[string]kfake.LogLevel{
		"error": kfake.LogLevelError,
		"warn":  kfake.LogLevelWarn,
		"info":  kfake.LogLevelInfo,
		"debug": kfake.LogLevelDebug,
	}[*logLevel]; ok {
		opts = append(opts, kfake.WithLogger(kfake.BasicLogger(os.Stderr, lvl)))
	}

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "kfake:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "kfake:", err)
			os.Exit(1)
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}

	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfake:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
	fmt.Printf("kfake listening on %s (pid %d)\n", strings.Join(c.ListenAddrs(), ","), os.Getpid())

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	c.Close()
}
