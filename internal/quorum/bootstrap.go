package quorum

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"weir/internal/metadata"
	"weir/internal/vfs"
)

// BootstrapFile holds the records a new cluster's metadata log starts
// with beyond the feature levels (the SCRAM users of weir storage format
// --add-scram), in metadata.log.dir, as Kafka's bootstrap.checkpoint: a
// file in the snapshot layout (see snapshot.go). The first active
// controller commits them when the log is empty.
const BootstrapFile = "bootstrap.checkpoint"

// WriteBootstrap stores recs as dir's bootstrap file.
func WriteBootstrap(fsys vfs.FS, dir string, recs []metadata.Record) error {
	data, err := (&snapshot{Records: recs}).encode(time.Now().UnixMilli())
	if err != nil {
		return err
	}
	return vfs.WriteFileAtomic(fsys, filepath.Join(dir, BootstrapFile), data)
}

// ReadBootstrap returns the records of dir's bootstrap file (none when
// there is no file).
func ReadBootstrap(fsys vfs.FS, dir string) ([]metadata.Record, error) {
	path := filepath.Join(dir, BootstrapFile)
	data, err := vfs.ReadFile(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s, err := decodeSnapshot(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s.Records, nil
}
