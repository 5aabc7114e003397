package log

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"weir/internal/vfs"
)

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// Offset checkpoint files (recovery-point-offset-checkpoint,
// log-start-offset-checkpoint, replication-offset-checkpoint,
// cleaner-offset-checkpoint) are text, as Kafka writes them:
//
//	0                      version
//	2                      number of entries
//	orders 0 1200          topic partition offset
//	orders 1 980
//
// They are replaced atomically (write temp, fsync, rename, fsync dir).

// WriteOffsetCheckpoint atomically replaces the checkpoint file at path.
func WriteOffsetCheckpoint(fsys vfs.FS, path string, offsets map[TopicPartition]int64) error {
	tps := make([]TopicPartition, 0, len(offsets))
	for tp := range offsets {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	var b bytes.Buffer
	fmt.Fprintf(&b, "0\n%d\n", len(tps))
	for _, tp := range tps {
		fmt.Fprintf(&b, "%s %d %d\n", tp.Topic, tp.Partition, offsets[tp])
	}
	return vfs.WriteFileAtomic(fsys, path, b.Bytes())
}

// ReadOffsetCheckpoint reads a checkpoint file; a missing file is empty.
func ReadOffsetCheckpoint(fsys vfs.FS, path string) (map[TopicPartition]int64, error) {
	data, err := vfs.ReadFile(fsys, path)
	if os.IsNotExist(err) {
		return map[TopicPartition]int64{}, nil
	}
	if err != nil {
		return nil, err
	}
	lines, err := checkpointLines(data, path)
	if err != nil {
		return nil, err
	}
	out := make(map[TopicPartition]int64, len(lines))
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 3 {
			return nil, fmt.Errorf("%s: malformed line %q", path, l)
		}
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		o, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s: malformed line %q", path, l)
		}
		out[TopicPartition{f[0], int32(p)}] = o
	}
	return out, nil
}

// checkpointLines checks the version and count header and returns the entries.
func checkpointLines(data []byte, path string) ([]string, error) {
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) < 2 || lines[0] != "0" {
		return nil, fmt.Errorf("%s: unsupported checkpoint version", path)
	}
	n, err := strconv.Atoi(lines[1])
	if err != nil || n != len(lines)-2 {
		return nil, fmt.Errorf("%s: entry count %q does not match %d entries", path, lines[1], len(lines)-2)
	}
	return lines[2:], nil
}

// EpochEntry is one leader epoch and the first offset written in it.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// The leader-epoch-checkpoint file in a partition directory:
//
//	0            version
//	2            number of entries
//	0 0          epoch start-offset
//	3 1450

func writeEpochCheckpoint(fsys vfs.FS, path string, entries []EpochEntry) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "0\n%d\n", len(entries))
	for _, e := range entries {
		fmt.Fprintf(&b, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return vfs.WriteFileAtomic(fsys, path, b.Bytes())
}

func readEpochCheckpoint(fsys vfs.FS, path string) ([]EpochEntry, error) {
	data, err := vfs.ReadFile(fsys, path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	lines, err := checkpointLines(data, path)
	if err != nil {
		return nil, err
	}
	out := make([]EpochEntry, 0, len(lines))
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 2 {
			return nil, fmt.Errorf("%s: malformed line %q", path, l)
		}
		e, err1 := strconv.ParseInt(f[0], 10, 32)
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s: malformed line %q", path, l)
		}
		out = append(out, EpochEntry{int32(e), o})
	}
	return out, nil
}
