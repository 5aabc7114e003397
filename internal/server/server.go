// Package server is the composition root: it turns a broker configuration
// into a running node (storage checks, the metadata log and controller,
// the log manager and replicas, the listeners) and shuts it down cleanly.
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"weir/internal/acl"
	"weir/internal/config"
	"weir/internal/console"
	"weir/internal/controller"
	"weir/internal/fetcher"
	"weir/internal/group"
	"weir/internal/kafka"
	"weir/internal/link"
	"weir/internal/log"
	"weir/internal/loglevel"
	"weir/internal/metadata"
	"weir/internal/metrics"
	"weir/internal/nodeclient"
	"weir/internal/partition"
	"weir/internal/quorum"
	"weir/internal/quota"
	"weir/internal/sasl"
	"weir/internal/tlsconf"
	"weir/internal/txn"
	"weir/internal/version"
	"weir/internal/vfs"
)

// Options tune a server beyond its configuration.
type Options struct {
	Logger *slog.Logger
	// AutoFormat formats unformatted storage with a new cluster id at
	// start-up (the zero-setup single node); otherwise start-up refuses.
	AutoFormat bool
	// Out receives the operator-facing lines (formatting notice).
	Out io.Writer
	// FS is the filesystem under the logs (tests inject faults); nil is the
	// real one.
	FS vfs.FS
	// Dial opens connections to other nodes (tests inject network faults);
	// nil is net.Dialer's.
	Dial nodeclient.Dialer
	// TxnVerifier replaces the KIP-890 check of transactional produces
	// with the transaction coordinator (tests); nil is the real one.
	TxnVerifier kafka.TxnVerifier
}

// Server is one weir node.
type Server struct {
	cfg  *config.Broker
	opts Options
	lg   *slog.Logger
	// loggers are the levels of lg's loggers, the root and each
	// component's (the BROKER_LOGGER config resource).
	loggers *loglevel.Levels

	clusterID  string
	lifecycle  *lifecycle
	quorum     *quorum.Node     // controllers
	observer   *quorum.Observer // broker-only nodes
	transport  *quorum.NetTransport
	controller *controller.Controller
	publisher  *publisher
	logs       *log.Manager
	partitions *partition.Manager
	fetchers   *fetcher.Manager // follower replication
	links      *link.Manager    // mirror partitions' copying from their sources
	linkSync   *link.Syncer     // the links' periodic tasks (controllers)
	isr        *isrSender       // leaders' ISR changes to the controller
	// logsLoaded is closed once the logs found at start-up are all open
	// (or offline); a node without the broker role closes it at once.
	logsLoaded chan struct{}
	// started is set when Start has brought the node up (/readyz).
	started   atomic.Bool
	replQuota *quota.Replication
	// clientQuotas enforces the client quotas on every listener.
	clientQuotas *quota.Clients
	// conns are the connection limits of every listener (connlimits.go).
	conns      connLimits
	connQuotas *kafka.ConnQuotas
	groups     *group.Service
	txns       *txn.Service
	txnNet     *txnCluster // the coordinator's connections for markers
	// groupStats and txnStats are the coordinators' metrics, lag the
	// consumer lag of the groups coordinated here; all nil without
	// weir.metrics.listener.
	groupStats *group.Stats
	txnStats   *txn.Stats
	lag        *consumerLag
	txnVerify  *txnVerifier // KIP-890 checks with transaction coordinators
	fastFence  *fastFencer  // the active controller's probes of brokers that look dead
	listeners  map[string]net.Listener
	kafka      map[string]*kafka.Server
	// formatted are the directories this start formatted, as they were
	// before: a start that fails takes back what it wrote into them.
	formatted []dirSnapshot
	// tls is the node's TLS material (nil: no listener it serves or dials
	// uses TLS); dialBroker and dialController open its connections to
	// other brokers' inter-broker listener and to the controllers' listener,
	// with TLS and a SASL login when that listener's protocol says so.
	tls *tlsconf.Store
	// oauth validates the OAUTHBEARER tokens of each SASL listener that
	// enables the mechanism; jwks is their key set, when signed.
	oauth map[string]sasl.Validator
	jwks  *sasl.JWKS
	// authz authorizes every listener's requests (nil: no authorizer).
	authz          *acl.Authorizer
	dialBroker     nodeclient.Dialer
	dialController nodeclient.Dialer
	// metrics always counts; metricsHTTP serves it when
	// weir.metrics.listener is set.
	metrics     *metrics.Metrics
	metricsHTTP *http.Server
	metricsLn   net.Listener
	metricsAddr net.Addr
	// console serves weir.console.listener when it is set.
	console     *console.Console
	consoleHTTP *http.Server
	consoleLn   net.Listener

	cancel context.CancelFunc
	wg     sync.WaitGroup
	stop   sync.Once
}

// New returns a server for cfg; Start runs it.
func New(cfg *config.Broker, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.FS == nil {
		opts.FS = vfs.OS
	}
	if opts.Dial == nil {
		opts.Dial = (&net.Dialer{}).DialContext
	}
	loggers, h := loglevel.Wrap(opts.Logger.Handler())
	s := &Server{cfg: cfg, opts: opts, lg: slog.New(h), loggers: loggers, listeners: map[string]net.Listener{}, kafka: map[string]*kafka.Server{},
		logsLoaded: make(chan struct{})}
	s.metrics = metrics.New(metricsSource{s}, metrics.Options{ByTopic: s.cfg.MetricsAggregation == "topic"})
	s.fastFence = &fastFencer{s: s}
	return s
}

// LogsLoaded is closed once every log found at start-up has been opened
// (or found offline) and adopted by its replica. Start returns before:
// each partition is served as soon as its own log is open.
func (s *Server) LogsLoaded() <-chan struct{} { return s.logsLoaded }

// ClusterID is the cluster id from meta.properties.
func (s *Server) ClusterID() string { return s.clusterID }

// QuorumStatus is the metadata quorum as this node sees it (its leader,
// term, and whether this node is the active controller); Leader is -1
// before the quorum is open.
func (s *Server) QuorumStatus() quorum.Status {
	if s.quorum == nil {
		return quorum.Status{Leader: -1}
	}
	return s.quorum.Status()
}

// Image is the metadata image this node's broker serves (the empty image
// before start-up replays the metadata log).
func (s *Server) Image() *metadata.Image {
	if s.publisher == nil {
		return metadata.Empty()
	}
	return s.publisher.Image()
}

// Addr returns the bound address of the named listener ("PLAINTEXT").
func (s *Server) Addr(listener string) net.Addr {
	if ln := s.listeners[listener]; ln != nil {
		return ln.Addr()
	}
	return nil
}

// Start brings the node up: it returns once the node serves clients. A
// start that fails leaves the storage directories it formatted as they
// were before it.
func (s *Server) Start() (err error) {
	defer func() {
		if err != nil {
			s.Shutdown()
			err = NameDirSetting(s.cfg, err)
			for _, d := range s.formatted {
				if rerr := d.restore(); rerr != nil {
					err = errors.Join(err, fmt.Errorf("taking back the format of %s: %w", d.dir, rerr))
				} else {
					fmt.Fprintf(s.opts.Out, "Took back the formatting of %s: the node did not start.\n", d.dir)
				}
			}
		}
	}()
	if err := s.openSecurity(); err != nil {
		return err
	}
	// Every listener is bound before anything is written to the storage
	// directories: a node that cannot serve leaves them untouched.
	if err := s.bind(); err != nil {
		return err
	}
	if err := s.checkStorage(); err != nil {
		return err
	}
	isController, isBroker := s.cfg.HasRole("controller"), s.cfg.HasRole("broker")
	if isBroker {
		s.openBroker()
	} else {
		s.publisher = newPublisher(nil, s.lg)
	}
	// Replay the committed metadata, then follow new commits: through the
	// Raft quorum on a controller, as an observer of it on a broker-only
	// node.
	var subscribe func(func(quorum.Committed) error)
	var replay func() error
	if isController {
		if err := s.openQuorum(); err != nil {
			return err
		}
		s.controller = controller.New(controller.Config{Static: s.cfg, ClusterID: s.clusterID}, s.quorum, s.lg.With("component", "controller"))
		s.quorum.Subscribe(s.controller.Publish)
		s.linkSync = s.newLinkSyncer()
		subscribe, replay = s.quorum.Subscribe, s.quorum.Replay
	} else {
		if err := s.openObserver(); err != nil {
			return err
		}
		subscribe, replay = s.observer.Subscribe, s.observer.Replay
	}
	subscribe(s.publisher.publish)
	if isBroker {
		s.publisher.topicsChanged = s.updateGroupTopics
		s.publisher.groupConfigsChanged = s.updateGroupSettings
		s.lifecycle = newLifecycle(s)
		prev, err := takeCleanShutdown(s.cfg.LogDirs)
		if err != nil {
			return err
		}
		s.lifecycle.previousEpoch = prev
	}
	if err := replay(); err != nil {
		return fmt.Errorf("replaying metadata log: %w", err)
	}
	if err := s.listen(); err != nil {
		return err
	}
	s.startMetrics()
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.fastFence.start(ctx)
	// Controllers talk Raft from the start; clients wait until the broker
	// is registered and unfenced.
	s.serve(true)
	s.wg.Add(1)
	if isController {
		go func() {
			defer s.wg.Done()
			s.quorum.Run(ctx)
		}()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.fenceStaleBrokers(ctx)
		}()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.rebalanceLeaders(ctx)
		}()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.linkSync.Run(ctx)
		}()
	} else {
		go func() {
			defer s.wg.Done()
			s.observer.Run(ctx)
		}()
	}
	if err := s.awaitLeader(ctx); err != nil {
		return err
	}
	if !isBroker {
		close(s.logsLoaded)
		if err := s.publisher.startReconciling(ctx, &s.wg); err != nil {
			return err
		}
		s.started.Store(true)
		s.lg.Info("weir started", "version", version.String(), "node_id", s.cfg.NodeID, "roles", "controller", "cluster_id", s.clusterID, "listeners", s.describeListeners())
		return nil
	}

	// The local replicas are reconciled with an image that has caught up
	// with the metadata log, as Kafka's broker waits for its initial
	// catch-up: the log replayed from disk may end before the last
	// commit (after a crash the commit index on disk is stale), and an
	// image that lacks a topic would have its logs deleted as strays.
	// Everything committed before the registration is in every image from
	// the broker epoch (the registration's offset) on.
	startup, cancelStartup := context.WithTimeout(ctx, s.cfg.InitialBrokerRegistrationTimeout)
	defer cancelStartup()
	if err := s.lifecycle.register(startup); err != nil {
		return err
	}
	if err := s.publisher.waitImage(startup, s.lifecycle.epoch.Load()); err != nil {
		return fmt.Errorf("catching up with the metadata log: %w", err)
	}
	// Setting up the replicas of partitions created while the broker was
	// down may outlast its session: heartbeats asking to stay fenced keep
	// it meanwhile.
	stopKeepAlive, keptAlive := make(chan struct{}), make(chan struct{})
	go s.lifecycle.keepAlive(ctx, stopKeepAlive, keptAlive)
	img := s.publisher.Image()
	s.groups.SetTopics(groupTopics(img))
	found, err := s.logs.Scan()
	if err != nil {
		err = fmt.Errorf("loading logs: %w", err)
	} else {
		s.partitions.StartLoading(found)
		if err = s.publisher.startReconciling(ctx, &s.wg); err != nil {
			err = fmt.Errorf("loading partitions: %w", err)
		}
	}
	close(stopKeepAlive)
	<-keptAlive
	if err != nil {
		return err
	}
	// The logs found on disk are opened (recovered) in the background,
	// each adopted by its replica (leader or follower per the latest
	// image) as soon as it is open, while the broker is unfenced and
	// serves: a partition whose log is not open yet answers
	// NOT_LEADER_OR_FOLLOWER, is not in any ISR, and moves no high
	// watermark.
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		err := s.logs.LoadEach(ctx, func(tp log.TopicPartition) log.Config {
			return partition.LogConfig(s.partitions.StartupTopicConfig(s.publisher.Image(), tp.Topic))
		}, s.partitions.Adopt)
		if err != nil {
			s.lg.Error("loading logs", "err", err)
			return
		}
		close(s.logsLoaded)
	}()
	// initial.broker.registration.timeout.ms bounds registering and
	// catching up, not opening the logs (minutes for 100,000 partitions).
	unfence, cancelUnfence := context.WithTimeout(ctx, s.cfg.InitialBrokerRegistrationTimeout)
	defer cancelUnfence()
	if err := s.lifecycle.awaitUnfenced(unfence); err != nil {
		return err
	}
	// Heartbeats go on from the unfencing: applying it (a leader change
	// for every partition this broker leads) can outlast the session.
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.lifecycle.run(ctx)
	}()
	// Serve once the replicas have caught up with the image that unfenced
	// this broker (it elects the broker's leaders), as they did before.
	if err := s.publisher.awaitUnfencedApplied(ctx, s.cfg.NodeID); err != nil {
		return fmt.Errorf("applying the metadata that unfenced the broker: %w", err)
	}
	s.runReplication(ctx)
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		s.logs.Run(ctx)
	}()
	go func() {
		defer s.wg.Done()
		s.groups.Run(ctx)
	}()
	if s.lag != nil {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.lag.run(ctx)
		}()
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.txns.Run(ctx)
		s.txnNet.close()
	}()
	s.serve(false)
	if err := s.startConsole(); err != nil {
		return err
	}
	s.started.Store(true)
	s.lg.Info("weir started", "version", version.String(), "node_id", s.cfg.NodeID, "roles", strings.Join(s.cfg.ProcessRoles, ","), "cluster_id", s.clusterID, "listeners", s.describeListeners())
	return nil
}

// openBroker creates the broker's storage and services: the log manager,
// the replicas, the metadata publisher and the group coordinator.
func (s *Server) openBroker() {
	s.logs = log.NewManager(log.ManagerConfig{
		Dirs:                         s.cfg.LogDirs,
		RetentionCheckInterval:       s.cfg.LogRetentionCheckInterval,
		FlushCheckInterval:           s.cfg.FlushSchedulerInterval,
		RecoveryCheckpointEvery:      s.cfg.OffsetCheckpointInterval,
		StartOffsetCheckpointEvery:   s.cfg.LogStartOffsetCheckpointInterval,
		HighWatermarkCheckpointEvery: s.cfg.ReplicaHighWatermarkCheckpointInterval,
		RecoveryThreadsPerDir:        int(s.cfg.NumRecoveryThreadsPerDataDir),
		OpenFilesMax:                 s.segmentFilesMax(),
		CleanerBackoff:               s.cfg.LogCleanerBackoff,
		CleanerEnabled:               s.cfg.LogCleanerEnable,
		CleanerMaxKeys:               max(1, log.CleanerMaxKeys(s.cfg.LogCleanerDedupeBufferSize, s.cfg.LogCleanerIOBufferLoadFactor)),
		SkipDirs:                     []string{quorum.DirName},
	}, s.logOptions())
	s.partitions = partition.NewManager(s.cfg.NodeID, s.logs, s.cfg, s.lg, time.Now)
	gcfg := groupConfig(s.cfg)
	if s.cfg.MetricsListener != "" {
		// Without an endpoint the BrokerTopicMetrics and the coordinators'
		// metrics are not counted, nor the consumer lag computed.
		s.partitions.SetTopicStats(s.metrics.Topics)
		s.groupStats, s.txnStats = &group.Stats{}, &txn.Stats{}
		gcfg.Stats = s.groupStats
		s.lag = newConsumerLag(s)
	}
	s.openReplication()
	s.publisher = newPublisher(s.partitions, s.lg.With("component", "publisher"))
	s.groups = group.NewService(gcfg,
		&offsetsLog{parts: s.partitions, commitTimeout: s.cfg.OffsetsCommitTimeout, now: time.Now},
		s.lg.With("component", "group-coordinator"), time.Now, s.metrics.Counters.GroupRecordsSkipped)
	s.partitions.OnLeadership(func(tp log.TopicPartition, leader bool, epoch int32) {
		if tp.Topic != kafka.OffsetsTopic {
			return
		}
		if leader {
			s.groups.Elected(tp.Partition, epoch)
		} else {
			s.groups.Resigned(tp.Partition)
		}
	})
	s.openTxn()
}

// openObserver opens a broker-only node's copy of the metadata log, which
// it fetches from the active controller.
func (s *Server) openObserver() error {
	voters := map[int32]string{}
	for _, v := range s.cfg.QuorumVoters {
		voters[v.ID] = v.Address()
	}
	o, err := quorum.OpenObserver(quorum.ObserverConfig{NodeID: s.cfg.NodeID, Voters: voters, MetadataDir: s.cfg.MetadataLogDir,
		SegmentBytes: int64(s.cfg.MetadataLogSegmentBytes), ClusterID: s.clusterID, FS: s.opts.FS, Dial: s.dialController,
		Logger: s.lg.With("component", "metadata-observer")})
	if err != nil {
		return &DirError{Dir: s.cfg.MetadataLogDir, Err: fmt.Errorf("opening metadata log: %w", err)}
	}
	s.observer = o
	return nil
}

// leader is the node id of the active controller as this node knows it
// (-1 when unknown), and whether it is this node.
func (s *Server) leader() (int32, bool) {
	if s.quorum != nil {
		st := s.quorum.Status()
		return st.Leader, st.Active
	}
	return s.observer.Leader(), false
}

// checkStorage verifies meta.properties in every directory, formatting
// them on first start when AutoFormat allows.
func (s *Server) checkStorage() error {
	dirs := append(append([]string(nil), s.cfg.LogDirs...), s.cfg.MetadataLogDir)
	clusterID, unformatted, err := CheckStorage(dirs, s.cfg.NodeID)
	if err != nil {
		return err
	}
	if len(unformatted) > 0 {
		if !s.opts.AutoFormat && clusterID == "" {
			return fmt.Errorf("no meta.properties found in %v: format the storage first with `weir storage format -t $(weir storage random-uuid) -c server.properties`", unformatted)
		}
		if clusterID == "" {
			clusterID = RandomUUID()
		}
		if !s.opts.AutoFormat {
			return fmt.Errorf("log directories %v are not formatted, while others belong to cluster %s: format them with `weir storage format -t %s`", unformatted, clusterID, clusterID)
		}
		for _, d := range unformatted {
			snap, err := snapshotDir(d)
			if err != nil {
				return err
			}
			s.formatted = append(s.formatted, snap)
		}
		done, err := Format(unformatted, clusterID, s.cfg.NodeID, false)
		if err != nil {
			s.formatted = nil // Format took back its own writes
			return err
		}
		for _, d := range done {
			fmt.Fprintf(s.opts.Out, "Formatting %s with cluster.id %s and metadata.version %d.\n", d, clusterID, controller.MetadataVersion)
		}
	}
	s.clusterID = clusterID
	return nil
}

// bind checks that every listener suits the node's roles and binds it,
// and the metrics listener when one is set; listen and startMetrics serve
// them.
func (s *Server) bind() error {
	broker := false
	for _, l := range s.cfg.Listeners {
		if s.isControllerListener(l.Name) {
			if !s.cfg.HasRole("controller") {
				return fmt.Errorf("listener %s is a controller listener, but this node is not a controller (process.roles=%s)", l.Name, strings.Join(s.cfg.ProcessRoles, ","))
			}
		} else {
			if !s.cfg.HasRole("broker") {
				return fmt.Errorf("listener %s: a controller-only node (process.roles=controller) has only controller listeners (controller.listener.names)", l.Name)
			}
			broker = true
		}
	}
	if !broker && s.cfg.HasRole("broker") {
		return errors.New("no broker listener configured in listeners")
	}
	for _, l := range s.cfg.Listeners {
		ln, err := net.Listen("tcp", l.Address())
		if err != nil {
			return fmt.Errorf("listener %s: %w", l, err)
		}
		s.listeners[l.Name] = ln
	}
	if s.cfg.MetricsListener != "" {
		ln, err := net.Listen("tcp", s.cfg.MetricsListener)
		if err != nil {
			return fmt.Errorf("%s %s: %w", config.KeyMetricsListener, s.cfg.MetricsListener, err)
		}
		s.metricsLn, s.metricsAddr = ln, ln.Addr()
	}
	if s.cfg.ConsoleListener != "" {
		if !s.cfg.HasRole("broker") {
			return fmt.Errorf("%s: the console is a client of the node's broker listener, and this node is not a broker (process.roles=%s)", config.KeyConsoleListener, strings.Join(s.cfg.ProcessRoles, ","))
		}
		if _, _, err := s.consoleLogin(); err != nil {
			return err
		}
		ln, err := net.Listen("tcp", s.cfg.ConsoleListener)
		if err != nil {
			return fmt.Errorf("%s %s: %w", config.KeyConsoleListener, s.cfg.ConsoleListener, err)
		}
		s.consoleLn = ln
	}
	return nil
}

// listen creates the protocol server of every bound listener; the
// controller listeners also carry Raft and the brokers' controller APIs.
func (s *Server) listen() error {
	s.clientQuotas = quota.NewClients(int(s.cfg.QuotaWindowNum), s.cfg.QuotaWindowSize, s.publisher.Image)
	s.connQuotas = kafka.NewConnQuotas(s.cfg.InterBrokerListenerName, int(s.cfg.QuotaWindowNum), s.cfg.QuotaWindowSize, s.connLimits)
	for _, l := range s.cfg.Listeners {
		deps := kafka.Deps{Metadata: s.publisher, ClientQuotas: s.clientQuotas, Loggers: s.loggers,
			Logger: s.lg.With("component", "network", "listener", l.Name)}
		if s.cfg.MetricsListener != "" {
			deps.Metrics = s.metrics // else requests are not counted
		}
		if s.partitions != nil && !s.isControllerListener(l.Name) {
			// Only broker listeners serve the partitions, groups and
			// transactions; a controller listener serves the
			// controller's APIs, as Kafka's do.
			deps.Partitions, deps.Logs, deps.Groups = s.partitions, s.logs, s.groups
			deps.Txns = s.txns
			deps.ReplicationQuota = s.replQuota
			deps.TxnVerifier = s.txnVerifier()
		}
		if s.lifecycle != nil {
			deps.Forward, deps.ProducerIDs = s.lifecycle, s.lifecycle.allocateProducerIDs
		}
		if s.controller != nil {
			deps.Controller, deps.LinkSync = s.controller, s.linkSync
		}
		if s.quorum != nil {
			deps.Quorum = s.quorum
		}
		if s.isControllerListener(l.Name) {
			deps.Raft, deps.MetadataLog = s.quorum, s.quorum
			deps.BrokerConnLost = s.fastFence.connLost
		}
		s.kafka[l.Name] = kafka.New(kafka.Config{
			Broker:         s.cfg,
			ClusterID:      s.clusterID,
			ListenerName:   l.Name,
			MaxRequestSize: s.cfg.SocketRequestMaxBytes,
			TLS:            s.listenerTLS(l.Name),
			SASL:           s.listenerSASL(l.Name),
			Authorizer:     s.authz,
			Conns:          s.connQuotas,
			MaxIdle:        s.cfg.ConnectionsMaxIdle,
		}, deps)
	}
	return nil
}

// serve starts serving the listeners that match controller.
func (s *Server) serve(controller bool) {
	for name, k := range s.kafka {
		if s.isControllerListener(name) != controller {
			continue
		}
		ln := s.listeners[name]
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := k.Serve(ln); err != nil {
				s.lg.Error("listener failed", "listener", name, "err", err)
			}
		}()
	}
}

func (s *Server) isControllerListener(name string) bool {
	for _, c := range s.cfg.ControllerListenerNames {
		if c == name {
			return true
		}
	}
	return false
}

// endpoints are the advertised endpoints: advertised.listeners, else the
// bound listeners (a port of 0 becomes the bound port, an empty host the
// machine's name).
func (s *Server) endpoints() ([]metadata.BrokerEndpoint, error) {
	adv := s.cfg.AdvertisedListeners
	if len(adv) == 0 {
		adv = s.cfg.Listeners
	}
	var out []metadata.BrokerEndpoint
	for _, l := range adv {
		ln := s.listeners[l.Name]
		if ln == nil {
			continue
		}
		host, port := l.Host, l.Port
		if port == 0 {
			port = ln.Addr().(*net.TCPAddr).Port
		}
		if host == "" || host == "0.0.0.0" || host == "::" {
			h, err := os.Hostname()
			if err != nil {
				return nil, err
			}
			host = h
		}
		out = append(out, metadata.BrokerEndpoint{Name: l.Name, Host: host, Port: uint16(port), SecurityProtocol: securityProtocolID(s.cfg.ListenerSecurityProtocols[l.Name])})
	}
	return out, nil
}

func securityProtocolID(name string) int16 {
	switch name {
	case "SSL":
		return 1
	case "SASL_PLAINTEXT":
		return 2
	case "SASL_SSL":
		return 3
	}
	return 0
}

func newIncarnation() metadata.Uuid {
	u, _ := metadata.ParseUuid(RandomUUID())
	return u
}

func (s *Server) describeListeners() string {
	out := ""
	for name, ln := range s.listeners {
		if out != "" {
			out += ","
		}
		out += name + "://" + ln.Addr().String()
	}
	return out
}

// Shutdown stops serving, then flushes and closes every log and writes the
// checkpoints, so the next start recovers nothing. It is safe to call more
// than once and on a partly started server.
func (s *Server) Shutdown() error { return s.stopNode(false) }

// Kill stops the node as a crash would (in-process tests use it): no
// controlled shutdown, and nothing is flushed, snapshotted or
// checkpointed; what was written stays in the page cache, as after
// SIGKILL.
func (s *Server) Kill() { s.stopNode(true) }

func (s *Server) stopNode(crash bool) error {
	var err error
	s.stop.Do(func() {
		if crash {
			// A crashed process's sockets all close at once: no peer
			// may reach its listeners after it saw a connection drop.
			for _, ln := range s.listeners {
				ln.Close()
			}
		}
		if s.lifecycle != nil {
			if !crash {
				s.lifecycle.controlledShutdown(s.cfg.BrokerSessionTimeout)
			}
			s.lifecycle.close()
		}
		if s.quorum != nil && !crash {
			// The active controller hands over before it goes, as
			// Kafka's resigns, rather than leave the others an election
			// timeout without one.
			ctx, cancel := context.WithTimeout(context.Background(), 2*s.cfg.QuorumElectionTimeout)
			s.quorum.Resign(ctx)
			cancel()
		}
		if crash && s.quorum != nil {
			s.quorum.Abandon()
		}
		for _, k := range s.kafka {
			k.Close()
		}
		if s.txnVerify != nil {
			s.txnVerify.close()
		}
		for _, ln := range s.listeners {
			ln.Close()
		}
		s.stopMetrics()
		s.stopConsole()
		if s.cancel != nil {
			s.cancel()
		}
		s.fastFence.stop()
		s.wg.Wait()
		if s.fetchers != nil {
			s.fetchers.Close()
		}
		if s.links != nil {
			s.links.Close()
		}
		var errs []error
		switch {
		case s.logs != nil && crash:
			errs = append(errs, s.logs.Abandon())
		case s.logs != nil:
			cerr := s.logs.Close()
			errs = append(errs, cerr)
			// A log never opened (the broker stopped while loading) was
			// not recovered: the shutdown does not vouch for it.
			if epoch := s.lifecycle.lastEpoch(); cerr == nil && epoch >= 0 && s.partitions.AllAdopted() {
				errs = append(errs, writeCleanShutdown(s.cfg.LogDirs, epoch))
			}
		}
		if s.transport != nil {
			s.transport.Close()
		}
		if s.jwks != nil {
			s.jwks.Close()
		}
		err = errors.Join(errs...)
		s.lg.Info("weir stopped", "node_id", s.cfg.NodeID)
	})
	return err
}

// groupConfig maps the broker's group settings onto the coordinator's.
func groupConfig(b *config.Broker) group.Config {
	c := group.DefaultConfig()
	c.OffsetsTopicPartitions = b.OffsetsTopicNumPartitions
	c.InitialRebalanceDelay = b.GroupInitialRebalanceDelay
	c.MinSessionTimeout = b.GroupMinSessionTimeout
	c.MaxSessionTimeout = b.GroupMaxSessionTimeout
	c.MaxSize = int(b.GroupMaxSize)
	c.OffsetMetadataMaxBytes = int(b.OffsetMetadataMaxBytes)
	c.OffsetsRetention = b.OffsetsRetention
	c.OffsetsRetentionCheckInterval = b.OffsetsRetentionCheckInterval
	c.Consumer = group.DefaultConsumerConfig()
	c.Consumer.SessionTimeout = b.ConsumerGroupSessionTimeout
	c.Consumer.HeartbeatInterval = b.ConsumerGroupHeartbeatInterval
	c.Consumer.MaxSize = int(b.ConsumerGroupMaxSize)
	c.Consumer.Assignors = b.ConsumerGroupAssignors
	return c
}

// updateGroupTopics gives the group coordinator the topics of a metadata
// change: all of them for a snapshot, else what the delta changed.
func (s *Server) updateGroupTopics(img *metadata.Image, d *metadata.Delta, whole bool) {
	if whole {
		s.groups.SetTopics(groupTopics(img))
		return
	}
	changed := make(map[string]group.TopicInfo, len(d.ChangedTopics))
	for name, t := range d.ChangedTopics {
		changed[name] = group.TopicInfo{ID: t.ID, Partitions: int32(len(t.Partitions))}
	}
	var removed []string
	for _, t := range d.DeletedTopics {
		if img.Topics.Get(t.Name) == nil { // not made again in the same batch
			removed = append(removed, t.Name)
		}
	}
	s.groups.UpdateTopics(changed, removed)
}

// updateGroupSettings gives the group coordinator the GROUP configs of a
// metadata change: every group's for a snapshot, else the named groups'.
func (s *Server) updateGroupSettings(img *metadata.Image, groups []string, whole bool) {
	if whole {
		groups = nil
		for r := range img.Configs {
			if r.Type == metadata.ResourceGroup {
				groups = append(groups, r.Name)
			}
		}
	}
	settings := make(map[string]group.GroupSettings, len(groups))
	for _, g := range groups {
		session, heartbeat := config.GroupTimeouts(img.GroupConfig(g))
		settings[g] = group.GroupSettings{SessionTimeout: session, HeartbeatInterval: heartbeat}
	}
	s.groups.SetGroupSettings(settings, whole)
}

// groupTopics is the topic list the group coordinator assigns from.
func groupTopics(img *metadata.Image) map[string]group.TopicInfo {
	out := make(map[string]group.TopicInfo, img.Topics.Len())
	for name, t := range img.Topics.All() {
		out[name] = group.TopicInfo{ID: t.ID, Partitions: int32(len(t.Partitions))}
	}
	return out
}

// openQuorum opens this controller's Raft node over the metadata log, with
// a transport to the other voters of controller.quorum.voters.
func (s *Server) openQuorum() error {
	var voters []int32
	addrs := map[int32]string{}
	for _, v := range s.cfg.QuorumVoters {
		voters = append(voters, v.ID)
		addrs[v.ID] = v.Address()
	}
	s.transport = quorum.NewNetTransport(s.cfg.NodeID, s.clusterID, addrs, s.dialController, s.lg.With("component", "raft"))
	tick := 100 * time.Millisecond
	qc := quorum.Config{
		NodeID:           s.cfg.NodeID,
		ClusterID:        s.clusterID,
		Voters:           voters,
		MetadataDir:      s.cfg.MetadataLogDir,
		SegmentBytes:     int64(s.cfg.MetadataLogSegmentBytes),
		Tick:             tick,
		ElectionTicks:    max(2, int(s.cfg.QuorumElectionTimeout/tick)),
		HeartbeatTicks:   1,
		SnapshotBytes:    s.cfg.MetadataSnapshotMaxNewRecordBytes,
		SnapshotInterval: s.cfg.MetadataSnapshotMaxInterval,
		FS:               s.opts.FS,
		Logger:           s.lg.With("component", "quorum"),
		Transport:        s.transport,
		State:            func() []metadata.Record { return s.controller.Image().Records() },
		OnActive:         s.becameActive,
	}
	if s.cfg.MetricsListener != "" {
		qc.OnCommit, qc.OnElection = s.metrics.RaftCommitted, s.metrics.RaftElected
	}
	n, err := quorum.Open(qc)
	if err != nil {
		return &DirError{Dir: s.cfg.MetadataLogDir, Err: fmt.Errorf("opening metadata log: %w", err)}
	}
	s.quorum = n
	return nil
}

// becameActive runs when this node becomes the active controller: a new
// cluster's first records are written, every broker's session starts now
// (the controller keeps sessions per quorum term; a fencing check starts
// those it has not heard of, and waiting for the next periodic one would
// add up to its period to a dead broker's session), and every broker is
// probed for fast fencing (a dead former controller among them).
func (s *Server) becameActive() {
	extra, err := quorum.ReadBootstrap(s.opts.FS, s.cfg.MetadataLogDir)
	if err != nil {
		s.lg.Error("reading the bootstrap records", "err", err)
	} else if err := s.controller.Bootstrap(extra); err != nil && !errors.Is(err, quorum.ErrNotLeader) {
		s.lg.Error("bootstrapping the metadata log", "err", err)
	}
	if _, err := s.controller.FenceStaleBrokers(time.Now()); err != nil && !errors.Is(err, quorum.ErrNotLeader) {
		s.lg.Error("fencing stale brokers", "err", err)
	}
	s.fastFence.suspectAll()
}

// awaitLeader waits until the metadata quorum has a leader, which
// registration needs.
func (s *Server) awaitLeader(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.InitialBrokerRegistrationTimeout)
	defer cancel()
	for leader, _ := s.leader(); leader < 0; leader, _ = s.leader() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("the metadata quorum elected no leader: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// fenceStaleBrokers fences, while this node is the active controller,
// brokers whose heartbeats stopped for broker.session.timeout.ms: it
// checks when the next session runs out (as Kafka's controller schedules
// its check), and at least every broker.heartbeat.interval.ms / 2.
func (s *Server) fenceStaleBrokers(ctx context.Context) {
	every := max(s.cfg.BrokerHeartbeatInterval/2, 10*time.Millisecond)
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		wait := every
		if s.quorum.Status().Active {
			if _, err := s.controller.FenceStaleBrokers(time.Now()); err != nil && !errors.Is(err, quorum.ErrNotLeader) {
				s.lg.Error("fencing stale brokers", "err", err)
			}
			if next := s.controller.NextSessionDeadline(); !next.IsZero() {
				wait = min(wait, max(time.Until(next), time.Millisecond))
			}
		}
		t.Reset(wait)
	}
}
