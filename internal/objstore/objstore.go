// Package objstore is the object store under tiered storage: a small
// interface (Store) with two implementations, a local directory (Local,
// for development and tests) and any S3-compatible service (S3, through
// minio-go), and the broker keys that configure them (config.go).
//
// Keys are '/'-separated paths without a leading '/', of at most 1024
// bytes, none of their elements empty, "." or "..". The contract every Store keeps
// (checked by the conformance suite, storetest_test.go):
//
//   - Put stores the object whole or not at all: a reader never sees part
//     of an object, and a failed or cancelled Put leaves the previous object
//     of that key (or none), never a prefix of the new one. A Put that
//     returns nil is durable. Large objects are uploaded in parts (S3's
//     multi-part upload); a failed multi-part upload is aborted.
//   - GetRange reads bytes [off, off+n) of an object, fewer when the object
//     ends first; off must lie inside the object (ErrInvalidRange
//     otherwise, and for n < 1 or off < 0).
//   - List returns every object whose key begins with prefix, sorted by key,
//     with its size.
//   - Delete removes an object; deleting a key that does not exist is not
//     an error.
//   - A missing object is ErrNotFound; a missing bucket ErrNoBucket;
//     credentials the store refuses ErrAccessDenied. Every error names the
//     operation and the key (an *Error), and errors.Is finds these causes.
//
// Transient failures (HTTP 5xx, throttling, connection errors) are retried
// by the implementation with exponential backoff before an error is
// returned; an error from a Store is final for that call.
package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Store is an object store; see the package comment for its contract. It is
// safe for concurrent use.
type Store interface {
	// Put stores size bytes read from r as the object key.
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// GetRange returns bytes [off, off+n) of object key (fewer at its end).
	// The caller closes the reader.
	GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error)
	// List returns the objects whose keys begin with prefix, sorted by key.
	List(ctx context.Context, prefix string) ([]Object, error)
	// Delete removes object key, if it exists.
	Delete(ctx context.Context, key string) error
	// String names the store for errors and logs, e.g. "s3://bucket/prefix".
	String() string
}

// Object is one entry of a listing.
type Object struct {
	Key  string
	Size int64
}

// Causes of errors, found with errors.Is.
var (
	ErrNotFound     = errors.New("no such object")
	ErrInvalidRange = errors.New("range outside the object")
	ErrNoBucket     = errors.New("the bucket does not exist")
	ErrAccessDenied = errors.New("access denied (check the credentials and the bucket's policy)")
	ErrInvalidKey   = errors.New("invalid object key")
)

// Error is the error of one operation on a store.
type Error struct {
	Op    string // "put", "get", "list", "delete"
	Store string // the store's String
	Key   string // the key, or the prefix of a list
	Err   error  // one of the causes above, or the underlying error
}

func (e *Error) Error() string {
	return fmt.Sprintf("objstore: %s %s/%s: %v", e.Op, e.Store, e.Key, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// CheckKey returns an ErrInvalidKey error unless key is a valid object key.
func CheckKey(key string) error {
	if key == "" || len(key) > 1024 {
		return fmt.Errorf("%w %q: empty or over 1024 bytes", ErrInvalidKey, key)
	}
	for _, el := range strings.Split(key, "/") {
		if el == "" || el == "." || el == ".." {
			return fmt.Errorf("%w %q: empty, \".\" or \"..\" path element", ErrInvalidKey, key)
		}
	}
	return nil
}

// checkPrefix returns an ErrInvalidKey error unless prefix is empty or a
// valid key, optionally ending in '/'.
func checkPrefix(prefix string) error {
	if p := strings.TrimSuffix(prefix, "/"); p != "" {
		return CheckKey(p)
	}
	if prefix == "/" {
		return fmt.Errorf("%w prefix %q", ErrInvalidKey, prefix)
	}
	return nil
}
