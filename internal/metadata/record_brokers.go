package metadata

// RegisterBrokerRecord (api key 0) registers a broker, or re-registers it
// with a new incarnation. Versions: 0-3 (1 adds InControlledShutdown, 2
// adds IsMigratingZkBroker, 3 adds LogDirs).
type RegisterBrokerRecord struct {
	RecordVersion int16

	BrokerId int32
	// IsMigratingZkBroker marks a ZooKeeper-mode broker taking part in a
	// migration to KRaft. Versions 2+.
	IsMigratingZkBroker bool
	IncarnationId       Uuid  // id of this run of the broker process
	BrokerEpoch         int64 // epoch the controller assigned
	EndPoints           []BrokerEndpoint
	Features            []BrokerFeature
	Rack                *string // nil when the broker has no rack
	Fenced              bool    // default true
	// InControlledShutdown is set while the broker shuts down cleanly.
	// Versions 1+.
	InControlledShutdown bool
	// LogDirs are the ids of the broker's usable log directories.
	// Versions 3+, tag 0.
	LogDirs []Uuid

	UnknownTags []TaggedField
}

// BrokerEndpoint is one listener of a RegisterBrokerRecord.
type BrokerEndpoint struct {
	Name             string // listener name
	Host             string
	Port             uint16
	SecurityProtocol int16 // Kafka's SecurityProtocol id (0 PLAINTEXT, 1 SSL, 2 SASL_PLAINTEXT, 3 SASL_SSL)

	UnknownTags []TaggedField
}

// BrokerFeature is the range of levels of one feature a broker supports.
type BrokerFeature struct {
	Name                string
	MinSupportedVersion int16
	MaxSupportedVersion int16

	UnknownTags []TaggedField
}

// NewRegisterBrokerRecord returns a RegisterBrokerRecord at its highest
// version with Kafka's defaults (Fenced true).
func NewRegisterBrokerRecord() *RegisterBrokerRecord {
	return &RegisterBrokerRecord{RecordVersion: 3, Fenced: true}
}

func (*RegisterBrokerRecord) APIKey() int16         { return APIKeyRegisterBrokerRecord }
func (*RegisterBrokerRecord) HighestVersion() int16 { return 3 }
func (x *RegisterBrokerRecord) Version() int16      { return x.RecordVersion }
func (x *RegisterBrokerRecord) SetVersion(v int16)  { x.RecordVersion = v }

func registerBrokerRecordTags(v int16, tag uint32) bool { return tag == 0 && v >= 3 }

func (x *RegisterBrokerRecord) encodeBody(w *writer) {
	w.int32(x.BrokerId)
	if w.v >= 2 {
		w.bool(x.IsMigratingZkBroker)
	} else {
		w.absent("IsMigratingZkBroker", 2, !x.IsMigratingZkBroker)
	}
	w.uuid(x.IncarnationId)
	w.int64(x.BrokerEpoch)
	w.arrayLen(len(x.EndPoints))
	for _, e := range x.EndPoints {
		w.str("EndPoints.Name", e.Name)
		w.str("EndPoints.Host", e.Host)
		w.uint16(e.Port)
		w.int16(e.SecurityProtocol)
		w.tags(nil, e.UnknownTags, nil)
	}
	w.arrayLen(len(x.Features))
	for _, f := range x.Features {
		w.str("Features.Name", f.Name)
		w.int16(f.MinSupportedVersion)
		w.int16(f.MaxSupportedVersion)
		w.tags(nil, f.UnknownTags, nil)
	}
	w.nullableStr("Rack", x.Rack)
	w.bool(x.Fenced)
	if w.v >= 1 {
		w.bool(x.InControlledShutdown)
	} else {
		w.absent("InControlledShutdown", 1, !x.InControlledShutdown)
	}
	var tags []TaggedField
	if w.v >= 3 {
		if len(x.LogDirs) > 0 {
			tags = append(tags, w.tagged(0, func(t *writer) { t.uuids(x.LogDirs) }))
		}
	} else {
		w.absent("LogDirs", 3, len(x.LogDirs) == 0)
	}
	w.tags(tags, x.UnknownTags, registerBrokerRecordTags)
}

func (x *RegisterBrokerRecord) decodeBody(r *reader) {
	x.BrokerId = r.int32("BrokerId")
	if r.v >= 2 {
		x.IsMigratingZkBroker = r.bool("IsMigratingZkBroker")
	}
	x.IncarnationId = r.uuid("IncarnationId")
	x.BrokerEpoch = r.int64("BrokerEpoch")
	// An endpoint is at least 7 bytes: two empty strings, the port, the
	// protocol and an empty tag section.
	if n, _ := r.arrayLen("EndPoints", 7, false); n > 0 {
		x.EndPoints = make([]BrokerEndpoint, n)
		for i := range x.EndPoints {
			e := &x.EndPoints[i]
			e.Name = r.str("EndPoints.Name")
			e.Host = r.str("EndPoints.Host")
			e.Port = r.uint16("EndPoints.Port")
			e.SecurityProtocol = r.int16("EndPoints.SecurityProtocol")
			e.UnknownTags = r.tags(nil, nil)
		}
	}
	// A feature is at least 6 bytes: an empty string, two int16s and an
	// empty tag section.
	if n, _ := r.arrayLen("Features", 6, false); n > 0 {
		x.Features = make([]BrokerFeature, n)
		for i := range x.Features {
			f := &x.Features[i]
			f.Name = r.str("Features.Name")
			f.MinSupportedVersion = r.int16("Features.MinSupportedVersion")
			f.MaxSupportedVersion = r.int16("Features.MaxSupportedVersion")
			f.UnknownTags = r.tags(nil, nil)
		}
	}
	x.Rack = r.nullableStr("Rack")
	x.Fenced = r.bool("Fenced")
	if r.v >= 1 {
		x.InControlledShutdown = r.bool("InControlledShutdown")
	}
	x.UnknownTags = r.tags(registerBrokerRecordTags, func(tag uint32, t *reader) {
		x.LogDirs = t.uuids("LogDirs") // tag 0, the only one defined
	})
}

// UnregisterBrokerRecord (api key 1) removes a broker registration.
// Versions: 0.
type UnregisterBrokerRecord struct {
	RecordVersion int16

	BrokerId    int32
	BrokerEpoch int64

	UnknownTags []TaggedField
}

func (*UnregisterBrokerRecord) APIKey() int16         { return APIKeyUnregisterBrokerRecord }
func (*UnregisterBrokerRecord) HighestVersion() int16 { return 0 }
func (x *UnregisterBrokerRecord) Version() int16      { return x.RecordVersion }
func (x *UnregisterBrokerRecord) SetVersion(v int16)  { x.RecordVersion = v }

func (x *UnregisterBrokerRecord) encodeBody(w *writer) {
	w.int32(x.BrokerId)
	w.int64(x.BrokerEpoch)
	w.tags(nil, x.UnknownTags, nil)
}

func (x *UnregisterBrokerRecord) decodeBody(r *reader) {
	x.BrokerId = r.int32("BrokerId")
	x.BrokerEpoch = r.int64("BrokerEpoch")
	x.UnknownTags = r.tags(nil, nil)
}

// FenceBrokerRecord (api key 7) fences a broker, removing it from every
// ISR. Versions: 0.
type FenceBrokerRecord struct {
	RecordVersion int16

	Id    int32 // broker id
	Epoch int64 // broker epoch

	UnknownTags []TaggedField
}

func (*FenceBrokerRecord) APIKey() int16         { return APIKeyFenceBrokerRecord }
func (*FenceBrokerRecord) HighestVersion() int16 { return 0 }
func (x *FenceBrokerRecord) Version() int16      { return x.RecordVersion }
func (x *FenceBrokerRecord) SetVersion(v int16)  { x.RecordVersion = v }

func (x *FenceBrokerRecord) encodeBody(w *writer) {
	w.int32(x.Id)
	w.int64(x.Epoch)
	w.tags(nil, x.UnknownTags, nil)
}

func (x *FenceBrokerRecord) decodeBody(r *reader) {
	x.Id = r.int32("Id")
	x.Epoch = r.int64("Epoch")
	x.UnknownTags = r.tags(nil, nil)
}

// UnfenceBrokerRecord (api key 8) unfences a broker. Versions: 0.
type UnfenceBrokerRecord struct {
	RecordVersion int16

	Id    int32 // broker id
	Epoch int64 // broker epoch

	UnknownTags []TaggedField
}

func (*UnfenceBrokerRecord) APIKey() int16         { return APIKeyUnfenceBrokerRecord }
func (*UnfenceBrokerRecord) HighestVersion() int16 { return 0 }
func (x *UnfenceBrokerRecord) Version() int16      { return x.RecordVersion }
func (x *UnfenceBrokerRecord) SetVersion(v int16)  { x.RecordVersion = v }

func (x *UnfenceBrokerRecord) encodeBody(w *writer) {
	w.int32(x.Id)
	w.int64(x.Epoch)
	w.tags(nil, x.UnknownTags, nil)
}

func (x *UnfenceBrokerRecord) decodeBody(r *reader) {
	x.Id = r.int32("Id")
	x.Epoch = r.int64("Epoch")
	x.UnknownTags = r.tags(nil, nil)
}

// BrokerRegistrationChangeRecord (api key 17) changes part of a broker's
// registration. The tagged fields mean "unchanged" at their zero value.
// Versions: 0-2 (1 adds InControlledShutdown, 2 adds LogDirs).
type BrokerRegistrationChangeRecord struct {
	RecordVersion int16

	BrokerId    int32
	BrokerEpoch int64
	// Fenced is 1 when the broker became fenced, -1 when it became
	// unfenced, 0 for no change. Tag 0.
	Fenced int8
	// InControlledShutdown is 1 when the broker entered controlled
	// shutdown, 0 for no change. Versions 1+, tag 1.
	InControlledShutdown int8
	// LogDirs is the new set of usable log directories; empty means no
	// change. Versions 2+, tag 2.
	LogDirs []Uuid

	UnknownTags []TaggedField
}

func (*BrokerRegistrationChangeRecord) APIKey() int16 {
	return APIKeyBrokerRegistrationChangeRecord
}
func (*BrokerRegistrationChangeRecord) HighestVersion() int16 { return 2 }
func (x *BrokerRegistrationChangeRecord) Version() int16      { return x.RecordVersion }
func (x *BrokerRegistrationChangeRecord) SetVersion(v int16)  { x.RecordVersion = v }

func brokerRegistrationChangeRecordTags(v int16, tag uint32) bool {
	return tag <= 2 && int16(tag) <= v
}

func (x *BrokerRegistrationChangeRecord) encodeBody(w *writer) {
	w.int32(x.BrokerId)
	w.int64(x.BrokerEpoch)
	var tags []TaggedField
	if x.Fenced != 0 {
		tags = append(tags, w.tagged(0, func(t *writer) { t.int8(x.Fenced) }))
	}
	if w.v >= 1 {
		if x.InControlledShutdown != 0 {
			tags = append(tags, w.tagged(1, func(t *writer) { t.int8(x.InControlledShutdown) }))
		}
	} else {
		w.absent("InControlledShutdown", 1, x.InControlledShutdown == 0)
	}
	if w.v >= 2 {
		if len(x.LogDirs) > 0 {
			tags = append(tags, w.tagged(2, func(t *writer) { t.uuids(x.LogDirs) }))
		}
	} else {
		w.absent("LogDirs", 2, len(x.LogDirs) == 0)
	}
	w.tags(tags, x.UnknownTags, brokerRegistrationChangeRecordTags)
}

func (x *BrokerRegistrationChangeRecord) decodeBody(r *reader) {
	x.BrokerId = r.int32("BrokerId")
	x.BrokerEpoch = r.int64("BrokerEpoch")
	x.UnknownTags = r.tags(brokerRegistrationChangeRecordTags, func(tag uint32, t *reader) {
		switch tag {
		case 0:
			x.Fenced = t.int8("Fenced")
		case 1:
			x.InControlledShutdown = t.int8("InControlledShutdown")
		case 2:
			x.LogDirs = t.uuids("LogDirs")
		}
	})
}
