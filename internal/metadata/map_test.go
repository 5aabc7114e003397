package metadata

import (
	"fmt"
	"maps"
	"reflect"
	"testing"
)

// An edit of a Map leaves the Map it started from as it was, and shares
// the shards it did not change.
func TestMapIsPersistent(t *testing.T) {
	want := map[string]int{}
	for i := range 1000 {
		want[fmt.Sprint(i)] = i
	}
	old := MapOf(want)
	var e mapEdit[string, int]
	e.start(old)
	e.set("new", -1)
	e.set("7", 70)
	e.delete("8")
	e.delete("absent")
	next := e.m
	if old.Len() != 1000 || old.Get("7") != 7 || old.Get("8") != 8 || old.Get("new") != 0 {
		t.Fatalf("the old map changed: len %d, 7=%d 8=%d new=%d", old.Len(), old.Get("7"), old.Get("8"), old.Get("new"))
	}
	if next.Len() != 1000 || next.Get("7") != 70 || next.Get("8") != 0 || next.Get("new") != -1 {
		t.Fatalf("the new map: len %d, 7=%d 8=%d new=%d", next.Len(), next.Get("7"), next.Get("8"), next.Get("new"))
	}
	n, copied := 0, 0
	for k, v := range next.All() {
		n++
		if k != "new" && k != "7" && want[k] != v {
			t.Fatalf("%s=%d", k, v)
		}
	}
	for i := range mapShards {
		if fmt.Sprintf("%p", next.d.shards[i]) != fmt.Sprintf("%p", old.d.shards[i]) {
			copied++
		}
	}
	if n != 1000 || copied > 4 {
		t.Fatalf("%d entries iterated, %d of %d shards copied for 4 keys", n, copied, mapShards)
	}
	var empty Map[string, int]
	if empty.Len() != 0 || empty.Get("x") != 0 {
		t.Fatal("the zero Map is not empty")
	}
	for range empty.All() {
		t.Fatal("the zero Map has entries")
	}
}

// Maps of the same entries are equal however they were edited: a shard
// emptied by deletes and a Map emptied are as if never filled.
func TestMapIsCanonical(t *testing.T) {
	var e mapEdit[string, int]
	e.start(MapOf(map[string]int{"a": 1, "b": 2, "c": 3}))
	e.set("d", 4)
	e.delete("b")
	e.delete("absent")
	if got, want := e.done(), MapOf(map[string]int{"a": 1, "c": 3, "d": 4}); !reflect.DeepEqual(got, want) {
		t.Fatalf("edited %v, built %v", maps.Collect(got.All()), maps.Collect(want.All()))
	}
	for _, k := range []string{"a", "c", "d"} {
		e.delete(k)
	}
	if got := e.done(); !reflect.DeepEqual(got, Map[string, int]{}) || !reflect.DeepEqual(got, MapOf(map[string]int{})) {
		t.Fatalf("a Map emptied is %#v", got)
	}
}
