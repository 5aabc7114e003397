package record

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchBatch is a producer-shaped batch of n records with valueSize-byte
// values (random, so compression cannot cheat) and short keys.
func benchBatch(b *testing.B, c Codec, n, valueSize int) Batch {
	r := rand.New(rand.NewPCG(uint64(n), uint64(valueSize)))
	recs := make([]Record, n)
	for i := range recs {
		v := make([]byte, valueSize)
		for j := range v {
			v[j] = byte('a' + r.IntN(16)) // compressible, but not trivially
		}
		recs[i] = Record{TimestampDelta: int64(i), Key: fmt.Appendf(nil, "key-%04d", i), Value: v}
	}
	return clientBatch(b, c, recs, nil)
}

func BenchmarkValidate(b *testing.B) {
	for _, c := range allCodecs {
		for _, shape := range []struct{ n, size int }{{16, 1024}, {160, 100}} {
			if c != None && c != LZ4 && c != Zstd {
				continue
			}
			b.Run(fmt.Sprintf("%v/%dx%dB", c, shape.n, shape.size), func(b *testing.B) {
				batch := benchBatch(b, c, shape.n, shape.size)
				p := testPolicy()
				var scratch []byte
				b.SetBytes(int64(len(batch)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := Validate(batch, p, testNow, &scratch); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkCRC(b *testing.B) {
	for _, size := range []int{1 << 10, 16 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			batch := make(Batch, size)
			for i := range batch {
				batch[i] = byte(i)
			}
			b.SetBytes(int64(size - offAttributes))
			for b.Loop() {
				batch.ComputeCRC()
			}
		})
	}
}

func BenchmarkNext(b *testing.B) {
	one := benchBatch(b, None, 16, 1024)
	var stream []byte
	for range 64 {
		stream = append(stream, one...)
	}
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		for buf := stream; len(buf) > 0; {
			_, rest, err := Next(buf)
			if err != nil {
				b.Fatal(err)
			}
			buf = rest
		}
	}
}
