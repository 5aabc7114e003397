// Package console is weir's web console: a Kafka client with a UI. It
// reads and acts only through franz-go clients connected to the node's
// own broker listener, so every page and action passes the broker's
// authentication and ACL checks, as any client's requests do. Pages are
// rendered on the server (html/template, assets embedded); a little of
// the console's own JavaScript keeps the overview and a group's lag live
// over server-sent events.
package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"

	"weir/internal/link"
	wsasl "weir/internal/sasl"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Mechanisms are the SASL mechanisms the console's login form offers, in
// the order it lists them.
var Mechanisms = []string{"SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"}

// Config is what a console needs to know about the listener it uses.
type Config struct {
	// Bootstrap is the host:port of the broker listener the console's
	// clients connect to first.
	Bootstrap string
	// Dial opens the clients' connections (TLS included for a SASL_SSL
	// listener); nil is a plain TCP dial.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Mechanisms are the SASL mechanisms of the listener that the console
	// can log in with (of Mechanisms). Empty: the listener takes
	// anonymous clients and the console has no login.
	Mechanisms []string
	// SessionIdle is how long a session lives unused (30 minutes when
	// zero); its client is closed when it expires.
	SessionIdle time.Duration
	// SampleEvery is the interval of the live pages' updates and of the
	// throughput samples (5 seconds when zero).
	SampleEvery time.Duration
	// Now is the clock of session expiry and samples; time.Now when nil.
	Now    func() time.Time
	Logger *slog.Logger
}

// Console serves the pages. Create it with New; Close it to close every
// session's client.
type Console struct {
	cfg   Config
	tmpl  map[string]*template.Template
	mux   *http.ServeMux
	anon  *client // the shared client when the listener has no SASL
	mu    sync.Mutex
	sess  map[string]*session
	close chan struct{}
	wg    sync.WaitGroup
}

// session is one browser's login: its client (the shared anonymous one
// without SASL), its CSRF token and when it was last used.
type session struct {
	id, csrf string
	user     string // "" when anonymous
	cl       *client
	last     time.Time
	flash    string     // a message shown once on the next page
	lag      lagSamples // the lag over time of the group last watched
}

// client is a franz-go client and its admin client, with the options it
// was made with (the message browser makes consumers with the same
// credentials) and a short-lived cache of what the lists read.
type client struct {
	kgo   *kgo.Client
	adm   *kadm.Client
	opts  []kgo.Opt
	links *link.AdminClient // the cluster link admin API, with the same login
	cache cache
}

// New returns a console for cfg. Without SASL it connects its shared
// anonymous client at once (lazily: franz-go dials on the first request).
func New(cfg Config) (*Console, error) {
	if cfg.SessionIdle <= 0 {
		cfg.SessionIdle = 30 * time.Minute
	}
	if cfg.SampleEvery <= 0 {
		cfg.SampleEvery = 5 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Dial == nil {
		cfg.Dial = (&net.Dialer{Timeout: 10 * time.Second}).DialContext
	}
	for _, m := range cfg.Mechanisms {
		if !slices.Contains(Mechanisms, m) {
			return nil, fmt.Errorf("console: SASL mechanism %s is not one the console logs in with (%s)", m, strings.Join(Mechanisms, ", "))
		}
	}
	c := &Console{cfg: cfg, sess: map[string]*session{}, close: make(chan struct{})}
	if err := c.parseTemplates(); err != nil {
		return nil, err
	}
	if len(cfg.Mechanisms) == 0 {
		cl, err := c.newClient(nil)
		if err != nil {
			return nil, err
		}
		c.anon = cl
	}
	c.routes()
	c.wg.Add(1)
	go c.sweeper()
	return c, nil
}

// Handler is the console's HTTP handler.
func (c *Console) Handler() http.Handler { return c.mux }

// Close ends every session and closes the clients.
func (c *Console) Close() {
	close(c.close)
	c.wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, s := range c.sess {
		c.endLocked(id, s)
	}
	if c.anon != nil {
		c.anon.kgo.Close()
	}
}

const clientID = "weir-console"

// newClient makes a client with the given SASL login (none when nil):
// a franz-go client, and a cluster link admin client whose connections
// log in with the same mechanism.
func (c *Console) newClient(login kgosasl.Mechanism) (*client, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(c.cfg.Bootstrap), kgo.Dialer(c.cfg.Dial), kgo.ClientID(clientID),
		kgo.RequestRetries(2), kgo.RetryTimeout(5 * time.Second)}
	dial := c.cfg.Dial
	if login != nil {
		opts = append(opts, kgo.SASL(login))
		dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			nc, err := c.cfg.Dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			if err := wsasl.Login(ctx, nc, login, clientID); err != nil {
				nc.Close()
				return nil, err
			}
			return nc, nil
		}
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	adm := kadm.NewClient(cl)
	return &client{kgo: cl, adm: adm, opts: opts, links: &link.AdminClient{Bootstrap: c.cfg.Bootstrap, ClientID: clientID,
		Dial: dial, RequestTimeout: 15 * time.Second, Adm: adm}}, nil
}

const cookieName = "weir_console"

// randomID is 32 random bytes in hex.
func randomID() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b[:])
}

// lookup returns the request's live session, touching it, or nil.
func (c *Console) lookup(r *http.Request) *session {
	ck, err := r.Cookie(cookieName)
	if err != nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.cfg.Now()
	s := c.sess[ck.Value]
	if s == nil {
		return nil
	}
	if now.Sub(s.last) > c.cfg.SessionIdle {
		c.endLocked(s.id, s)
		return nil
	}
	s.last = now
	return s
}

// start creates a session for cl (user "" when anonymous) and sets its
// cookie.
func (c *Console) start(w http.ResponseWriter, r *http.Request, cl *client, user string) *session {
	s := &session{id: randomID(), csrf: randomID(), user: user, cl: cl, last: c.cfg.Now()}
	c.mu.Lock()
	c.sess[s.id] = s
	c.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: s.id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil})
	return s
}

// endLocked removes a session and closes its own client; c.mu is held.
func (c *Console) endLocked(id string, s *session) {
	delete(c.sess, id)
	if s.cl != c.anon {
		s.cl.kgo.Close()
	}
}

// sweeper ends idle sessions once a minute, so that a browser that went
// away does not keep its client open.
func (c *Console) sweeper() {
	defer c.wg.Done()
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-c.close:
			return
		case <-t.C:
			c.sweep()
		}
	}
}

// sweep ends every session idle longer than SessionIdle.
func (c *Console) sweep() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.cfg.Now()
	for id, s := range c.sess {
		if now.Sub(s.last) > c.cfg.SessionIdle {
			c.endLocked(id, s)
		}
	}
}

// Sessions is the number of live sessions (for tests and the page
// footer).
func (c *Console) Sessions() int {
	c.sweep()
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sess)
}

// page wraps a handler of pages that need a session: without SASL one is
// made on the first visit; with SASL the browser is sent to the login
// form.
func (c *Console) page(h func(w http.ResponseWriter, r *http.Request, s *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s := c.lookup(r)
		if s == nil {
			if c.anon == nil {
				http.Redirect(w, r, "/login?next="+urlQueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			s = c.start(w, r, c.anon, "")
		}
		h(w, r, s)
	}
}

// action wraps a handler of a POST that changes something: it needs a
// live session and the session's CSRF token in the form.
func (c *Console) action(h func(w http.ResponseWriter, r *http.Request, s *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "actions are POST requests", http.StatusMethodNotAllowed)
			return
		}
		s := c.lookup(r)
		if s == nil {
			http.Error(w, "no session: log in (or load a page) first", http.StatusForbidden)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(s.csrf)) != 1 {
			http.Error(w, "invalid or missing CSRF token: reload the page and try again", http.StatusForbidden)
			return
		}
		h(w, r, s)
	}
}

// setFlash leaves a message for the session's next page.
func (c *Console) setFlash(s *session, msg string) {
	c.mu.Lock()
	s.flash = msg
	c.mu.Unlock()
}

// takeFlash returns and clears the session's message.
func (c *Console) takeFlash(s *session) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := s.flash
	s.flash = ""
	return f
}

func (c *Console) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	m.Handle("GET /static/", http.StripPrefix("/static/", cacheStatic(http.FileServerFS(static))))
	m.HandleFunc("GET /login", c.loginForm)
	m.HandleFunc("POST /login", c.login)
	m.HandleFunc("POST /logout", c.action(c.logout))
	m.HandleFunc("GET /{$}", c.page(c.overview))
	m.HandleFunc("GET /events/overview", c.page(c.overviewEvents))
	m.HandleFunc("GET /topics", c.page(c.topics))
	m.HandleFunc("GET /topics/{topic}", c.page(c.topic))
	m.HandleFunc("GET /topics/{topic}/messages", c.page(c.messages))
	m.HandleFunc("GET /groups", c.page(c.groups))
	m.HandleFunc("GET /groups/{group}", c.page(c.group))
	m.HandleFunc("GET /events/groups/{group}", c.page(c.groupEvents))
	m.HandleFunc("GET /transactions", c.page(c.transactions))
	m.HandleFunc("GET /links", c.page(c.links))
	m.HandleFunc("GET /reassignments", c.page(c.reassignments))
	m.HandleFunc("GET /events/reassignments", c.page(c.reassignmentEvents))
	m.HandleFunc("POST /actions/promote-mirror", c.action(c.promoteMirror))
	m.HandleFunc("POST /actions/create-topic", c.action(c.createTopic))
	m.HandleFunc("POST /actions/delete-topic", c.action(c.deleteTopic))
	m.HandleFunc("POST /actions/alter-config", c.action(c.alterConfig))
	m.HandleFunc("POST /actions/elect-leaders", c.action(c.electLeaders))
	m.HandleFunc("POST /actions/reset-offsets", c.action(c.resetOffsets))
	c.mux = m
}

// cacheStatic lets browsers keep the embedded assets for an hour.
func cacheStatic(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		h.ServeHTTP(w, r)
	})
}

// loginForm shows the login form (or sends an anonymous console home).
func (c *Console) loginForm(w http.ResponseWriter, r *http.Request) {
	if c.anon != nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	c.render(w, nil, "login", http.StatusOK, loginPage{Mechanisms: c.cfg.Mechanisms, Next: safeNext(r.URL.Query().Get("next"))})
}

type loginPage struct {
	Mechanisms []string
	Next, User string
	Error      string
}

// login checks the credentials by connecting with them: the broker's
// SASL handshake is the only judge. The session's client keeps them.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if c.anon != nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 1<<16)
	r.ParseForm()
	user, pass, mech := r.PostFormValue("user"), r.PostFormValue("password"), r.PostFormValue("mechanism")
	next := safeNext(r.PostFormValue("next"))
	fail := func(msg string) {
		c.render(w, nil, "login", http.StatusUnauthorized, loginPage{Mechanisms: c.cfg.Mechanisms, Next: next, User: user, Error: msg})
	}
	if !slices.Contains(c.cfg.Mechanisms, mech) {
		fail("Choose one of the listener's SASL mechanisms.")
		return
	}
	m, err := wsasl.ClientMechanism(mech, user, pass)
	if err != nil {
		fail(err.Error())
		return
	}
	cl, err := c.newClient(m)
	if err != nil {
		fail(err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	if err := cl.kgo.Ping(ctx); err != nil {
		cl.kgo.Close()
		c.cfg.Logger.Info("console login failed", "user", user, "mechanism", mech, "err", err)
		fail("Login failed: " + err.Error())
		return
	}
	c.start(w, r, cl, user)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout ends the session.
func (c *Console) logout(w http.ResponseWriter, r *http.Request, s *session) {
	c.mu.Lock()
	c.endLocked(s.id, s)
	c.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// safeNext keeps a post-login redirect on this site.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	return next
}

// reqCtx bounds one page's requests to the cluster.
func reqCtx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), 15*time.Second)
}

// errText is an error as the page shows it; an authorization error says
// which rights are missing in Kafka's words.
func errText(err error) string {
	var ae *kadm.AuthError
	if errors.As(err, &ae) {
		return "Not authorized: " + ae.Error()
	}
	return err.Error()
}
