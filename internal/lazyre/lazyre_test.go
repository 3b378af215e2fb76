package lazyre

import "testing"

func TestNewCompilesOnceOnFirstUse(t *testing.T) {
	re := New(`^[a-z]{1,8}$`)
	first := re()
	if first != re() {
		t.Error("a second call compiled the pattern again")
	}
	if !first.MatchString("abc") || first.MatchString("abcdefghi") || first.MatchString("") {
		t.Errorf("%v does not match as its pattern says", first)
	}
}

func TestNewPanicsOnFirstUseOfABadPattern(t *testing.T) {
	re := New(`(`) // no panic here: nothing is compiled yet
	defer func() {
		if recover() == nil {
			t.Error("a pattern that does not compile did not panic on first use")
		}
	}()
	re()
}
