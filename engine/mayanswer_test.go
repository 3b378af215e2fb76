package engine_test

import (
	"testing"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
)

// TestMayAnswerInEmailPlace: an email place without answerers is its
// address's alone; with answerers, theirs; other places keep "anyone
// there".
func TestMayAnswerInEmailPlace(t *testing.T) {
	alice := askbridge.Person{Platform: "email", ID: "alice@example.com"}
	bob := askbridge.Person{Platform: "email", ID: "bob@example.com"}
	tg := askbridge.Person{Platform: "telegram", ID: "7"}
	rec := engine.Record{Places: []askbridge.Place{
		{Name: "email:alice@example.com", Target: askbridge.Target{Platform: "email", Chat: "alice@example.com"}},
		{Name: "ops", Target: askbridge.Target{Platform: "telegram", Chat: "-100"}},
		{Name: "email:carol@example.com", Target: askbridge.Target{Platform: "email", Chat: "carol@example.com"}, Answerers: []string{"email:bob@example.com"}},
	}}
	for _, c := range []struct {
		p    askbridge.Person
		k    int
		want bool
	}{
		{alice, 0, true}, {bob, 0, false}, {tg, 0, false},
		{tg, 1, true}, {alice, 1, true},
		{bob, 2, true}, {alice, 2, false},
	} {
		if got := rec.MayAnswerIn(c.p, c.k); got != c.want {
			t.Errorf("MayAnswerIn(%v, %d) = %v, want %v", c.p, c.k, got, c.want)
		}
	}
}
