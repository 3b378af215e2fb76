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

// TestRecentMessagesFollowTheirRecord: a message is known only while its
// question's record is held, at most the given number per question, and
// goes with the record (dropped, or evicted by newer ones).
func TestRecentMessagesFollowTheirRecord(t *testing.T) {
	var c recentRecords
	c.putMessage("m0", "q0", 2)
	if _, ok := c.message("m0"); ok {
		t.Fatal("a message of a question not held is kept")
	}
	c.put(engine.Record{ID: "q0"})
	for _, k := range []string{"m0", "m1", "m2"} {
		c.putMessage(k, "q0", 2)
	}
	if id, ok := c.message("m1"); !ok || id != "q0" {
		t.Fatalf("m1 = %q, %v", id, ok)
	}
	if _, ok := c.message("m2"); ok {
		t.Fatal("more messages kept than the bound")
	}
	c.drop("q0")
	if _, ok := c.message("m0"); ok || len(c.byMessage) != 0 || len(c.refsOf) != 0 {
		t.Fatalf("the messages of a dropped record are kept: %v %v", c.byMessage, c.refsOf)
	}
	c.put(engine.Record{ID: "q1"})
	c.putMessage("m9", "q1", 2)
	for i := range recentMax {
		c.put(engine.Record{ID: "n" + strconv.Itoa(i)})
	}
	if _, ok := c.message("m9"); ok {
		t.Fatal("the message of an evicted record is kept")
	}
}
