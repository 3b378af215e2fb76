package store

import (
	"strconv"
	"testing"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
)

// TestRecentRecordsBounded: the memory behind Lookup holds at most
// recentMax records, the oldest going first; a dropped id is gone, and an
// id put again takes a new place.
func TestRecentRecordsBounded(t *testing.T) {
	var c recentRecords
	for i := range recentMax + 10 {
		c.put(engine.Record{ID: "q" + strconv.Itoa(i)})
	}
	if n := len(c.byID); n != recentMax {
		t.Fatalf("%d records kept, want %d", n, recentMax)
	}
	for i := range 10 {
		if _, ok := c.get("q" + strconv.Itoa(i)); ok {
			t.Fatalf("q%d, among the oldest, is still kept", i)
		}
	}
	last := "q" + strconv.Itoa(recentMax+9)
	if r, ok := c.get(last); !ok || r.ID != last {
		t.Fatalf("the newest, %s, is not kept: %+v", last, r)
	}
	c.drop(last)
	if _, ok := c.get(last); ok {
		t.Fatal("a dropped record is still served")
	}
	// A record put again is updated in place, not given a second slot.
	c.put(engine.Record{ID: "q100", Status: askbridge.StatusAnswered})
	if r, _ := c.get("q100"); r.Status != askbridge.StatusAnswered || len(c.byID) != recentMax-1 {
		t.Fatalf("q100 = %+v with %d kept; want updated, %d kept", r, len(c.byID), recentMax-1)
	}
}
