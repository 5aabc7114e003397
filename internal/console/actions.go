package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Every action is two POSTs: the first (without confirm=yes) shows what
// will happen, the second does it. Both carry the session's CSRF token.

type field struct{ Name, Value string }

type confirmData struct {
	Title   string
	What    []string   // what the action does, one line each
	Head    []string   // a table of the changes (a dry run), when set
	Rows    [][]string // its rows
	Action  string     // the form's URL
	Fields  []field    // the first POST's fields, sent again
	Back    string     // where Cancel leads
	Danger  bool
	Refused string // the action cannot be done (nothing to confirm)
}

type resultData struct {
	Title string
	Back  string
}

// confirmed reports whether the POST is the confirmation.
func confirmed(r *http.Request) bool { return r.PostFormValue("confirm") == "yes" }

// formFields are the POST's fields to send again with the confirmation.
func formFields(r *http.Request, names ...string) []field {
	var fs []field
	for _, n := range names {
		fs = append(fs, field{n, r.PostFormValue(n)})
	}
	return fs
}

// failed shows an action's error; authorization errors are 403.
func (c *Console) failed(w http.ResponseWriter, s *session, title, back string, err error) {
	status := http.StatusBadRequest
	var ke *kerr.Error
	var ae *kadm.AuthError
	if errors.As(err, &ae) || (errors.As(err, &ke) && strings.Contains(ke.Message, "AUTHORIZATION")) {
		status = http.StatusForbidden
	}
	c.renderErr(w, s, "result", status, err, resultData{Title: title, Back: back})
}

// done leaves a message and sends the browser to back.
func (c *Console) done(w http.ResponseWriter, r *http.Request, s *session, msg, back string) {
	s.cl.invalidate()
	c.setFlash(s, msg)
	http.Redirect(w, r, back, http.StatusSeeOther)
}

func actCtx(r *http.Request) (context.Context, context.CancelFunc) {
	return contextWithTimeout(r, 30*time.Second)
}

func contextWithTimeout(r *http.Request, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), d)
}

// createTopic creates a topic with CreateTopics.
func (c *Console) createTopic(w http.ResponseWriter, r *http.Request, s *session) {
	name := strings.TrimSpace(r.PostFormValue("topic"))
	title := "Create topic " + name
	parts, err := intField(r, "partitions", -1)
	if err != nil {
		c.failed(w, s, title, "/topics", err)
		return
	}
	rf, err := intField(r, "replication", -1)
	if err != nil {
		c.failed(w, s, title, "/topics", err)
		return
	}
	configs := map[string]*string{}
	var lines []string
	for _, line := range strings.Split(r.PostFormValue("configs"), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			c.failed(w, s, title, "/topics", fmt.Errorf("config %q is not of the form key=value", line))
			return
		}
		v = strings.TrimSpace(v)
		configs[strings.TrimSpace(k)] = &v
		lines = append(lines, strings.TrimSpace(k)+"="+v)
	}
	if name == "" {
		c.failed(w, s, title, "/topics", errors.New("the topic needs a name"))
		return
	}
	if !confirmed(r) {
		what := []string{fmt.Sprintf("Create topic %q with %s partitions and replication factor %s.", name, orDefault(parts), orDefault(rf))}
		for _, l := range lines {
			what = append(what, "Config "+l)
		}
		c.render(w, s, "confirm", http.StatusOK, confirmData{Title: title, What: what, Action: "/actions/create-topic",
			Fields: formFields(r, "topic", "partitions", "replication", "configs"), Back: "/topics"})
		return
	}
	ctx, cancel := actCtx(r)
	defer cancel()
	resp, err := s.cl.adm.CreateTopic(ctx, int32(parts), int16(rf), configs, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		c.failed(w, s, title, "/topics", err)
		return
	}
	c.done(w, r, s, fmt.Sprintf("Created topic %s.", name), "/topics/"+url.PathEscape(name))
}

func orDefault(n int) string {
	if n < 0 {
		return "the broker's default"
	}
	return strconv.Itoa(n)
}

// intField is the form's integer field, def when empty.
func intField(r *http.Request, name string, def int) (int, error) {
	v := strings.TrimSpace(r.PostFormValue(name))
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a number", name, v)
	}
	return n, nil
}

// deleteTopic deletes a topic with DeleteTopics.
func (c *Console) deleteTopic(w http.ResponseWriter, r *http.Request, s *session) {
	name := r.PostFormValue("topic")
	back := "/topics/" + url.PathEscape(name)
	if !confirmed(r) {
		c.render(w, s, "confirm", http.StatusOK, confirmData{Title: "Delete topic " + name,
			What:   []string{fmt.Sprintf("Delete topic %q and all its data. This cannot be undone.", name)},
			Action: "/actions/delete-topic", Fields: formFields(r, "topic"), Back: back, Danger: true})
		return
	}
	ctx, cancel := actCtx(r)
	defer cancel()
	resp, err := s.cl.adm.DeleteTopic(ctx, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		c.failed(w, s, "Delete topic "+name, back, err)
		return
	}
	c.done(w, r, s, fmt.Sprintf("Deleted topic %s.", name), "/topics")
}

// alterConfig sets or deletes one topic config with
// IncrementalAlterConfigs.
func (c *Console) alterConfig(w http.ResponseWriter, r *http.Request, s *session) {
	name, key, value, op := r.PostFormValue("topic"), strings.TrimSpace(r.PostFormValue("key")), r.PostFormValue("value"), r.PostFormValue("op")
	back := "/topics/" + url.PathEscape(name)
	title := "Alter config of " + name
	ac := kadm.AlterConfig{Name: key}
	var what string
	switch op {
	case "set":
		ac.Op, ac.Value = kadm.SetConfig, &value
		what = fmt.Sprintf("Set %s=%s on topic %q.", key, value, name)
	case "delete":
		ac.Op = kadm.DeleteConfig
		what = fmt.Sprintf("Delete %s on topic %q (back to the broker's default).", key, name)
	default:
		c.failed(w, s, title, back, fmt.Errorf("operation %q: set or delete", op))
		return
	}
	if key == "" {
		c.failed(w, s, title, back, errors.New("name the config to change"))
		return
	}
	if !confirmed(r) {
		c.render(w, s, "confirm", http.StatusOK, confirmData{Title: title, What: []string{what}, Action: "/actions/alter-config",
			Fields: formFields(r, "topic", "key", "value", "op"), Back: back})
		return
	}
	ctx, cancel := actCtx(r)
	defer cancel()
	resps, err := s.cl.adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{ac}, name)
	if err == nil {
		_, err = resps.On(name, nil)
	}
	if err == nil {
		for _, rr := range resps {
			if rr.Err != nil {
				err = rr.Err
				if rr.ErrMessage != "" {
					err = fmt.Errorf("%w: %s", rr.Err, rr.ErrMessage)
				}
			}
		}
	}
	if err != nil {
		c.failed(w, s, title, back, err)
		return
	}
	c.done(w, r, s, "Done: "+what, back)
}

// electLeaders runs a preferred leader election for a topic's partitions.
func (c *Console) electLeaders(w http.ResponseWriter, r *http.Request, s *session) {
	name := r.PostFormValue("topic")
	back := "/topics/" + url.PathEscape(name)
	title := "Preferred leader election for " + name
	if !confirmed(r) {
		c.render(w, s, "confirm", http.StatusOK, confirmData{Title: title,
			What:   []string{fmt.Sprintf("Move the leadership of every partition of %q to its preferred (first) replica where that replica is in the ISR.", name)},
			Action: "/actions/elect-leaders", Fields: formFields(r, "topic"), Back: back})
		return
	}
	ctx, cancel := actCtx(r)
	defer cancel()
	meta, err := s.cl.adm.Metadata(ctx, name)
	if err == nil {
		err = meta.Topics[name].Err
	}
	if err != nil {
		c.failed(w, s, title, back, err)
		return
	}
	set := kadm.TopicsSet{}
	for _, p := range meta.Topics[name].Partitions {
		set.Add(name, p.Partition)
	}
	res, err := s.cl.adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
	if err != nil {
		c.failed(w, s, title, back, err)
		return
	}
	elected, already := 0, 0
	var failures []string
	for _, ps := range res {
		for p, e := range ps {
			switch {
			case e.Err == nil:
				elected++
			case errors.Is(e.Err, kerr.ElectionNotNeeded):
				already++
			default:
				failures = append(failures, fmt.Sprintf("partition %d: %v", p, e.Err))
			}
		}
	}
	if len(failures) > 0 {
		sort.Strings(failures)
		c.failed(w, s, title, back, errors.New(strings.Join(failures, "; ")))
		return
	}
	c.done(w, r, s, fmt.Sprintf("Preferred leader election: %d partitions elected, %d already led by their preferred replica.", elected, already), back)
}
