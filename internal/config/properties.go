package config

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// ParseProperties reads Java .properties syntax and returns the key/value
// pairs; a key that appears more than once keeps its last value.
//
// Supported syntax, as in java.util.Properties.load:
//   - lines end with \n, \r or \r\n; leading whitespace (space, tab, form
//     feed) is ignored;
//   - blank lines and lines whose first non-blank character is '#' or '!' are
//     skipped (a comment never continues onto the next line);
//   - a line ending in an odd number of backslashes continues on the next
//     line, whose leading whitespace is dropped;
//   - the key ends at the first unescaped '=', ':' or whitespace; whitespace
//     and at most one '=' or ':' after the key are skipped ("key=value",
//     "key: value", "key value");
//   - in keys and values, \t \n \r \f and \uXXXX are decoded and any other
//     escaped character stands for itself (so "\\" is a backslash and "\=" an
//     equals sign).
//
// Unlike Java, the input is treated as UTF-8 rather than ISO-8859-1.
// Trailing whitespace of values is kept, as in Java. The only error besides
// read errors is a malformed \u escape.
func ParseProperties(r io.Reader) (map[string]string, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	props := make(map[string]string)
	lines := splitLines(string(data))
	for i := 0; i < len(lines); i++ {
		lineNo := i + 1
		line := trimLeft(lines[i])
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		// Join continuation lines.
		var logical strings.Builder
		for {
			if !endsWithContinuation(line) {
				logical.WriteString(line)
				break
			}
			logical.WriteString(line[:len(line)-1])
			i++
			if i >= len(lines) {
				break
			}
			line = trimLeft(lines[i])
		}
		key, value, err := splitKeyValue(logical.String())
		if err != nil {
			return nil, fmt.Errorf("properties line %d: %w", lineNo, err)
		}
		props[key] = value
	}
	return props, nil
}

func splitLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.Split(s, "\n")
}

func isPropSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

func trimLeft(s string) string {
	i := 0
	for i < len(s) && isPropSpace(s[i]) {
		i++
	}
	return s[i:]
}

// endsWithContinuation reports whether s ends with an odd number of
// backslashes.
func endsWithContinuation(s string) bool {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitKeyValue splits a logical line into its unescaped key and value.
func splitKeyValue(line string) (string, string, error) {
	keyEnd := len(line)
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++ // skip the escaped character
			continue
		}
		if c == '=' || c == ':' || isPropSpace(c) {
			keyEnd = i
			break
		}
	}
	rest := line[keyEnd:]
	rest = trimLeft(rest)
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = trimLeft(rest[1:])
	}
	key, err := unescape(line[:keyEnd])
	if err != nil {
		return "", "", err
	}
	value, err := unescape(rest)
	if err != nil {
		return "", "", err
	}
	return key, value, nil
}

func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			break // a lone trailing backslash is dropped
		}
		switch c = s[i]; c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			r, ok := hex4(s, i+1)
			if !ok {
				end := min(i+5, len(s))
				return "", fmt.Errorf("malformed \\uxxxx escape %q", s[i-1:end])
			}
			i += 4
			// Java strings are UTF-16: join an escaped surrogate pair.
			if utf16.IsSurrogate(r) && i+2 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
				if lo, ok := hex4(s, i+3); ok {
					if pair := utf16.DecodeRune(r, lo); pair != utf8.RuneError {
						r = pair
						i += 6
					}
				}
			}
			b.WriteRune(r)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// hex4 decodes the four hex digits of a \u escape starting at s[i].
func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	n, err := strconv.ParseUint(s[i:i+4], 16, 16)
	if err != nil {
		return 0, false
	}
	return rune(n), true
}
