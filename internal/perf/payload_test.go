package perf

import (
	"testing"
)

func TestRandomPayloads(t *testing.T) {
	p := NewRandomPayloads(1024, 1)
	seen := map[string]bool{}
	for i := range int64(100) {
		v := p.Next(i, nil)
		if len(v) != 1024 || cap(v) != 1024 {
			t.Fatalf("len %d cap %d", len(v), cap(v))
		}
		for _, c := range v {
			if c < 'A' || c > 'Z' {
				t.Fatalf("byte %q outside A-Z", c)
			}
		}
		seen[string(v)] = true
	}
	if len(seen) < 90 {
		t.Fatalf("only %d distinct payloads out of 100", len(seen))
	}
	if n := testing.AllocsPerRun(1000, func() { p.Next(1, nil) }); n != 0 {
		t.Fatalf("Next allocates %v times", n)
	}
	big := NewRandomPayloads(5<<20, 1) // larger than the default buffer
	if v := big.Next(0, nil); len(v) != 5<<20 {
		t.Fatalf("len %d", len(v))
	}
}

func TestFilePayloads(t *testing.T) {
	p, err := NewFilePayloads([]byte("alpha\nbeta\n\ngamma"), "\n", 1)
	if err != nil {
		t.Fatal(err)
	}
	if p.Len() != 3 {
		t.Fatalf("Len = %d, want 3 (empty piece dropped)", p.Len())
	}
	seen := map[string]int{}
	for i := range int64(300) {
		seen[string(p.Next(i, nil))]++
	}
	for _, w := range []string{"alpha", "beta", "gamma"} {
		if seen[w] == 0 {
			t.Errorf("%q never chosen: %v", w, seen)
		}
	}
	if len(seen) != 3 {
		t.Errorf("unexpected payloads %v", seen)
	}
	p, err = NewFilePayloads([]byte("a||b||"), "||", 1)
	if err != nil || p.Len() != 2 {
		t.Fatalf("multi-byte delimiter: %v %v", p, err)
	}
	if _, err := NewFilePayloads([]byte("\n\n"), "\n", 1); err == nil {
		t.Fatal("file of delimiters accepted")
	}
	if _, err := NewFilePayloads([]byte("x"), "", 1); err == nil {
		t.Fatal("empty delimiter accepted")
	}
}

func TestMonotonicPayloads(t *testing.T) {
	p := NewMonotonicPayloads()
	scratch := make([]byte, 0, 20)
	if got := string(p.Next(12345, scratch)); got != "12345" {
		t.Fatalf("got %q", got)
	}
	if n := testing.AllocsPerRun(1000, func() { p.Next(987654321, scratch) }); n != 0 {
		t.Fatalf("Next allocates %v times with scratch", n)
	}
}
