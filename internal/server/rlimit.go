package server

import (
	"path/filepath"
	"strings"
	"syscall"

	"weir/internal/vfs"
)

// openFileHeadroom is what a broker keeps open besides its partitions'
// segment files: client and replication connections, the metadata log,
// checkpoints being written.
const openFileHeadroom = 1024

// checkOpenFileLimit warns when the process's open-file limit
// (RLIMIT_NOFILE) is below what the logs on disk need. It does not refuse
// to start, as Kafka does not: a partition whose files cannot be opened
// goes offline (KAFKA_STORAGE_ERROR) and the others are served.
func (s *Server) checkOpenFileLimit() {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		s.lg.Warn("cannot read the open-file limit", "err", err)
		return
	}
	files, err := segmentFiles(s.opts.FS, s.cfg.LogDirs)
	if err != nil {
		s.lg.Warn("cannot count the segment files", "err", err)
		return
	}
	need := uint64(files + openFileHeadroom)
	if lim.Cur >= need {
		return
	}
	s.lg.Warn("open-file limit too low: partitions whose files cannot be opened will be offline",
		"limit", lim.Cur, "needed", need, "segment_files", files,
		"hint", "raise the limit (ulimit -n, systemd LimitNOFILE) to at least the needed number, plus 3 for each partition to be created")
}

// segmentFiles counts the files the logs in dirs keep open: each segment's
// .log, .index, .timeindex and, when it exists, .txnindex.
func segmentFiles(fsys vfs.FS, dirs []string) (int, error) {
	n := 0
	for _, root := range dirs {
		parts, err := fsys.ReadDir(root)
		if err != nil {
			continue // not created yet: nothing to open
		}
		for _, p := range parts {
			if !p.IsDir() || strings.HasSuffix(p.Name(), "-delete") {
				continue
			}
			ents, err := fsys.ReadDir(filepath.Join(root, p.Name()))
			if err != nil {
				return 0, err
			}
			for _, e := range ents {
				switch filepath.Ext(e.Name()) {
				case ".log", ".index", ".timeindex", ".txnindex":
					n++
				}
			}
		}
	}
	return n, nil
}
