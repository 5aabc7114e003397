package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"weir/internal/testport"
	"weir/internal/testwait"
)

// moto is an S3-compatible server (moto_server, from PyPI's moto[server])
// on a loopback port. With auth, IAM checks the credentials of every
// request and the tests sign with the key and secret of a user it has;
// without, any credentials pass. (moto 5's check computes a different
// signature for ListObjectsV2's empty delimiter= parameter than AWS does,
// so the conformance suite runs without it.)
type moto struct {
	url         string
	key, secret string
}

// startMoto starts moto_server for the test, or skips the test when it is
// not installed (.ci/run installs it).
func startMoto(t *testing.T, auth bool) *moto {
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		t.Skip("moto_server is not installed (pip install 'moto[server]'); the S3 store is tested against the local conformance suite only")
	}
	ports, err := testport.Free(1)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", fmt.Sprint(ports[0]))
	// IAM checks every request's credentials after the first three, which
	// make the user (below).
	cmd.Env = append(os.Environ(), "AWS_DEFAULT_REGION=us-east-1")
	if auth {
		cmd.Env = append(cmd.Env, "INITIAL_NO_AUTH_ACTION_COUNT=3")
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("moto_server output:\n%s", out.String())
		}
	})
	m := &moto{url: fmt.Sprintf("http://127.0.0.1:%d", ports[0])}
	testwait.For(t, 30*time.Second, "moto_server answering", func() error {
		resp, err := http.Get(m.url + "/moto-api/")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	if !auth {
		m.key, m.secret = "weir-test", "weir-test-secret"
		return m
	}
	// Unsigned IAM calls (the auth-free three), routed to IAM by the
	// credential scope of the placeholder Authorization header.
	iam := func(form url.Values) string {
		req, _ := http.NewRequest("POST", m.url+"/", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=boot/20260101/us-east-1/iam/aws4_request, SignedHeaders=host, Signature=0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("IAM %s: %s: %s", form.Get("Action"), resp.Status, b)
		}
		return string(b)
	}
	iam(url.Values{"Action": {"CreateUser"}, "UserName": {"weir"}, "Version": {"2010-05-08"}})
	iam(url.Values{"Action": {"PutUserPolicy"}, "UserName": {"weir"}, "PolicyName": {"s3"}, "Version": {"2010-05-08"},
		"PolicyDocument": {`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*"}]}`}})
	keyXML := iam(url.Values{"Action": {"CreateAccessKey"}, "UserName": {"weir"}, "Version": {"2010-05-08"}})
	m.key = regexp.MustCompile(`<AccessKeyId>([^<]+)`).FindStringSubmatch(keyXML)[1]
	m.secret = regexp.MustCompile(`<SecretAccessKey>([^<]+)`).FindStringSubmatch(keyXML)[1]
	return m
}

// faultProxy forwards requests to moto, answering 503 to the next fail
// ones, and counts the parts of multi-part uploads.
type faultProxy struct {
	fail  atomic.Int32
	mu    sync.Mutex
	parts int // UploadPart requests forwarded
	seen  int // requests answered 503
}

func (p *faultProxy) start(t *testing.T, target string) string {
	u, _ := url.Parse(target)
	rp := httputil.NewSingleHostReverseProxy(u)
	ports, err := testport.Free(1)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Addr: fmt.Sprintf("127.0.0.1:%d", ports[0]), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.fail.Add(-1) >= 0 {
			p.mu.Lock()
			p.seen++
			p.mu.Unlock()
			io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
			return
		}
		p.fail.Store(0)
		if r.URL.Query().Has("partNumber") {
			p.mu.Lock()
			p.parts++
			p.mu.Unlock()
		}
		rp.ServeHTTP(w, r)
	})}
	ln, err := netListen(srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + srv.Addr
}

func TestS3(t *testing.T) {
	m := startMoto(t, false)
	var proxy faultProxy
	endpoint := proxy.start(t, m.url)
	cfg := S3Config{Bucket: "weir-tiered", Prefix: "cluster-1", Region: "us-east-1", Endpoint: endpoint, PathStyle: true,
		AccessKeyID: m.key, SecretAccessKey: m.secret, PartSize: MinPartSize}
	s, err := NewS3(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.core.Client.MakeBucket(context.Background(), cfg.Bucket, minioMakeBucketOptions(cfg.Region)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	t.Run("conformance", func(t *testing.T) {
		conformance(t, s, 2*MinPartSize+1<<20)
		proxy.mu.Lock()
		defer proxy.mu.Unlock()
		if proxy.parts != 3 {
			t.Errorf("the large object went up in %d parts; want 3", proxy.parts)
		}
	})

	t.Run("prefix", func(t *testing.T) {
		// Keys live under the store's prefix; another prefix sees none.
		other := cfg
		other.Prefix = "cluster-2"
		s2, err := NewS3(other)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Put(ctx, "p/x", strings.NewReader("x"), 1); err != nil {
			t.Fatal(err)
		}
		if objs, err := s2.List(ctx, "p/"); err != nil || len(objs) != 0 {
			t.Errorf("another prefix lists %+v, %v", objs, err)
		}
		if objs, err := s.List(ctx, "p/"); err != nil || len(objs) != 1 || objs[0].Key != "p/x" {
			t.Errorf("list under the prefix: %+v, %v", objs, err)
		}
	})

	t.Run("503 retried", func(t *testing.T) {
		proxy.fail.Store(2)
		if err := s.Put(ctx, "retry/x", strings.NewReader("abc"), 3); err != nil {
			t.Fatalf("put through two 503s: %v", err)
		}
		proxy.fail.Store(2)
		r, err := s.GetRange(ctx, "retry/x", 0, 3)
		if err != nil {
			t.Fatalf("get through two 503s: %v", err)
		}
		b, _ := io.ReadAll(r)
		r.Close()
		if string(b) != "abc" {
			t.Errorf("got %q", b)
		}
		proxy.mu.Lock()
		defer proxy.mu.Unlock()
		if proxy.seen != 4 {
			t.Errorf("%d requests answered 503; want 4", proxy.seen)
		}
	})

	t.Run("503 for good", func(t *testing.T) {
		few := cfg
		few.MaxRetries = 2
		s2, err := NewS3(few)
		if err != nil {
			t.Fatal(err)
		}
		proxy.fail.Store(100)
		defer proxy.fail.Store(0)
		err = s2.Put(ctx, "retry/y", strings.NewReader("abc"), 3)
		if err == nil || !strings.Contains(err.Error(), "SlowDown") || !strings.Contains(err.Error(), "retry/y") {
			t.Errorf("put against a store answering 503: %v", err)
		}
	})

	t.Run("wrong bucket", func(t *testing.T) {
		wrong := cfg
		wrong.Bucket = "no-such-bucket"
		s2, err := NewS3(wrong)
		if err != nil {
			t.Fatal(err)
		}
		err = s2.Put(ctx, "a/b", strings.NewReader("x"), 1)
		if !errors.Is(err, ErrNoBucket) || !strings.Contains(err.Error(), "no-such-bucket") {
			t.Errorf("put to a missing bucket: %v", err)
		}
		if _, err := s2.List(ctx, "a/"); !errors.Is(err, ErrNoBucket) {
			t.Errorf("list of a missing bucket: %v", err)
		}
	})

}

func TestNewS3Errors(t *testing.T) {
	for _, c := range []struct {
		cfg  S3Config
		want string
	}{
		{S3Config{}, "no bucket"},
		{S3Config{Bucket: "b", PartSize: 1 << 20}, "below S3's smallest part"},
		{S3Config{Bucket: "b", AccessKeyID: "k"}, "needs its secret"},
		{S3Config{Bucket: "b", Endpoint: "localhost:9000"}, "is not an http:// or https:// URL"},
		{S3Config{Bucket: "b", Endpoint: "http://h:1/path"}, "is not an http:// or https:// URL"},
	} {
		if _, err := NewS3(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewS3(%+v) = %v; want %q", c.cfg, err, c.want)
		}
	}
}

// TestS3Credentials runs against a moto that checks credentials.
func TestS3Credentials(t *testing.T) {
	m := startMoto(t, true)
	cfg := S3Config{Bucket: "weir-tiered", Region: "us-east-1", Endpoint: m.url, PathStyle: true,
		AccessKeyID: m.key, SecretAccessKey: m.secret}
	s, err := NewS3(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.core.Client.MakeBucket(ctx, cfg.Bucket, minioMakeBucketOptions(cfg.Region)); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "a/b", strings.NewReader("x"), 1); err != nil {
		t.Fatalf("put with the user's key: %v", err)
	}
	t.Run("wrong credentials", func(t *testing.T) {
		for name, c := range map[string][2]string{"unknown key": {"AKIAWRONGWRONGWRONG0", m.secret}, "wrong secret": {m.key, "wrong-secret"}} {
			bad := cfg
			bad.AccessKeyID, bad.SecretAccessKey = c[0], c[1]
			s2, err := NewS3(bad)
			if err != nil {
				t.Fatal(err)
			}
			err = s2.Put(ctx, "a/b", strings.NewReader("x"), 1)
			if !errors.Is(err, ErrAccessDenied) {
				t.Errorf("%s: put = %v; want ErrAccessDenied", name, err)
			}
			t.Logf("%s: %v", name, err)
		}
	})

	t.Run("environment credentials", func(t *testing.T) {
		t.Setenv("AWS_ACCESS_KEY_ID", m.key)
		t.Setenv("AWS_SECRET_ACCESS_KEY", m.secret)
		env := cfg
		env.AccessKeyID, env.SecretAccessKey = "", ""
		s2, err := NewS3(env)
		if err != nil {
			t.Fatal(err)
		}
		if err := s2.Put(ctx, "env/x", strings.NewReader("x"), 1); err != nil {
			t.Errorf("put with the environment's credentials: %v", err)
		}
	})
}
