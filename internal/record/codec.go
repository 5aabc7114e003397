package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Codec is a batch compression codec, numbered as in the attributes field.
type Codec int8

const (
	None   Codec = 0
	Gzip   Codec = 1
	Snappy Codec = 2
	LZ4    Codec = 3
	Zstd   Codec = 4
)

// String is the codec's name as Kafka's compression.type spells it.
func (c Codec) String() string {
	switch c {
	case None:
		return "none"
	case Gzip:
		return "gzip"
	case Snappy:
		return "snappy"
	case LZ4:
		return "lz4"
	case Zstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}

// ParseCodec maps a compression.type value to a codec. "producer" is not a
// codec; callers handle it before asking.
func ParseCodec(name string) (Codec, error) {
	switch name {
	case "none", "uncompressed":
		return None, nil
	case "gzip":
		return Gzip, nil
	case "snappy":
		return Snappy, nil
	case "lz4":
		return LZ4, nil
	case "zstd":
		return Zstd, nil
	}
	return None, fmt.Errorf("record: unknown compression type %q", name)
}

// ErrTooLarge is returned when decompressed data would exceed the caller's limit.
var ErrTooLarge = errors.New("record: decompressed data exceeds limit")

// xerialHeader opens snappy data framed the way the Java client writes it:
// magic, then version and minimum compatible version (both int32 1), then
// chunks of [int32 length][raw snappy block].
var xerialHeader = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialChunk = 32 << 10

var (
	gzipReaders sync.Pool
	gzipWriters sync.Pool
	lz4Readers  sync.Pool
	lz4Writers  sync.Pool

	zstdOnce sync.Once
	zstdDec  *zstd.Decoder
	// zstdEncs holds one lazily made encoder per klauspost speed level.
	zstdEncs [zstd.SpeedBestCompression + 1]struct {
		once sync.Once
		enc  *zstd.Encoder
	}
)

// zstdDecoder returns the shared decoder. It decodes only into the capacity
// it is given (WithDecodeAllCapLimit), which is how Decompress bounds the
// memory a frame can make it allocate.
func zstdDecoder() *zstd.Decoder {
	zstdOnce.Do(func() {
		var err error
		zstdDec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecodeAllCapLimit(true))
		if err != nil {
			panic(err) // only fails on invalid options
		}
	})
	return zstdDec
}

// zstdEncoder returns the shared encoder for a zstd level (<= 0: default).
// Encoders run EncodeAll concurrently, up to GOMAXPROCS at a time. Empty
// input still yields a frame, which every decoder accepts.
func zstdEncoder(level int) *zstd.Encoder {
	l := zstd.SpeedDefault
	if level > 0 {
		l = zstd.EncoderLevelFromZstd(level)
	}
	e := &zstdEncs[l]
	e.once.Do(func() {
		var err error
		e.enc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(l), zstd.WithZeroFrames(true))
		if err != nil {
			panic(err) // only fails on invalid options
		}
	})
	return e.enc
}

// limitWriter is a bytes.Buffer replacement that refuses to grow past limit.
type limitWriter struct {
	buf   []byte
	limit int
}

func (w *limitWriter) Write(p []byte) (int, error) {
	if len(w.buf)+len(p) > w.limit {
		return 0, ErrTooLarge
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// Decompress appends the decompressed form of src to dst[:0] and returns it.
// It fails with ErrTooLarge rather than produce more than limit bytes, and
// with a wrapped ErrCorrupt when src is not valid for the codec.
func Decompress(c Codec, src, dst []byte, limit int) ([]byte, error) {
	dst = dst[:0]
	switch c {
	case None:
		if len(src) > limit {
			return nil, ErrTooLarge
		}
		return append(dst, src...), nil
	case Gzip:
		r, _ := gzipReaders.Get().(*gzip.Reader)
		var err error
		if r == nil {
			r, err = gzip.NewReader(bytes.NewReader(src))
		} else {
			err = r.Reset(bytes.NewReader(src))
		}
		if err != nil {
			return nil, fmt.Errorf("%w: gzip: %v", ErrCorrupt, err)
		}
		defer gzipReaders.Put(r)
		return readAllLimited(r, dst, limit)
	case Snappy:
		return snappyDecode(src, dst, limit)
	case LZ4:
		r, _ := lz4Readers.Get().(*lz4.Reader)
		if r == nil {
			r = lz4.NewReader(nil)
		}
		r.Reset(bytes.NewReader(src))
		defer lz4Readers.Put(r)
		return readAllLimited(r, dst, limit)
	case Zstd:
		return zstdDecode(src, dst, limit)
	}
	return nil, fmt.Errorf("%w: unknown codec %d", ErrCorrupt, c)
}

func readAllLimited(r io.Reader, dst []byte, limit int) ([]byte, error) {
	w := &limitWriter{buf: dst, limit: limit}
	if _, err := io.Copy(w, r); err != nil {
		if errors.Is(err, ErrTooLarge) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return w.buf, nil
}

// zstdDecode decodes into a buffer whose capacity tracks limit, so neither
// a declared frame size nor a decompression bomb can make it allocate much
// more than limit. DecodeAll stops at the capacity it is given, so decoding
// starts from a guess (the frame's declared size, or a multiple of the
// input) and retries with more room while the output may not have fit.
//
// Running out of room inside a compressed block is reported as a block
// error, not ErrDecoderSizeExceeded, so an error is taken for lack of room
// when the output reached within a block of the capacity, and for
// corruption otherwise. At the limit, one more decode with a block of slack
// tells the two apart.
func zstdDecode(src, dst []byte, limit int) ([]byte, error) {
	const blockSlack = 256 << 10 // > one block (128 KiB) and its overrun
	limit = max(limit, 0)
	want := max(cap(dst), 4*len(src), 64<<10)
	var h zstd.Header
	if h.Decode(src) == nil && h.HasFCS {
		if h.FrameContentSize > uint64(limit) {
			return nil, ErrTooLarge
		}
		want = max(want, int(h.FrameContentSize))
	}
	want = min(want, limit)
	dec := zstdDecoder()
	for {
		if cap(dst) < want {
			dst = make([]byte, 0, want)
		}
		out, err := dec.DecodeAll(src, dst[:0:want])
		switch {
		case err == nil:
			return out, nil
		case !errors.Is(err, zstd.ErrDecoderSizeExceeded) && len(out)+blockSlack < want:
			return nil, fmt.Errorf("%w: zstd: %v", ErrCorrupt, err)
		case want < limit:
			if want > limit/4 {
				want = limit
			} else {
				want *= 4
			}
			continue
		case errors.Is(err, zstd.ErrDecoderSizeExceeded) || limit > math.MaxInt-blockSlack:
			return nil, ErrTooLarge
		}
		out, err = dec.DecodeAll(src, make([]byte, 0, limit+blockSlack))
		switch {
		case len(out) > limit || errors.Is(err, zstd.ErrDecoderSizeExceeded):
			return nil, ErrTooLarge
		case err != nil:
			return nil, fmt.Errorf("%w: zstd: %v", ErrCorrupt, err)
		}
		return out, nil
	}
}

func snappyDecode(src, dst []byte, limit int) ([]byte, error) {
	if !bytes.HasPrefix(src, xerialHeader) {
		n, err := snappy.DecodedLen(src)
		if err != nil {
			return nil, fmt.Errorf("%w: snappy: %v", ErrCorrupt, err)
		}
		if n > limit {
			return nil, ErrTooLarge
		}
		out, err := snappy.Decode(dst[:cap(dst)], src)
		if err != nil {
			return nil, fmt.Errorf("%w: snappy: %v", ErrCorrupt, err)
		}
		return out, nil
	}
	for len(src) > 0 {
		if bytes.HasPrefix(src, xerialHeader) {
			// A stream header, at the start or, as the Java reader allows,
			// opening a concatenated stream.
			if len(src) < len(xerialHeader)+8 {
				return nil, fmt.Errorf("%w: snappy: short xerial header", ErrCorrupt)
			}
			src = src[len(xerialHeader)+8:] // version, min compatible version
			continue
		}
		if len(src) < 4 {
			return nil, fmt.Errorf("%w: snappy: short xerial chunk", ErrCorrupt)
		}
		n := int(binary.BigEndian.Uint32(src))
		src = src[4:]
		if n < 0 || n > len(src) {
			return nil, fmt.Errorf("%w: snappy: xerial chunk overruns data", ErrCorrupt)
		}
		dl, err := snappy.DecodedLen(src[:n])
		if err != nil {
			return nil, fmt.Errorf("%w: snappy: %v", ErrCorrupt, err)
		}
		if len(dst)+dl > limit {
			return nil, ErrTooLarge
		}
		start := len(dst)
		dst = grow(dst, dl)
		if _, err := snappy.Decode(dst[start:], src[:n]); err != nil {
			return nil, fmt.Errorf("%w: snappy: %v", ErrCorrupt, err)
		}
		src = src[n:]
	}
	return dst, nil
}

// grow extends b by n bytes, reallocating when needed.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b[:len(b)+n]
	}
	nb := make([]byte, len(b)+n, 2*len(b)+n)
	copy(nb, b)
	return nb
}

// Compress appends the compressed form of src to dst[:0]. Snappy output uses
// the xerial framing every Kafka client reads; lz4 output is an LZ4 frame.
// level <= 0 selects the codec's default.
func Compress(c Codec, src, dst []byte, level int) ([]byte, error) {
	dst = dst[:0]
	switch c {
	case None:
		return append(dst, src...), nil
	case Gzip:
		lw := &limitWriter{buf: dst, limit: int(^uint(0) >> 1)}
		if level <= 0 {
			level = gzip.DefaultCompression
		}
		level = min(level, gzip.BestCompression)
		w, _ := gzipWriters.Get().(*gzip.Writer)
		if w == nil || level != gzip.DefaultCompression {
			var err error
			if w, err = gzip.NewWriterLevel(lw, level); err != nil {
				return nil, err
			}
		} else {
			w.Reset(lw)
		}
		if _, err := w.Write(src); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		if level == gzip.DefaultCompression {
			gzipWriters.Put(w)
		}
		return lw.buf, nil
	case Snappy:
		dst = append(dst, xerialHeader...)
		dst = binary.BigEndian.AppendUint32(dst, 1)
		dst = binary.BigEndian.AppendUint32(dst, 1)
		for len(src) > 0 {
			chunk := src
			if len(chunk) > xerialChunk {
				chunk = chunk[:xerialChunk]
			}
			src = src[len(chunk):]
			lenAt := len(dst)
			dst = append(dst, 0, 0, 0, 0)
			max := snappy.MaxEncodedLen(len(chunk))
			start := len(dst)
			dst = grow(dst, max)
			enc := snappy.Encode(dst[start:], chunk)
			dst = dst[:start+len(enc)]
			binary.BigEndian.PutUint32(dst[lenAt:], uint32(len(enc)))
		}
		return dst, nil
	case LZ4:
		lw := &limitWriter{buf: dst, limit: int(^uint(0) >> 1)}
		w, _ := lz4Writers.Get().(*lz4.Writer)
		if w == nil {
			w = lz4.NewWriter(nil)
		}
		w.Reset(lw)
		opts := []lz4.Option{lz4.BlockSizeOption(lz4.Block64Kb), lz4.ConcurrencyOption(1)}
		if level > 0 {
			level = min(level, 9)
			opts = append(opts, lz4.CompressionLevelOption(lz4.CompressionLevel(1<<(8+level))))
		} else {
			opts = append(opts, lz4.CompressionLevelOption(lz4.Fast))
		}
		if err := w.Apply(opts...); err != nil {
			return nil, err
		}
		if _, err := w.Write(src); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		lz4Writers.Put(w)
		return lw.buf, nil
	case Zstd:
		return zstdEncoder(level).EncodeAll(src, dst), nil
	}
	return nil, fmt.Errorf("record: unknown codec %d", c)
}
