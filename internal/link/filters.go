package link

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Filters select topics or consumer groups by name, in the JSON of
// Confluent's auto.create.mirror.topics.filters ({"topicFilters": [...]})
// and consumer.group.filters ({"groupFilters": [...]}): each filter has a
// name, a patternType (LITERAL, where "*" matches every name, or
// PREFIXED) and a filterType (INCLUDE or EXCLUDE). A name is selected when
// an INCLUDE filter matches it and no EXCLUDE filter does.
type Filters []Filter

// Filter is one filter of Filters.
type Filter struct {
	Name        string `json:"name"`
	PatternType string `json:"patternType"`
	FilterType  string `json:"filterType"`
}

// ParseFilters parses the JSON value of a filters property whose list is
// named key ("topicFilters" or "groupFilters").
func ParseFilters(key, value string) (Filters, error) {
	var doc map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(value))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	for k := range doc {
		if k != key {
			return nil, fmt.Errorf("unknown field %q (want %q)", k, key)
		}
	}
	var fs Filters
	if raw, ok := doc[key]; ok {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.DisallowUnknownFields()
		if err := d.Decode(&fs); err != nil {
			return nil, fmt.Errorf("%s: %v", key, err)
		}
	}
	for i, f := range fs {
		switch {
		case f.Name == "":
			return nil, fmt.Errorf("%s[%d]: name is missing", key, i)
		case !strings.EqualFold(f.PatternType, "LITERAL") && !strings.EqualFold(f.PatternType, "PREFIXED"):
			return nil, fmt.Errorf("%s[%d]: patternType %q is not LITERAL or PREFIXED", key, i, f.PatternType)
		case !strings.EqualFold(f.FilterType, "INCLUDE") && !strings.EqualFold(f.FilterType, "EXCLUDE"):
			return nil, fmt.Errorf("%s[%d]: filterType %q is not INCLUDE or EXCLUDE", key, i, f.FilterType)
		}
	}
	return fs, nil
}

// Match reports whether name is selected.
func (fs Filters) Match(name string) bool {
	in := false
	for _, f := range fs {
		var m bool
		if strings.EqualFold(f.PatternType, "PREFIXED") {
			m = strings.HasPrefix(name, f.Name)
		} else {
			m = f.Name == "*" || f.Name == name
		}
		if !m {
			continue
		}
		if strings.EqualFold(f.FilterType, "EXCLUDE") {
			return false
		}
		in = true
	}
	return in
}
