package config

import (
	"errors"
	"maps"
	"strings"
	"testing"
)

func TestParseProperties(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]string
	}{
		{"empty", "", map[string]string{}},
		{"equals", "a=1\nb = 2", map[string]string{"a": "1", "b": "2"}},
		{"colon", "a:1\nb : 2", map[string]string{"a": "1", "b": "2"}},
		{"whitespace separator", "a 1\nb\t\t2", map[string]string{"a": "1", "b": "2"}},
		{"whitespace then equals", "a  =  1", map[string]string{"a": "1"}},
		{"only first separator consumed", "a==1\nb=:2\nc :=3", map[string]string{"a": "=1", "b": ":2", "c": "=3"}},
		{"comments and blanks", "# c1\n! c2\n   # indented\n\n  \t\na=1", map[string]string{"a": "1"}},
		{"hash inside value", "a=1 # not a comment", map[string]string{"a": "1 # not a comment"}},
		{"leading whitespace stripped", "   \f\ta=1", map[string]string{"a": "1"}},
		{"trailing whitespace kept", "a=1  ", map[string]string{"a": "1  "}},
		{"key only", "a\nb=\nc:", map[string]string{"a": "", "b": "", "c": ""}},
		{"last wins", "a=1\na=2", map[string]string{"a": "2"}},
		{"CRLF and CR", "a=1\r\nb=2\rc=3", map[string]string{"a": "1", "b": "2", "c": "3"}},
		{"continuation", "a=x,\\\n    y,\\\n\tz", map[string]string{"a": "x,y,z"}},
		{"continuation in key", "lo\\\n  ng=1", map[string]string{"long": "1"}},
		{"even backslashes do not continue", "a=x\\\\\nb=2", map[string]string{"a": `x\`, "b": "2"}},
		{"continuation at EOF", "a=x\\", map[string]string{"a": "x"}},
		{"continuation onto blank line", "a=x\\\n\nb=2", map[string]string{"a": "x", "b": "2"}},
		{"comment does not continue", "# c \\\na=1", map[string]string{"a": "1"}},
		{"continued line starting with hash", "a=x\\\n#y", map[string]string{"a": "x#y"}},
		{"escapes", `a=t\tn\nr\rf\fb\\q\"z\q`, map[string]string{"a": "t\tn\nr\rf\fb\\q\"zq"}},
		{"escaped separators in key", `k\=1\:2\ 3=v`, map[string]string{"k=1:2 3": "v"}},
		{"unicode escape", `a=caf\u00e9 \u0041`, map[string]string{"a": "café A"}},
		{"surrogate pair", `a=\uD83D\uDE00`, map[string]string{"a": "😀"}},
		{"utf8 passthrough", "a=ünïcode", map[string]string{"a": "ünïcode"}},
		{"listener example", "listeners=PLAINTEXT://:9092,\\\n  CONTROLLER://:9093", map[string]string{"listeners": "PLAINTEXT://:9092,CONTROLLER://:9093"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseProperties(strings.NewReader(tt.in))
			if err != nil {
				t.Fatalf("ParseProperties: %v", err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParsePropertiesErrors(t *testing.T) {
	for _, in := range []string{`a=\u12`, `a=\uZZZZ`, "x=1\n" + `b\u00g1=2`} {
		if _, err := ParseProperties(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), `\uxxxx`) {
			t.Errorf("%q: got %v, want malformed escape error", in, err)
		}
	}
	_, err := ParseProperties(strings.NewReader("x=1\ny=\\u1"))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("error should name the line: %v", err)
	}
	boom := errors.New("boom")
	if _, err := ParseProperties(failingReader{boom}); !errors.Is(err, boom) {
		t.Errorf("read error not returned: %v", err)
	}
}

type failingReader struct{ err error }

func (f failingReader) Read([]byte) (int, error) { return 0, f.err }
