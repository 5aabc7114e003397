package reassign

// reassign-partitions --execute --wait (a weir addition: Kafka's tool
// returns at once): the bytes each moving replica has caught up, as
// progress bars on a terminal and as plain lines otherwise, until the
// file's reassignments are done.

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"weir/internal/cli/tool"
	// The shared progress calculation; this package is reassign too.
	reassignment "weir/internal/reassign"
)

// waitIntervals are how often --wait redraws its bars on a terminal and
// prints progress lines otherwise (tests shorten them).
var waitIntervals = struct{ terminal, plain time.Duration }{time.Second, 10 * time.Second}

// stdoutIsTerminal reports whether w is a terminal; tests replace it.
var stdoutIsTerminal = func(w io.Writer) bool { return tool.IsTerminal(w) }

type replicaProgress = reassignment.ReplicaProgress

// waitAssignment polls the reassignments of order until none is left,
// showing the progress of each moving replica. Each poll gets the tool's
// timeout; the wait itself has none (moves of large partitions take
// hours).
func (r *reassigner) waitAssignment(parent context.Context, order []topicPart, throttled bool) error {
	tty := stdoutIsTerminal(r.out)
	interval := waitIntervals.plain
	if tty {
		interval = waitIntervals.terminal
	}
	drawn := 0
	for {
		ctx, cancel := context.WithTimeout(parent, r.tc.Timeout)
		poll := &reassigner{tc: r.tc, ctx: ctx, out: r.out}
		progress, err := poll.progress(order)
		cancel()
		if err != nil {
			return err
		}
		if len(progress) == 0 {
			break
		}
		if tty {
			drawn = drawBars(r.out, progress, drawn)
		} else {
			for _, p := range progress {
				fmt.Fprintf(r.out, "%s: broker %d has %s of %s (%.0f%%)\n", p.Name(), p.Broker, byteSize(p.Have), byteSize(p.Want), p.Percent())
			}
		}
		select {
		case <-time.After(interval):
		case <-parent.Done():
			return parent.Err()
		}
	}
	if drawn > 0 {
		fmt.Fprintf(r.out, "\x1b[%dA\x1b[J", drawn)
	}
	fmt.Fprintf(r.out, "Reassignment of %d partition%s completed.\n", len(order), tool.Plural(len(order)))
	if throttled {
		fmt.Fprintln(r.out, "Run --verify to remove the throttle.")
	}
	return nil
}

// progress returns the moving replicas of order's partitions still being
// reassigned, by partition and broker.
func (r *reassigner) progress(order []topicPart) ([]replicaProgress, error) {
	ongoing, err := r.ongoing()
	if err != nil {
		return nil, err
	}
	var moving []kadm.ListPartitionReassignmentsResponse
	for _, p := range order {
		if o, ok := ongoing[p]; ok {
			moving = append(moving, kadm.ListPartitionReassignmentsResponse{Topic: p.topic, Partition: p.partition,
				Replicas: o.Replicas, AddingReplicas: o.AddingReplicas, RemovingReplicas: o.RemovingReplicas})
		}
	}
	out, err := reassignment.Progress(r.ctx, r.tc.Admin, moving)
	if err != nil {
		return nil, tool.KafkaError(err, nil)
	}
	return out, nil
}

// drawBars draws one bar per moving replica over the drawn lines of the
// previous draw and returns how many it drew.
func drawBars(w io.Writer, progress []replicaProgress, drawn int) int {
	const width = 30
	var b strings.Builder
	if drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", drawn)
	}
	for _, p := range progress {
		pct := p.Percent()
		full := int(pct / 100 * width)
		bar := strings.Repeat("=", full)
		if full < width {
			bar += ">" + strings.Repeat(" ", width-full-1)
		}
		fmt.Fprintf(&b, "\x1b[2K%s -> broker %d [%s] %3.0f%% %s / %s\n", p.Name(), p.Broker, bar, pct, byteSize(p.Have), byteSize(p.Want))
	}
	if len(progress) < drawn {
		b.WriteString("\x1b[J") // fewer lines than before: clear the rest
	}
	io.WriteString(w, b.String())
	return len(progress)
}

// byteSize prints a size in binary units.
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
