package config

import "fmt"

// refusal returns the error for setting key d to raw (normalized: norm), or
// nil: a Refused key accepts only Kafka's default.
func (d *Def) refusal(raw, norm string) error {
	if d.Support != Refused || d.HasDefault && norm == d.Default {
		return nil
	}
	reason := d.Reason
	if d.HasDefault {
		reason += fmt.Sprintf(" (only Kafka's default %q is accepted, and has no effect)", d.Default)
	}
	return unsupported(d.Name, raw, reason, d.Sensitive())
}

// setWarning returns the start-up warning for a key set to norm that has no
// effect (an Ignored key, or a Refused key left at Kafka's default), or "".
func (d *Def) setWarning(norm string) string {
	v := "=" + norm
	if d.Sensitive() {
		v = ""
	}
	switch d.Support {
	case Ignored:
		return fmt.Sprintf("configuration %s%s has no effect in weir: %s", d.Name, v, d.Reason)
	case Refused:
		return fmt.Sprintf("configuration %s%s (Kafka's default) has no effect: %s", d.Name, v, d.Reason)
	}
	return ""
}

// checkUnknownBroker returns the error for an undefined broker key that
// belongs to a refused family, or nil for a merely unknown key.
func checkUnknownBroker(name, value string) error {
	if reason := refusedFamily(name); reason != "" {
		return unsupported(name, value, reason, familySensitive(name))
	}
	return nil
}
