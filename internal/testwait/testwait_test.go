package testwait

import (
	"errors"
	"testing"
	"time"
)

func TestPollReturnsNilOnceTheConditionHolds(t *testing.T) {
	n := 0
	err := Poll(time.Minute, func() error {
		n++
		if n < 5 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || n != 5 {
		t.Fatalf("Poll = %v after %d calls, want nil after 5", err, n)
	}
}

func TestPollReturnsTheLastErrorAtTheDeadline(t *testing.T) {
	calls := 0
	err := Poll(20*time.Millisecond, func() error {
		calls++
		return errors.New("still down")
	})
	if err == nil || err.Error() != "still down" {
		t.Fatalf("Poll = %v, want the condition's last error", err)
	}
	if calls < 2 {
		t.Fatalf("condition called %d times, want it retried before the deadline", calls)
	}
}

func TestBool(t *testing.T) {
	if err := Bool(func() bool { return true })(); err != nil {
		t.Fatalf("Bool(true) = %v", err)
	}
	if err := Bool(func() bool { return false })(); err == nil {
		t.Fatal("Bool(false) = nil")
	}
}
