package kafka

import (
	"bufio"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"weir/internal/vfs"
)

// copiedFile hides the *os.File so that writeSection takes its read-and-write
// path instead of sendfile.
type copiedFile struct{ vfs.File }

// BenchmarkSectionLoopback sends 1 MiB file sections, as a leader answers a
// follower's fetch, to a reader on a loopback TCP connection that reads
// into one reused 1 MiB buffer, as a follower's fetcher does. It compares
// sendfile with reading the section into memory and writing it, and
// reports the process's CPU time (both ends) per GB moved:
//
//	go test -run '^$' -bench SectionLoopback ./internal/kafka/
func BenchmarkSectionLoopback(b *testing.B) {
	const sectionSize = 1 << 20
	const fileSize = 64 << 20
	f, err := os.Create(filepath.Join(b.TempDir(), "segment"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	data := make([]byte, fileSize)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if _, err := f.Write(data); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		file vfs.File
	}{
		{"sendfile", f},
		{"read-write", copiedFile{f}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			total := int64(b.N) * sectionSize
			done := make(chan error, 1)
			go func() {
				c, err := ln.Accept()
				if err != nil {
					done <- err
					return
				}
				defer c.Close()
				buf := make([]byte, sectionSize)
				var got int64
				for got < total {
					n, err := c.Read(buf)
					got += int64(n)
					if err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
			nc, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer nc.Close()
			bw := bufio.NewWriter(nc)
			b.SetBytes(sectionSize)
			cpu0 := processCPU()
			start := time.Now()
			b.ResetTimer()
			for i := range b.N {
				s := section{file: tc.file, pos: int64(i%(fileSize/sectionSize)) * sectionSize, size: sectionSize}
				if err := writeSection(bw, nc, s); err != nil {
					b.Fatal(err)
				}
			}
			if err := bw.Flush(); err != nil {
				b.Fatal(err)
			}
			if err := <-done; err != nil && err != io.EOF {
				b.Fatal(err)
			}
			b.StopTimer()
			cpu := processCPU() - cpu0
			b.ReportMetric(cpu.Seconds()/(float64(total)/1e9), "cpu-s/GB")
			b.ReportMetric(cpu.Seconds()/time.Since(start).Seconds(), "cores")
		})
	}
}

// processCPU is the user and system time of this process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
