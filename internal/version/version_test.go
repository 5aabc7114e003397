package version

import (
	"runtime/debug"
	"testing"
)

func TestFormat(t *testing.T) {
	settings := func(kv ...string) *debug.BuildInfo {
		info := &debug.BuildInfo{}
		for i := 0; i < len(kv); i += 2 {
			info.Settings = append(info.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return info
	}
	for _, c := range []struct {
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{nil, false, Release},
		{settings(), true, Release},
		{settings("vcs.revision", "2380356aa1b2c3d4e5f6", "vcs.modified", "false"), true, Release + " (2380356aa1b2)"},
		{settings("vcs.revision", "2380356aa1b2c3d4e5f6", "vcs.modified", "true"), true, Release + " (2380356aa1b2-dirty)"},
	} {
		if got := format(c.info, c.ok); got != c.want {
			t.Errorf("format(%v) = %q, want %q", c.info, got, c.want)
		}
	}
}
