package log

import "testing"

func TestFilenames(t *testing.T) {
	for _, c := range []struct {
		f    Filename
		name string
	}{
		{Filename{Type: FileLog, Offset: 0}, "00000000000000000000.log"},
		{Filename{Type: FileIndex, Offset: 42}, "00000000000000000042.index"},
		{Filename{Type: FileTimeIndex, Offset: 42, State: Deleted}, "00000000000000000042.timeindex.deleted"},
		{Filename{Type: FileTxnIndex, Offset: 7, State: Cleaned}, "00000000000000000007.txnindex.cleaned"},
		{Filename{Type: FileLog, Offset: 7, State: Swap}, "00000000000000000007.log.swap"},
		{Filename{Type: FileProducerSnapshot, Offset: 1 << 40, State: Temp}, "00000001099511627776.snapshot.tmp"},
		{Filename{Type: FileMetadataSnapshot, Offset: 120, Epoch: 3}, "00000000000000000120-0000000003.checkpoint"},
	} {
		if got := c.f.String(); got != c.name {
			t.Errorf("%+v named %q, want %q", c.f, got, c.name)
		}
		if got, ok := ParseFilename(c.name); !ok || got != c.f {
			t.Errorf("ParseFilename(%q) = %+v, %v; want %+v", c.name, got, ok, c.f)
		}
	}
	for _, name := range []string{"", "log", ".log", "abc.log", "00000000000000000000.lag", "leader-epoch-checkpoint",
		"partition.metadata", "00000000000000000120.checkpoint", "00000000000000000120-x.checkpoint", "1.log.bak",
		RecoveryPointFile + ".tmp"} {
		if f, ok := ParseFilename(name); ok {
			t.Errorf("ParseFilename(%q) = %+v, want not a data file", name, f)
		}
	}
	if base, st := FileStateOf(epochCheckpointFile + ".tmp"); base != epochCheckpointFile || st != Temp {
		t.Errorf("FileStateOf: %q, %d", base, st)
	}
}
