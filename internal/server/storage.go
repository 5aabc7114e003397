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
			return nil, err
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
	for _, d := range todo {
		if err := writeMetaProperties(d, MetaProperties{ClusterID: clusterID, NodeID: nodeID, DirectoryID: RandomUUID()}); err != nil {
			return nil, err
		}
	}
	return todo, nil
}

// CheckStorage verifies that every directory is formatted for the same
// cluster and for this node, and returns the cluster id. unformatted lists
// the directories without meta.properties.
func CheckStorage(dirs []string, nodeID int32) (clusterID string, unformatted []string, err error) {
	for _, d := range uniqueDirs(dirs) {
		mp, ok, err := ReadMetaProperties(d)
		if err != nil {
			return "", nil, err
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
