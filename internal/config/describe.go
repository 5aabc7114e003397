package config

// ConfigSynonym is one synonym of a DescribeConfigs entry.
type ConfigSynonym struct {
	Name   string
	Value  *string // nil for sensitive keys
	Source Source
}

// Entry is one configuration of a DescribeConfigs (v1-v4) response.
type Entry struct {
	Name        string
	Value       *string // nil for sensitive keys and for unset keys with a null default
	ReadOnly    bool
	Source      Source
	IsSensitive bool
	// Synonyms lists where values for this key exist, the effective one
	// first, then lower-precedence ones, as Kafka orders them: by level
	// (topic, dynamic per-broker, dynamic default, static, default), then by
	// synonym priority within a level.
	Synonyms      []ConfigSynonym
	Type          Type
	Documentation string
}

// DescribeTopic describes every topic key of a topic with the given
// per-topic overrides, dynamic per-broker and cluster-wide broker configs and
// static configuration (static may be nil). Values are the effective values
// computed as by ResolveTopic; Source is where the effective value came from.
// Entries are sorted by name and never read-only. Invalid or unknown
// overrides are ignored.
func DescribeTopic(topicOverrides, dynBroker, dynDefault map[string]string, static *Broker) []Entry {
	effective := ResolveTopic(topicOverrides, dynDefault, dynBroker, static)
	out := make([]Entry, 0, len(topicRegistry.defs))
	for i := range topicRegistry.defs {
		d := &topicRegistry.defs[i]
		e := Entry{
			Name:          d.Name,
			Value:         hide(d, effective.Values[d.Name]),
			Source:        SourceDefault,
			IsSensitive:   d.Sensitive(),
			Type:          d.Type,
			Documentation: d.Doc,
		}
		for _, c := range topicCandidates(d, topicOverrides, dynBroker, dynDefault, static) {
			if c.valid {
				e.Synonyms = append(e.Synonyms, ConfigSynonym{Name: c.name, Value: hide(d, c.value), Source: c.source})
			}
		}
		if len(e.Synonyms) > 0 {
			e.Source = e.Synonyms[0].Source
		}
		out = append(out, e)
	}
	return out
}

// DescribeBroker describes every broker key for this broker (a
// DescribeConfigs request naming the broker id), given its dynamic
// per-broker configs, the dynamic cluster-wide defaults and the static
// configuration (static may be nil). Each value is the key's own current
// value (dynamic per-broker > dynamic default > static > default); keys
// that, like Kafka's log.retention.hours, share a setting with other keys
// list those as synonyms from the key itself downwards. ReadOnly is true for
// keys that cannot be updated dynamically. Entries are sorted by name.
func DescribeBroker(dynBroker, dynDefault map[string]string, static *Broker) []Entry {
	levels := []brokerLevel{
		{SourceDynamicBroker, fromMap(dynBroker)},
		{SourceDynamicDefaultBroker, fromMap(dynDefault)},
		{SourceStaticBroker, func(n string) (string, bool) {
			if static == nil || !static.Set[n] {
				return "", false
			}
			return static.Values[n], true
		}},
		{SourceDefault, func(n string) (string, bool) {
			d := brokerRegistry.byName[n]
			return d.Default, d.HasDefault
		}},
	}
	out := make([]Entry, 0, len(brokerRegistry.defs))
	for i := range brokerRegistry.defs {
		out = append(out, describeBrokerKey(&brokerRegistry.defs[i], levels))
	}
	return out
}

// DescribeBrokerDefaults describes the dynamic cluster-wide broker defaults
// (a DescribeConfigs request with an empty broker name): one entry per known
// key in dynDefault, with DYNAMIC_DEFAULT_BROKER_CONFIG synonyms only.
// Unknown keys and invalid values are skipped. Entries are sorted by name.
func DescribeBrokerDefaults(dynDefault map[string]string) []Entry {
	levels := []brokerLevel{{SourceDynamicDefaultBroker, fromMap(dynDefault)}}
	var out []Entry
	for _, k := range sortedKeys(dynDefault) {
		d, ok := brokerRegistry.byName[k]
		if !ok {
			continue
		}
		if e := describeBrokerKey(d, levels); len(e.Synonyms) > 0 {
			out = append(out, e)
		}
	}
	return out
}

type brokerLevel struct {
	source Source
	lookup func(name string) (string, bool)
}

func fromMap(m map[string]string) func(string) (string, bool) {
	return func(n string) (string, bool) { v, ok := m[n]; return v, ok }
}

// describeBrokerKey builds the entry of one broker key following Kafka's
// ConfigHelper: collect every value of the key's synonym group, level by
// level, then drop the entries before the first one for the key itself.
func describeBrokerKey(d *Def, levels []brokerLevel) Entry {
	e := Entry{
		Name:          d.Name,
		ReadOnly:      !d.Dynamic(),
		Source:        SourceDefault,
		IsSensitive:   d.Sensitive(),
		Type:          d.Type,
		Documentation: d.Doc,
	}
	group := brokerSynonymGroups[d.Name]
	if group == nil {
		group = []string{d.Name}
	}
	var syns []ConfigSynonym
	var values []string
	for _, lv := range levels {
		for _, n := range group {
			raw, ok := lv.lookup(n)
			if !ok {
				continue
			}
			v, err := brokerRegistry.byName[n].Normalize(raw)
			if err != nil {
				continue
			}
			syns = append(syns, ConfigSynonym{Name: n, Value: hide(d, v), Source: lv.source})
			values = append(values, v)
		}
	}
	for i, s := range syns {
		if s.Name == d.Name {
			e.Synonyms = syns[i:]
			e.Source = s.Source
			e.Value = hide(d, values[i])
			break
		}
	}
	return e
}

// brokerSynonymGroups maps broker keys that are alternative spellings of one
// setting (log.retention.ms/minutes/hours, log.roll.ms/hours, ...) to the
// whole group in priority order, derived from the topic synonym table.
var brokerSynonymGroups = func() map[string][]string {
	groups := make(map[string][]string)
	for _, td := range topicRegistry.defs {
		if len(td.Synonyms) < 2 {
			continue
		}
		names := make([]string, len(td.Synonyms))
		for i, s := range td.Synonyms {
			names[i] = s.Name
		}
		for _, n := range names {
			groups[n] = names
		}
	}
	return groups
}()

func hide(d *Def, v string) *string {
	if d.Sensitive() {
		return nil
	}
	return &v
}
