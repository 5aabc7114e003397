package log

import (
	"testing"

	"weir/internal/vfs/vfstest"
)

// flush.messages=1 fsyncs before an append returns, so a machine crash
// right after the acknowledgement keeps the batch; with the default the
// page cache is trusted and the crash loses it.
func TestFlushMessagesSyncsBeforeAck(t *testing.T) {
	for _, tc := range []struct {
		name          string
		flushMessages int64
		survives      bool
	}{
		{"flush.messages=1", 1, true},
		{"default", DefaultConfig().FlushMessages, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfstest.NewMem()
			cfg := smallConfig()
			cfg.FlushMessages = tc.flushMessages
			o := Options{FS: fs, Logger: quietLogger, AfterDelay: (&delayQueue{}).add}
			l, err := Open("/p", TopicPartition{"t", 0}, cfg, o)
			if err != nil {
				t.Fatal(err)
			}
			mustAppend(t, l, valueBatch(t, 3, 100, 1))
			crashed := fs.CrashClone()
			l2, err := Open("/p", TopicPartition{"t", 0}, cfg, Options{FS: crashed, Logger: quietLogger, AfterDelay: (&delayQueue{}).add})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := l2.LogEndOffset(), map[bool]int64{true: 3, false: 0}[tc.survives]; got != want {
				t.Fatalf("log end after a crash = %d, want %d", got, want)
			}
		})
	}
}
