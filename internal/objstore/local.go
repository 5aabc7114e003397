package objstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"weir/internal/vfs"
)

// Local is a Store in a directory of a vfs.FS, for development and tests:
// object k is the file <dir>/objects/k, written first under <dir>/partial/
// and renamed into place once synced, so an object appears whole and
// durable or not at all. A key can name an object or be a directory of
// others, not both (S3 allows "a/b" beside "a/b/c"; weir's keys never do
// that). It does not retry: a local error is not transient.
type Local struct {
	fsys vfs.FS
	dir  string
	mu   sync.Mutex // orders the making of directories (Put) against their removal (Delete)
}

// NewLocal opens the store in dir, making it if needed, and deletes the
// partial files a crash left.
func NewLocal(fsys vfs.FS, dir string) (*Local, error) {
	l := &Local{fsys: fsys, dir: dir}
	if err := fsys.MkdirAll(l.objects(), 0o755); err != nil {
		return nil, fmt.Errorf("objstore: local store %s: %w", dir, err)
	}
	if err := fsys.RemoveAll(l.partial()); err != nil {
		return nil, fmt.Errorf("objstore: local store %s: removing partial uploads: %w", dir, err)
	}
	if err := fsys.MkdirAll(l.partial(), 0o755); err != nil {
		return nil, fmt.Errorf("objstore: local store %s: %w", dir, err)
	}
	// Make the directories durable, up to the root (MkdirAll may have made
	// any of them).
	if err := fsys.SyncDir(l.objects()); err != nil {
		return nil, fmt.Errorf("objstore: local store %s: %w", dir, err)
	}
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if err := fsys.SyncDir(d); err != nil {
			return nil, fmt.Errorf("objstore: local store %s: %w", dir, err)
		}
		if filepath.Dir(d) == d {
			return l, nil
		}
	}
}

func (l *Local) objects() string { return filepath.Join(l.dir, "objects") }
func (l *Local) partial() string { return filepath.Join(l.dir, "partial") }

func (l *Local) file(key string) string {
	return filepath.Join(l.objects(), filepath.FromSlash(key))
}

// String is "file://<dir>".
func (l *Local) String() string { return "file://" + l.dir }

func (l *Local) fail(op, key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		err = ErrNotFound
	}
	return &Error{Op: op, Store: l.String(), Key: key, Err: err}
}

// Put implements Store.
func (l *Local) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := CheckKey(key); err != nil {
		return l.fail("put", key, err)
	}
	var id [8]byte
	rand.Read(id[:])
	tmp := filepath.Join(l.partial(), hex.EncodeToString(id[:]))
	f, err := l.fsys.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return l.fail("put", key, err)
	}
	err = copyN(ctx, f, r, size)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = l.install(tmp, key)
	}
	if err != nil {
		l.fsys.Remove(tmp)
		return l.fail("put", key, err)
	}
	return nil
}

// copyN copies exactly size bytes of r to w, checking ctx between chunks.
func copyN(ctx context.Context, w io.Writer, r io.Reader, size int64) error {
	buf := make([]byte, 256<<10)
	for left := size; left > 0; {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := io.ReadFull(r, buf[:min(left, int64(len(buf)))])
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
			left -= int64(n)
		}
		if err != nil && left > 0 {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return fmt.Errorf("the reader ended %d bytes short of the object's size %d", left, size)
			}
			return err
		}
	}
	return nil
}

// install renames the synced file tmp to key's file and syncs the
// directories up to the store's, so the object is durable.
func (l *Local) install(tmp, key string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	dst := l.file(key)
	if err := l.fsys.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := l.fsys.Rename(tmp, dst); err != nil {
		return err
	}
	for d := filepath.Dir(dst); ; d = filepath.Dir(d) {
		if err := l.fsys.SyncDir(d); err != nil {
			return err
		}
		if d == l.objects() {
			return nil
		}
	}
}

// GetRange implements Store.
func (l *Local) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if err := CheckKey(key); err != nil {
		return nil, l.fail("get", key, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, l.fail("get", key, err)
	}
	f, err := l.fsys.OpenFile(l.file(key), os.O_RDONLY, 0)
	if err != nil {
		return nil, l.fail("get", key, err)
	}
	fi, err := f.Stat()
	if err == nil && fi.IsDir() {
		err = ErrNotFound
	}
	if err == nil && (off < 0 || n < 1 || off >= fi.Size()) {
		err = fmt.Errorf("%w: bytes %d-%d of an object of %d bytes", ErrInvalidRange, off, off+n-1, fi.Size())
	}
	if err != nil {
		f.Close()
		return nil, l.fail("get", key, err)
	}
	return sectionCloser{io.NewSectionReader(f, off, min(n, fi.Size()-off)), f}, nil
}

type sectionCloser struct {
	*io.SectionReader
	io.Closer
}

// List implements Store.
func (l *Local) List(ctx context.Context, prefix string) ([]Object, error) {
	if err := checkPrefix(prefix); err != nil {
		return nil, l.fail("list", prefix, err)
	}
	// Walk the deepest directory every match lies under.
	base := prefix
	if i := strings.LastIndexByte(base, '/'); i >= 0 {
		base = base[:i]
	} else {
		base = ""
	}
	var out []Object
	var walk func(rel string) error
	walk = func(rel string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		ents, err := l.fsys.ReadDir(filepath.Join(l.objects(), filepath.FromSlash(rel)))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		for _, e := range ents {
			k := path.Join(rel, e.Name())
			if e.IsDir() {
				if strings.HasPrefix(k+"/", prefix) || strings.HasPrefix(prefix, k+"/") {
					if err := walk(k); err != nil {
						return err
					}
				}
				continue
			}
			if !strings.HasPrefix(k, prefix) {
				continue
			}
			fi, err := e.Info()
			if err != nil {
				return err
			}
			out = append(out, Object{Key: k, Size: fi.Size()})
		}
		return nil
	}
	if err := walk(base); err != nil {
		return nil, l.fail("list", prefix, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Delete implements Store; it also removes the directories the object
// leaves empty.
func (l *Local) Delete(ctx context.Context, key string) error {
	if err := CheckKey(key); err != nil {
		return l.fail("delete", key, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.file(key)
	if fi, err := l.fsys.Stat(p); err == nil && fi.IsDir() {
		return nil // a directory of other objects, not an object
	}
	if err := l.fsys.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return l.fail("delete", key, err)
	}
	d := filepath.Dir(p)
	for ; d != l.objects(); d = filepath.Dir(d) {
		ents, err := l.fsys.ReadDir(d)
		if err != nil || len(ents) > 0 || l.fsys.Remove(d) != nil {
			break
		}
	}
	if err := l.fsys.SyncDir(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return l.fail("delete", key, err)
	}
	return nil
}
