package group

import "sort"

// groupManager holds the groups, classic (join.go, sync.go, heartbeat.go,
// leave.go) and of the consumer protocol (consumer_*.go), and answers the
// requests about them, as Kafka's GroupMetadataManager. Committed offsets
// are the offsetManager's; a group's records and timers are its own.
type groupManager struct {
	*base
	byID map[string]*group

	// topics are the broker's topics, as the last SetTopics gave them.
	topics topicImage

	// settings are the groups' own settings (their GROUP configs), as
	// SetGroupSettings gave them; a group absent has none.
	settings map[string]GroupSettings

	// offsets are the groups' offsets (the offsetManager).
	offsets offsetHolder
}

// offsetHolder is what the groupManager knows of offsets: whether a
// group holds any (a consumer group whose creation is undone stays, as an
// Empty classic group, if it does), and that they go with a group it
// forgets.
type offsetHolder interface {
	holds(groupID string) bool
	forget(groupID string)
}

func newGroupManager(b *base) *groupManager {
	return &groupManager{base: b, byID: make(map[string]*group)}
}

// createSimple makes id an Empty group without protocol type, as a first
// offset commit does (a "simple" group that uses Kafka only for offsets);
// it stays unlogged until one of the commit's records persists.
func (gm *groupManager) createSimple(id string, p int32) *group {
	g := newGroup(id, p, gm.out.NowMs())
	g.unlogged = true
	gm.byID[id] = g
	gm.touch(id)
	return g
}

// forget removes g, and its offsets, with no tombstone.
func (gm *groupManager) forget(g *group) {
	delete(gm.byID, g.id)
	gm.offsets.forget(g.id)
	gm.touch(g.id)
}

// sortedGroups returns the groups in id order, for deterministic sweeps.
func (gm *groupManager) sortedGroups(keep func(*group) bool) []*group {
	var gs []*group
	for _, g := range gm.byID {
		if keep == nil || keep(g) {
			gs = append(gs, g)
		}
	}
	sort.Slice(gs, func(i, j int) bool { return gs[i].id < gs[j].id })
	return gs
}

// live reports whether g is still the group the coordinator serves under
// its id (not deleted, unloaded or replaced since a callback was made).
func (gm *groupManager) live(g *group) bool { return gm.byID[g.id] == g }

// loaded serves a group rebuilt by a load: its members get a fresh
// session, a consumer group's timers restart, and a classic group over
// group.max.size rebalances.
func (gm *groupManager) loaded(g *group) {
	gm.byID[g.id] = g
	gm.touch(g.id)
	if g.consumer != nil {
		gm.cgRestoreTimers(g)
	}
	for _, m := range g.members {
		gm.scheduleSession(g, m, ms(int64(m.sessionTimeoutMs)))
	}
	if len(g.members) > gm.cfg.MaxSize {
		gm.prepareRebalance(g)
	}
}

// dropped answers with code the JoinGroup and SyncGroup requests waiting
// in groups forgotten by an unload.
func (gm *groupManager) dropped(gs []*group, code int16) {
	for _, g := range gs {
		for _, m := range g.members {
			if w := m.join; w != nil {
				m.join = nil
				gm.out.Respond(w.token, joinError(w.version, code, m.id))
			}
			if w := m.sync; w != nil {
				m.sync = nil
				gm.out.Respond(w.token, syncError(w.version, code))
			}
		}
	}
}
