package config

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Type is a configuration value type. The numeric values equal the ConfigType
// field of Kafka's DescribeConfigs response (v3+).
type Type int8

// Configuration types, numbered as on the wire.
const (
	TypeUnknown  Type = 0
	TypeBoolean  Type = 1
	TypeString   Type = 2
	TypeInt      Type = 3
	TypeShort    Type = 4
	TypeLong     Type = 5
	TypeDouble   Type = 6
	TypeList     Type = 7
	TypeClass    Type = 8
	TypePassword Type = 9
)

var typeNames = [...]string{"UNKNOWN", "BOOLEAN", "STRING", "INT", "SHORT", "LONG", "DOUBLE", "LIST", "CLASS", "PASSWORD"}

// String returns Kafka's upper-case name of the type, e.g. "INT".
func (t Type) String() string {
	if t >= 0 && int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("Type(%d)", int8(t))
}

// Source tells where a configuration value came from. The numeric values equal
// Kafka's DescribeConfigs ConfigSource.
type Source int8

// Configuration sources, numbered as on the wire.
const (
	SourceUnknown              Source = 0
	SourceDynamicTopic         Source = 1 // DYNAMIC_TOPIC_CONFIG
	SourceDynamicBroker        Source = 2 // DYNAMIC_BROKER_CONFIG
	SourceDynamicDefaultBroker Source = 3 // DYNAMIC_DEFAULT_BROKER_CONFIG
	SourceStaticBroker         Source = 4 // STATIC_BROKER_CONFIG
	SourceDefault              Source = 5 // DEFAULT_CONFIG
	SourceDynamicBrokerLogger  Source = 6 // DYNAMIC_BROKER_LOGGER_CONFIG
	SourceClientMetrics        Source = 7 // CLIENT_METRICS_CONFIG
	SourceGroup                Source = 8 // GROUP_CONFIG
)

var sourceNames = [...]string{"UNKNOWN", "DYNAMIC_TOPIC_CONFIG", "DYNAMIC_BROKER_CONFIG",
	"DYNAMIC_DEFAULT_BROKER_CONFIG", "STATIC_BROKER_CONFIG", "DEFAULT_CONFIG", "DYNAMIC_BROKER_LOGGER_CONFIG",
	"CLIENT_METRICS_CONFIG", "GROUP_CONFIG"}

// String returns Kafka's name of the source, e.g. "STATIC_BROKER_CONFIG".
func (s Source) String() string {
	if s >= 0 && int(s) < len(sourceNames) {
		return sourceNames[s]
	}
	return fmt.Sprintf("Source(%d)", int8(s))
}

// UpdateMode tells whether and how a broker key can change at runtime, as in
// Kafka's DynamicBrokerConfig.
type UpdateMode int8

const (
	// ReadOnly keys are read from server.properties at startup only.
	ReadOnly UpdateMode = iota
	// PerBroker keys can be updated dynamically for one broker only.
	PerBroker
	// ClusterWide keys can be updated for one broker or as a cluster-wide
	// default.
	ClusterWide
)

// String returns the name Kafka's documentation uses: "read-only",
// "per-broker" or "cluster-wide".
func (m UpdateMode) String() string {
	switch m {
	case PerBroker:
		return "per-broker"
	case ClusterWide:
		return "cluster-wide"
	default:
		return "read-only"
	}
}

// Support tells what weir does with a key's value.
type Support int8

const (
	// Honoured keys take effect as in Kafka.
	Honoured Support = iota
	// Ignored keys are accepted, so that Kafka configuration files load, but
	// have no effect; Def.Reason says why that is harmless (JVM thread pools,
	// tuning of machinery weir does not have). Setting one at start-up
	// yields a warning.
	Ignored
	// Refused keys name features weir does not implement. Any value other
	// than Kafka's default stops start-up and is refused as a dynamic or
	// topic update; Def.Reason says what weir supports instead. Kafka's
	// default changes nothing and is accepted at start-up with a warning.
	Refused
)

// String returns "honoured", "ignored" or "refused".
func (s Support) String() string {
	switch s {
	case Ignored:
		return "ignored"
	case Refused:
		return "refused"
	default:
		return "honoured"
	}
}

// Synonym names a broker key that supplies the default of a topic key.
type Synonym struct {
	Name string
	// Scale converts the broker key's unit to the topic key's unit: 1 for the
	// same unit, 60000 for minutes to milliseconds, 3600000 for hours.
	Scale int64
}

// Def describes one configuration key. Defs live in immutable registries;
// treat them, including the Synonyms slice, as read-only.
type Def struct {
	Name string
	Type Type
	// Default is the normalized default value. It is meaningful only when
	// HasDefault is true; otherwise the default is Kafka's null (no value).
	Default    string
	HasDefault bool
	Doc        string // one-line description
	// Update is the broker key's dynamic update mode in weir: Kafka's, or
	// ReadOnly where weir reads the key only at start-up. It is ReadOnly
	// (zero) for topic keys, which can always be altered per topic.
	Update UpdateMode
	// Synonyms lists, for topic keys, the broker keys that provide the
	// server-side default, highest priority first (Kafka's order).
	Synonyms []Synonym
	// Support is what weir does with the value; Reason explains Ignored
	// and Refused keys.
	Support Support
	Reason  string
	// KafkaUpdate is Kafka's update mode. It differs from Update for keys
	// Kafka can change at runtime but weir reads only at start-up.
	KafkaUpdate UpdateMode

	validator validator
	// negInfinite maps every negative value to -1 (Kafka does so for the
	// effective retention time).
	negInfinite bool
	// startupOnly marks keys whose Update was narrowed to ReadOnly.
	startupOnly bool
}

// Sensitive reports whether the value must be hidden (PASSWORD type).
func (d *Def) Sensitive() bool { return d.Type == TypePassword }

// Dynamic reports whether the broker key can be updated at runtime.
func (d *Def) Dynamic() bool { return d.Update != ReadOnly }

// ValidValues describes the accepted values in Kafka's notation, e.g.
// "[1,...]", or "" when any value of the type is accepted.
func (d *Def) ValidValues() string {
	if d.validator == nil {
		return ""
	}
	return d.validator.String()
}

// Normalize parses raw as the key's type, validates it and returns the
// canonical string form. Errors are *Error with Kind InvalidValue.
func (d *Def) Normalize(raw string) (string, error) {
	v, err := d.parse(raw)
	if err != nil {
		return "", err
	}
	return formatValue(d.Type, v), nil
}

// parse converts raw to the Go representation of the key's type (bool,
// string, int64, float64 or []string) and runs the validator.
func (d *Def) parse(raw string) (any, error) {
	v, reason := parseTyped(d.Type, raw)
	if reason != "" {
		return nil, invalidValue(d, raw, reason)
	}
	if d.validator != nil {
		if err := d.validator.validate(v); err != nil {
			return nil, invalidValue(d, raw, err.Error())
		}
	}
	return v, nil
}

// parseTyped parses raw following Kafka's ConfigDef rules: surrounding
// whitespace is ignored, booleans are case-insensitive, lists are
// comma-separated with whitespace around commas ignored and "" is the empty
// list. It returns a non-empty reason on failure.
func parseTyped(t Type, raw string) (any, string) {
	s := strings.TrimSpace(raw)
	switch t {
	case TypeBoolean:
		switch strings.ToLower(s) {
		case "true":
			return true, ""
		case "false":
			return false, ""
		}
		return nil, "expected value to be either true or false"
	case TypeShort, TypeInt, TypeLong:
		bits := map[Type]int{TypeShort: 16, TypeInt: 32, TypeLong: 64}[t]
		n, err := strconv.ParseInt(s, 10, bits)
		if err != nil {
			return nil, "not a number of type " + t.String()
		}
		return n, ""
	case TypeDouble:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, "not a number of type DOUBLE"
		}
		return f, ""
	case TypeList:
		if s == "" {
			return []string{}, ""
		}
		parts := strings.Split(s, ",")
		for i := range parts {
			parts[i] = strings.TrimSpace(parts[i])
		}
		return parts, ""
	case TypeString, TypeClass, TypePassword:
		return s, ""
	}
	return nil, "unsupported type " + t.String()
}

// formatValue renders a parsed value the way Kafka's ConfigDef.convertToString
// does.
func formatValue(t Type, v any) string {
	switch x := v.(type) {
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return javaDouble(x)
	case []string:
		return strings.Join(x, ",")
	case string:
		return x
	}
	return fmt.Sprint(v)
}

// javaDouble formats f like Java's Double.toString: plain decimal notation
// with at least one fractional digit for magnitudes in [1e-3, 1e7), otherwise
// scientific notation such as "1.7976931348623157E308".
func javaDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	if a := math.Abs(f); a == 0 || (a >= 1e-3 && a < 1e7) {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(s, "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}

// registry is an immutable, name-indexed set of definitions.
type registry struct {
	defs   []Def
	byName map[string]*Def
}

func newRegistry(rows []Def) *registry {
	r := &registry{defs: rows, byName: make(map[string]*Def, len(rows))}
	sort.Slice(r.defs, func(i, j int) bool { return r.defs[i].Name < r.defs[j].Name })
	for i := range r.defs {
		d := &r.defs[i]
		if _, dup := r.byName[d.Name]; dup {
			panic("config: duplicate definition " + d.Name)
		}
		if (d.Support == Honoured) != (d.Reason == "") {
			panic("config: " + d.Name + ": ignored and refused keys, and only they, need a reason")
		}
		if !d.startupOnly {
			d.KafkaUpdate = d.Update
		}
		if d.HasDefault {
			norm, err := d.Normalize(d.Default)
			if err != nil {
				panic("config: bad default: " + err.Error())
			}
			d.Default = norm
		}
		r.byName[d.Name] = d
	}
	return r
}

func (r *registry) all() []Def {
	out := make([]Def, len(r.defs))
	copy(out, r.defs)
	return out
}

// BrokerDef returns the definition of broker key name.
func BrokerDef(name string) (Def, bool) {
	d, ok := brokerRegistry.byName[name]
	if !ok {
		return Def{}, false
	}
	return *d, true
}

// TopicDef returns the definition of topic key name.
func TopicDef(name string) (Def, bool) {
	d, ok := topicRegistry.byName[name]
	if !ok {
		return Def{}, false
	}
	return *d, true
}

// BrokerDefs returns all broker key definitions sorted by name.
func BrokerDefs() []Def { return brokerRegistry.all() }

// TopicDefs returns all topic key definitions sorted by name.
func TopicDefs() []Def { return topicRegistry.all() }

// Table helpers: the registries in broker_defs*.go and topic_defs.go are
// written as one line per key using these constructors.

// nullDefault marks a key whose Kafka default is null.
const nullDefault = "\x00null"

func def(name string, t Type, dflt string, v validator, mode UpdateMode, doc string) Def {
	d := Def{Name: name, Type: t, Doc: doc, Update: mode, validator: v}
	if dflt != nullDefault {
		d.Default, d.HasDefault = dflt, true
	}
	return d
}

// ignored marks d as accepted without effect, for the given reason.
func ignored(d Def, reason string) Def {
	d.Support, d.Reason = Ignored, reason
	return d
}

// refused marks d as naming a feature weir does not implement: only
// Kafka's default is accepted, and never as a dynamic update.
func refused(d Def, reason string) Def {
	d.Support, d.Reason = Refused, reason
	return startupOnly(d)
}

// startupOnly narrows a key Kafka can update at runtime to one weir reads
// only at start-up.
func startupOnly(d Def) Def {
	d.KafkaUpdate, d.Update, d.startupOnly = d.Update, ReadOnly, true
	return d
}

// syn builds a same-unit synonym list.
func syn(names ...string) []Synonym {
	out := make([]Synonym, len(names))
	for i, n := range names {
		out[i] = Synonym{Name: n, Scale: 1}
	}
	return out
}

const (
	msPerMinute = int64(60 * 1000)
	msPerHour   = 60 * msPerMinute
)

// Frequently used default values.
var (
	maxLong = strconv.FormatInt(math.MaxInt64, 10)
	maxInt  = strconv.FormatInt(math.MaxInt32, 10)
)
