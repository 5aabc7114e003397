package console

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
)

// view is what every page template gets: the layout's fields and the
// page's own Data.
type view struct {
	Page   string // the template's name, for the navigation's current page
	User   string // the logged-in user, "" when anonymous
	Login  bool   // the console has a login (SASL)
	CSRF   string
	Flash  string
	Error  string // an error of the page's requests, shown at the top
	Data   any
	Status int
}

var funcs = template.FuncMap{
	"bytes":   humanBytes,
	"query":   url.QueryEscape,
	"pathesc": url.PathEscape,
	"join": func(xs []int32) string {
		s := make([]string, len(xs))
		for i, x := range xs {
			s[i] = fmt.Sprint(x)
		}
		return strings.Join(s, ", ")
	},
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }

// parseTemplates parses layout.html with each page template.
func (c *Console) parseTemplates() error {
	pages, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return err
	}
	c.tmpl = map[string]*template.Template{}
	for _, p := range pages {
		name := strings.TrimSuffix(path.Base(p), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", p)
		if err != nil {
			return fmt.Errorf("console templates: %w", err)
		}
		c.tmpl[name] = t
	}
	return nil
}

// render writes the named page.
func (c *Console) render(w http.ResponseWriter, s *session, name string, status int, data any) {
	c.renderView(w, s, name, view{Status: status, Data: data})
}

// renderErr writes the named page with an error at its top.
func (c *Console) renderErr(w http.ResponseWriter, s *session, name string, status int, err error, data any) {
	c.renderView(w, s, name, view{Status: status, Error: errText(err), Data: data})
}

func (c *Console) renderView(w http.ResponseWriter, s *session, name string, v view) {
	v.Page, v.Login = name, c.anon == nil
	if s != nil {
		v.User, v.CSRF, v.Flash = s.user, s.csrf, c.takeFlash(s)
	}
	var buf bytes.Buffer
	if err := c.tmpl[name].Execute(&buf, v); err != nil {
		c.cfg.Logger.Error("console template failed", "page", name, "err", err)
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'")
	w.WriteHeader(v.Status)
	w.Write(buf.Bytes())
}

// humanBytes is n in binary units, as "1.5 MiB".
func humanBytes(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	f := float64(n)
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB", "PiB"} {
		f /= 1024
		if f < 1024 {
			return fmt.Sprintf("%.1f %s", f, u)
		}
	}
	return fmt.Sprintf("%.1f EiB", f/1024)
}
