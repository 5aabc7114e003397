package reqfuzz

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/record"
)

// API is one advertised API key with its version range.
type API struct{ Key, Min, Max int16 }

// Frame is one generated request as sent: size prefix, header, body.
type Frame struct {
	Seq     int
	Req     kmsg.Request // the body's request, at its version
	Key     int16        // API key and version in the header (another API's
	Version int16        // when Mutation says so)
	Corr    int32
	Bytes   []byte
	// Mutation says how the frame departs from a well-formed request of
	// Req; empty for a clean frame.
	Mutation string
}

// Clean reports whether the header and body are Req's, unaltered.
func (f *Frame) Clean() bool { return f.Mutation == "" }

// Answered reports whether a well-behaved broker answers the frame (an
// acks=0 Produce gets no answer).
func (f *Frame) Answered() bool {
	p, ok := f.Req.(*kmsg.ProduceRequest)
	return !(f.Clean() && ok && p.Acks == 0)
}

// InternalTopics are the topics only weir itself may write.
var InternalTopics = []string{"__consumer_offsets", "__transaction_state", "__cluster_metadata"}

// FuzzTopics are the topics the driver creates before fuzzing, so requests
// name existing topics as well as missing ones.
var FuzzTopics = []string{"fuzz-0", "fuzz-1", "fuzz-2", "fuzz-3"}

// Generator makes request frames from a seeded RNG. The sequence of frames
// depends only on the seed, the advertised APIs and the topic ids handed
// to it, so a seed reproduces a run's requests.
type Generator struct {
	rng  *rand.Rand
	apis []API
	// TopicIDs are ids of existing topics (the fuzz and internal topics);
	// requests that name topics by id pick among them or random ids.
	TopicIDs [][16]byte
	seq      int
	budget   int // bytes left for the frame being built
	flexible bool
}

// NewGenerator returns a generator for the advertised APIs that kmsg knows.
func NewGenerator(seed uint64, apis []API) *Generator {
	g := &Generator{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	for _, a := range apis {
		if kmsg.RequestForKey(a.Key) != nil {
			g.apis = append(g.apis, a)
		}
	}
	return g
}

func (g *Generator) n(k int) int         { return g.rng.IntN(k) }
func (g *Generator) chance(pct int) bool { return g.rng.IntN(100) < pct }

func pick[T any](g *Generator, xs []T) T { return xs[g.n(len(xs))] }

// Next builds the next frame.
func (g *Generator) Next() *Frame {
	g.seq++
	f := &Frame{Seq: g.seq, Corr: int32(g.seq)}
	a := pick(g, g.apis)
	f.Key, f.Version = a.Key, a.Min+int16(g.n(int(a.Max-a.Min)+1))
	f.Req = kmsg.RequestForKey(f.Key)
	f.Req.SetVersion(f.Version)
	g.flexible = f.Req.IsFlexible()
	switch r := g.n(100); {
	case r < 90:
		g.budget = 64 << 10
	case r < 98:
		g.budget = 1 << 20
	default:
		g.budget = MaxRequestBytes * 3 / 2
	}
	g.fill(reflect.ValueOf(f.Req).Elem(), "", "", 0)
	f.Req.SetVersion(f.Version)

	// The header: usually the body's, sometimes another API's, an
	// unadvertised version or an unknown key.
	hkey, hver := f.Key, f.Version
	switch r := g.n(100); {
	case r < 4:
		b := pick(g, g.apis)
		hkey, hver = b.Key, b.Min+int16(g.n(int(b.Max-b.Min)+1))
		f.Mutation = fmt.Sprintf("header of %s v%d", kmsg.NameForKey(hkey), hver)
	case r < 6:
		hver = pick(g, []int16{a.Max + 1, a.Min - 1, -1, math.MaxInt16})
		f.Mutation = fmt.Sprintf("header version %d", hver)
	case r < 7:
		hkey = pick(g, []int16{4, 5, 6, 7, 58, 1000, -1, math.MaxInt16})
		f.Mutation = fmt.Sprintf("header key %d", hkey)
	}
	if hkey == f.Key && hver == f.Version {
		f.Mutation = ""
	}
	f.Key, f.Version = hkey, hver
	var clientID *string
	if !g.chance(10) {
		s := g.str("ClientID", "")
		s = s[:min(len(s), math.MaxInt16)] // the header's STRING
		clientID = &s
	}
	f.Bytes = appendFrame(nil, f.Req, hkey, hver, f.Corr, clientID)
	if g.chance(10) {
		g.mutate(f)
	}
	return f
}

// appendFrame encodes a request frame with the given header key and
// version: size, request header v1 (v2, with tagged fields, when the body
// is flexible), body.
func appendFrame(dst []byte, req kmsg.Request, key, version int16, corr int32, clientID *string) []byte {
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint16(dst, uint16(key))
	dst = binary.BigEndian.AppendUint16(dst, uint16(version))
	dst = binary.BigEndian.AppendUint32(dst, uint32(corr))
	if clientID == nil {
		dst = binary.BigEndian.AppendUint16(dst, 0xffff)
	} else {
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(*clientID)))
		dst = append(dst, *clientID...)
	}
	if req.IsFlexible() {
		dst = append(dst, 0)
	}
	dst = req.AppendTo(dst)
	binary.BigEndian.PutUint32(dst, uint32(len(dst)-4))
	return dst
}

// mutate alters an encoded frame: flipped bytes, truncation, trailing
// garbage, or a size prefix that lies.
func (g *Generator) mutate(f *Frame) {
	b := f.Bytes
	body := len(b) - 4
	switch g.n(6) {
	case 0, 1:
		k := 1 + g.n(8)
		for range k {
			b[4+g.n(body)] = byte(g.n(256))
		}
		f.Mutation = fmt.Sprintf("%d bytes overwritten", k)
	case 2:
		cut := g.n(body)
		b = b[:4+cut]
		f.Mutation = fmt.Sprintf("truncated to %d bytes", cut)
	case 3:
		k := 1 + g.n(64)
		for range k {
			b = append(b, byte(g.n(256)))
		}
		f.Mutation = fmt.Sprintf("%d bytes appended", k)
	case 4:
		size := pick(g, []int32{-1, math.MinInt32, MaxRequestBytes + 1, math.MaxInt32, 0})
		binary.BigEndian.PutUint32(b, uint32(size))
		f.Mutation = fmt.Sprintf("size prefix %d", size)
		f.Bytes = b
		return
	case 5:
		size := int32(body - 1 - g.n(min(body, 8)))
		binary.BigEndian.PutUint32(b, uint32(size))
		f.Mutation = fmt.Sprintf("size prefix %d of %d", size, body)
		f.Bytes = b
		return
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	f.Bytes = b
}

var tagsType = reflect.TypeFor[kmsg.Tags]()

// fill sets v, field name of struct type owner, to a random type-valid
// value. The top level's Version is left to SetVersion.
func (g *Generator) fill(v reflect.Value, name, owner string, depth int) {
	t := v.Type()
	switch t.Kind() {
	case reflect.Struct:
		if t == tagsType {
			if g.chance(3) {
				tags := v.Addr().Interface().(*kmsg.Tags)
				tags.Set(uint32(g.intOf(32, "")), g.bytes(""))
			}
			return
		}
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() || depth == 0 && sf.Name == "Version" {
				continue
			}
			g.fill(v.Field(i), sf.Name, t.Name(), depth+1)
		}
	case reflect.Pointer:
		if g.chance(20) {
			v.SetZero()
			return
		}
		p := reflect.New(t.Elem())
		g.fill(p.Elem(), name, owner, depth)
		v.Set(p)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			if name == "Records" {
				v.SetBytes(g.records())
			} else {
				v.SetBytes(g.bytes(name))
			}
			return
		}
		g.fillSlice(v, name, owner, depth)
	case reflect.Array: // [16]byte UUIDs
		id := g.uuid()
		reflect.Copy(v, reflect.ValueOf(id[:]))
	case reflect.String:
		v.SetString(g.str(name, owner))
	case reflect.Bool:
		v.SetBool(g.n(2) == 0)
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(g.intOf(t.Bits(), name))
	case reflect.Uint16:
		v.SetUint(uint64(pick(g, []uint16{0, 1, math.MaxUint16, uint16(g.n(1 << 16))})))
	case reflect.Float64:
		v.SetFloat(pick(g, []float64{0, -1, 1, 0.5, math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64, g.rng.NormFloat64() * 1e6}))
	default:
		panic(fmt.Sprintf("reqfuzz: no generator for %s.%s of kind %s", owner, name, t.Kind()))
	}
	if k := t.Kind(); k != reflect.Struct && k != reflect.Slice && k != reflect.Pointer {
		g.budget -= int(t.Size())
	}
}

// fillSlice makes an array null, empty, short, or huge (copies of one
// element, as many as the frame's budget allows).
func (g *Generator) fillSlice(v reflect.Value, name, owner string, depth int) {
	t := v.Type()
	switch r := g.n(100); {
	case r < 10:
		v.SetZero() // null where the version allows it, else empty
	case r < 20:
		v.Set(reflect.MakeSlice(t, 0, 0))
	case r < 95 || g.budget < 1024:
		k := 1 + g.n(3)
		s := reflect.MakeSlice(t, k, k)
		for i := range k {
			g.fill(s.Index(i), name, owner, depth)
		}
		v.Set(s)
	default:
		before := g.budget
		s := reflect.MakeSlice(t, 1, 1)
		g.fill(s.Index(0), name, owner, depth)
		each := max(before-g.budget, 4)
		k := min(pick(g, []int{1000, 10_000, 100_000, 1 << 20}), max(g.budget/each, 1))
		big := reflect.MakeSlice(t, k, k)
		for i := range k {
			big.Index(i).Set(s.Index(0))
		}
		g.budget -= k * each
		v.Set(big)
	}
}

// intHints are values that make a field of that name meaningful; fill
// picks one of them half the time.
var intHints = map[string][]int64{
	"Acks":               {-1, 0, 1},
	"IsolationLevel":     {0, 1},
	"Partition":          {0, 1, 2},
	"Partitions":         {0, 1, 2},
	"ReplicationFactor":  {-1, 1, 2, 3},
	"NumPartitions":      {-1, 1, 2, 3},
	"Count":              {1, 2, 3, 5},
	"ResourceType":       {2, 4, 8},
	"KeyType":            {0, 1},
	"Op":                 {0, 1, 2, 3},
	"ProducerID":         {-1, 0, 1, 2, 3},
	"ProducerEpoch":      {-1, 0, 1},
	"Replicas":           {1, 2, 3},
	"Leader":             {-1, 1, 2, 3},
	"ReplicaID":          {-1, 1, 2, 3},
	"BrokerID":           {-1, 1, 2, 3},
	"NodeID":             {-1, 1, 2, 3},
	"Timestamp":          {-1, -2, -3, -4, -5, 0},
	"Offset":             {0, 1, -1},
	"FetchOffset":        {0, 1, -1},
	"MaxBytes":           {0, 1, 1 << 10, 1 << 20},
	"PartitionMaxBytes":  {0, 1, 1 << 10, 1 << 20},
	"MinBytes":           {0, 1},
	"GenerationID":       {-1, 0, 1},
	"LeaderEpoch":        {-1, 0, 1},
	"CurrentLeaderEpoch": {-1, 0, 1},
	"ElectionType":       {0, 1},
	"CoordinatorEpoch":   {-1, 0, 1},
	"TransactionResult":  {0, 1},
}

// intOf returns a random value of a signed integer of the given width:
// small, -1, extremes, or anything.
func (g *Generator) intOf(bits int, name string) int64 {
	if h, ok := intHints[name]; ok && g.chance(50) {
		return h[g.n(len(h))]
	}
	if strings.HasSuffix(name, "Millis") && g.chance(60) {
		return pick(g, []int64{0, 1, 10, 100})
	}
	hi := int64(1)<<(bits-1) - 1
	lo := -hi - 1
	switch g.n(10) {
	case 0, 1, 2, 3:
		return int64(g.n(11))
	case 4:
		return -1
	case 5:
		return pick(g, []int64{hi, hi - 1})
	case 6:
		return pick(g, []int64{lo, lo + 1})
	case 7:
		return -2 - int64(g.n(100))
	default:
		return int64(g.rng.Uint64()<<(64-bits)) >> (64 - bits)
	}
}

// strPools are names that make a string field of that name meaningful.
var strPools = map[string][]string{
	"Topic":           topicPool,
	"TopicNames":      topicPool,
	"Name":            topicPool, // a topic in most structs; configs below
	"ResourceName":    append(append([]string{"", "1", "2"}, topicPool...), "root"),
	"Group":           {"fuzz-group", "g", ""},
	"Groups":          {"fuzz-group", "g", ""},
	"GroupID":         {"fuzz-group", "g", ""},
	"TransactionalID": {"fuzz-txn", "t", ""},
	"TransactionID":   {"fuzz-txn", "t", ""},
	"MemberID":        {"", "m", "consumer-1-ffff"},
	"ProtocolType":    {"consumer", ""},
	"Protocol":        {"range", "roundrobin", "cooperative-sticky"},
	"Key":             {"fuzz-group", "fuzz-txn"},
}

var topicPool = append(append([]string{"", ".", "..", "fuzz-9", strings.Repeat("t", 249), strings.Repeat("t", 250)}, InternalTopics...), FuzzTopics...)

// configNames are topic configuration keys, and the broker keys that set
// their defaults: the canary topic overrides every one of these, so random
// values do not make its data disappear.
var configNames = []string{"cleanup.policy", "retention.ms", "retention.bytes", "segment.bytes", "segment.ms",
	"max.message.bytes", "min.insync.replicas", "compression.type", "message.timestamp.type",
	"unclean.leader.election.enable", "min.cleanable.dirty.ratio", "delete.retention.ms",
	"log.retention.ms", "log.retention.bytes", "log.cleanup.policy", "log.segment.bytes", "message.max.bytes",
	"segment.index.bytes", "index.interval.bytes", "file.delete.delay.ms", "flush.messages"}

var configValues = []string{"", "0", "-1", "1", "-2", "compact", "delete", "compact,delete", "zstd", "producer",
	"9223372036854775807", "9223372036854775808", "2147483648", "1e3", "0.5", "NaN", "true", "LogAppendTime", "x"}

// str returns a random string: a name from the field's pool, empty,
// short, non-UTF-8, multi-byte or huge.
func (g *Generator) str(name, owner string) string {
	pool := strPools[name]
	if strings.Contains(owner, "Config") {
		switch name {
		case "Name":
			pool = configNames
		case "Value":
			pool = configValues
		}
	}
	if pool != nil && g.chance(60) {
		return pick(g, pool)
	}
	switch g.n(10) {
	case 0, 1:
		return ""
	case 2, 3:
		return g.ascii(1+g.n(12), "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
	case 4:
		return g.ascii(1+g.n(12), " /\\:*?\"<>|\x00\n\t%$#@!")
	case 5:
		b := make([]byte, 1+g.n(64))
		for i := range b {
			b[i] = byte(0x80 + g.n(0x80)) // continuation and lead bytes in disorder
		}
		return string(b)
	case 6:
		return strings.Repeat(pick(g, []string{"ü", "€", "𝄞", "\u202e"}), 1+g.n(100))
	case 7:
		n := pick(g, []int{249, 255, 1000, 32767, g.n(32768)})
		if g.flexible && g.chance(20) {
			n = 32768 + g.n(40000)
		}
		if n > g.budget {
			n = g.budget / 2
		}
		g.budget -= n
		return strings.Repeat(string(rune('a'+g.n(26))), max(n, 0))
	default:
		return fmt.Sprintf("fuzz-%d", g.n(10))
	}
}

func (g *Generator) ascii(n int, alphabet string) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[g.n(len(alphabet))]
	}
	return string(b)
}

// bytes returns nil, empty, random or large bytes.
func (g *Generator) bytes(string) []byte {
	switch g.n(6) {
	case 0:
		return nil
	case 1:
		return []byte{}
	case 5:
		if g.budget > 1<<16 {
			n := g.n(g.budget / 2)
			g.budget -= n
			return make([]byte, n)
		}
	}
	b := make([]byte, g.n(100))
	for i := range b {
		b[i] = byte(g.n(256))
	}
	return b
}

func (g *Generator) uuid() [16]byte {
	var id [16]byte
	switch g.n(4) {
	case 0:
	case 1:
		for i := range id {
			id[i] = 0xff
		}
	case 2:
		binary.BigEndian.PutUint64(id[:], g.rng.Uint64())
		binary.BigEndian.PutUint64(id[8:], g.rng.Uint64())
	default:
		if i := g.n(16); i < len(g.TopicIDs) {
			id = g.TopicIDs[i]
		}
	}
	return id
}

// records returns a Records field: null, empty, random bytes, or one or
// more CRC-valid record batches with nonsense in their headers, counts,
// attributes and records, sometimes truncated.
func (g *Generator) records() []byte {
	switch g.n(10) {
	case 0:
		return nil
	case 1:
		return []byte{}
	case 2:
		return g.bytes("")
	}
	var out []byte
	for range 1 + g.n(3) {
		out = append(out, g.batch()...)
	}
	if g.chance(5) {
		out = out[:g.n(len(out))]
	}
	g.budget -= len(out)
	return out
}

func (g *Generator) batch() []byte {
	h := record.NewBatchHeader()
	if g.chance(30) {
		h.BaseOffset = g.intOf(64, "Offset")
		h.LeaderEpoch = int32(g.intOf(32, "LeaderEpoch"))
	}
	if g.chance(40) {
		h.ProducerID, h.ProducerEpoch = g.intOf(64, "ProducerID"), int16(g.intOf(16, "ProducerEpoch"))
		h.BaseSequence = int32(g.intOf(32, ""))
	}
	h.BaseTimestamp = pick(g, []int64{0, -1, 1_700_000_000_000, math.MaxInt64, g.intOf(64, "")})
	h.MaxTimestamp = pick(g, []int64{h.BaseTimestamp, -1, g.intOf(64, "")})
	codec := record.Codec(pick(g, []int{0, 0, 1, 2, 3, 4}))
	h.Attributes = h.Attributes.WithCodec(codec)
	var raw []byte
	count := int32(0)
	bombed := g.chance(3)
	if bombed {
		// A small zstd payload that expands to one 64 MiB record.
		h.Attributes = h.Attributes.WithCodec(record.None)
		raw, count = bomb(), 1
	} else {
		for range g.n(6) {
			r := record.Record{Attributes: int8(g.intOf(8, "")), TimestampDelta: g.intOf(64, "Millis"),
				OffsetDelta: count, Key: g.bytes(""), Value: g.bytes("")}
			if g.chance(10) {
				r.OffsetDelta = int32(g.intOf(32, ""))
			}
			if g.chance(20) {
				r.Headers = []record.Header{{Key: g.str("", ""), Value: g.bytes("")}}
			}
			if g.chance(5) {
				r.Key = binary.BigEndian.AppendUint32(nil, uint32(g.n(3))) // control record key
			}
			raw = record.AppendRecord(raw, &r)
			count++
		}
	}
	if g.chance(10) {
		count = int32(g.intOf(32, ""))
	}
	b, err := record.BuildRaw(h, count, raw, 0)
	if err != nil {
		panic(err)
	}
	if bombed {
		binary.BigEndian.PutUint16(b[21:], uint16(h.Attributes.WithCodec(record.Zstd)))
	}
	if g.chance(20) {
		// Transactional, control, log-append time, invalid codec bits.
		attrs := uint16(record.Attributes(g.n(1<<7)) | h.Attributes&0x7)
		binary.BigEndian.PutUint16(b[21:], attrs)
	}
	if g.chance(5) {
		b[record.MagicOffset] = byte(g.n(4))
	}
	b.UpdateCRC()
	return b
}

var bombOnce = sync.OnceValue(func() []byte {
	r := record.Record{Value: make([]byte, 64<<20)}
	raw := record.AppendRecord(nil, &r)
	z, err := record.Compress(record.Zstd, raw, nil, 0)
	if err != nil {
		panic(err)
	}
	return z
})

// bomb returns the zstd-compressed payload of one 64 MiB record.
func bomb() []byte { return bombOnce() }
