package sasl

import (
	"fmt"
	"strings"
)

// JAAS is one login module entry of a JAAS configuration value, as Kafka's
// sasl.jaas.config takes it:
//
//	org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="s3cret";
type JAAS struct {
	Module  string
	Flag    string // required, requisite, sufficient or optional
	Options map[string]string
}

// Kafka's login modules.
const (
	PlainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	ScramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
)

// ParseJAAS parses a value holding exactly one login module, as Kafka
// requires of sasl.jaas.config. Option values are bare words or quoted
// strings (with backslash escapes).
func ParseJAAS(s string) (JAAS, error) {
	p := jaasParser{s: s}
	j := JAAS{Options: map[string]string{}}
	j.Module = p.word()
	j.Flag = p.word()
	if j.Module == "" || j.Flag == "" {
		return JAAS{}, fmt.Errorf("expected a login module and a control flag")
	}
	switch j.Flag {
	case "required", "requisite", "sufficient", "optional":
	default:
		return JAAS{}, fmt.Errorf("invalid control flag %q", j.Flag)
	}
	for {
		p.space()
		if p.eat(';') {
			break
		}
		if p.done() {
			return JAAS{}, fmt.Errorf("the login module entry does not end with ';'")
		}
		k := p.key()
		if k == "" || !p.eat('=') {
			return JAAS{}, fmt.Errorf("expected option=value at %q", p.rest())
		}
		v, err := p.value()
		if err != nil {
			return JAAS{}, err
		}
		j.Options[k] = v
	}
	if p.space(); !p.done() {
		return JAAS{}, fmt.Errorf("one login module is allowed, found more: %q", p.rest())
	}
	return j, nil
}

// PlainUsers returns the users of a PlainLoginModule entry: its
// user_<name>="<password>" options.
func (j JAAS) PlainUsers() map[string]string {
	users := map[string]string{}
	for k, v := range j.Options {
		if name, ok := strings.CutPrefix(k, "user_"); ok {
			users[name] = v
		}
	}
	return users
}

type jaasParser struct {
	s string
	i int
}

func (p *jaasParser) done() bool   { return p.i >= len(p.s) }
func (p *jaasParser) rest() string { return p.s[p.i:] }

func (p *jaasParser) space() {
	for !p.done() && strings.ContainsRune(" \t\r\n", rune(p.s[p.i])) {
		p.i++
	}
}

func (p *jaasParser) eat(c byte) bool {
	if !p.done() && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// word reads a run of characters up to white space or ';'.
func (p *jaasParser) word() string {
	p.space()
	start := p.i
	for !p.done() && !strings.ContainsRune(" \t\r\n;", rune(p.s[p.i])) {
		p.i++
	}
	return p.s[start:p.i]
}

func (p *jaasParser) key() string {
	start := p.i
	for !p.done() && !strings.ContainsRune(" \t\r\n;=", rune(p.s[p.i])) {
		p.i++
	}
	return p.s[start:p.i]
}

func (p *jaasParser) value() (string, error) {
	if !p.eat('"') {
		v := p.key()
		if v == "" {
			return "", fmt.Errorf("missing value at %q", p.rest())
		}
		return v, nil
	}
	var b strings.Builder
	for !p.done() {
		c := p.s[p.i]
		p.i++
		switch c {
		case '"':
			return b.String(), nil
		case '\\':
			if p.done() {
				return "", fmt.Errorf("unterminated quoted value")
			}
			b.WriteByte(p.s[p.i])
			p.i++
		default:
			b.WriteByte(c)
		}
	}
	return "", fmt.Errorf("unterminated quoted value")
}
