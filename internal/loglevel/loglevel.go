// Package loglevel gives weir's log/slog logging Kafka's dynamic broker
// loggers (KIP-412, the BROKER_LOGGER config resource): the root logger,
// and one logger per component, a component being the value of the
// "component" attribute a sub-logger is made with (lg.With("component",
// "group-coordinator")). A component's logger exists once the first such
// sub-logger is made, as a log4j logger exists once a class asks for it.
// Each has a level changed at run time; a component without its own level
// has the root's. Kafka's level names map onto slog's levels: TRACE is
// slog.LevelDebug-4, DEBUG, INFO, WARN and ERROR are slog's, FATAL is
// slog.LevelError+4 (weir logs nothing above ERROR, so FATAL silences a
// logger).
package loglevel

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
)

// Root is the root logger's name, as Kafka's.
const Root = "root"

// ValidLevels lists the level names SET accepts, as Kafka's
// RuntimeLoggerManager lists them in its error.
const ValidLevels = "DEBUG, ERROR, FATAL, INFO, TRACE, WARN"

var levels = []struct {
	name  string
	level slog.Level
}{
	{"TRACE", slog.LevelDebug - 4},
	{"DEBUG", slog.LevelDebug},
	{"INFO", slog.LevelInfo},
	{"WARN", slog.LevelWarn},
	{"ERROR", slog.LevelError},
	{"FATAL", slog.LevelError + 4},
}

// ParseLevel is the slog level of one of Kafka's level names (exact,
// upper case, as Kafka checks them).
func ParseLevel(name string) (slog.Level, bool) {
	for _, l := range levels {
		if l.name == name {
			return l.level, true
		}
	}
	return 0, false
}

// LevelName is the Kafka name of the highest of Kafka's levels at or
// below l (TRACE below TRACE).
func LevelName(l slog.Level) string {
	name := levels[0].name
	for _, k := range levels {
		if k.level <= l {
			name = k.name
		}
	}
	return name
}

// logger is one logger's level: own is whether it has one of its own
// (the root always has).
type logger struct {
	level atomic.Int64
	own   atomic.Bool
}

// Levels holds the loggers of one node and their levels.
type Levels struct {
	root *logger

	mu         sync.Mutex
	components map[string]*logger
}

// Wrap returns the loggers of a node and the handler to log through: h,
// with each record's level checked against its logger's. The root's
// initial level is the lowest of Kafka's levels h is enabled for.
func Wrap(h slog.Handler) (*Levels, slog.Handler) {
	def := levels[len(levels)-1].level
	for _, l := range levels {
		if h.Enabled(context.Background(), l.level) {
			def = l.level
			break
		}
	}
	ls := &Levels{root: &logger{}, components: map[string]*logger{}}
	ls.root.level.Store(int64(def))
	ls.root.own.Store(true)
	return ls, &handler{inner: h, ls: ls, lg: ls.root}
}

func (ls *Levels) component(name string) *logger {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	lg := ls.components[name]
	if lg == nil {
		lg = &logger{}
		ls.components[name] = lg
	}
	return lg
}

func (ls *Levels) lookup(name string) *logger {
	if name == Root {
		return ls.root
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.components[name]
}

func (ls *Levels) enabled(lg *logger, l slog.Level) bool {
	if lg.own.Load() {
		return int64(l) >= lg.level.Load()
	}
	return int64(l) >= ls.root.level.Load()
}

// Logger is a logger's name and its level's Kafka name.
type Logger struct{ Name, Level string }

// Loggers lists every logger with its effective level: the root first,
// then the components by name.
func (ls *Levels) Loggers() []Logger {
	root := slog.Level(ls.root.level.Load())
	out := []Logger{{Root, LevelName(root)}}
	ls.mu.Lock()
	names := make([]string, 0, len(ls.components))
	for n := range ls.components {
		names = append(names, n)
	}
	ls.mu.Unlock()
	slices.Sort(names)
	for _, n := range names {
		lg := ls.lookup(n)
		l := root
		if lg.own.Load() {
			l = slog.Level(lg.level.Load())
		}
		out = append(out, Logger{n, LevelName(l)})
	}
	return out
}

// Exists reports whether a logger of that name exists.
func (ls *Levels) Exists(name string) bool { return ls.lookup(name) != nil }

// Set gives an existing logger its own level; false if there is none of
// that name.
func (ls *Levels) Set(name string, l slog.Level) bool {
	lg := ls.lookup(name)
	if lg == nil {
		return false
	}
	lg.level.Store(int64(l))
	lg.own.Store(true)
	return true
}

// Unset takes a component's own level away: it follows the root's again.
// False if there is no component of that name (the root always has its
// own level).
func (ls *Levels) Unset(name string) bool {
	lg := ls.lookup(name)
	if lg == nil || lg == ls.root {
		return false
	}
	lg.own.Store(false)
	return true
}

// handler checks records against the level of the logger its sub-logger
// belongs to, and hands the enabled ones to inner, whatever inner's own
// level (Handle does not filter by level).
type handler struct {
	inner slog.Handler
	ls    *Levels
	lg    *logger
}

func (h *handler) Enabled(_ context.Context, l slog.Level) bool { return h.ls.enabled(h.lg, l) }

func (h *handler) Handle(ctx context.Context, r slog.Record) error { return h.inner.Handle(ctx, r) }

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	lg := h.lg
	for _, a := range attrs {
		if a.Key == "component" && a.Value.Kind() == slog.KindString {
			lg = h.ls.component(a.Value.String())
		}
	}
	return &handler{inner: h.inner.WithAttrs(attrs), ls: h.ls, lg: lg}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{inner: h.inner.WithGroup(name), ls: h.ls, lg: h.lg}
}
