package server

import (
	"syscall"
)

// openFileHeadroom is what a broker keeps open besides its partitions'
// segment files: client and replication connections, the metadata log,
// checkpoints being written, transaction indexes.
const openFileHeadroom = 1024

// segmentFilesMax is the bound of the segment file cache: log.open.files.max,
// lowered when the process's open-file limit (RLIMIT_NOFILE) cannot hold
// it and the headroom, with a warning naming the limit needed. The broker
// starts anyway, as Kafka does: a file that cannot be opened takes its
// partition offline (KAFKA_STORAGE_ERROR) and the others are served.
func (s *Server) segmentFilesMax() int {
	want := int(s.cfg.LogOpenFilesMax)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		s.lg.Warn("cannot read the open-file limit", "err", err)
		return want
	}
	got := segmentFilesWithin(lim.Cur, want)
	if got < want {
		s.lg.Warn("open-file limit too low for log.open.files.max: fewer segment files are kept open, so idle partitions are reopened more often",
			"limit", lim.Cur, "needed", want+openFileHeadroom, "log.open.files.max", want, "segment_files_max", got,
			"hint", "raise the limit (ulimit -n, systemd LimitNOFILE) to at least the needed number, or lower log.open.files.max")
	}
	return got
}

// segmentFilesWithin is how many segment files fit under an open-file
// limit of limit with want asked: the headroom is kept, but never more
// than half the limit.
func segmentFilesWithin(limit uint64, want int) int {
	room := int64(limit) - int64(min(openFileHeadroom, limit/2))
	return int(max(16, min(int64(want), room)))
}
