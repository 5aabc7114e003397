package controller

// Every controller operation has two halves, as Kafka's QuorumController
// runs a ControllerResult:
//
//   - a build function of the current image, the request and the
//     controller's static config (and of what its method reads under the
//     lock and passes in: a new broker's epoch, its sessions) that returns
//     the records to commit and the answer, as a result; it commits
//     nothing and changes no state, so tests call it with an image and
//     check both without a quorum;
//   - run, the one place that takes the controller's lock, refuses unless
//     this node is the active controller, builds against the image,
//     commits the records as one batch and answers.
//
// The exported method of an operation calls run with its build function;
// the broker lifecycle's methods also keep the sessions the image does
// not hold (brokers.go).

import "weir/internal/metadata"

// result is what an operation's build function plans: Records, committed
// as one batch (none: nothing to commit), then Answer.
type result[A any] struct {
	Records []metadata.Record
	Answer  A
	// after, if set, runs once Records are committed, still under the
	// controller's lock: bookkeeping the image does not hold (broker
	// sessions, fast fencing). Build functions leave it unset; the
	// operation's method sets it.
	after func()
}

// Committed is the answer, or part of the answer, of an operation whose
// caller waits until its metadata includes the outcome.
type Committed struct {
	// Offset is the offset of the last record committed; when the
	// operation committed nothing, the offset of the image it was answered
	// from, or -1 when there is nothing to wait for.
	Offset int64
}

func (c *Committed) committed(last int64) { c.Offset = last }

// run runs one operation (see the file comment): under the lock, it fails
// with quorum.ErrNotLeader unless this node is the active controller,
// builds against the current image, commits the records, sets the
// answer's Committed.Offset to the last one's, and returns the answer.
// A build error fails the whole operation and commits nothing.
func run[A any](c *Controller, build func(img *metadata.Image) (result[A], error)) (A, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero A
	if err := c.requireActive(); err != nil {
		return zero, err
	}
	res, err := build(c.Image())
	if err != nil {
		return zero, err
	}
	if len(res.Records) > 0 {
		last, err := c.commit(res.Records)
		if err != nil {
			return zero, err
		}
		if a, ok := any(&res.Answer).(interface{ committed(int64) }); ok {
			a.committed(last)
		}
	}
	if res.after != nil {
		res.after()
	}
	return res.Answer, nil
}
