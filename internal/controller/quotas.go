package controller

import (
	"math"
	"net/netip"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

// QuotaType is how Kafka's QuotaConfig types a client quota key.
type QuotaType int

const (
	QuotaLong QuotaType = iota
	QuotaDouble
	QuotaInt
)

// UserClientQuotaKeys are the quota keys of users, client ids and both
// (Kafka's QuotaConfig.userAndClientQuotaConfigs).
var UserClientQuotaKeys = map[string]QuotaType{
	"producer_byte_rate":       QuotaLong,
	"consumer_byte_rate":       QuotaLong,
	"request_percentage":       QuotaDouble,
	"controller_mutation_rate": QuotaDouble,
}

// IPQuotaKeys are the quota keys of IP entities (QuotaConfig.ipConfigs).
var IPQuotaKeys = map[string]QuotaType{"connection_creation_rate": QuotaInt}

// QuotaResult is the outcome of AlterClientQuotas for one entity.
type QuotaResult struct {
	Entity []kmsg.AlterClientQuotasRequestEntryEntity // as the request named it first
	Err    error                                      // nil: applied (or valid, when validating only)
}

// ClientQuotasResult is the answer of AlterClientQuotas: one result per
// distinct entity, in the order of their first entry.
type ClientQuotasResult struct {
	Committed
	Entities []QuotaResult
}

// AlterClientQuotas sets and removes client quotas (ClientQuotaRecord)
// with Kafka's rules (ClientQuotaControlManager): see alterClientQuotas.
// The offset is -1 when nothing changed.
func (c *Controller) AlterClientQuotas(req *kmsg.AlterClientQuotasRequest) (ClientQuotasResult, error) {
	return run(c, func(img *metadata.Image) (result[ClientQuotasResult], error) {
		recs, out := alterClientQuotas(img, req.Entries)
		if req.ValidateOnly {
			recs = nil
		}
		if len(recs) > MaxRecordsPerUserOp {
			for i := range out {
				out[i].Err = errExcessiveBatch
			}
			recs = nil
		}
		return result[ClientQuotasResult]{Records: recs, Answer: ClientQuotasResult{Committed{-1}, out}}, nil
	})
}

// alterClientQuotas is AlterClientQuotas against img: the records to
// commit (together) and one result per distinct entity. As Kafka: an
// entity must have a user, a client id, both, or an IP alone, each part
// a name or the default (null), never empty; a key must be one of the
// entity's quota keys, its value above 0 and whole for an integral key;
// a key named twice in one entry or an entity named twice fails that
// entity (INVALID_REQUEST). A removal of a key the entity does not have
// and a value equal to the current one write nothing.
func alterClientQuotas(img *metadata.Image, entries []kmsg.AlterClientQuotasRequestEntry) ([]metadata.Record, []QuotaResult) {
	var recs []metadata.Record
	var out []QuotaResult
	index := map[string]int{}
	for _, e := range entries {
		key := rawEntityKey(e.Entity)
		i, seen := index[key]
		if !seen {
			i = len(out)
			index[key] = i
			out = append(out, QuotaResult{Entity: e.Entity})
		}
		dup := map[string]bool{}
		var dupKey string
		for _, op := range e.Ops {
			if dup[op.Key] && dupKey == "" {
				dupKey = op.Key
			}
			dup[op.Key] = true
		}
		switch {
		case seen:
			out[i].Err = topicErr(kerr.InvalidRequest, "Ignoring duplicate entity %s", key)
			continue
		case dupKey != "":
			out[i].Err = topicErr(kerr.InvalidRequest, "Duplicate quota key %s not updating quota for this entity %s", dupKey, key)
			continue
		}
		r, err := alterQuotaEntity(img, e)
		out[i].Err = err
		recs = append(recs, r...)
	}
	return recs, out
}

// rawEntityKey names an entity as the request gives it, for duplicate
// checks and messages.
func rawEntityKey(es []kmsg.AlterClientQuotasRequestEntryEntity) string {
	parts := make([]string, 0, len(es))
	for _, e := range es {
		n := "<default>"
		if e.Name != nil {
			n = *e.Name
		}
		parts = append(parts, e.Type+"="+n)
	}
	slices.Sort(parts)
	return "{" + strings.Join(parts, ", ") + "}"
}

// QuotaEntityKeys validates an entity's parts as Kafka's validateEntity
// and configKeysForEntityType do and returns the entity and its quota
// keys.
func QuotaEntityKeys(data []metadata.EntityData) (metadata.QuotaEntity, map[string]QuotaType, error) {
	if len(data) == 0 {
		return metadata.QuotaEntity{}, nil, topicErr(kerr.InvalidRequest, "Invalid empty client quota entity")
	}
	var seen []string
	for _, d := range data {
		if slices.Contains(seen, d.EntityType) {
			return metadata.QuotaEntity{}, nil, topicErr(kerr.InvalidRequest, "Invalid client quota entity, duplicate entity entry %s", d.EntityType)
		}
		seen = append(seen, d.EntityType)
		switch d.EntityType {
		case metadata.QuotaUser, metadata.QuotaClientID, metadata.QuotaIP:
		default:
			return metadata.QuotaEntity{}, nil, topicErr(kerr.InvalidRequest, "Unhandled client quota entity type: %s", d.EntityType)
		}
		if d.EntityName != nil && *d.EntityName == "" {
			return metadata.QuotaEntity{}, nil, topicErr(kerr.InvalidRequest, "Empty %s not supported", d.EntityType)
		}
	}
	ent, _ := metadata.QuotaEntityOf(data)
	if ent.IP.Set {
		if ent.User.Set || ent.ClientID.Set {
			return ent, nil, topicErr(kerr.InvalidRequest, "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId")
		}
		if !ent.IP.Default {
			if _, err := netip.ParseAddr(ent.IP.Name); err != nil {
				return ent, nil, topicErr(kerr.InvalidRequest, "%s is not a valid IP or resolvable host.", ent.IP.Name)
			}
		}
		return ent, IPQuotaKeys, nil
	}
	return ent, UserClientQuotaKeys, nil
}

func alterQuotaEntity(img *metadata.Image, e kmsg.AlterClientQuotasRequestEntry) ([]metadata.Record, error) {
	data := make([]metadata.EntityData, len(e.Entity))
	for i, p := range e.Entity {
		data[i] = metadata.EntityData{EntityType: p.Type, EntityName: p.Name}
	}
	ent, keys, err := QuotaEntityKeys(data)
	if err != nil {
		return nil, err
	}
	cur := img.ClientQuotas[ent]
	var recs []metadata.Record
	for _, op := range e.Ops {
		if op.Remove {
			if _, ok := cur[op.Key]; ok {
				recs = append(recs, &metadata.ClientQuotaRecord{Entity: ent.Data(), Key: op.Key, Remove: true})
			}
			continue
		}
		if err := validQuotaValue(keys, op.Key, op.Value); err != nil {
			return nil, err
		}
		if v, ok := cur[op.Key]; !ok || v != op.Value {
			recs = append(recs, &metadata.ClientQuotaRecord{Entity: ent.Data(), Key: op.Key, Value: op.Value})
		}
	}
	return recs, nil
}

// validQuotaValue is Kafka's validateQuotaKeyValue.
func validQuotaValue(keys map[string]QuotaType, key string, v float64) error {
	typ, ok := keys[key]
	if !ok {
		return topicErr(kerr.InvalidRequest, "Invalid configuration key %s", key)
	}
	if !(v > 0) {
		return topicErr(kerr.InvalidRequest, "Quota %s must be greater than 0", key)
	}
	switch typ {
	case QuotaInt:
		if v > math.MaxInt32 {
			return topicErr(kerr.InvalidRequest, "Proposed value for %s is too large for an INT.", key)
		}
	case QuotaLong:
		if v > math.MaxInt64 {
			return topicErr(kerr.InvalidRequest, "Proposed value for %s is too large for a LONG.", key)
		}
	default:
		return nil
	}
	if math.Abs(math.Mod(v, 1)) > 1e-6 {
		return topicErr(kerr.InvalidRequest, "%s cannot be a fractional value.", key)
	}
	return nil
}
