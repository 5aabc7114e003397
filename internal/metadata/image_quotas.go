package metadata

import (
	"maps"
	"slices"
	"strings"
)

// Client quota entity types (Kafka's ClientQuotaEntity).
const (
	QuotaUser     = "user"
	QuotaClientID = "client-id"
	QuotaIP       = "ip"
)

// QuotaName is one part of a client quota entity: absent, the default
// entity (Kafka's <default>, a null name on the wire) or a name.
type QuotaName struct {
	Set     bool // the entity has this part
	Default bool // the part is the default entity
	Name    string
}

// Named returns the part naming name; DefaultName the default part.
func Named(name string) QuotaName { return QuotaName{Set: true, Name: name} }

// DefaultName is the default part of an entity (Kafka's <default>).
var DefaultName = QuotaName{Set: true, Default: true}

// Ptr is the part as the wire carries it: nil for the default.
func (n QuotaName) Ptr() *string {
	if n.Default {
		return nil
	}
	s := n.Name
	return &s
}

func (n QuotaName) String() string {
	if n.Default {
		return "<default>"
	}
	return n.Name
}

// QuotaEntity is a client quota entity: a user, a client id, both, or an
// IP address, each possibly the default.
type QuotaEntity struct {
	User, ClientID, IP QuotaName
}

// Part returns the entity's part of type typ (QuotaUser ...).
func (e *QuotaEntity) Part(typ string) *QuotaName {
	switch typ {
	case QuotaUser:
		return &e.User
	case QuotaClientID:
		return &e.ClientID
	case QuotaIP:
		return &e.IP
	}
	return nil
}

// Data returns the entity as the records and the client quota APIs list
// it, in the order user, client-id, ip.
func (e QuotaEntity) Data() []EntityData {
	var out []EntityData
	for _, typ := range []string{QuotaUser, QuotaClientID, QuotaIP} {
		if p := e.Part(typ); p.Set {
			out = append(out, EntityData{EntityType: typ, EntityName: p.Ptr()})
		}
	}
	return out
}

func (e QuotaEntity) String() string {
	var parts []string
	for _, d := range e.Data() {
		n := "<default>"
		if d.EntityName != nil {
			n = *d.EntityName
		}
		parts = append(parts, d.EntityType+"="+n)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// QuotaEntityOf builds an entity from its parts; ok is false for an
// empty entity or an unknown or repeated entity type.
func QuotaEntityOf(data []EntityData) (e QuotaEntity, ok bool) {
	for _, d := range data {
		p := e.Part(d.EntityType)
		if p == nil || p.Set {
			return QuotaEntity{}, false
		}
		if d.EntityName == nil {
			*p = DefaultName
		} else {
			*p = Named(*d.EntityName)
		}
	}
	return e, len(data) > 0
}

// applyQuota applies a ClientQuotaRecord. Records of an entity weir does
// not know the types of are kept out of the image (the controller never
// writes them).
func (b *builder) applyQuota(r *ClientQuotaRecord) {
	e, ok := QuotaEntityOf(r.Entity)
	if !ok {
		return
	}
	b.im.ClientQuotas = maps.Clone(b.im.ClientQuotas)
	if b.im.ClientQuotas == nil {
		b.im.ClientQuotas = map[QuotaEntity]map[string]float64{}
	}
	q := maps.Clone(b.im.ClientQuotas[e])
	if q == nil {
		q = map[string]float64{}
	}
	if r.Remove {
		delete(q, r.Key)
	} else {
		q[r.Key] = r.Value
	}
	if len(q) == 0 {
		delete(b.im.ClientQuotas, e)
	} else {
		b.im.ClientQuotas[e] = q
	}
	b.delta.ChangedQuotas = true
}

// quotaRecords are the records of the image's client quotas.
func (im *Image) quotaRecords() []Record {
	keys := slices.SortedFunc(maps.Keys(im.ClientQuotas), func(a, b QuotaEntity) int {
		return strings.Compare(a.String(), b.String())
	})
	var out []Record
	for _, e := range keys {
		q := im.ClientQuotas[e]
		for _, k := range slices.Sorted(maps.Keys(q)) {
			out = append(out, &ClientQuotaRecord{Entity: e.Data(), Key: k, Value: q[k]})
		}
	}
	return out
}
