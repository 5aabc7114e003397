package tracetest

import (
	"strconv"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Arg is the first value of a directive's argument, "" if absent.
func Arg(d *datadriven.TestData, key string) string {
	if a, ok := d.Arg(key); ok && len(a.Vals) > 0 {
		return a.Vals[0]
	}
	return ""
}

// Args are the values of a directive's argument, nil if absent; key=()
// gives none.
func Args(d *datadriven.TestData, key string) []string {
	a, ok := d.Arg(key)
	if !ok {
		return nil
	}
	out := []string{}
	for _, v := range a.Vals {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// OptArg is a pointer to the argument's value, nil if absent.
func OptArg(d *datadriven.TestData, key string) *string {
	if !d.HasArg(key) {
		return nil
	}
	v := Arg(d, key)
	return &v
}

// Int is a required integer argument.
func Int(t testing.TB, d *datadriven.TestData, key string) int64 {
	if !d.HasArg(key) {
		d.Fatalf(t, "%s: missing %s=", d.Cmd, key)
	}
	return IntOr(t, d, key, 0)
}

// IntOr is an integer argument, def if absent.
func IntOr(t testing.TB, d *datadriven.TestData, key string, def int64) int64 {
	if !d.HasArg(key) {
		return def
	}
	n, err := strconv.ParseInt(Arg(d, key), 10, 64)
	if err != nil {
		d.Fatalf(t, "%s: %v", key, err)
	}
	return n
}

// DurationOr is a duration argument (time.ParseDuration), def if absent.
func DurationOr(t testing.TB, d *datadriven.TestData, key string, def time.Duration) time.Duration {
	if !d.HasArg(key) {
		return def
	}
	v, err := time.ParseDuration(Arg(d, key))
	if err != nil {
		d.Fatalf(t, "%s: %v", key, err)
	}
	return v
}

// ErrorNamed is the Kafka error of a name (NOT_LEADER_FOR_PARTITION...).
func ErrorNamed(t testing.TB, d *datadriven.TestData, name string) *kerr.Error {
	for code := int16(-1); code < 200; code++ {
		if err, ok := kerr.ErrorForCode(code).(*kerr.Error); ok && err.Message == name {
			return err
		}
	}
	d.Fatalf(t, "no Kafka error named %s", name)
	return nil
}
