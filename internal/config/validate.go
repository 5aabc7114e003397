package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// validator checks an already-typed value (bool, string, int64, float64 or
// []string). Its error text is the reason shown after the key and value; its
// String form describes the valid values in Kafka's notation.
type validator interface {
	validate(v any) error
	String() string
}

// numRange is Kafka's Range validator: an inclusive lower and/or upper bound.
type numRange struct {
	lo, hi       float64
	hasLo, hasHi bool
}

func atLeast(n int64) validator { return numRange{lo: float64(n), hasLo: true} }

func between(lo, hi int64) validator {
	return numRange{lo: float64(lo), hi: float64(hi), hasLo: true, hasHi: true}
}

func betweenFloat(lo, hi float64) validator {
	return numRange{lo: lo, hi: hi, hasLo: true, hasHi: true}
}

func (r numRange) validate(v any) error {
	var x float64
	switch n := v.(type) {
	case int64:
		x = float64(n)
	case float64:
		x = n
	default:
		return fmt.Errorf("not a number")
	}
	if r.hasLo && !r.hasHi && x < r.lo {
		return fmt.Errorf("value must be at least %s", num(r.lo))
	}
	if r.hasLo && r.hasHi {
		if x < r.lo {
			return fmt.Errorf("value must be no less than %s", num(r.lo))
		}
		if x > r.hi {
			return fmt.Errorf("value must be no more than %s", num(r.hi))
		}
	}
	return nil
}

func (r numRange) String() string {
	if r.hasHi {
		return "[" + num(r.lo) + ",...," + num(r.hi) + "]"
	}
	return "[" + num(r.lo) + ",...]"
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// oneOf accepts a string from a fixed set (Kafka's ValidString.in).
type oneOf []string

func in(values ...string) validator { return oneOf(values) }

func (o oneOf) validate(v any) error {
	s, _ := v.(string)
	for _, ok := range o {
		if s == ok {
			return nil
		}
	}
	return fmt.Errorf("string must be one of: %s", strings.Join(o, ", "))
}

func (o oneOf) String() string { return "[" + strings.Join(o, ", ") + "]" }

// listOf checks list values: no blank or duplicate elements, optionally no
// empty list, and optionally every element from a fixed set (Kafka's
// ValidList.in and ValidList.anyNonDuplicateValues).
type listOf struct {
	allowEmpty bool
	values     []string // nil: any value
}

func listIn(allowEmpty bool, values ...string) validator {
	return listOf{allowEmpty: allowEmpty, values: values}
}

func nonDuplicateList(allowEmpty bool) validator { return listOf{allowEmpty: allowEmpty} }

func (l listOf) validate(v any) error {
	items, _ := v.([]string)
	if len(items) == 0 && !l.allowEmpty {
		return errors.New("the list must not be empty")
	}
	seen := make(map[string]bool, len(items))
	for _, it := range items {
		if it == "" {
			return errors.New("the list must not contain blank elements")
		}
		if seen[it] {
			return fmt.Errorf("duplicate element %q", it)
		}
		seen[it] = true
		if l.values != nil && !contains(l.values, it) {
			return fmt.Errorf("element %q is not one of: %s", it, strings.Join(l.values, ", "))
		}
	}
	return nil
}

func (l listOf) String() string {
	if l.values == nil {
		if l.allowEmpty {
			return "list of unique values"
		}
		return "non-empty list of unique values"
	}
	return "[" + strings.Join(l.values, ", ") + "]"
}

// check wraps a function with a description of its valid values.
type check struct {
	desc string
	fn   func(v any) error
}

func (c check) validate(v any) error { return c.fn(v) }
func (c check) String() string       { return c.desc }

// gzipLevel accepts Deflate's default (-1) or an explicit level 1-9.
var gzipLevel validator = check{"[1,...,9] or -1", func(v any) error {
	n, _ := v.(int64)
	if n == -1 || (n >= 1 && n <= 9) {
		return nil
	}
	return errors.New("value must be -1 or between 1 and 9")
}}

// eachElement builds a list validator that also applies fn to every element.
func eachElement(allowEmpty bool, desc string, fn func(string) error) validator {
	base := nonDuplicateList(allowEmpty)
	return check{desc, func(v any) error {
		if err := base.validate(v); err != nil {
			return err
		}
		for _, it := range v.([]string) {
			if err := fn(it); err != nil {
				return err
			}
		}
		return nil
	}}
}

var listenersValidator = eachElement(false, "list of NAME://host:port", func(s string) error {
	_, err := ParseListener(s)
	return err
})

var votersValidator = eachElement(true, "list of id@host:port", func(s string) error {
	_, err := ParseVoter(s)
	return err
})

var bootstrapServersValidator = eachElement(true, "list of host:port", func(s string) error {
	_, _, err := splitHostPort(s)
	return err
})

var metricsListenerValidator validator = check{"empty, host:port or http://host:port", func(v any) error {
	_, err := ParseMetricsListener(v.(string))
	return err
}}

var consoleListenerValidator validator = check{"empty, host:port or http://host:port", func(v any) error {
	_, err := ParseConsoleListener(v.(string))
	return err
}}

var protocolMapValidator validator = check{"list of LISTENER:PROTOCOL", func(v any) error {
	_, err := ParseSecurityProtocolMap(v.(string))
	return err
}}

// throttledReplicas accepts "*" alone or a list of partition:broker pairs.
var throttledReplicas validator = check{"[partitionId]:[brokerId],[partitionId]:[brokerId],... or *", func(v any) error {
	items := v.([]string)
	if len(items) == 1 && items[0] == "*" {
		return nil
	}
	for _, it := range items {
		p, b, ok := strings.Cut(it, ":")
		if !ok || !isDigits(p) || !isDigits(b) {
			return fmt.Errorf("element %q is not of the form partitionId:brokerId (or use * alone)", it)
		}
	}
	return nil
}}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ParseConnectionOverrides parses max.connections.per.ip.overrides:
// comma-separated host:count pairs (an IP address or a host name, resolved
// by the caller) with counts of at least 0.
func ParseConnectionOverrides(s string) (map[string]int, error) {
	out := map[string]int{}
	for _, it := range strings.Split(s, ",") {
		it = strings.TrimSpace(it)
		if it == "" {
			continue
		}
		i := strings.LastIndex(it, ":")
		if i <= 0 {
			return nil, fmt.Errorf("%q is not of the form host:count", it)
		}
		n, err := strconv.Atoi(strings.TrimSpace(it[i+1:]))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q is not of the form host:count with a count of at least 0", it)
		}
		out[strings.Trim(strings.TrimSpace(it[:i]), "[]")] = n
	}
	return out, nil
}

var connectionOverridesValidator validator = check{"list of host:count", func(v any) error {
	_, err := ParseConnectionOverrides(v.(string))
	return err
}}
