package kafka

// DescribeClientQuotas, versions 0-1.
//
// Answered from this broker's metadata image, as Kafka's brokers do
// (ClientQuotasImage.describe): each filter component names an entity
// type once and matches a name exactly (0), the default entity (1) or any
// entity with that type (2); strict keeps only the entities with no other
// types. A bad filter fails the whole request with INVALID_REQUEST (or
// UNSUPPORTED_VERSION for an unknown type or match type) and no entries.

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

func (s *Server) handleDescribeClientQuotas(req *Request) *Reply {
	r := req.Body.(*kmsg.DescribeClientQuotasRequest)
	resp := respFor(req).(*kmsg.DescribeClientQuotasResponse)
	match, err := quotaFilter(r.Components)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return done(resp)
	}
	img := s.deps.Metadata.Image()
	ents := slices.SortedFunc(maps.Keys(img.ClientQuotas), func(a, b metadata.QuotaEntity) int {
		return strings.Compare(a.String(), b.String())
	})
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	for _, e := range ents {
		if !match(e, r.Strict) {
			continue
		}
		out := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, d := range e.Data() {
			oe := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			oe.Type, oe.Name = d.EntityType, d.EntityName
			out.Entity = append(out.Entity, oe)
		}
		q := img.ClientQuotas[e]
		for _, k := range slices.Sorted(maps.Keys(q)) {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, q[k]
			out.Values = append(out.Values, v)
		}
		resp.Entries = append(resp.Entries, out)
	}
	return done(resp)
}

// quotaFilter checks a DescribeClientQuotas filter and returns its
// matcher.
func quotaFilter(cs []kmsg.DescribeClientQuotasRequestComponent) (func(metadata.QuotaEntity, bool) bool, error) {
	invalid := func(msg string) error { return &codedError{kerr.InvalidRequest, msg} }
	exact := map[string]metadata.QuotaName{}
	var any []string
	for _, c := range cs {
		t := c.EntityType
		_, isExact := exact[t]
		switch {
		case t == "":
			return nil, invalid("Invalid empty entity type.")
		case isExact || slices.Contains(any, t):
			return nil, invalid("Entity type " + t + " cannot appear more than once in the filter.")
		case t != metadata.QuotaUser && t != metadata.QuotaClientID && t != metadata.QuotaIP:
			return nil, &codedError{kerr.UnsupportedVersion, "Unsupported entity type " + t}
		}
		switch c.MatchType {
		case 0:
			if c.Match == nil {
				return nil, invalid("Request specified MATCH_TYPE_EXACT, but set match string to null.")
			}
			exact[t] = metadata.Named(*c.Match)
		case 1:
			if c.Match != nil {
				return nil, invalid("Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
			}
			exact[t] = metadata.DefaultName
		case 2:
			if c.Match != nil {
				return nil, invalid("Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
			}
			any = append(any, t)
		default:
			return nil, &codedError{kerr.UnsupportedVersion, "Unknown match type " + strconv.Itoa(int(c.MatchType))}
		}
	}
	has := func(t string) bool { _, ok := exact[t]; return ok || slices.Contains(any, t) }
	if has(metadata.QuotaIP) && (has(metadata.QuotaUser) || has(metadata.QuotaClientID)) {
		return nil, invalid("Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.")
	}
	return func(e metadata.QuotaEntity, strict bool) bool {
		if strict && len(e.Data()) != len(exact)+len(any) {
			return false
		}
		for t, want := range exact {
			if *e.Part(t) != want {
				return false
			}
		}
		for _, t := range any {
			if !e.Part(t).Set {
				return false
			}
		}
		return true
	}, nil
}
