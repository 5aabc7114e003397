package config

import (
	"fmt"
	"strings"
)

// Reference renders docs/CONFIGURATION.md: every broker and topic key with
// its type, default, update mode and whether weir honours, ignores or
// refuses it (with the reason), and the families of undefined keys weir
// refuses. A test keeps the committed file equal to it.
func Reference() string {
	var b strings.Builder
	b.WriteString(`# weir configuration reference

<!-- Generated from internal/config by
     go test ./internal/config -run TestConfigurationReference -update
     Do not edit by hand. -->

weir reads Kafka's broker keys from ` + "`server.properties`" + ` and Kafka's topic keys
from CreateTopics, AlterConfigs and IncrementalAlterConfigs, with Kafka's
names, types, defaults and precedence. Each key is one of:

- **honoured**: it takes effect as in Kafka.
- **ignored**: it is accepted, so that Kafka's configuration files load, and
  has no effect; the reason says why that is harmless. Setting it in
  ` + "`server.properties`" + ` logs a warning at start-up.
- **refused**: it names a feature weir does not implement. Any value other
  than Kafka's default stops start-up with an error naming the key, the
  value and what weir supports instead; Kafka's default changes nothing and
  loads with a warning. It is never accepted as a dynamic update
  (AlterConfigs and IncrementalAlterConfigs answer INVALID_CONFIG and apply
  nothing). They are listed under "Refused keys" below.

Listeners may use any of Kafka's security protocols
(` + codeList(securityProtocols) + `, mapped with
` + "`listener.security.protocol.map`" + `); TLS, SASL, ACLs
(` + "`authorizer.class.name`" + `) and connection limits are configured with the
keys marked honoured below. Unknown keys outside the refused families below
are ignored with a warning, as in Kafka.

"Dynamic" is the update mode weir honours: read-only keys are read at
start-up only, cluster-wide keys can be changed at runtime for one broker or
as a cluster-wide default, per-broker keys for one broker. Where Kafka can
change a key at runtime and weir cannot, Kafka's mode follows in brackets.

## Refused keys

` + refusedList() + `

## Refused key families

These keys have no definition; any key that matches is refused whatever its
value.

| Keys | Why |
|---|---|
`)
	for _, f := range refusedFamilies {
		keys := "`" + f.pattern + "`"
		if strings.HasSuffix(f.pattern, ".") {
			keys = "`" + f.pattern + "*`"
		}
		fmt.Fprintf(&b, "| %s | %s |\n", keys, cell(f.reason))
	}

	b.WriteString("\n## Broker keys\n\n| Key | Type | Default | Dynamic | weir | Description |\n|---|---|---|---|---|---|\n")
	for _, d := range BrokerDefs() {
		mode := d.Update.String()
		if d.KafkaUpdate != d.Update {
			mode += " (Kafka: " + d.KafkaUpdate.String() + ")"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", d.Name, d.Type, defaultCell(d), mode, supportCell(d), cell(d.Doc))
	}

	b.WriteString("\n## Topic keys\n\nTopic keys can always be changed per topic. A topic without an override takes\n" +
		"the value of the first broker key listed under \"Broker default\" that is set.\n\n" +
		"| Key | Type | Default | Broker default | weir | Description |\n|---|---|---|---|---|---|\n")
	for _, d := range TopicDefs() {
		syns := make([]string, len(d.Synonyms))
		for i, s := range d.Synonyms {
			syns[i] = "`" + s.Name + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", d.Name, d.Type, defaultCell(d), strings.Join(syns, ", "), supportCell(d), cell(d.Doc))
	}
	return b.String()
}

// refusedList is a paragraph naming the refused broker keys and one naming
// the refused topic keys.
func refusedList() string {
	var broker, topic []string
	for _, d := range BrokerDefs() {
		if d.Support == Refused {
			broker = append(broker, d.Name)
		}
	}
	for _, d := range TopicDefs() {
		if d.Support == Refused {
			topic = append(topic, d.Name)
		}
	}
	return "Broker keys: " + codeList(broker) + ".\n\nTopic keys: " + codeList(topic) + "."
}

// codeList joins names as Markdown code, "a, b and c".
func codeList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "`" + n + "`"
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}

func defaultCell(d Def) string {
	switch {
	case !d.HasDefault:
		return "null"
	case d.Default == "":
		return `""`
	}
	return "`" + d.Default + "`"
}

func supportCell(d Def) string {
	if d.Support == Honoured {
		return d.Support.String()
	}
	return fmt.Sprintf("**%s**: %s", d.Support, cell(d.Reason))
}

// cell escapes text for a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	s = strings.ReplaceAll(s, "<", "&lt;")
	return strings.ReplaceAll(s, ">", "&gt;")
}
