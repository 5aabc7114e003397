package server

// The clean-shutdown marker: a broker that shut down cleanly (every log
// flushed and closed) leaves .kafka_cleanshutdown in each log dir holding
// its broker epoch, as Kafka does:
//
//	{"version":0,"brokerEpoch":N}
//
// The next start takes the markers away before it touches the logs and
// tells the controller that epoch as its PreviousBrokerEpoch. A broker
// that crashed has no marker and says -1, so the controller knows its
// replicas may have lost their unflushed tails and takes them out of the
// eligible leader replicas (KIP-966).

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// CleanShutdownFile is the marker's name in each log dir.
const CleanShutdownFile = ".kafka_cleanshutdown"

type cleanShutdown struct {
	Version     int   `json:"version"`
	BrokerEpoch int64 `json:"brokerEpoch"`
}

// writeCleanShutdown marks every dir as shut down cleanly at epoch.
func writeCleanShutdown(dirs []string, epoch int64) error {
	data, err := json.Marshal(cleanShutdown{BrokerEpoch: epoch})
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range dirs {
		errs = append(errs, writeFileSync(filepath.Join(d, CleanShutdownFile), data))
	}
	return errors.Join(errs...)
}

// takeCleanShutdown removes the markers and returns the epoch they agree
// on, or -1 when any dir lacks one (a crash) or they differ.
func takeCleanShutdown(dirs []string) (int64, error) {
	epoch, ok := int64(-1), true
	for i, d := range dirs {
		path := filepath.Join(d, CleanShutdownFile)
		data, err := os.ReadFile(path)
		if err != nil {
			if !os.IsNotExist(err) {
				return -1, &DirError{Dir: d, Err: fmt.Errorf("reading the clean shutdown marker: %w", err)}
			}
			ok = false
			continue
		}
		if err := os.Remove(path); err != nil {
			return -1, &DirError{Dir: d, Err: fmt.Errorf("removing the clean shutdown marker: %w", err)}
		}
		var cs cleanShutdown
		if json.Unmarshal(data, &cs) != nil || cs.Version != 0 || (i > 0 && cs.BrokerEpoch != epoch) {
			ok = false
			continue
		}
		epoch = cs.BrokerEpoch
	}
	if !ok || len(dirs) == 0 {
		return -1, nil
	}
	return epoch, nil
}

// writeFileSync writes data to path and syncs it.
func writeFileSync(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
