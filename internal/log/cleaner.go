package log

// cleaner compacts logs with cleanup.policy=compact. (Being written.)
type cleaner struct{ m *Manager }

func newCleaner(m *Manager) *cleaner { return &cleaner{m: m} }

func (c *cleaner) cleanDirtiest() {}
