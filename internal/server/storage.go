package server

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"weir/internal/config"
)

// MetaPropertiesFile marks a formatted log directory. Its format is
// Kafka's (KRaft, version 1):
//
//	#
//	#Sun Nov 29 15:11:17 UTC 2026
//	cluster.id=<22-char base64 uuid>
//	directory.id=<22-char base64 uuid>
//	node.id=<int>
//	version=1
const MetaPropertiesFile = "meta.properties"

// MetaProperties is the content of meta.properties.
type MetaProperties struct {
	ClusterID   string
	NodeID      int32
	DirectoryID string
}

// RandomUUID returns a random id in Kafka's printed form, as
// `kafka-storage.sh random-uuid` does.
func RandomUUID() string {
	for {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			panic(err)
		}
		s := base64.RawURLEncoding.EncodeToString(b[:])
		if s[0] != '-' && b != [16]byte{} {
			return s
		}
	}
}

// ValidateClusterID checks a cluster id is a 16-byte base64url uuid.
func ValidateClusterID(id string) error {
	b, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil || len(b) != 16 {
		return fmt.Errorf("cluster id %q is not a base64url-encoded 16-byte uuid (make one with `weir storage random-uuid`)", id)
	}
	return nil
}

// ReadMetaProperties reads dir's meta.properties; ok is false when the
// directory is not formatted.
func ReadMetaProperties(dir string) (MetaProperties, bool, error) {
	data, err := os.ReadFile(filepath.Join(dir, MetaPropertiesFile))
	if os.IsNotExist(err) {
		return MetaProperties{}, false, nil
	}
	if err != nil {
		return MetaProperties{}, false, err
	}
	var mp MetaProperties
	version := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		switch strings.TrimSpace(k) {
		case "cluster.id":
			mp.ClusterID = strings.TrimSpace(v)
		case "node.id":
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
			if err != nil {
				return mp, true, fmt.Errorf("%s: bad node.id %q", filepath.Join(dir, MetaPropertiesFile), v)
			}
			mp.NodeID = int32(n)
		case "directory.id":
			mp.DirectoryID = strings.TrimSpace(v)
		case "version":
			version = strings.TrimSpace(v)
		}
	}
	if version != "1" {
		return mp, true, fmt.Errorf("%s: unsupported version %q (weir writes version 1, KRaft)", filepath.Join(dir, MetaPropertiesFile), version)
	}
	if mp.ClusterID == "" {
		return mp, true, fmt.Errorf("%s: no cluster.id", filepath.Join(dir, MetaPropertiesFile))
	}
	return mp, true, nil
}

func writeMetaProperties(dir string, mp MetaProperties) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	body := fmt.Sprintf("#\n#%s\ncluster.id=%s\ndirectory.id=%s\nnode.id=%d\nversion=1\n",
		time.Now().UTC().Format(time.UnixDate), mp.ClusterID, mp.DirectoryID, mp.NodeID)
	tmp := filepath.Join(dir, MetaPropertiesFile+".tmp")
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, MetaPropertiesFile))
}

// ErrFormatted is returned by Format for a directory already formatted.
var ErrFormatted = errors.New("log directory is already formatted")

// Format writes meta.properties into every directory (the log dirs and the
// metadata log dir) for cluster clusterID and node nodeID. With
// ignoreFormatted, directories already formatted for the same cluster are
// skipped instead of failing. It returns the directories it formatted.
func Format(dirs []string, clusterID string, nodeID int32, ignoreFormatted bool) ([]string, error) {
	if err := ValidateClusterID(clusterID); err != nil {
		return nil, err
	}
	var todo []string
	for _, d := range uniqueDirs(dirs) {
		mp, ok, err := ReadMetaProperties(d)
		if err != nil {
			return nil, &DirError{Dir: d, Err: err}
		}
		if ok {
			if !ignoreFormatted {
				return nil, fmt.Errorf("%w: %s (use --ignore-formatted to skip it)", ErrFormatted, d)
			}
			if mp.ClusterID != clusterID {
				return nil, fmt.Errorf("%s is formatted for cluster %s, not %s", d, mp.ClusterID, clusterID)
			}
			continue
		}
		todo = append(todo, d)
	}
	// A directory that fails takes back what the call wrote into the
	// others: the storage is formatted whole or not at all.
	before := make([]dirSnapshot, 0, len(todo))
	for _, d := range todo {
		snap, err := snapshotDir(d)
		if err != nil {
			return nil, err
		}
		before = append(before, snap)
	}
	for i, d := range todo {
		if err := writeMetaProperties(d, MetaProperties{ClusterID: clusterID, NodeID: nodeID, DirectoryID: RandomUUID()}); err != nil {
			return nil, errors.Join(&DirError{Dir: d, Err: err}, restoreDirs(before[:i+1]))
		}
	}
	return todo, nil
}

// DirError is the failure of one storage directory. Setting is the
// configuration key the directory came from (see NameDirSetting); empty,
// the error names the directory alone.
type DirError struct {
	Setting, Dir string
	Err          error
}

func (e *DirError) Error() string {
	if e.Setting == "" {
		return fmt.Sprintf("directory %s: %v", e.Dir, e.Err)
	}
	return fmt.Sprintf("directory %s (%s): %v", e.Dir, e.Setting, e.Err)
}

func (e *DirError) Unwrap() error { return e.Err }

// DirSetting is the configuration key that puts dir among cfg's storage
// directories: log.dirs (log.dir when log.dirs is unset),
// metadata.log.dir, or both; "" for a directory that is neither.
func DirSetting(cfg *config.Broker, dir string) string {
	dir = filepath.Clean(dir)
	logKey := config.KeyLogDir
	if cfg.Set[config.KeyLogDirs] {
		logKey = config.KeyLogDirs
	}
	isLog := slices.ContainsFunc(cfg.LogDirs, func(d string) bool { return filepath.Clean(d) == dir })
	// An unset metadata.log.dir is the first log directory.
	isMeta := cfg.Set[config.KeyMetadataLogDir] && filepath.Clean(cfg.MetadataLogDir) == dir
	switch {
	case isLog && isMeta:
		return logKey + " and " + config.KeyMetadataLogDir
	case isLog:
		return logKey
	case isMeta:
		return config.KeyMetadataLogDir
	}
	return ""
}

// NameDirSetting fills in the setting of every DirError in err from cfg,
// so that a failed directory is named with the key that configured it;
// it returns err.
func NameDirSetting(cfg *config.Broker, err error) error {
	switch e := err.(type) {
	case *DirError:
		if e.Setting == "" {
			e.Setting = DirSetting(cfg, e.Dir)
		}
		NameDirSetting(cfg, e.Err)
	case interface{ Unwrap() []error }:
		for _, e := range e.Unwrap() {
			NameDirSetting(cfg, e)
		}
	case interface{ Unwrap() error }:
		NameDirSetting(cfg, e.Unwrap())
	}
	return err
}

// A dirSnapshot is what a storage directory held before this process
// formatted it, so that a failed format or start-up can take back exactly
// what it wrote: the directories it made, or the entries it added to a
// directory that existed.
type dirSnapshot struct {
	dir string
	// made is the outermost directory of dir's path that did not exist
	// ("" when dir existed); had are dir's entries when it existed.
	made string
	had  map[string]bool
}

func snapshotDir(dir string) (dirSnapshot, error) {
	snap := dirSnapshot{dir: dir}
	for p := dir; ; {
		_, err := os.Stat(p)
		if err == nil {
			break
		}
		if !os.IsNotExist(err) {
			return snap, &DirError{Dir: dir, Err: err}
		}
		snap.made = p
		parent := filepath.Dir(p)
		if parent == p {
			break
		}
		p = parent
	}
	if snap.made != "" {
		return snap, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return snap, &DirError{Dir: dir, Err: err}
	}
	snap.had = make(map[string]bool, len(entries))
	for _, e := range entries {
		snap.had[e.Name()] = true
	}
	return snap, nil
}

// restore removes what was added to the directory since the snapshot.
func (d dirSnapshot) restore() error {
	if d.made != "" {
		return os.RemoveAll(d.made)
	}
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if !d.had[e.Name()] {
			errs = append(errs, os.RemoveAll(filepath.Join(d.dir, e.Name())))
		}
	}
	return errors.Join(errs...)
}

// restoreDirs restores every snapshot; the error says which it could not.
func restoreDirs(snaps []dirSnapshot) error {
	var errs []error
	for _, d := range snaps {
		if err := d.restore(); err != nil {
			errs = append(errs, fmt.Errorf("taking back the format of %s: %w", d.dir, err))
		}
	}
	return errors.Join(errs...)
}

// CheckStorage verifies that every directory is formatted for the same
// cluster and for this node, and returns the cluster id. unformatted lists
// the directories without meta.properties.
func CheckStorage(dirs []string, nodeID int32) (clusterID string, unformatted []string, err error) {
	for _, d := range uniqueDirs(dirs) {
		mp, ok, err := ReadMetaProperties(d)
		if err != nil {
			return "", nil, &DirError{Dir: d, Err: err}
		}
		if !ok {
			unformatted = append(unformatted, d)
			continue
		}
		if clusterID != "" && mp.ClusterID != clusterID {
			return "", nil, fmt.Errorf("log directory %s belongs to cluster %s but another directory belongs to cluster %s", d, mp.ClusterID, clusterID)
		}
		clusterID = mp.ClusterID
		if mp.NodeID != nodeID {
			return "", nil, fmt.Errorf("log directory %s was formatted for node.id %d, but this node is node.id %d", d, mp.NodeID, nodeID)
		}
	}
	return clusterID, unformatted, nil
}

func uniqueDirs(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		d = filepath.Clean(d)
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}
