package perf

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Payloads hands out record values without allocating: fixed-size values
// are windows into one buffer of random upper-case letters (the bytes
// Kafka's tool sends), file payloads are slices of the file, and monotonic
// payloads are written into a caller's scratch buffer. Not safe for
// concurrent use.
type Payloads struct {
	size      int
	buf       []byte
	list      [][]byte
	monotonic bool
	rng       *rand.Rand
}

// randomPayloadBuffer is how much random text fixed-size values are cut
// from, so that consecutive records differ and compress like real text.
const randomPayloadBuffer = 4 << 20

// NewRandomPayloads returns size-byte values of random letters A-Z.
func NewRandomPayloads(size int, seed uint64) *Payloads {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	buf := make([]byte, max(randomPayloadBuffer, 2*size))
	for i := 0; i < len(buf); {
		// four letters from each 64 random bits, 16 bits apiece
		x := rng.Uint64()
		for j := 0; j < 4 && i < len(buf); j++ {
			buf[i] = byte('A' + (x&0xffff)%26)
			x >>= 16
			i++
		}
	}
	return &Payloads{size: size, buf: buf, rng: rng}
}

// NewFilePayloads splits data on delim (as --payload-file with
// --payload-delimiter does) and hands out a random piece per record. Empty
// pieces are dropped, since Java's Scanner skips them too.
func NewFilePayloads(data []byte, delim string, seed uint64) (*Payloads, error) {
	if delim == "" {
		return nil, errors.New("payload delimiter is empty")
	}
	var list [][]byte
	s := string(data)
	off := 0
	for off <= len(s) {
		i := strings.Index(s[off:], delim)
		end := len(s)
		if i >= 0 {
			end = off + i
		}
		if end > off {
			list = append(list, data[off:end:end])
		}
		if i < 0 {
			break
		}
		off = end + len(delim)
	}
	if len(list) == 0 {
		return nil, errors.New("payload file holds no payloads")
	}
	return &Payloads{list: list, rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))}, nil
}

// NewMonotonicPayloads returns the record number in decimal as the value.
func NewMonotonicPayloads() *Payloads { return &Payloads{monotonic: true} }

// Len is the number of distinct file payloads (0 for other kinds).
func (p *Payloads) Len() int { return len(p.list) }

// Next returns the value for record i. scratch is used, and returned
// resliced, only for monotonic payloads; the caller keeps it with the record
// until the record is acknowledged.
func (p *Payloads) Next(i int64, scratch []byte) []byte {
	switch {
	case p.monotonic:
		return strconv.AppendInt(scratch[:0], i, 10)
	case p.list != nil:
		return p.list[p.rng.IntN(len(p.list))]
	default:
		off := p.rng.IntN(len(p.buf) - p.size + 1)
		return p.buf[off : off+p.size : off+p.size]
	}
}
