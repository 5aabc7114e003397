package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Config configures an S3 store.
type S3Config struct {
	Bucket string
	// Prefix is put before every key ("a/b" with Prefix "weir" is the
	// object "weir/a/b"); empty for none.
	Prefix string
	// Region is the bucket's region; empty lets the client find it.
	Region string
	// Endpoint is the service's URL (http:// or https://, host and port);
	// empty for AWS S3.
	Endpoint string
	// PathStyle addresses the bucket in the path (endpoint/bucket/key)
	// rather than in the host name (bucket.endpoint/key), as most
	// S3-compatible services on one host need.
	PathStyle bool
	// AccessKeyID and SecretAccessKey are static credentials; when both are
	// empty the credentials come from the environment (AWS_ACCESS_KEY_ID,
	// AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), then the shared credentials
	// file (AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials, AWS_PROFILE),
	// then the instance's or container's IAM role (EC2 and ECS metadata, or a
	// web identity token: AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN).
	AccessKeyID, SecretAccessKey string
	// PartSize is the size of each part of a multi-part upload, and the size
	// above which an object is uploaded in parts; at least 5 MiB (S3's
	// smallest part).
	PartSize int64
	// MaxRetries is how many times a request is tried in all when the
	// service answers 5xx or throttles (429, SlowDown) or the connection
	// fails, with exponential backoff and jitter between tries (200 ms
	// doubling, at most 1 s); 0 means 10.
	MaxRetries int
	// Transport carries the requests; nil for the default.
	Transport http.RoundTripper
}

// MinPartSize is the smallest part of a multi-part upload S3 accepts.
const MinPartSize = 5 << 20

// S3 is a Store in a bucket of an S3-compatible service, through minio-go
// (which uploads objects larger than PartSize in parts, aborting the upload
// on failure, and retries transient failures).
type S3 struct {
	core     minio.Core
	bucket   string
	prefix   string // "" or ending in '/'
	partSize uint64
	name     string
}

// NewS3 returns the store cfg describes. It sends no request: a wrong
// bucket or credentials show in the errors of the first operations.
func NewS3(cfg S3Config) (*S3, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("objstore: s3: no bucket")
	}
	if cfg.PartSize == 0 {
		cfg.PartSize = DefaultPartSize
	}
	if cfg.PartSize < MinPartSize {
		return nil, fmt.Errorf("objstore: s3: part size %d is below S3's smallest part, %d bytes", cfg.PartSize, MinPartSize)
	}
	if (cfg.AccessKeyID == "") != (cfg.SecretAccessKey == "") {
		return nil, errors.New("objstore: s3: an access key id needs its secret access key, and a secret its key id")
	}
	host, secure := "s3.amazonaws.com", true
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return nil, fmt.Errorf("objstore: s3: endpoint %q is not an http:// or https:// URL of a host (and port)", cfg.Endpoint)
		}
		host, secure = u.Host, u.Scheme == "https"
	}
	var creds *credentials.Credentials
	if cfg.AccessKeyID != "" {
		creds = credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, "")
	} else {
		creds = credentials.NewChainCredentials([]credentials.Provider{
			&credentials.EnvAWS{},
			&credentials.FileAWSCredentials{},
			&credentials.IAM{},
		})
	}
	lookup := minio.BucketLookupAuto
	if cfg.PathStyle {
		lookup = minio.BucketLookupPath
	}
	c, err := minio.New(host, &minio.Options{
		Creds:        creds,
		Secure:       secure,
		Region:       cfg.Region,
		BucketLookup: lookup,
		MaxRetries:   cfg.MaxRetries,
		Transport:    cfg.Transport,
	})
	if err != nil {
		return nil, fmt.Errorf("objstore: s3: %w", err)
	}
	prefix := strings.Trim(cfg.Prefix, "/")
	name := "s3://" + cfg.Bucket
	if prefix != "" {
		name += "/" + prefix
		prefix += "/"
	}
	return &S3{core: minio.Core{Client: c}, bucket: cfg.Bucket, prefix: prefix, partSize: uint64(cfg.PartSize), name: name}, nil
}

// DefaultPartSize is the part size of a multi-part upload unless set.
const DefaultPartSize = 16 << 20

// String is "s3://bucket[/prefix]".
func (s *S3) String() string { return s.name }

// fail wraps err, the error of a request, with the cause it stands for.
func (s *S3) fail(op, key string, err error) error {
	r := minio.ToErrorResponse(err)
	switch {
	case r.Code == "NoSuchKey":
		err = ErrNotFound
	case r.Code == "NoSuchBucket":
		err = fmt.Errorf("%w: %s", ErrNoBucket, s.bucket)
	case r.Code == "InvalidRange" || r.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		err = ErrInvalidRange
	case r.Code == "AccessDenied" || r.Code == "InvalidAccessKeyId" || r.Code == "SignatureDoesNotMatch" ||
		r.Code == "InvalidToken" || r.Code == "ExpiredToken" || r.Code == "InvalidClientTokenId":
		err = fmt.Errorf("%w: %s (%s)", ErrAccessDenied, r.Message, r.Code)
	case r.Code != "":
		err = fmt.Errorf("%s (%s, HTTP %d)", r.Message, r.Code, r.StatusCode)
	}
	return &Error{Op: op, Store: s.name, Key: key, Err: err}
}

// Put implements Store.
func (s *S3) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := CheckKey(key); err != nil {
		return &Error{Op: "put", Store: s.name, Key: key, Err: err}
	}
	body := io.Reader(&exactReader{r: r, left: size})
	if uint64(size) <= s.partSize {
		// One request: read first, so that a short reader fails before
		// anything is sent, and a retry resends the same bytes.
		buf := make([]byte, size)
		if _, err := io.ReadFull(body, buf); err != nil {
			return &Error{Op: "put", Store: s.name, Key: key, Err: err}
		}
		body = bytes.NewReader(buf)
	}
	info, err := s.core.Client.PutObject(ctx, s.bucket, s.prefix+key, body, size, minio.PutObjectOptions{
		PartSize:    s.partSize,
		ContentType: "application/octet-stream",
	})
	if err != nil {
		return s.fail("put", key, err)
	}
	if info.Size != size {
		return &Error{Op: "put", Store: s.name, Key: key, Err: fmt.Errorf("the store took %d bytes of %d", info.Size, size)}
	}
	return nil
}

// GetRange implements Store.
func (s *S3) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if err := CheckKey(key); err != nil {
		return nil, &Error{Op: "get", Store: s.name, Key: key, Err: err}
	}
	if off < 0 || n < 1 {
		return nil, &Error{Op: "get", Store: s.name, Key: key, Err: ErrInvalidRange}
	}
	var opts minio.GetObjectOptions
	if err := opts.SetRange(off, off+n-1); err != nil {
		return nil, &Error{Op: "get", Store: s.name, Key: key, Err: err}
	}
	body, _, _, err := s.core.GetObject(ctx, s.bucket, s.prefix+key, opts)
	if err != nil {
		return nil, s.fail("get", key, err)
	}
	return body, nil
}

// List implements Store.
func (s *S3) List(ctx context.Context, prefix string) ([]Object, error) {
	if err := checkPrefix(prefix); err != nil {
		return nil, &Error{Op: "list", Store: s.name, Key: prefix, Err: err}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the listing goroutine on an early return
	var out []Object
	for o := range s.core.Client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix + prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, s.fail("list", prefix, o.Err)
		}
		out = append(out, Object{Key: strings.TrimPrefix(o.Key, s.prefix), Size: o.Size})
	}
	return out, nil
}

// Delete implements Store.
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := CheckKey(key); err != nil {
		return &Error{Op: "delete", Store: s.name, Key: key, Err: err}
	}
	if err := s.core.Client.RemoveObject(ctx, s.bucket, s.prefix+key, minio.RemoveObjectOptions{}); err != nil {
		if minio.ToErrorResponse(err).Code == "NoSuchKey" {
			return nil
		}
		return s.fail("delete", key, err)
	}
	return nil
}

// exactReader reads r, failing if it ends before left bytes (a multi-part
// upload is then aborted rather than completed short).
type exactReader struct {
	r    io.Reader
	left int64
}

func (e *exactReader) Read(p []byte) (int, error) {
	if e.left <= 0 {
		return 0, io.EOF
	}
	n, err := e.r.Read(p[:min(int64(len(p)), e.left)])
	e.left -= int64(n)
	if err == io.EOF && e.left > 0 {
		err = fmt.Errorf("the reader ended %d bytes short of the object's size", e.left)
	}
	return n, err
}
