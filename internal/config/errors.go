package config

import "fmt"

// ErrorKind classifies an [*Error].
type ErrorKind int

const (
	// InvalidValue: the value cannot be parsed as the key's type or fails the
	// key's validator.
	InvalidValue ErrorKind = iota + 1
	// UnknownKey: the key is not a known configuration of the expected kind.
	UnknownKey
	// NotDynamic: the key exists but cannot be changed at runtime (or not at
	// the requested level).
	NotDynamic
	// InvalidCombination: each value is fine on its own but a cross-key rule
	// is violated.
	InvalidCombination
	// Unsupported: the setting asks for something weir does not implement
	// (TLS, SASL, an authorizer, ...); Reason says what weir supports.
	Unsupported
)

// Error describes one configuration problem. Its message always names the
// configuration key. Several errors are combined with errors.Join; use
// errors.As to get at the first one.
type Error struct {
	Kind   ErrorKind
	Name   string // configuration key
	Value  string // offending value; empty for UnknownKey and NotDynamic
	Reason string // what is expected, in plain words
	hidden bool   // value is sensitive and must not be printed
}

func (e *Error) Error() string {
	switch e.Kind {
	case InvalidValue:
		v := fmt.Sprintf("%q", e.Value)
		if e.hidden {
			v = "[hidden]"
		}
		return fmt.Sprintf("invalid value %s for configuration %s: %s", v, e.Name, e.Reason)
	case UnknownKey:
		if e.Reason != "" {
			return fmt.Sprintf("unknown configuration %q: %s", e.Name, e.Reason)
		}
		return fmt.Sprintf("unknown configuration %q", e.Name)
	case NotDynamic:
		return fmt.Sprintf("configuration %s %s", e.Name, e.Reason)
	case Unsupported:
		v := fmt.Sprintf("%q", e.Value)
		if e.hidden {
			v = "[hidden]"
		}
		return fmt.Sprintf("unsupported configuration %s=%s: %s", e.Name, v, e.Reason)
	default:
		return fmt.Sprintf("invalid configuration %s: %s", e.Name, e.Reason)
	}
}

func invalidValue(d *Def, value, reason string) *Error {
	return &Error{Kind: InvalidValue, Name: d.Name, Value: value, Reason: reason, hidden: d.Sensitive()}
}

func combinationError(name, format string, args ...any) *Error {
	return &Error{Kind: InvalidCombination, Name: name, Reason: fmt.Sprintf(format, args...)}
}

func unsupported(name, value, reason string, hidden bool) *Error {
	return &Error{Kind: Unsupported, Name: name, Value: value, Reason: reason, hidden: hidden}
}
