// Package version is weir's version: the release and, in a binary built
// from a VCS checkout, the revision it was built from.
package version

import "runtime/debug"

// Release is the version of the release this source belongs to.
const Release = "0.1.0-dev"

// String is Release, followed by the VCS revision (12 digits, and
// "-dirty" for a modified tree) when the build recorded one.
func String() string { return format(debug.ReadBuildInfo()) }

func format(info *debug.BuildInfo, ok bool) string {
	if !ok {
		return Release
	}
	var rev string
	dirty := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return Release
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return Release + " (" + rev + ")"
}
