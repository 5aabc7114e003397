package sslprincipal

import (
	"errors"
	"testing"
)

// The rules and names of Kafka's SslPrincipalMapperTest and of its
// documentation of ssl.principal.mapping.rules.
func TestValidAndInvalidRules(t *testing.T) {
	for _, r := range []string{
		"DEFAULT",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
		"RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
		"RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
		"RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
	} {
		if _, err := Parse(r); err != nil {
			t.Errorf("Parse(%q): %v", r, err)
		}
	}
	for _, r := range []string{
		"default", "DEFAUL", "DEFAULT/L", "DEFAULT/U",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1",
		"rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
		// Valid for Java, but not a pattern Go's RE2 runs.
		"RULE:^CN=(\\w+),OU=\\1$/$1/",
	} {
		if _, err := Parse(r); err == nil {
			t.Errorf("Parse(%q) accepted an invalid rule", r)
		}
	}
}

func TestNames(t *testing.T) {
	m, err := Parse("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, " +
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, " +
		"RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U, " +
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U, " +
		"DEFAULT")
	if err != nil {
		t.Fatal(err)
	}
	for dn, want := range map[string]string{
		"CN=Duke,OU=ServiceUsers,O=Org,C=US":        "duke",
		"CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US": "duke@sme",
		"cn=duke,ou=sme,dc=mycp,dc=com":             "DUKE@SME",
		"cN=duke,OU=JavaSoft,O=Sun Microsystems":    "DUKE",
		"OU=JavaSoft,O=Sun Microsystems,C=US":       "OU=JavaSoft,O=Sun Microsystems,C=US",
	} {
		if got, err := m.Name(dn); err != nil || got != want {
			t.Errorf("Name(%q) = %q, %v; want %q", dn, got, err, want)
		}
	}

	// A comma escaped in the DN, matched by the rule.
	m, _ = Parse(`RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT`)
	if got, _ := m.Name(`CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz`); got != `Tkac\, Adam` {
		t.Errorf("escaped comma: got %q", got)
	}

	// Kafka's documentation: the default maps to the whole DN.
	m, _ = Parse("DEFAULT")
	if got, _ := m.Name("CN=alice,OU=eng"); got != "CN=alice,OU=eng" {
		t.Errorf("DEFAULT: got %q", got)
	}

	// No rule applies: the connection gets no principal.
	m, _ = Parse("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/")
	if _, err := m.Name("CN=bob,OU=eng"); !errors.Is(err, ErrNoMatchingRule) {
		t.Errorf("no matching rule: got %v", err)
	}
	m, _ = Parse("")
	if _, err := m.Name("CN=bob"); !errors.Is(err, ErrNoMatchingRule) {
		t.Errorf("no rules: got %v", err)
	}
}

// The replacement is read as Java's: $n for groups (a missing group, when
// the pattern has groups, is literal, as Kafka makes it), ${name}, \ escapes.
func TestReplacement(t *testing.T) {
	for _, tc := range []struct{ rule, dn, want string }{
		{"RULE:^CN=([a-z]+),OU=([a-z]+)$/$1@$4/", "CN=a,OU=b", "a@$4"},
		{"RULE:^CN=([a-z]+),OU=([a-z]+)$/$2$1/", "CN=a,OU=b", "ba"},
		{"RULE:^CN=([a-z]+),OU=([a-z]+)$/$12/", "CN=a,OU=b", "a2"},
		{"RULE:^CN=([a-z]+),OU=([a-z]+)$/$0!/", "CN=a,OU=b", "CN=a,OU=b!"},
		{"RULE:^CN=(?P<cn>[a-z]+),.*$/user-${cn}/", "CN=a,OU=b", "user-a"},
		{"RULE:^CN=([a-z]+),.*$/\\$1 is $1/", "CN=a,OU=b", "$1 is a"},
		// The pattern must match the whole DN, then every match of it
		// is replaced (Java's replaceAll): here CN=a and ,OU=b.
		{"RULE:CN=a|,OU=b|CN=a,OU=b/x/", "CN=a,OU=b", "xx"},
	} {
		m, err := Parse(tc.rule)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.rule, err)
		}
		if got, err := m.Name(tc.dn); err != nil || got != tc.want {
			t.Errorf("%s on %q = %q, %v; want %q", tc.rule, tc.dn, got, err, tc.want)
		}
	}
	// A group reference a pattern without groups cannot satisfy fails the
	// mapping (Java throws).
	m, _ := Parse("RULE:^CN=.*$/$1/")
	if _, err := m.Name("CN=a"); err == nil {
		t.Error("$1 without groups mapped")
	}
}

// Kafka's splitting of the rule list, shown by the rules' printed form.
func TestRulesSplitting(t *testing.T) {
	for _, tc := range []struct{ rules, want string }{
		{"", "[]"},
		{"DEFAULT", "[DEFAULT]"},
		{"RULE://", "[RULE:/]"},
		{"RULE:/.*/", "[RULE:/.*]"},
		{"RULE:/.*/L", "[RULE:/.*/L]"},
		{"RULE://,DEFAULT", "[RULE:/, DEFAULT]"},
		{"  RULE:// ,  DEFAULT  ", "[RULE:/, DEFAULT]"},
		{"  RULE:   /     / ,  DEFAULT  ", "[RULE:   /     , DEFAULT]"},
		{"  RULE:  /     /U   ,DEFAULT  ", "[RULE:  /     /U, DEFAULT]"},
		{"  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  ", "[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]"},
		{",   , , ,      , , ,   ", "[]"},
		{",,RULE://,,,DEFAULT,,", "[RULE:/, DEFAULT]"},
		{",  , RULE: /   /    ,,,   DEFAULT, ,   ", "[RULE: /   , DEFAULT]"},
		{"     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,", "[RULE:   /  /U, DEFAULT]"},
		{`RULE:\/\\\(\)\n\t/\/\//`, `[RULE:\/\\\(\)\n\t/\/\/]`},
		{`RULE:\**\/+/*/L,RULE:\/*\**/**/`, `[RULE:\**\/+/*/L, RULE:\/*\**/**]`},
		{`RULE:,RULE:,/,RULE:,\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT`,
			`[RULE:,RULE:,/,RULE:,\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]`},
	} {
		m, err := Parse(tc.rules)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.rules, err)
			continue
		}
		if got := m.String(); got != tc.want {
			t.Errorf("Parse(%q) = %s, want %s", tc.rules, got, tc.want)
		}
	}
}
