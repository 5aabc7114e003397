package metadata

// ProducerIdsRecord (api key 15) hands a block of producer ids to a broker.
// Versions: 0.
type ProducerIdsRecord struct {
	RecordVersion int16

	BrokerId       int32 // broker that asked for the block
	BrokerEpoch    int64 // its epoch; default -1
	NextProducerId int64 // first id of the next block to be handed out

	UnknownTags []TaggedField
}

// NewProducerIdsRecord returns a ProducerIdsRecord with Kafka's defaults
// (BrokerEpoch -1).
func NewProducerIdsRecord() *ProducerIdsRecord { return &ProducerIdsRecord{BrokerEpoch: -1} }

func (*ProducerIdsRecord) APIKey() int16         { return APIKeyProducerIdsRecord }
func (*ProducerIdsRecord) HighestVersion() int16 { return 0 }
func (x *ProducerIdsRecord) Version() int16      { return x.RecordVersion }
func (x *ProducerIdsRecord) SetVersion(v int16)  { x.RecordVersion = v }

func (x *ProducerIdsRecord) encodeBody(w *writer) {
	w.int32(x.BrokerId)
	w.int64(x.BrokerEpoch)
	w.int64(x.NextProducerId)
	w.tags(nil, x.UnknownTags, nil)
}

func (x *ProducerIdsRecord) decodeBody(r *reader) {
	x.BrokerId = r.int32("BrokerId")
	x.BrokerEpoch = r.int64("BrokerEpoch")
	x.NextProducerId = r.int64("NextProducerId")
	x.UnknownTags = r.tags(nil, nil)
}

// FeatureLevelRecord (api key 12) sets the finalized level of a feature
// ("metadata.version", "kraft.version", ...) for the whole cluster; level 0
// means the feature is off. Kafka keeps this type at version 0 for good,
// since new logs start with one. Versions: 0.
type FeatureLevelRecord struct {
	RecordVersion int16

	Name         string
	FeatureLevel int16

	UnknownTags []TaggedField
}

func (*FeatureLevelRecord) APIKey() int16         { return APIKeyFeatureLevelRecord }
func (*FeatureLevelRecord) HighestVersion() int16 { return 0 }
func (x *FeatureLevelRecord) Version() int16      { return x.RecordVersion }
func (x *FeatureLevelRecord) SetVersion(v int16)  { x.RecordVersion = v }

func (x *FeatureLevelRecord) encodeBody(w *writer) {
	w.str("Name", x.Name)
	w.int16(x.FeatureLevel)
	w.tags(nil, x.UnknownTags, nil)
}

func (x *FeatureLevelRecord) decodeBody(r *reader) {
	x.Name = r.str("Name")
	x.FeatureLevel = r.int16("FeatureLevel")
	x.UnknownTags = r.tags(nil, nil)
}

// NoOpRecord (api key 20) carries nothing; the controller writes it to
// advance the log. Versions: 0.
type NoOpRecord struct {
	RecordVersion int16

	UnknownTags []TaggedField
}

func (*NoOpRecord) APIKey() int16          { return APIKeyNoOpRecord }
func (*NoOpRecord) HighestVersion() int16  { return 0 }
func (x *NoOpRecord) Version() int16       { return x.RecordVersion }
func (x *NoOpRecord) SetVersion(v int16)   { x.RecordVersion = v }
func (x *NoOpRecord) encodeBody(w *writer) { w.tags(nil, x.UnknownTags, nil) }
func (x *NoOpRecord) decodeBody(r *reader) { x.UnknownTags = r.tags(nil, nil) }

// BeginTransactionRecord (api key 23) starts a metadata transaction: the
// records up to the matching EndTransactionRecord or AbortTransactionRecord
// apply atomically. Versions: 0.
type BeginTransactionRecord struct {
	RecordVersion int16

	Name *string // optional description; tag 0

	UnknownTags []TaggedField
}

func (*BeginTransactionRecord) APIKey() int16         { return APIKeyBeginTransactionRecord }
func (*BeginTransactionRecord) HighestVersion() int16 { return 0 }
func (x *BeginTransactionRecord) Version() int16      { return x.RecordVersion }
func (x *BeginTransactionRecord) SetVersion(v int16)  { x.RecordVersion = v }

func tag0Only(_ int16, tag uint32) bool { return tag == 0 }

func (x *BeginTransactionRecord) encodeBody(w *writer) {
	var tags []TaggedField
	if x.Name != nil {
		tags = append(tags, w.tagged(0, func(t *writer) { t.nullableStr("Name", x.Name) }))
	}
	w.tags(tags, x.UnknownTags, tag0Only)
}

func (x *BeginTransactionRecord) decodeBody(r *reader) {
	x.UnknownTags = r.tags(tag0Only, func(_ uint32, t *reader) { x.Name = t.nullableStr("Name") })
}

// EndTransactionRecord (api key 24) commits a metadata transaction.
// Versions: 0.
type EndTransactionRecord struct {
	RecordVersion int16

	UnknownTags []TaggedField
}

func (*EndTransactionRecord) APIKey() int16          { return APIKeyEndTransactionRecord }
func (*EndTransactionRecord) HighestVersion() int16  { return 0 }
func (x *EndTransactionRecord) Version() int16       { return x.RecordVersion }
func (x *EndTransactionRecord) SetVersion(v int16)   { x.RecordVersion = v }
func (x *EndTransactionRecord) encodeBody(w *writer) { w.tags(nil, x.UnknownTags, nil) }
func (x *EndTransactionRecord) decodeBody(r *reader) { x.UnknownTags = r.tags(nil, nil) }

// AbortTransactionRecord (api key 25) aborts a metadata transaction.
// Versions: 0.
type AbortTransactionRecord struct {
	RecordVersion int16

	Reason *string // optional explanation; tag 0

	UnknownTags []TaggedField
}

func (*AbortTransactionRecord) APIKey() int16         { return APIKeyAbortTransactionRecord }
func (*AbortTransactionRecord) HighestVersion() int16 { return 0 }
func (x *AbortTransactionRecord) Version() int16      { return x.RecordVersion }
func (x *AbortTransactionRecord) SetVersion(v int16)  { x.RecordVersion = v }

func (x *AbortTransactionRecord) encodeBody(w *writer) {
	var tags []TaggedField
	if x.Reason != nil {
		tags = append(tags, w.tagged(0, func(t *writer) { t.nullableStr("Reason", x.Reason) }))
	}
	w.tags(tags, x.UnknownTags, tag0Only)
}

func (x *AbortTransactionRecord) decodeBody(r *reader) {
	x.UnknownTags = r.tags(tag0Only, func(_ uint32, t *reader) { x.Reason = t.nullableStr("Reason") })
}
