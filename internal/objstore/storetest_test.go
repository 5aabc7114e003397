package objstore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand"
	"strings"
	"testing"
)

// conformance checks the package contract on a fresh, empty store. big is
// the size of the object that must be uploaded in several parts.
func conformance(t *testing.T, s Store, big int) {
	ctx := context.Background()
	put := func(t *testing.T, key string, data []byte) {
		t.Helper()
		if err := s.Put(ctx, key, bytes.NewReader(data), int64(len(data))); err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
	}
	get := func(t *testing.T, key string, off, n int64) ([]byte, error) {
		t.Helper()
		r, err := s.GetRange(ctx, key, off, n)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		return io.ReadAll(r)
	}
	list := func(t *testing.T, prefix string) string {
		t.Helper()
		objs, err := s.List(ctx, prefix)
		if err != nil {
			t.Fatalf("list %q: %v", prefix, err)
		}
		var keys []string
		for _, o := range objs {
			keys = append(keys, o.Key)
		}
		return strings.Join(keys, " ")
	}
	data := []byte("0123456789abcdefghij")

	t.Run("ranges", func(t *testing.T) {
		put(t, "r/obj", data)
		for _, c := range []struct {
			off, n int64
			want   string
		}{{0, 20, string(data)}, {0, 1, "0"}, {5, 5, "56789"}, {19, 1, "j"}, {15, 100, "fghij"}} {
			got, err := get(t, "r/obj", c.off, c.n)
			if err != nil || string(got) != c.want {
				t.Errorf("get [%d,+%d) = %q, %v; want %q", c.off, c.n, got, err, c.want)
			}
		}
		for _, c := range [][2]int64{{20, 1}, {100, 5}, {-1, 5}, {0, 0}} {
			if _, err := get(t, "r/obj", c[0], c[1]); !errors.Is(err, ErrInvalidRange) {
				t.Errorf("get [%d,+%d) = %v; want ErrInvalidRange", c[0], c[1], err)
			}
		}
		if _, err := get(t, "r/missing", 0, 1); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "r/missing") {
			t.Errorf("get of a missing object = %v; want ErrNotFound naming the key", err)
		}
	})

	t.Run("overwrite", func(t *testing.T) {
		put(t, "o/obj", data)
		put(t, "o/obj", []byte("new"))
		if got, err := get(t, "o/obj", 0, 100); err != nil || string(got) != "new" {
			t.Errorf("after overwrite: %q, %v", got, err)
		}
	})

	t.Run("list", func(t *testing.T) {
		for _, k := range []string{"l/t-1/0/b", "l/t-1/0/a", "l/t-1/1/a", "l/t-1/10/a", "l/u/x"} {
			put(t, k, []byte(k))
		}
		for prefix, want := range map[string]string{
			"l/t-1/0/":  "l/t-1/0/a l/t-1/0/b",
			"l/t-1/1/":  "l/t-1/1/a",
			"l/t-1/1":   "l/t-1/1/a l/t-1/10/a",
			"l/t-1/0/a": "l/t-1/0/a",
			"l/":        "l/t-1/0/a l/t-1/0/b l/t-1/1/a l/t-1/10/a l/u/x",
			"l/nope/":   "",
		} {
			if got := list(t, prefix); got != want {
				t.Errorf("list %q = %q; want %q", prefix, got, want)
			}
		}
		objs, err := s.List(ctx, "l/u/")
		if err != nil || len(objs) != 1 || objs[0].Size != int64(len("l/u/x")) {
			t.Errorf("list l/u/ = %+v, %v; want one object of 5 bytes", objs, err)
		}
	})

	t.Run("delete", func(t *testing.T) {
		put(t, "d/0/a", data)
		put(t, "d/0/b", data)
		if err := s.Delete(ctx, "d/0/a"); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, "d/0/a"); err != nil {
			t.Errorf("deleting a deleted object: %v", err)
		}
		if got := list(t, "d/"); got != "d/0/b" {
			t.Errorf("after delete: %q", got)
		}
		if _, err := get(t, "d/0/a", 0, 1); !errors.Is(err, ErrNotFound) {
			t.Errorf("get of a deleted object: %v", err)
		}
		if err := s.Delete(ctx, "d/0/b"); err != nil {
			t.Fatal(err)
		}
		if got := list(t, "d/"); got != "" {
			t.Errorf("after deleting all: %q", got)
		}
	})

	t.Run("large", func(t *testing.T) {
		b := make([]byte, big)
		rand.New(rand.NewSource(1)).Read(b)
		put(t, "big/segment.log", b)
		got, err := get(t, "big/segment.log", 0, int64(big))
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("large object read back: %d bytes, %v; want %d equal bytes", len(got), err, big)
		}
		// A range across a part boundary.
		off := int64(MinPartSize - 10)
		got, err = get(t, "big/segment.log", off, 20)
		if err != nil || !bytes.Equal(got, b[off:off+20]) {
			t.Errorf("range across a part boundary: %v", err)
		}
	})

	t.Run("short reader", func(t *testing.T) {
		err := s.Put(ctx, "s/obj", bytes.NewReader(data[:5]), int64(len(data)))
		if err == nil {
			t.Fatal("put of a reader shorter than the size succeeded")
		}
		if got := list(t, "s/"); got != "" {
			t.Errorf("a failed put left %q", got)
		}
	})

	t.Run("keys", func(t *testing.T) {
		for _, k := range []string{"", "/a", "a//b", "a/./b", "a/../b", "a/", strings.Repeat("k", 1025)} {
			if err := s.Put(ctx, k, bytes.NewReader(data), int64(len(data))); !errors.Is(err, ErrInvalidKey) {
				t.Errorf("put %q: %v; want ErrInvalidKey", k, err)
			}
		}
	})
}
