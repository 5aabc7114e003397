package record

import (
	"bytes"
	stdgzip "compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

var codecSizes = []int{0, 1, 100, 64<<10 + 1, 1 << 20}

// testData is size bytes that compress somewhat: runs of text mixed with
// random bytes, so codecs take both their literal and their match paths.
func testData(size int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]byte, 0, size)
	for len(out) < size {
		if r.IntN(3) == 0 {
			for range r.IntN(64) {
				out = append(out, byte(r.Uint32()))
			}
		} else {
			out = fmt.Appendf(out, "record %d with a fairly repetitive value; ", r.IntN(1000))
		}
	}
	return out[:size]
}

func TestCodecRoundTrip(t *testing.T) {
	for _, c := range allCodecs {
		for _, size := range codecSizes {
			for _, level := range []int{0, 1, 9} {
				if size > 100 && level != 0 {
					continue // TestCompressLevels covers levels
				}
				t.Run(fmt.Sprintf("%v/%d/level%d", c, size, level), func(t *testing.T) {
					src := testData(size, uint64(size))
					comp, err := Compress(c, src, nil, level)
					if err != nil {
						t.Fatal(err)
					}
					got, err := Decompress(c, comp, nil, size)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, src) {
						t.Fatal("round trip differs")
					}
					// Other implementations read what Compress writes.
					if !bytes.Equal(foreignDecompress(t, c, comp), src) {
						t.Fatal("foreign decoder disagrees")
					}
					// Reusing buffers with stale contents changes nothing.
					dst := bytes.Repeat([]byte{0xAA}, 17)
					comp2, err := Compress(c, src, dst, level)
					if err != nil {
						t.Fatal(err)
					}
					got, err = Decompress(c, comp2, bytes.Repeat([]byte{0x55}, 33), size)
					if err != nil || !bytes.Equal(got, src) {
						t.Fatalf("with reused buffers: %v", err)
					}
					if size > 0 {
						if _, err := Decompress(c, comp, nil, size-1); !errors.Is(err, ErrTooLarge) {
							t.Fatalf("limit %d for %d bytes: %v, want ErrTooLarge", size-1, size, err)
						}
					}
				})
			}
		}
	}
}

func TestCodecConcurrentUse(t *testing.T) {
	// The pools and shared zstd codecs must be safe under -race.
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				c := allCodecs[(g+i)%len(allCodecs)]
				src := testData(1000+i*100, uint64(g*100+i))
				comp, err := Compress(c, src, nil, i%3)
				if err != nil {
					t.Error(err)
					return
				}
				got, err := Decompress(c, comp, nil, len(src))
				if err != nil || !bytes.Equal(got, src) {
					t.Errorf("%v: %v", c, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestDecompressForeignGzip(t *testing.T) {
	for _, size := range codecSizes {
		for _, level := range []int{stdgzip.NoCompression, stdgzip.BestSpeed, stdgzip.DefaultCompression, stdgzip.BestCompression, stdgzip.HuffmanOnly} {
			src := testData(size, 7)
			checkForeign(t, Gzip, stdGzip(t, src, level), src)
		}
	}
	// Concatenated gzip members decode as one stream, as Java's
	// GZIPInputStream reads them.
	a, b := testData(1000, 1), testData(2000, 2)
	checkForeign(t, Gzip, append(stdGzip(t, a, 6), stdGzip(t, b, 1)...), append(bytes.Clone(a), b...))
}

func TestDecompressForeignSnappy(t *testing.T) {
	for _, size := range codecSizes {
		src := testData(size, 8)
		if size > 0 {
			// Raw snappy, as some non-Java clients send it.
			checkForeign(t, Snappy, snappy.Encode(nil, src), src)
		}
		// Xerial framing with the Java client's 32 KiB chunks and others.
		for _, chunk := range []int{1, 1000, 32 << 10, 1 << 20} {
			if size > 100 && chunk == 1 {
				continue
			}
			checkForeign(t, Snappy, xerialFrame(src, chunk), src)
		}
	}
	// Two concatenated xerial streams, which the Java reader accepts.
	a, b := testData(5000, 3), testData(70000, 4)
	checkForeign(t, Snappy, append(xerialFrame(a, 32<<10), xerialFrame(b, 32<<10)...), append(bytes.Clone(a), b...))
	// Raw snappy of the empty input is one byte, a zero length.
	checkForeign(t, Snappy, snappy.Encode(nil, nil), nil)
}

func TestDecompressForeignLZ4(t *testing.T) {
	for _, size := range codecSizes {
		src := testData(size, 9)
		for i, opts := range [][]lz4.Option{
			nil,
			{lz4.ChecksumOption(false)},
			{lz4.BlockChecksumOption(true)},
			{lz4.BlockChecksumOption(true), lz4.ChecksumOption(true)},
			{lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false)}, // as the Java client writes
			{lz4.BlockSizeOption(lz4.Block4Mb), lz4.CompressionLevelOption(lz4.Level9)},
			{lz4.SizeOption(uint64(size))},
			{lz4.ConcurrencyOption(4), lz4.BlockSizeOption(lz4.Block64Kb)},
		} {
			t.Run(fmt.Sprintf("%d/opts%d", size, i), func(t *testing.T) {
				checkForeign(t, LZ4, pierrecLZ4(t, src, opts...), src)
			})
		}
	}
	// Concatenated frames.
	a, b := testData(1000, 5), testData(100000, 6)
	checkForeign(t, LZ4, append(pierrecLZ4(t, a), pierrecLZ4(t, b)...), append(bytes.Clone(a), b...))
}

func TestDecompressForeignZstd(t *testing.T) {
	for _, size := range codecSizes {
		src := testData(size, 10)
		for _, level := range []zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedDefault, zstd.SpeedBetterCompression, zstd.SpeedBestCompression} {
			if size > 100 && level > zstd.SpeedDefault {
				continue // slow under -race, and no different from smaller inputs
			}
			for _, crc := range []bool{true, false} {
				enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(level), zstd.WithEncoderCRC(crc))
				if err != nil {
					t.Fatal(err)
				}
				checkForeign(t, Zstd, enc.EncodeAll(src, nil), src)
				// Streamed output has no content size, as the Java client's
				// ZstdOutputStream writes it.
				var buf bytes.Buffer
				enc.Reset(&buf)
				if _, err := enc.Write(src); err != nil {
					t.Fatal(err)
				}
				if err := enc.Close(); err != nil {
					t.Fatal(err)
				}
				checkForeign(t, Zstd, buf.Bytes(), src)
			}
		}
	}
	// Several frames in a row.
	enc, _ := zstd.NewWriter(nil)
	a, b := testData(300000, 11), testData(5, 12)
	checkForeign(t, Zstd, enc.EncodeAll(b, enc.EncodeAll(a, nil)), append(bytes.Clone(a), b...))
}

// checkForeign decodes data compressed elsewhere, with exactly enough limit
// and with one byte too little.
func checkForeign(t *testing.T, c Codec, comp, want []byte) {
	t.Helper()
	got, err := Decompress(c, comp, nil, len(want))
	if err != nil {
		t.Fatalf("%v, %d bytes: %v", c, len(want), err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%v, %d bytes: output differs", c, len(want))
	}
	if len(want) > 0 {
		if _, err := Decompress(c, comp, nil, len(want)-1); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("%v, %d bytes, limit one less: %v, want ErrTooLarge", c, len(want), err)
		}
	}
}

func TestDecompressLimitBombs(t *testing.T) {
	// Highly compressible input: a small payload that expands a lot must be
	// stopped at the limit, not decoded in full first.
	zeros := make([]byte, 16<<20)
	const limit = 256 << 10
	for _, c := range allCodecs[1:] {
		comp, err := Compress(c, zeros, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Decompress(c, comp, nil, limit); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%v: %v, want ErrTooLarge", c, err)
		}
	}
	// zstd without a declared content size (as streamed by the Java client)
	// decodes into a growing buffer that stops at the limit.
	stream := zstdStream(t, zeros)
	for _, limit := range []int{limit, 100 << 10, 5 << 20} {
		if _, err := Decompress(Zstd, stream, nil, limit); !errors.Is(err, ErrTooLarge) {
			t.Errorf("zstd stream, limit %d: %v, want ErrTooLarge", limit, err)
		}
	}
	got, err := Decompress(Zstd, stream, nil, len(zeros))
	if err != nil || !bytes.Equal(got, zeros) {
		t.Errorf("zstd stream, exact limit: %v", err)
	}
	// A zstd frame header declaring a huge content size is refused from the
	// header alone.
	h := []byte{0x28, 0xb5, 0x2f, 0xfd, 0xe0 /* single segment, 8-byte FCS */}
	h = binary.LittleEndian.AppendUint64(h, 1<<40)
	h = append(h, 0x01, 0x00, 0x00) // last raw block of size 0
	if _, err := Decompress(Zstd, h, nil, limit); !errors.Is(err, ErrTooLarge) {
		t.Errorf("zstd FCS 1 TiB: %v, want ErrTooLarge", err)
	}
	// Negative and zero limits refuse any output.
	for _, c := range allCodecs {
		comp, _ := Compress(c, []byte("x"), nil, 0)
		for _, limit := range []int{0, -1} {
			if _, err := Decompress(c, comp, nil, limit); !errors.Is(err, ErrTooLarge) {
				t.Errorf("%v limit %d: %v", c, limit, err)
			}
		}
	}
}

func TestDecompressZstdAgreesWithReference(t *testing.T) {
	// Decompress grows its buffer by retrying; whatever the shape of the
	// data and wherever the limit falls (inside a compressed block, on a
	// block boundary), it agrees with an unbounded decode.
	ref, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	r := rand.New(rand.NewPCG(3, 4))
	random := make([]byte, 300<<10)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	shapes := map[string][]byte{
		"zeros":          make([]byte, 3<<20),
		"prefixed zeros": append([]byte{1, 2, 3}, make([]byte, 2<<20)...),
		"text":           testData(2<<20, 16),
		"random":         random,
		"mixed":          append(append(testData(100<<10, 17), make([]byte, 1<<20)...), random...),
	}
	for name, data := range shapes {
		for _, comp := range [][]byte{zstdStream(t, data), foreignCompress(t, Zstd, data)} {
			want, err := ref.DecodeAll(comp, nil)
			if err != nil || !bytes.Equal(want, data) {
				t.Fatalf("%s: reference: %v", name, err)
			}
			for _, limit := range []int{len(data) + 1, len(data), len(data) - 1, len(data) - 100<<10, len(data) / 3, 1000} {
				got, err := Decompress(Zstd, comp, nil, limit)
				if limit >= len(data) {
					if err != nil || !bytes.Equal(got, data) {
						t.Fatalf("%s, limit %d of %d: %v", name, limit, len(data), err)
					}
				} else if !errors.Is(err, ErrTooLarge) {
					t.Fatalf("%s, limit %d of %d: %v, want ErrTooLarge", name, limit, len(data), err)
				}
			}
		}
	}
}

func TestDecompressZstdCorruptIsCheap(t *testing.T) {
	// Corrupt input is recognised without growing the buffer to a large limit.
	comp := zstdStream(t, testData(200<<10, 18))
	comp = comp[:len(comp)/3] // stops inside the first block
	comp[len(comp)/2] ^= 0xff
	comp[len(comp)/2+1] ^= 0xff
	Decompress(Zstd, comp, nil, 1<<30)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Decompress(Zstd, comp, nil, 1<<30)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("got %v, want ErrCorrupt", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 4<<20 {
		t.Fatalf("corrupt %d-byte input allocated %d bytes", len(comp), n)
	}
}

func TestDecompressZstdLimitAllocations(t *testing.T) {
	// A 64 MiB bomb with a 1 MiB limit must not allocate anywhere near the
	// bomb's size.
	comp, _ := Compress(Zstd, make([]byte, 64<<20), nil, 0)
	Decompress(Zstd, comp, nil, 1<<20) // warm the shared decoder
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const runs = 4
	for range runs {
		if _, err := Decompress(Zstd, comp, nil, 1<<20); !errors.Is(err, ErrTooLarge) {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 16<<20 {
		t.Fatalf("zstd bomb allocated %d bytes per decode with a 1 MiB limit", per)
	}
}

func TestDecompressCorrupt(t *testing.T) {
	src := testData(50000, 13)
	for _, c := range allCodecs[1:] {
		comp, err := Compress(c, src, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		var cases [][]byte
		for n := 1; n < len(comp); n += 1 + n/3 {
			cases = append(cases, comp[:n]) // truncations
		}
		r := rand.New(rand.NewPCG(uint64(c), 2))
		for range 200 {
			bad := bytes.Clone(comp)
			for range 1 + r.IntN(4) {
				bad[r.IntN(len(bad))] ^= byte(1 + r.IntN(255))
			}
			cases = append(cases, bad)
		}
		cases = append(cases, []byte{0}, []byte{0xff, 0xff, 0xff, 0xff, 0xff}, bytes.Repeat([]byte{0x82}, 40))
		failures := 0
		for i, bad := range cases {
			got, err := Decompress(c, bad, nil, len(src))
			if err == nil {
				// Some flips land in bytes no check covers (for example a
				// literal in a codec without a checksum); the output must
				// then at least be bounded.
				if len(got) > len(src) {
					t.Fatalf("%v case %d: %d bytes past the limit", c, i, len(got))
				}
				continue
			}
			failures++
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("%v case %d: error %v wraps neither ErrCorrupt nor ErrTooLarge", c, i, err)
			}
		}
		// Snappy has no checksum, so only framing damage is detected.
		if c != Snappy && failures < len(cases)*9/10 {
			t.Errorf("%v: only %d of %d corruptions detected", c, failures, len(cases))
		}
	}
	if _, err := Decompress(Codec(7), []byte("x"), nil, 10); !errors.Is(err, ErrCorrupt) {
		t.Errorf("unknown codec: %v", err)
	}
	if _, err := Compress(Codec(7), []byte("x"), nil, 0); err == nil {
		t.Error("Compress accepted an unknown codec")
	}
}

func TestDecompressTruncatedIsCorrupt(t *testing.T) {
	// Codecs with an end marker or checksum must reject every truncation.
	src := testData(100000, 14)
	for _, c := range []Codec{Gzip, Zstd} {
		comp, _ := Compress(c, src, nil, 0)
		for n := 0; n < len(comp); n += 1 + n/50 {
			if _, err := Decompress(c, comp[:n], nil, len(src)); !errors.Is(err, ErrCorrupt) && !(c == Zstd && n == 0) {
				t.Fatalf("%v cut to %d of %d: %v", c, n, len(comp), err)
			}
		}
	}
	// Xerial chunks are length-prefixed: a cut inside a chunk is an error.
	x := xerialFrame(src, 32<<10)
	for _, n := range []int{9, 17, 19, 20, 100, len(x) - 1} {
		if _, err := Decompress(Snappy, x[:n], nil, len(src)); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("xerial cut to %d of %d: %v", n, len(x), err)
		}
	}
	// LZ4 frames end with an end mark.
	l := pierrecLZ4(t, src)
	for _, n := range []int{5, 7, 11, 100, len(l) - 4, len(l) - 1} {
		if _, err := Decompress(LZ4, l[:n], nil, len(src)); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("lz4 cut to %d of %d: %v", n, len(l), err)
		}
	}
}

func TestCompressEmptyIsReadable(t *testing.T) {
	// An empty payload still compresses to a valid stream, which decoders
	// that expect a header (Java's) accept.
	for _, c := range allCodecs[1:] {
		comp, err := Compress(c, nil, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(comp) == 0 {
			t.Errorf("%v: empty input compresses to nothing", c)
		}
		if got := foreignDecompress(t, c, comp); len(got) != 0 {
			t.Errorf("%v: foreign decoder found %d bytes", c, len(got))
		}
	}
}

func TestCompressLevels(t *testing.T) {
	src := testData(256<<10, 15)
	for _, c := range allCodecs[1:] {
		for _, level := range []int{-1, 0, 1, 3, 6, 9, 12, 22} {
			comp, err := Compress(c, src, nil, level)
			if err != nil {
				t.Fatalf("%v level %d: %v", c, level, err)
			}
			got, err := Decompress(c, comp, nil, len(src))
			if err != nil || !bytes.Equal(got, src) {
				t.Fatalf("%v level %d: %v", c, level, err)
			}
		}
	}
	// zstd honours the level: the fastest and best levels differ.
	fast, _ := Compress(Zstd, src, nil, 1)
	best, _ := Compress(Zstd, src, nil, 19)
	if bytes.Equal(fast, best) {
		t.Error("zstd levels 1 and 19 produce identical output")
	}
}
