package log

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Checkpoint file names: in each log directory, and in each partition
// directory (leader epochs, topic id).
const (
	RecoveryPointFile   = "recovery-point-offset-checkpoint"
	LogStartOffsetFile  = "log-start-offset-checkpoint"
	HighWatermarkFile   = "replication-offset-checkpoint"
	CleanerOffsetFile   = "cleaner-offset-checkpoint"
	epochCheckpointFile = "leader-epoch-checkpoint"
	partitionMetaFile   = "partition.metadata"
)

// FileType is the kind of a partition directory's file named after an
// offset (Kafka's layout).
type FileType uint8

const (
	FileLog              FileType = iota // %020d.log: a segment's batches
	FileIndex                            // %020d.index: its offset index
	FileTimeIndex                        // %020d.timeindex: its time index
	FileTxnIndex                         // %020d.txnindex: its aborted transactions
	FileProducerSnapshot                 // %020d.snapshot: producer state at that offset
	FileMetadataSnapshot                 // %020d-%010d.checkpoint: a metadata log snapshot (end offset, epoch)
	numFileTypes
)

var fileExts = [numFileTypes]string{".log", ".index", ".timeindex", ".txnindex", ".snapshot", ".checkpoint"}

// segmentTypes are the files of a segment (a .txnindex may not exist).
var segmentTypes = []FileType{FileLog, FileIndex, FileTimeIndex, FileTxnIndex}

// FileState is what an operation in progress made of a file, shown by a
// suffix after its name.
type FileState uint8

const (
	Live    FileState = iota // no suffix
	Cleaned                  // .cleaned: compaction output, not yet swapped in
	Swap                     // .swap: complete compaction output, to be renamed into place
	Deleted                  // .deleted: removed after file.delete.delay.ms
	Temp                     // .tmp: an atomic write not yet renamed into place
	numFileStates
)

var stateSuffixes = [numFileStates]string{"", ".cleaned", ".swap", ".deleted", ".tmp"}

// Filename is a parsed file name: Offset is the segment's base offset, the
// producer snapshot's offset or the metadata snapshot's end offset; Epoch
// is a metadata snapshot's epoch.
type Filename struct {
	Type   FileType
	Offset int64
	Epoch  int32
	State  FileState
}

// String is the file's name.
func (f Filename) String() string {
	if f.Type == FileMetadataSnapshot {
		return fmt.Sprintf("%020d-%010d%s%s", f.Offset, f.Epoch, fileExts[f.Type], stateSuffixes[f.State])
	}
	return fmt.Sprintf("%020d%s%s", f.Offset, fileExts[f.Type], stateSuffixes[f.State])
}

// MakeFilename is the name of the live file of type t at offset (t is not
// FileMetadataSnapshot, which has an epoch too).
func MakeFilename(t FileType, offset int64) string {
	return Filename{Type: t, Offset: offset}.String()
}

// HasFileExt reports whether name ends in the extension of one of the
// file types, whatever comes before it.
func HasFileExt(name string) bool {
	return slices.Contains(fileExts[:], filepath.Ext(name))
}

// ParseFilename parses a name made by Filename.String; ok is false for any
// other name.
func ParseFilename(name string) (f Filename, ok bool) {
	name, f.State = FileStateOf(name)
	dot := strings.LastIndexByte(name, '.')
	if dot < 0 {
		return Filename{}, false
	}
	ext, num := name[dot:], name[:dot]
	f.Type = numFileTypes
	for t, e := range fileExts {
		if e == ext {
			f.Type = FileType(t)
		}
	}
	if f.Type == numFileTypes {
		return Filename{}, false
	}
	if f.Type == FileMetadataSnapshot {
		var epoch string
		if num, epoch, ok = strings.Cut(num, "-"); !ok {
			return Filename{}, false
		}
		e, err := strconv.ParseInt(epoch, 10, 32)
		if err != nil {
			return Filename{}, false
		}
		f.Epoch = int32(e)
	}
	o, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return Filename{}, false
	}
	f.Offset = o
	return f, true
}

// FileStateOf splits any file name into its base and its state suffix.
func FileStateOf(name string) (base string, st FileState) {
	for s := Cleaned; s < numFileStates; s++ {
		if b, ok := strings.CutSuffix(name, stateSuffixes[s]); ok {
			return b, s
		}
	}
	return name, Live
}

// segmentPath is the path of the live file of type t at base in dir.
func segmentPath(dir string, base int64, t FileType) string {
	return filepath.Join(dir, MakeFilename(t, base))
}

// statePath is segmentPath for the file in state st.
func statePath(dir string, base int64, t FileType, st FileState) string {
	return filepath.Join(dir, Filename{Type: t, Offset: base, State: st}.String())
}
