package kafka_test

// Consumer groups with kcat -G (librdkafka's balanced consumer): two kcat
// members split a topic's partitions and read each message once; they
// commit as they go and on exit, and after a broker restart a new kcat
// member of the group (with no -o, which would force the start offset)
// reads only what was produced since. Skipped when kcat is not on PATH.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// kcatGroupFormat prints topic, partition, offset and value.
const kcatGroupFormat = "%t %p %o %s\n"

// kcatGroupArgs are the arguments of a kcat group member named name (-u:
// unbuffered, so that each line arrives as it is consumed).
func kcatGroupArgs(addr, group, name string, topics ...string) []string {
	args := []string{"-b", addr, "-G", group, "-q", "-u", "-f", kcatGroupFormat,
		"-X", "client.id=" + name,
		"-X", "auto.offset.reset=earliest",
		"-X", "auto.commit.interval.ms=100",
		"-X", "heartbeat.interval.ms=100",
		"-X", "session.timeout.ms=6000",
		"-X", "fetch.wait.max.ms=50"}
	return append(args, topics...)
}

// kcatParse turns one output line of kcatGroupFormat into a record.
func kcatParse(t *testing.T, member, line string) grpConsumed {
	t.Helper()
	f := strings.SplitN(line, " ", 4)
	if len(f) != 4 {
		t.Fatalf("%s printed %q", member, line)
	}
	p, err1 := strconv.ParseInt(f[1], 10, 32)
	o, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("%s printed %q", member, line)
	}
	return grpConsumed{member: member, topic: f[0], partition: int32(p), offset: o, value: f[3]}
}

// kcatMember is a running kcat -G process whose output lines go to a
// ledger.
type kcatMember struct {
	name   string
	cmd    *exec.Cmd
	stderr lockedBuffer
	done   chan struct{}
	mu     sync.Mutex
	bad    []string
}

// lockedBuffer is a bytes.Buffer that exec's copying goroutine may write
// while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func kcatJoin(t *testing.T, kcat, addr, group, name, topic string, led *grpLedger) *kcatMember {
	t.Helper()
	m := &kcatMember{name: name, done: make(chan struct{})}
	m.cmd = exec.Command(kcat, kcatGroupArgs(addr, group, name, topic)...)
	m.cmd.Stderr = &m.stderr
	out, err := m.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(m.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f := strings.SplitN(sc.Text(), " ", 4)
			p, err1 := strconv.ParseInt(f[min(1, len(f)-1)], 10, 32)
			o, err2 := strconv.ParseInt(f[min(2, len(f)-1)], 10, 64)
			if len(f) != 4 || err1 != nil || err2 != nil {
				m.mu.Lock()
				m.bad = append(m.bad, sc.Text())
				m.mu.Unlock()
				continue
			}
			led.add(grpConsumed{member: name, topic: f[0], partition: int32(p), offset: o, value: f[3]})
		}
	}()
	t.Cleanup(func() {
		if m.cmd.ProcessState == nil {
			m.cmd.Process.Kill()
			<-m.done
			m.cmd.Wait()
		}
	})
	return m
}

// stop asks kcat to exit (SIGINT: it closes the consumer, which commits
// and leaves the group) and waits for it.
func (m *kcatMember) stop(t *testing.T, ctx context.Context) {
	t.Helper()
	if err := m.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.done:
	case <-ctx.Done():
		t.Fatalf("%s did not exit on SIGINT", m.name)
	}
	if err := m.cmd.Wait(); err != nil {
		t.Fatalf("%s: %v\nstderr:\n%s", m.name, err, m.stderr.String())
	}
	m.check(t)
}

func (m *kcatMember) check(t *testing.T) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.bad) > 0 {
		t.Fatalf("%s printed unexpected lines %q", m.name, m.bad)
	}
	if s := m.stderr.String(); strings.Contains(s, "ERROR") || strings.Contains(s, "FAIL") {
		t.Fatalf("%s reported errors:\n%s", m.name, s)
	}
}

func TestGroupKcat(t *testing.T) {
	kcat := kcatPath(t)
	n := grpNode(t, nil)
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	topic, group := "grp-kcat", "g-kcat"
	cliCreateTopic(t, ctx, adm, topic, 4, nil)
	prod := grpProducer(t, n.Addr)
	produced := grpTopics{}

	led := &grpLedger{}
	k0 := kcatJoin(t, kcat, n.Addr, group, "kc0", topic, led)
	k1 := kcatJoin(t, kcat, n.Addr, group, "kc1", topic, led)
	as := grpStable(t, ctx, adm, group, map[string]int32{topic: 4}, "kc0", "kc1")
	grpProduce(t, ctx, prod, produced, topic, 4, 25, "first")
	grpWait(t, ctx, "100 messages consumed by kcat", func() (bool, string) {
		k0.check(t)
		k1.check(t)
		return led.len() >= produced.total(), fmt.Sprint(led.byMember())
	})
	led.check(t, produced)
	for _, c := range led.snapshot() {
		owned := false
		for _, p := range as[c.member][topic] {
			owned = owned || p == c.partition
		}
		if !owned {
			t.Fatalf("%s read %s-%d, which is assigned to the other member (%v)", c.member, c.topic, c.partition, as)
		}
	}
	grpCommitted(t, ctx, adm, group, topic, grpEnds(produced, topic))
	k0.stop(t, ctx)
	k1.stop(t, ctx)

	n.Restart()
	adm = cliAdmin(t, n.Addr)
	grpCommitted(t, ctx, adm, group, topic, grpEnds(produced, topic))
	prod = grpProducer(t, n.Addr)
	grpProduce(t, ctx, prod, produced, topic, 4, 10, "second")
	// -e: exit once every assigned partition is read to its end.
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out := runKcat(t, rctx, kcat, nil, append([]string{"-e"}, kcatGroupArgs(n.Addr, group, "kc2", topic)...)...)
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 40 {
		t.Fatalf("kcat resumed and read %d messages, want the 40 new ones:\n%s", len(lines), out)
	}
	for _, l := range lines {
		c := kcatParse(t, "kc2", l)
		if c.offset < 25 {
			t.Fatalf("kcat resumed at %s-%d@%d, before the committed offset 25", c.topic, c.partition, c.offset)
		}
		led.add(c)
	}
	led.check(t, produced)
}
