package metadata

// ConfigRecord (api key 4) sets or deletes one dynamic configuration key of
// a resource. Versions: 0.
type ConfigRecord struct {
	RecordVersion int16

	ResourceType int8   // Kafka's ConfigResource.Type id (2 topic, 4 broker, ...)
	ResourceName string // "" for a cluster-wide broker default
	Name         string // configuration key
	Value        *string

	UnknownTags []TaggedField
}

func (*ConfigRecord) APIKey() int16         { return APIKeyConfigRecord }
func (*ConfigRecord) HighestVersion() int16 { return 0 }
func (x *ConfigRecord) Version() int16      { return x.RecordVersion }
func (x *ConfigRecord) SetVersion(v int16)  { x.RecordVersion = v }

func (x *ConfigRecord) encodeBody(w *writer) {
	w.int8(x.ResourceType)
	w.str("ResourceName", x.ResourceName)
	w.str("Name", x.Name)
	w.nullableStr("Value", x.Value)
	w.tags(nil, x.UnknownTags, nil)
}

func (x *ConfigRecord) decodeBody(r *reader) {
	x.ResourceType = r.int8("ResourceType")
	x.ResourceName = r.str("ResourceName")
	x.Name = r.str("Name")
	x.Value = r.nullableStr("Value")
	x.UnknownTags = r.tags(nil, nil)
}

// ClientQuotaRecord (api key 14) sets or removes one quota of a client
// quota entity. Versions: 0.
type ClientQuotaRecord struct {
	RecordVersion int16

	Entity []EntityData // the parts of the entity the quota applies to
	Key    string       // quota configuration key
	Value  float64      // ignored when Remove is set
	Remove bool

	UnknownTags []TaggedField
}

// EntityData is one part of a client quota entity.
type EntityData struct {
	EntityType string  // "user", "client-id", "ip"
	EntityName *string // nil for the default entity

	UnknownTags []TaggedField
}

func (*ClientQuotaRecord) APIKey() int16         { return APIKeyClientQuotaRecord }
func (*ClientQuotaRecord) HighestVersion() int16 { return 0 }
func (x *ClientQuotaRecord) Version() int16      { return x.RecordVersion }
func (x *ClientQuotaRecord) SetVersion(v int16)  { x.RecordVersion = v }

func (x *ClientQuotaRecord) encodeBody(w *writer) {
	w.arrayLen(len(x.Entity))
	for _, e := range x.Entity {
		w.str("Entity.EntityType", e.EntityType)
		w.nullableStr("Entity.EntityName", e.EntityName)
		w.tags(nil, e.UnknownTags, nil)
	}
	w.str("Key", x.Key)
	w.float64(x.Value)
	w.bool(x.Remove)
	w.tags(nil, x.UnknownTags, nil)
}

func (x *ClientQuotaRecord) decodeBody(r *reader) {
	// An entity is at least 3 bytes: an empty string, a null string and an
	// empty tag section.
	if n, _ := r.arrayLen("Entity", 3, false); n > 0 {
		x.Entity = make([]EntityData, n)
		for i := range x.Entity {
			e := &x.Entity[i]
			e.EntityType = r.str("Entity.EntityType")
			e.EntityName = r.nullableStr("Entity.EntityName")
			e.UnknownTags = r.tags(nil, nil)
		}
	}
	x.Key = r.str("Key")
	x.Value = r.float64("Value")
	x.Remove = r.bool("Remove")
	x.UnknownTags = r.tags(nil, nil)
}

// AccessControlEntryRecord (api key 18) adds an ACL. The int8 fields hold
// the ids of Kafka's ResourceType, PatternType, AclOperation and
// AclPermissionType enums. Versions: 0.
type AccessControlEntryRecord struct {
	RecordVersion int16

	Id             Uuid // id of this ACL, used to remove it
	ResourceType   int8
	ResourceName   string
	PatternType    int8
	Principal      string
	Host           string
	Operation      int8
	PermissionType int8

	UnknownTags []TaggedField
}

func (*AccessControlEntryRecord) APIKey() int16         { return APIKeyAccessControlEntryRecord }
func (*AccessControlEntryRecord) HighestVersion() int16 { return 0 }
func (x *AccessControlEntryRecord) Version() int16      { return x.RecordVersion }
func (x *AccessControlEntryRecord) SetVersion(v int16)  { x.RecordVersion = v }

func (x *AccessControlEntryRecord) encodeBody(w *writer) {
	w.uuid(x.Id)
	w.int8(x.ResourceType)
	w.str("ResourceName", x.ResourceName)
	w.int8(x.PatternType)
	w.str("Principal", x.Principal)
	w.str("Host", x.Host)
	w.int8(x.Operation)
	w.int8(x.PermissionType)
	w.tags(nil, x.UnknownTags, nil)
}

func (x *AccessControlEntryRecord) decodeBody(r *reader) {
	x.Id = r.uuid("Id")
	x.ResourceType = r.int8("ResourceType")
	x.ResourceName = r.str("ResourceName")
	x.PatternType = r.int8("PatternType")
	x.Principal = r.str("Principal")
	x.Host = r.str("Host")
	x.Operation = r.int8("Operation")
	x.PermissionType = r.int8("PermissionType")
	x.UnknownTags = r.tags(nil, nil)
}

// RemoveAccessControlEntryRecord (api key 19) removes the ACL with the
// given id. Versions: 0.
type RemoveAccessControlEntryRecord struct {
	RecordVersion int16

	Id Uuid

	UnknownTags []TaggedField
}

func (*RemoveAccessControlEntryRecord) APIKey() int16 {
	return APIKeyRemoveAccessControlEntryRecord
}
func (*RemoveAccessControlEntryRecord) HighestVersion() int16 { return 0 }
func (x *RemoveAccessControlEntryRecord) Version() int16      { return x.RecordVersion }
func (x *RemoveAccessControlEntryRecord) SetVersion(v int16)  { x.RecordVersion = v }

func (x *RemoveAccessControlEntryRecord) encodeBody(w *writer) {
	w.uuid(x.Id)
	w.tags(nil, x.UnknownTags, nil)
}

func (x *RemoveAccessControlEntryRecord) decodeBody(r *reader) {
	x.Id = r.uuid("Id")
	x.UnknownTags = r.tags(nil, nil)
}

// UserScramCredentialRecord (api key 11) sets a user's SCRAM credential for
// one mechanism. Versions: 0.
type UserScramCredentialRecord struct {
	RecordVersion int16

	Name       string // user name
	Mechanism  int8   // Kafka's ScramMechanism id (1 SCRAM-SHA-256, 2 SCRAM-SHA-512)
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32

	UnknownTags []TaggedField
}

func (*UserScramCredentialRecord) APIKey() int16         { return APIKeyUserScramCredentialRecord }
func (*UserScramCredentialRecord) HighestVersion() int16 { return 0 }
func (x *UserScramCredentialRecord) Version() int16      { return x.RecordVersion }
func (x *UserScramCredentialRecord) SetVersion(v int16)  { x.RecordVersion = v }

func (x *UserScramCredentialRecord) encodeBody(w *writer) {
	w.str("Name", x.Name)
	w.int8(x.Mechanism)
	w.bytes(x.Salt)
	w.bytes(x.StoredKey)
	w.bytes(x.ServerKey)
	w.int32(x.Iterations)
	w.tags(nil, x.UnknownTags, nil)
}

func (x *UserScramCredentialRecord) decodeBody(r *reader) {
	x.Name = r.str("Name")
	x.Mechanism = r.int8("Mechanism")
	x.Salt = r.bytes("Salt")
	x.StoredKey = r.bytes("StoredKey")
	x.ServerKey = r.bytes("ServerKey")
	x.Iterations = r.int32("Iterations")
	x.UnknownTags = r.tags(nil, nil)
}

// RemoveUserScramCredentialRecord (api key 22) removes a user's SCRAM
// credential for one mechanism. Versions: 0.
type RemoveUserScramCredentialRecord struct {
	RecordVersion int16

	Name      string // user name
	Mechanism int8

	UnknownTags []TaggedField
}

func (*RemoveUserScramCredentialRecord) APIKey() int16 {
	return APIKeyRemoveUserScramCredentialRecord
}
func (*RemoveUserScramCredentialRecord) HighestVersion() int16 { return 0 }
func (x *RemoveUserScramCredentialRecord) Version() int16      { return x.RecordVersion }
func (x *RemoveUserScramCredentialRecord) SetVersion(v int16)  { x.RecordVersion = v }

func (x *RemoveUserScramCredentialRecord) encodeBody(w *writer) {
	w.str("Name", x.Name)
	w.int8(x.Mechanism)
	w.tags(nil, x.UnknownTags, nil)
}

func (x *RemoveUserScramCredentialRecord) decodeBody(r *reader) {
	x.Name = r.str("Name")
	x.Mechanism = r.int8("Mechanism")
	x.UnknownTags = r.tags(nil, nil)
}

// DelegationTokenRecord (api key 10) creates or renews a delegation token.
// Timestamps are milliseconds since the Unix epoch. Versions: 0.
type DelegationTokenRecord struct {
	RecordVersion int16

	Owner               string   // principal owning the token
	Requester           string   // principal that asked for the token
	Renewers            []string // principals allowed to renew it
	IssueTimestamp      int64
	MaxTimestamp        int64 // the token cannot be renewed past this
	ExpirationTimestamp int64 // the token must be renewed before this
	TokenId             string

	UnknownTags []TaggedField
}

func (*DelegationTokenRecord) APIKey() int16         { return APIKeyDelegationTokenRecord }
func (*DelegationTokenRecord) HighestVersion() int16 { return 0 }
func (x *DelegationTokenRecord) Version() int16      { return x.RecordVersion }
func (x *DelegationTokenRecord) SetVersion(v int16)  { x.RecordVersion = v }

func (x *DelegationTokenRecord) encodeBody(w *writer) {
	w.str("Owner", x.Owner)
	w.str("Requester", x.Requester)
	w.strs("Renewers", x.Renewers)
	w.int64(x.IssueTimestamp)
	w.int64(x.MaxTimestamp)
	w.int64(x.ExpirationTimestamp)
	w.str("TokenId", x.TokenId)
	w.tags(nil, x.UnknownTags, nil)
}

func (x *DelegationTokenRecord) decodeBody(r *reader) {
	x.Owner = r.str("Owner")
	x.Requester = r.str("Requester")
	x.Renewers = r.strs("Renewers")
	x.IssueTimestamp = r.int64("IssueTimestamp")
	x.MaxTimestamp = r.int64("MaxTimestamp")
	x.ExpirationTimestamp = r.int64("ExpirationTimestamp")
	x.TokenId = r.str("TokenId")
	x.UnknownTags = r.tags(nil, nil)
}

// RemoveDelegationTokenRecord (api key 26) deletes a delegation token.
// Versions: 0.
type RemoveDelegationTokenRecord struct {
	RecordVersion int16

	TokenId string

	UnknownTags []TaggedField
}

func (*RemoveDelegationTokenRecord) APIKey() int16         { return APIKeyRemoveDelegationTokenRecord }
func (*RemoveDelegationTokenRecord) HighestVersion() int16 { return 0 }
func (x *RemoveDelegationTokenRecord) Version() int16      { return x.RecordVersion }
func (x *RemoveDelegationTokenRecord) SetVersion(v int16)  { x.RecordVersion = v }

func (x *RemoveDelegationTokenRecord) encodeBody(w *writer) {
	w.str("TokenId", x.TokenId)
	w.tags(nil, x.UnknownTags, nil)
}

func (x *RemoveDelegationTokenRecord) decodeBody(r *reader) {
	x.TokenId = r.str("TokenId")
	x.UnknownTags = r.tags(nil, nil)
}
