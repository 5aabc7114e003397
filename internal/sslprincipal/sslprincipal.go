// Package sslprincipal maps the distinguished name of a TLS client's
// certificate to a principal name with Kafka's ssl.principal.mapping.rules
// (Kafka's SslPrincipalMapper): a comma-separated list of DEFAULT (the
// whole DN) and RULE:pattern/replacement/ rules, optionally ending /L or
// /U to lower- or upper-case the result. The first rule whose pattern
// matches the whole DN gives the name; the replacement is applied to every
// match of the pattern in the DN, with Java's replacement syntax ($n and
// ${name} for groups, \ escaping the next character; a $n naming a group
// the pattern lacks is literal text). Patterns are Go regular expressions
// (RE2), Java's syntax without back-references and look-around.
package sslprincipal

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Kafka's grammar of one rule, and of the list (both from
// SslPrincipalMapper; Go's leftmost-first matching follows Java's).
const rulePattern = `(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)`

var (
	ruleSplitter = regexp.MustCompile(`\s*(` + rulePattern + `)\s*(,\s*|$)`)
	ruleParser   = regexp.MustCompile(`^(?:` + rulePattern + `)`)
)

// Mapper maps DNs to principal names.
type Mapper struct {
	rules []rule
}

type rule struct {
	isDefault   bool
	re, whole   *regexp.Regexp // the pattern, and the pattern anchored at both ends
	replacement string
	lower       bool
	upper       bool
}

// ErrNoMatchingRule is returned when no rule applies to a DN (Kafka's
// NoMatchingRule): the connection cannot be given a principal.
var ErrNoMatchingRule = errors.New("no ssl.principal.mapping.rules rule applies")

// Parse parses ssl.principal.mapping.rules. Empty rules are ignored, as
// Kafka does; "" is no rule at all (no DN then maps).
func Parse(rules string) (*Mapper, error) {
	m := &Mapper{}
	for _, sm := range ruleSplitter.FindAllStringSubmatch(strings.TrimSpace(rules), -1) {
		text := sm[1]
		loc := ruleParser.FindStringSubmatchIndex(text)
		if loc == nil {
			return nil, fmt.Errorf("invalid rule: %s", text)
		}
		if loc[1] != len(text) {
			return nil, fmt.Errorf("invalid rule: `%s`, unmatched substring: `%s`", text, text[loc[1]:])
		}
		group := func(i int) (string, bool) {
			if loc[2*i] < 0 {
				return "", false
			}
			return text[loc[2*i]:loc[2*i+1]], true
		}
		if _, ok := group(1); ok {
			m.rules = append(m.rules, rule{isDefault: true})
			continue
		}
		pattern, ok := group(2)
		if !ok {
			continue // an empty rule
		}
		replacement, _ := group(4)
		flag, _ := group(6)
		re, err := regexp.Compile(pattern)
		if err != nil {
			return nil, fmt.Errorf("rule `%s`: pattern %q is not a regular expression weir can run (Go's RE2 syntax: no back-references or look-around): %v", text, pattern, err)
		}
		m.rules = append(m.rules, rule{re: re, whole: regexp.MustCompile(`\A(?:` + pattern + `)\z`),
			replacement: replacement, lower: flag == "L", upper: flag == "U"})
	}
	return m, nil
}

// Name returns the principal name of a DN (in RFC 2253 form): the result
// of the first rule that applies.
func (m *Mapper) Name(dn string) (string, error) {
	for _, r := range m.rules {
		if r.isDefault {
			return dn, nil
		}
		if !r.whole.MatchString(dn) {
			continue
		}
		name, err := r.apply(dn)
		if err != nil {
			return "", err
		}
		switch {
		case r.lower:
			name = strings.ToLower(name)
		case r.upper:
			name = strings.ToUpper(name)
		}
		return name, nil
	}
	return "", fmt.Errorf("%w to %s, rules %s", ErrNoMatchingRule, dn, m)
}

// String lists the rules as Kafka prints them: [RULE:pattern/replacement/L, DEFAULT].
func (m *Mapper) String() string {
	out := make([]string, len(m.rules))
	for i, r := range m.rules {
		out[i] = r.String()
	}
	return "[" + strings.Join(out, ", ") + "]"
}

func (r rule) String() string {
	if r.isDefault {
		return "DEFAULT"
	}
	s := "RULE:" + r.re.String() + "/" + r.replacement
	switch {
	case r.lower:
		s += "/L"
	case r.upper:
		s += "/U"
	}
	return s
}

// apply replaces every match of the pattern in dn by the expanded
// replacement.
func (r rule) apply(dn string) (string, error) {
	var b strings.Builder
	last := 0
	for _, loc := range r.re.FindAllStringSubmatchIndex(dn, -1) {
		b.WriteString(dn[last:loc[0]])
		if err := r.expand(&b, dn, loc); err != nil {
			return "", err
		}
		last = loc[1]
	}
	b.WriteString(dn[last:])
	return b.String(), nil
}

// expand writes the replacement for one match, read as Java's
// Matcher.appendReplacement does after Kafka has made a $n that names a
// missing group literal (when the pattern has groups at all).
func (r rule) expand(b *strings.Builder, s string, loc []int) error {
	groups := r.re.NumSubexp()
	write := func(g int) {
		if loc[2*g] >= 0 {
			b.WriteString(s[loc[2*g]:loc[2*g+1]])
		}
	}
	rep := r.replacement
	for i := 0; i < len(rep); i++ {
		c := rep[i]
		switch {
		case c == '\\':
			i++
			if i == len(rep) {
				return fmt.Errorf("replacement %q: character to be escaped is missing", rep)
			}
			b.WriteByte(rep[i])
		case c != '$':
			b.WriteByte(c)
		case i+1 < len(rep) && rep[i+1] == '{':
			end := strings.IndexByte(rep[i:], '}')
			if end < 0 {
				return fmt.Errorf("replacement %q: named capturing group is missing trailing '}'", rep)
			}
			name := rep[i+2 : i+end]
			g := r.re.SubexpIndex(name)
			if g < 0 {
				return fmt.Errorf("replacement %q: no group with name {%s}", rep, name)
			}
			write(g)
			i += end
		case i+1 < len(rep) && isDigit(rep[i+1]):
			i++
			g := int(rep[i] - '0')
			if g > groups {
				if groups > 0 {
					// Kafka escapes a reference to a missing group.
					b.WriteByte('$')
					b.WriteByte(rep[i])
					continue
				}
				return fmt.Errorf("replacement %q: no group %d", rep, g)
			}
			// Java takes further digits while they name a group.
			for i+1 < len(rep) && isDigit(rep[i+1]) && g*10+int(rep[i+1]-'0') <= groups {
				i++
				g = g*10 + int(rep[i]-'0')
			}
			write(g)
		default:
			return fmt.Errorf("replacement %q: illegal group reference", rep)
		}
	}
	return nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
