package replsim

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	"weir/internal/controller"
	"weir/internal/log"
	"weir/internal/metadata"
	"weir/internal/partition"
	"weir/internal/quorum"
	"weir/internal/vfs/vfstest"
)

const dataDir = "/data"

// broker is one broker process: its disk outlives it, everything else is
// rebuilt when it restarts. The lifecycle follows internal/server: register
// (retrying), catch up with the metadata log to the broker epoch, load the
// logs and replicas, heartbeat until unfenced, then run the ISR sender and
// the ISR shrink timer; the fetcher follows leaders from the first load.
type broker struct {
	s           *Sim
	id          int32
	fs          *vfstest.MemFS
	static      *config.Broker
	inc         uint64 // incarnation: bumped on crash, voids its events
	up          bool
	pausedUntil time.Time
	// crashed is set by a crash and cleared once the broker is back in
	// the controller's ISR: until then its disk may lack committed data.
	crashed bool
	// silent is set by a pause or a cut from the controller and cleared
	// when the controller next hears a heartbeat from it.
	silent bool

	logs  *log.Manager
	parts *partition.Manager
	img   *metadata.Image
	next  int  // index of the next committed metadata batch to apply
	live  bool // replicas loaded; metadata changes reach them
	// The requests awaiting an answer (0: none): the metadata fetch, and
	// the registration or heartbeat.
	metaReq, hbReq uint64
	epoch          int64 // broker epoch, -1 before registration
	fenced         bool
	replicating    bool // unfenced once: ISR sender and shrink timer run

	// The fetcher: one request at a time to the leader followed.
	follow   int32
	fetchReq uint64
	fetching bool // a fetch is scheduled or in flight

	// The ISR sender: the latest unsent change, the one in flight.
	isrQueue    *isrItem
	isrInflight *isrItem
	isrReq      uint64

	// Leader side: follower fetches in their long poll, acks=all waits.
	parked  []*parkedFetch
	waiters []*ackWait
	scratch []byte
}

type isrItem struct {
	p *partition.Partition
	c partition.IsrChange
}

func newBroker(s *Sim, id int32) (*broker, error) {
	static, _, err := config.LoadBroker(nil)
	if err != nil {
		return nil, err
	}
	fs := vfstest.NewMem()
	fs.SetClock(s.clock)
	return &broker{s: s, id: id, fs: fs, static: static, follow: -1, epoch: -1}, nil
}

func (b *broker) paused() bool { return b.pausedUntil.After(b.s.now) }

// part is the broker's replica of the simulated partition (nil when down
// or not loaded).
func (b *broker) part() *partition.Partition {
	if !b.up || b.parts == nil {
		return nil
	}
	return b.parts.Get(topic)
}

// start boots the process on whatever its disk holds.
func (b *broker) start() {
	b.up, b.pausedUntil = true, time.Time{}
	b.logs = log.NewManager(log.ManagerConfig{Dirs: []string{dataDir}, RecoveryThreadsPerDir: 1, CreateWorkers: 1},
		log.Options{FS: b.fs, Now: b.s.clock, Logger: b.s.lg.With("node", b.id), AfterDelay: b.afterDelay, Background: b.background})
	b.parts = partition.NewManager(b.id, b.logs, b.static, b.s.lg.With("node", b.id), b.s.clock)
	b.parts.SetReplication(&partition.Replication{
		LagTimeMax: lagTimeMax,
		Eligible:   b.eligible,
		AlterISR:   b.submitISR,
	}, (*brokerFetcher)(b))
	b.img, b.next, b.live = metadata.Empty(), 0, false
	b.epoch, b.fenced, b.replicating = -1, true, false
	b.follow, b.fetchReq, b.fetching = -1, 0, false
	b.isrQueue, b.isrInflight, b.isrReq = nil, nil, 0
	b.parked, b.waiters = nil, nil
	b.s.tracef("  broker %d starts (incarnation %d)", b.id, b.inc)
	b.register()
	b.fetchMetadata()
}

// crash kills the process: its disk keeps only what was synced (and, at
// random, a torn part of what was not).
func (b *broker) crash() {
	b.s.tracef("  broker %d crashes", b.id)
	b.up, b.live, b.crashed = false, false, true
	b.inc++
	b.s.crashes++
	if b.logs != nil {
		b.logs.Abandon()
	}
	b.fs = b.fs.CrashCloneWith(vfstest.CrashOptions{Rand: b.s.mathRand(), TornWrites: true, DirOps: b.s.rng.IntN(2) == 0})
	b.fs.SetClock(b.s.clock)
	b.logs, b.parts, b.parked, b.waiters = nil, nil, nil, nil
}

// afterDelay and background run the log's deferred work as events of this
// incarnation: a crash loses them.
func (b *broker) afterDelay(d time.Duration, fn func()) {
	b.s.after(d, b.id, "log: deferred deletion", fn)
}
func (b *broker) background(fn func()) {
	b.s.after(b.s.between(0, 5*time.Millisecond), b.id, "log: background work", fn)
}

func (b *broker) checkpointHW() {
	if err := b.logs.CheckpointHighWatermarks(); err != nil {
		b.s.fail("broker %d: high watermark checkpoint: %v", b.id, err)
	}
	b.s.after(hwCheckpointTick, b.id, "checkpoint high watermarks", b.checkpointHW)
}

func (b *broker) checkpointRP() {
	if err := b.logs.CheckpointRecoveryPoints(); err != nil {
		b.s.fail("broker %d: recovery point checkpoint: %v", b.id, err)
	}
	if err := b.logs.CheckpointLogStartOffsets(); err != nil {
		b.s.fail("broker %d: log start checkpoint: %v", b.id, err)
	}
	b.s.after(rpCheckpointTick, b.id, "checkpoint recovery points", b.checkpointRP)
}

// eligible is the broker's Replication.Eligible, from its own image.
func (b *broker) eligible(id int32, brokerEpoch int64) bool {
	r := b.img.Brokers[id]
	return r != nil && !r.Fenced && !r.InControlledShutdown && (brokerEpoch < 0 || r.Epoch == brokerEpoch)
}

// register sends a BrokerRegistration, retrying until it is accepted (a
// restarted broker is refused while its old session lives).
func (b *broker) register() {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.SetVersion(4)
	req.BrokerID, req.ClusterID = b.id, clusterID
	req.IncarnationID = [16]byte{byte(b.id), byte(b.inc), byte(b.inc >> 8), 0xab}
	req.Listeners = []kmsg.BrokerRegistrationRequestListener{{Name: "PLAINTEXT", Host: "sim", Port: uint16(9090 + b.id)}}
	req.Features = []kmsg.BrokerRegistrationRequestFeature{
		{Name: "metadata.version", MinSupportedVersion: 7, MaxSupportedVersion: controller.MetadataVersion}}
	req.PreviousBrokerEpoch = b.epoch
	id := b.s.nextID()
	b.hbReq = id
	b.s.sendControl(b.id, controllerID, fmt.Sprintf("registration of broker %d", b.id), func() {
		epoch, err := b.s.ctrl.c.RegisterBroker(req, b.s.now)
		b.s.sendControl(controllerID, b.id, fmt.Sprintf("registration answer (epoch %d, %v)", epoch, err), func() { b.registered(id, epoch, err) })
	})
	b.s.after(rpcTimeout, b.id, "registration timeout", func() {
		if b.hbReq == id {
			b.register()
		}
	})
}

func (b *broker) registered(id uint64, epoch int64, err error) {
	if b.hbReq != id {
		return
	}
	b.hbReq = 0
	if err != nil {
		b.s.after(heartbeatEvery, b.id, "register again", b.register)
		return
	}
	b.epoch, b.fenced = epoch, true
	b.maybeLoad()
	b.heartbeat()
}

// maybeLoad loads the logs and replicas once registered and caught up with
// the metadata log to the broker epoch, as the server starts.
func (b *broker) maybeLoad() {
	if b.live || b.epoch < 0 || b.img.Offset < b.epoch {
		return
	}
	img := b.img
	err := b.logs.Load(func(tp log.TopicPartition) log.Config {
		return partition.LogConfig(b.parts.TopicConfig(img, tp.Topic))
	})
	if err != nil {
		b.s.fail("broker %d: loading logs: %v", b.id, err)
		return
	}
	b.live = true
	b.s.chk.loaded(b)
	b.s.after(hwCheckpointTick, b.id, "checkpoint high watermarks", b.checkpointHW)
	b.s.after(rpCheckpointTick, b.id, "checkpoint recovery points", b.checkpointRP)
	if err := b.parts.Load(img); err != nil {
		b.s.fail("broker %d: loading replicas: %v", b.id, err)
	}
}

// fetchMetadata fetches committed metadata batches from the controller,
// one request at a time, and applies them in order.
func (b *broker) fetchMetadata() {
	id, from := b.s.nextID(), b.next
	b.metaReq = id
	b.s.send(b.id, controllerID, "metadata fetch", func() {
		batches := b.s.ctrl.fetchMetadata(from)
		b.s.send(controllerID, b.id, fmt.Sprintf("metadata answer (%d batches from %d)", len(batches), from), func() {
			b.gotMetadata(id, from, batches)
		})
	})
	b.s.after(rpcTimeout, b.id, "metadata fetch timeout", func() {
		if b.metaReq == id {
			b.fetchMetadata()
		}
	})
}

func (b *broker) gotMetadata(id uint64, from int, batches []quorum.Committed) {
	if b.metaReq != id {
		return
	}
	b.metaReq = 0
	for i, c := range batches {
		if from+i != b.next {
			continue
		}
		if err := b.publish(c); err != nil {
			b.s.fail("broker %d: applying metadata at %d: %v", b.id, c.LastOffset, err)
			return
		}
		// An acks=all append may complete in one state and fail in the
		// next: answer it in the state that completed it.
		b.pollWaiters()
	}
	b.maybeLoad()
	b.s.after(metadataEvery, b.id, "metadata fetch", b.fetchMetadata)
}

// publish applies one committed batch, as the broker's publisher does.
func (b *broker) publish(c quorum.Committed) error {
	img, delta, err := b.img.Apply(c.Records, c.LastOffset)
	if err != nil {
		return err
	}
	b.img = img
	b.next++
	if mp := partOf(img); mp != nil && b.s.opts.Trace != nil {
		b.s.tracef("  broker %d applies metadata at %d: leader %d epoch %d partition epoch %d ISR %v", b.id, c.LastOffset,
			mp.Leader, mp.LeaderEpoch, mp.PartitionEpoch, mp.ISR)
	}
	if b.live {
		return b.parts.Apply(img, delta)
	}
	return nil
}

// heartbeat sends a heartbeat and schedules the next.
func (b *broker) heartbeat() {
	if b.epoch < 0 || b.hbReq != 0 {
		return
	}
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.SetVersion(2)
	req.BrokerID, req.BrokerEpoch, req.CurrentMetadataOffset = b.id, b.epoch, b.img.Offset
	if !b.live {
		req.CurrentMetadataOffset = -1
	}
	id := b.s.nextID()
	b.hbReq = id
	b.s.sendControl(b.id, controllerID, fmt.Sprintf("heartbeat of broker %d (epoch %d)", b.id, b.epoch), func() {
		resp, err := b.s.ctrl.c.BrokerHeartbeat(req, func() time.Time { return b.s.now })
		if !b.paused() && !b.s.isCut(b.id, controllerID) {
			b.silent = false
		}
		b.s.sendControl(controllerID, b.id, "heartbeat answer", func() { b.heartbeatAnswered(id, resp, err) })
	})
	b.s.after(rpcTimeout, b.id, "heartbeat timeout", func() {
		if b.hbReq == id {
			b.hbReq = 0
			b.heartbeat()
		}
	})
}

func (b *broker) heartbeatAnswered(id uint64, resp *kmsg.BrokerHeartbeatResponse, err error) {
	if b.hbReq != id {
		return
	}
	b.hbReq = 0
	if errors.Is(err, kerr.StaleBrokerEpoch) {
		// Fenced out of its registration: register again, as
		// lifecycle.run does (the replicas stay loaded).
		b.register()
		return
	}
	if err == nil {
		b.fenced = resp.IsFenced
		if !b.fenced && !b.replicating && b.live {
			b.replicating = true
			b.s.after(lagTimeMax/2, b.id, "ISR shrink check", b.shrinkTick)
			b.sendISR()
		}
	}
	b.s.after(heartbeatEvery, b.id, "heartbeat", b.heartbeat)
}

func (b *broker) shrinkTick() {
	b.parts.MaybeShrinkISRs()
	b.s.after(lagTimeMax/2, b.id, "ISR shrink check", b.shrinkTick)
}

// submitISR is the broker's Replication.AlterISR: the change queues (the
// latest per partition) for the sender.
func (b *broker) submitISR(p *partition.Partition, c partition.IsrChange) {
	b.s.chk.proposed(b.id, c)
	b.isrQueue = &isrItem{p: p, c: c}
	if b.replicating {
		b.s.after(0, b.id, "send AlterPartition", b.sendISR)
	}
}

// sendISR sends the queued change as an AlterPartition (v3), one at a
// time, as the server's isrSender does.
func (b *broker) sendISR() {
	if b.isrInflight != nil || b.isrQueue == nil {
		return
	}
	it := b.isrQueue
	b.isrQueue, b.isrInflight = nil, it
	id := b.s.nextID()
	b.isrReq = id
	req := kmsg.NewPtrAlterPartitionRequest()
	req.SetVersion(3)
	req.BrokerID, req.BrokerEpoch = b.id, b.epoch
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.TopicID = it.c.TopicID
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = it.c.TopicPartition.Partition, it.c.LeaderEpoch, it.c.PartitionEpoch
	var isr []int32
	for _, m := range it.c.ISR {
		rp.NewEpochISR = append(rp.NewEpochISR, kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{BrokerID: m.ID, BrokerEpoch: m.BrokerEpoch})
		isr = append(isr, m.ID)
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	label := fmt.Sprintf("AlterPartition from %d: ISR %v at epochs %d/%d", b.id, isr, it.c.LeaderEpoch, it.c.PartitionEpoch)
	pr := &proposal{isr: isr}
	b.s.proposals[id] = pr
	// The request reaches the controller before the sender gives up on
	// it, or never: weir (like Kafka's Partition.handleAlterPartitionError)
	// takes INELIGIBLE_REPLICA to mean the change was not applied, which
	// a send of it applied after a refused retry would contradict.
	pr.copies = b.s.sendWithin(b.id, controllerID, label, min(b.s.p.maxDelay, rpcTimeout/2), func() {
		if pr.copies--; pr.copies <= 0 {
			delete(b.s.proposals, id)
		}
		b.s.chk.inAlter = true
		resp, err := b.s.ctrl.c.AlterPartition(req)
		b.s.chk.inAlter = false
		b.s.send(controllerID, b.id, "AlterPartition answer", func() { b.isrAnswered(id, it, resp, err) })
	})
	if pr.copies == 0 {
		delete(b.s.proposals, id)
	}
	b.s.after(rpcTimeout, b.id, "AlterPartition timeout", func() {
		if b.isrReq == id {
			b.isrRetry(it)
		}
	})
}

// isrRetry puts back an undelivered change unless a newer one queued.
func (b *broker) isrRetry(it *isrItem) {
	b.isrReq, b.isrInflight = 0, nil
	if b.isrQueue == nil {
		b.isrQueue = it
	}
	b.s.after(isrBackoff, b.id, "send AlterPartition", b.sendISR)
}

func (b *broker) isrAnswered(id uint64, it *isrItem, resp *kmsg.AlterPartitionResponse, err error) {
	if b.isrReq != id {
		return
	}
	if err != nil {
		if errors.Is(err, kerr.StaleBrokerEpoch) || errors.Is(err, quorum.ErrNotLeader) {
			b.isrRetry(it) // retried: this broker re-registers
			return
		}
		it.p.IsrChangeDone(it.c, nil, err)
	} else {
		answered := false
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if rt.TopidID != it.c.TopicID || rp.Partition != it.c.TopicPartition.Partition {
					continue
				}
				answered = true
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					b.s.tracef("  AlterPartition refused: %v", err)
					it.p.IsrChangeDone(it.c, nil, err)
					continue
				}
				st := &partition.State{Leader: rp.LeaderID, LeaderEpoch: rp.LeaderEpoch, PartitionEpoch: rp.PartitionEpoch, ISR: rp.ISR,
					Recovering: rp.LeaderRecoveryState == 1}
				it.p.IsrChangeDone(it.c, st, nil)
			}
		}
		if !answered {
			it.p.IsrChangeDone(it.c, nil, errors.New("no answer from the controller"))
		}
	}
	b.isrReq, b.isrInflight = 0, nil
	b.sendISR()
}

// brokerFetcher is the broker's partition.Fetcher: it tracks the leader
// followed and starts fetching.
type brokerFetcher broker

// Follow implements partition.Fetcher. A new leader gets a new fetch
// session: an answer to the old one is dropped, as the real fetcher for the
// old leader is stopped.
func (f *brokerFetcher) Follow(_ *partition.Partition, leader int32) {
	b := (*broker)(f)
	if b.follow != leader {
		b.follow, b.fetchReq, b.fetching = leader, 0, false
	}
	b.scheduleFetch(0)
}

// Unfollow implements partition.Fetcher.
func (f *brokerFetcher) Unfollow(log.TopicPartition) {
	b := (*broker)(f)
	b.follow, b.fetchReq, b.fetching = -1, 0, false
}
