package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// Small helpers several tools share: Kafka's ways of splitting, joining
// and printing.

// DescribeErr is an error as Kafka's tool prints an ExecutionException's
// message: the cause's class and message.
func DescribeErr(err error) string {
	var je *JavaError
	if errors.As(err, &je) {
		return je.String()
	}
	return err.Error()
}

func Itoa(n int64) string { return strconv.FormatInt(n, 10) }

// PadRight pads cells as Java's %-Ns does.
func PadRight(s string, n int) string {
	if len(s) >= n {
		return s
	}
	return s + strings.Repeat(" ", n-len(s))
}

// JavaSplit splits s around re as Java's String.split: trailing empty
// strings are dropped.
func JavaSplit(s string, re *regexp.Regexp) []string {
	parts := re.Split(s, -1)
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	if len(parts) == 0 {
		return []string{""}
	}
	return parts
}

var EqualsRE = regexp.MustCompile(`\s*=\s*`)

func Plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func JoinInts(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

// SplitList splits at commas, dropping empty items, as Kafka's tools.
func SplitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

// JSONObject is a JSON object whose keys print in the given order.
type JSONObject []JSONField

type JSONField struct {
	Key string
	Val any
}

// JavaHashMap orders an object's keys as Java's HashMap of them iterates.
func JavaHashMap(fields ...JSONField) JSONObject {
	JavaOrder(fields, func(f JSONField) int32 { return JavaStringHash(f.Key) })
	return fields
}

func (o JSONObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := WriteJSON(&b, f.Key); err != nil {
			return nil, err
		}
		b.WriteByte(':')
		if err := WriteJSON(&b, f.Val); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// WriteJSON encodes v as Jackson does: no HTML escaping, no newline.
func WriteJSON(b *bytes.Buffer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	b.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return nil
}

// JavaIntSet joins ids in the order of Java's HashSet of them.
func JavaIntSet(ids []int32) string {
	JavaOrder(ids, func(i int32) int32 { return i })
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

// NewLogger logs text at level (--log-level) on standard error.
func NewLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: %w", level, err)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}

var CommaRE = regexp.MustCompile(`,`)
