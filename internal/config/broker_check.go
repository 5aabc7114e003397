package config

import (
	"maps"
	"net"
	"strconv"
	"strings"
)

// check resolves listeners and runs the cross-key rules Kafka applies in
// KafkaConfig validation (listeners, KRaft roles and quorum, log settings,
// replica fetching, group timeouts), plus a few weir sanity checks and the
// refusal of security protocols weir does not implement. It returns every
// violation.
func (b *Broker) check() []error {
	var errs []error
	add := func(name, format string, args ...any) {
		errs = append(errs, combinationError(name, format, args...))
	}

	b.resolveListeners(add)
	errs = append(errs, b.checkSSL()...)
	errs = append(errs, b.checkSASL()...)
	b.checkRoles(add)
	b.checkLog(add)

	g := getter(b.Values)
	if b.ReplicaFetchWaitMax > b.ReplicaLagTimeMax {
		add("replica.fetch.wait.max.ms", "must be at most replica.lag.time.max.ms (%d) to keep followers in the ISR", b.ReplicaLagTimeMax.Milliseconds())
	}
	if b.ReplicaFetchWaitMax > b.ReplicaSocketTimeout {
		add("replica.socket.timeout.ms", "must be at least replica.fetch.wait.max.ms (%d)", b.ReplicaFetchWaitMax.Milliseconds())
	}
	if b.BrokerHeartbeatInterval >= b.BrokerSessionTimeout {
		add("broker.heartbeat.interval.ms", "must be less than broker.session.timeout.ms (%d)", b.BrokerSessionTimeout.Milliseconds())
	}
	if b.GroupMinSessionTimeout > b.GroupMaxSessionTimeout {
		add("group.min.session.timeout.ms", "must be at most group.max.session.timeout.ms (%d)", b.GroupMaxSessionTimeout.Milliseconds())
	}
	orderedTriple := func(lo, mid, hi string) {
		l, m, h := g.i64(lo), g.i64(mid), g.i64(hi)
		if h < l {
			add(hi, "must be greater than or equal to %s (%d)", lo, l)
		}
		if m < l {
			add(mid, "must be greater than or equal to %s (%d)", lo, l)
		}
		if m > h {
			add(mid, "must be less than or equal to %s (%d)", hi, h)
		}
	}
	orderedTriple("group.consumer.min.heartbeat.interval.ms", "group.consumer.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms")
	orderedTriple("group.consumer.min.session.timeout.ms", "group.consumer.session.timeout.ms", "group.consumer.max.session.timeout.ms")
	return errs
}

// effectiveProtocolMap returns listener.security.protocol.map; when the key
// was not set explicitly, controller listeners without a mapping default to
// PLAINTEXT unless SSL or SASL listener names are in use (Kafka's rule).
func (b *Broker) effectiveProtocolMap() map[string]string {
	m, _ := ParseSecurityProtocolMap(b.Values[KeyListenerSecurityMap])
	if b.Set[KeyListenerSecurityMap] {
		return m
	}
	secure := func(name string) bool { return name != "PLAINTEXT" && contains(securityProtocols, name) }
	for _, n := range b.ControllerListenerNames {
		if secure(n) {
			return m
		}
	}
	ls, _ := ParseListeners(b.Values[KeyListeners])
	for _, l := range ls {
		if secure(l.Name) {
			return m
		}
	}
	for _, n := range b.ControllerListenerNames {
		if _, ok := m[n]; !ok {
			m[n] = "PLAINTEXT"
		}
	}
	return m
}

// resolveListeners fills Listeners, AdvertisedListeners and
// ListenerSecurityProtocols and checks names, ports and protocols.
func (b *Broker) resolveListeners(add func(string, string, ...any)) {
	b.ListenerSecurityProtocols = b.effectiveProtocolMap()
	withProtocol := func(key string, ls []Listener) []Listener {
		for i := range ls {
			p, ok := b.ListenerSecurityProtocols[ls[i].Name]
			if !ok {
				add(key, "no security protocol is defined for listener %s in %s", ls[i].Name, KeyListenerSecurityMap)
			}
			ls[i].SecurityProtocol = p
		}
		return ls
	}

	listeners, _ := ParseListeners(b.Values[KeyListeners])
	b.Listeners = withProtocol(KeyListeners, listeners)
	names := map[string]bool{}
	byPort := map[int][]Listener{}
	for _, l := range b.Listeners {
		if names[l.Name] {
			add(KeyListeners, "listener name %s is used more than once", l.Name)
		}
		names[l.Name] = true
		if l.Port != 0 {
			byPort[l.Port] = append(byPort[l.Port], l)
		}
	}
	for port, ls := range byPort {
		if len(ls) > 1 && !(len(ls) == 2 && ipv4AndIPv6(ls[0].Host, ls[1].Host)) {
			add(KeyListeners, "port %d is used by more than one listener (allowed only for one IPv4 and one IPv6 address)", port)
		}
	}

	if raw, set := b.Values[KeyAdvertisedListeners]; set {
		adv, _ := ParseListeners(raw)
		b.AdvertisedListeners = withProtocol(KeyAdvertisedListeners, adv)
	} else if b.HasRole("broker") {
		for _, l := range b.Listeners {
			if !contains(b.ControllerListenerNames, l.Name) {
				b.AdvertisedListeners = append(b.AdvertisedListeners, l)
			}
		}
	}
	for _, l := range b.AdvertisedListeners {
		if l.Host == "0.0.0.0" {
			add(KeyAdvertisedListeners, "listener %s cannot advertise the non-routable address 0.0.0.0; set advertised.listeners to a routable host", l.Name)
		}
	}
}

func ipv4AndIPv6(a, b string) bool {
	ia, ib := net.ParseIP(a), net.ParseIP(b)
	if ia == nil || ib == nil {
		return false
	}
	return (ia.To4() != nil) != (ib.To4() != nil)
}

// checkRoles applies Kafka's KRaft rules for broker-only, controller-only and
// combined nodes.
func (b *Broker) checkRoles(add func(string, string, ...any)) {
	isBroker, isController := b.HasRole("broker"), b.HasRole("controller")
	voters := map[int32]bool{}
	for _, v := range b.QuorumVoters {
		if voters[v.ID] {
			add(KeyQuorumVoters, "voter id %d appears more than once", v.ID)
		}
		voters[v.ID] = true
	}
	if len(b.QuorumVoters) == 0 && len(b.QuorumBootstrapServers) == 0 {
		add(KeyQuorumVoters, "either %s or %s must be set", KeyQuorumVoters, KeyQuorumBootstrapServers)
	}
	if len(b.QuorumBootstrapServers) > 0 && !b.bootstrapIsVoters() {
		add(KeyQuorumBootstrapServers, "must name exactly the endpoints of %s (%s): weir supports only a static controller quorum; dynamic quorums (KIP-853) are not implemented yet",
			KeyQuorumVoters, b.Values[KeyQuorumVoters])
	}
	if b.Set[KeyInterBrokerListenerName] && b.Set[KeyInterBrokerProtocol] {
		add(KeyInterBrokerListenerName, "only one of %s and %s may be set", KeyInterBrokerListenerName, KeyInterBrokerProtocol)
	}
	listenerNames := map[string]bool{}
	for _, l := range b.Listeners {
		listenerNames[l.Name] = true
	}

	if isController {
		if len(b.QuorumVoters) > 0 && !voters[b.NodeID] {
			add(KeyNodeID, "node id %d must be one of the %s when %s contains controller", b.NodeID, KeyQuorumVoters, KeyProcessRoles)
		}
		for _, n := range b.ControllerListenerNames {
			if !listenerNames[n] {
				add(KeyControllerListenerNames, "controller listener %s must appear in %s when running the controller role", n, KeyListeners)
			}
		}
	}
	if isController && !isBroker {
		if _, set := b.Values[KeyAdvertisedListeners]; set {
			add(KeyAdvertisedListeners, "must not be set when %s=controller", KeyProcessRoles)
		}
		for _, l := range b.Listeners {
			if !contains(b.ControllerListenerNames, l.Name) {
				add(KeyListeners, "listener %s is not a controller listener; only %s may be used when %s=controller",
					l.Name, strings.Join(b.ControllerListenerNames, ","), KeyProcessRoles)
			}
		}
	}
	if isBroker && !isController {
		if voters[b.NodeID] {
			add(KeyNodeID, "node id %d must not be one of the %s when %s=broker", b.NodeID, KeyQuorumVoters, KeyProcessRoles)
		}
		for _, n := range b.ControllerListenerNames {
			if listenerNames[n] {
				add(KeyListeners, "must not contain controller listener %s when %s=broker", n, KeyProcessRoles)
			}
			if _, ok := b.ListenerSecurityProtocols[n]; !ok {
				add(KeyListenerSecurityMap, "controller listener %s has no security protocol mapping", n)
			}
		}
	}
	if !isBroker {
		return
	}
	advertised := map[string]bool{}
	for _, l := range b.AdvertisedListeners {
		advertised[l.Name] = true
		if contains(b.ControllerListenerNames, l.Name) {
			add(KeyAdvertisedListeners, "must not contain controller listener %s: clients only talk to brokers", l.Name)
		}
		if !listenerNames[l.Name] {
			add(KeyAdvertisedListeners, "listener %s is not defined in %s", l.Name, KeyListeners)
		}
	}
	if len(b.AdvertisedListeners) == 0 {
		add(KeyAdvertisedListeners, "there must be at least one advertised (non-controller) listener")
	} else if !advertised[b.InterBrokerListenerName] {
		key := KeyInterBrokerListenerName
		if !b.Set[key] {
			key = KeyInterBrokerProtocol
		}
		add(key, "inter-broker listener %s must be one of the advertised listeners", b.InterBrokerListenerName)
	}
}

// bootstrapIsVoters reports whether controller.quorum.bootstrap.servers
// names the same endpoints as controller.quorum.voters: then the static
// quorum weir runs is the one the bootstrap servers lead to.
func (b *Broker) bootstrapIsVoters() bool {
	voters := map[string]bool{}
	for _, v := range b.QuorumVoters {
		voters[strings.ToLower(v.Address())] = true
	}
	servers := map[string]bool{}
	for _, s := range b.QuorumBootstrapServers {
		host, port, _ := splitHostPort(s)
		servers[strings.ToLower(net.JoinHostPort(host, strconv.Itoa(port)))] = true
	}
	return maps.Equal(voters, servers)
}

// checkLog applies Kafka's log configuration rules.
func (b *Broker) checkLog(add func(string, string, ...any)) {
	g := getter(b.Values)
	if len(b.LogDirs) == 0 {
		add(KeyLogDirs, "at least one log directory must be defined via log.dirs or log.dir")
	}
	if roll, ok := b.Values["log.roll.ms"]; ok {
		if n, _ := strconv.ParseInt(roll, 10, 64); n < 1 {
			add("log.roll.ms", "must be at least 1")
		}
	}
	if jitter, ok := b.Values["log.roll.jitter.ms"]; ok {
		if n, _ := strconv.ParseInt(jitter, 10, 64); n < 0 {
			add("log.roll.jitter.ms", "must be at least 0")
		}
	}
	if retention := b.LogRetentionMs(); retention == 0 {
		name := "log.retention.hours"
		for _, k := range []string{"log.retention.ms", "log.retention.minutes"} {
			if _, ok := b.Values[k]; ok {
				name = k
				break
			}
		}
		add(name, "retention must be unlimited (-1) or at least 1 ms")
	}
	if threads := g.i64("log.cleaner.threads"); threads > 0 && g.i64("log.cleaner.dedupe.buffer.size")/threads <= 1024*1024 {
		add("log.cleaner.dedupe.buffer.size", "must be more than 1 MiB per cleaner thread")
	}
	if lo, hi := g.i64("log.cleaner.min.compaction.lag.ms"), g.i64("log.cleaner.max.compaction.lag.ms"); lo > hi {
		add("log.cleaner.min.compaction.lag.ms", "(%d) must not be greater than log.cleaner.max.compaction.lag.ms (%d)", lo, hi)
	}
}

// LogRetentionMs returns the effective broker retention time in ms using
// Kafka's precedence log.retention.ms > log.retention.minutes >
// log.retention.hours; any negative value is -1 (unlimited).
func (b *Broker) LogRetentionMs() int64 {
	t := b.TopicDefaults()
	return t.RetentionMs
}
