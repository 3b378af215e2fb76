package telegram

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// pacerRig drives a pacer on a simulated clock: nothing here sleeps or
// measures real time, so the tests assert order and independence only.
type pacerRig struct {
	t     *testing.T
	clock *clockwork.FakeClock
	start time.Time
	p     *pacer
}

func newPacerRig(t *testing.T, chatPace, globalPace time.Duration) *pacerRig {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(start)
	return &pacerRig{t: t, clock: clock, start: start, p: newPacer(chatPace, globalPace, clock)}
}

// send asks the pacer for a message to chat in the background; the channel
// gets wait's error once the message is released.
func (r *pacerRig) send(ctx context.Context, chat string) <-chan error {
	done := make(chan error, 1)
	go func() { done <- r.p.wait(ctx, chat) }()
	return done
}

// settle waits until the message of done is released (true), or until the
// clock holds timers, the message's included (false: it waits for its
// time). timers is one more than the clock held before, so exactly one of
// the two can happen.
func (r *pacerRig) settle(done <-chan error, timers int) bool {
	r.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	blocked := make(chan struct{})
	go func() {
		if r.clock.BlockUntilContext(ctx, timers) == nil {
			close(blocked)
		}
	}()
	select {
	case err := <-done:
		if err != nil {
			r.t.Fatalf("wait: %v", err)
		}
		return true
	case <-blocked:
		return false
	}
}

// goesNow asks for a message to chat and fails unless it is released
// without the clock moving, while timers others wait.
func (r *pacerRig) goesNow(chat string, timers int, what string) {
	r.t.Helper()
	if !r.settle(r.send(context.Background(), chat), timers+1) {
		r.t.Fatalf("%s waited", what)
	}
}

// waits asks for a message to chat and fails unless it waits, while timers
// others wait.
func (r *pacerRig) waits(ctx context.Context, chat string, timers int, what string) <-chan error {
	r.t.Helper()
	done := r.send(ctx, chat)
	if r.settle(done, timers+1) {
		r.t.Fatalf("%s went at once", what)
	}
	return done
}

func released(done <-chan error) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// TestPacerNoHeadOfLine is the head-of-line case of issue 12: messages that
// wait for chat A hold no token of the replica's bucket, and a message to
// chat B goes out at once, before A's, with the clock standing still.
func TestPacerNoHeadOfLine(t *testing.T) {
	r := newPacerRig(t, DefaultChatPace, DefaultGlobalPace)
	for i := range chatBurst {
		r.goesNow("A", 0, fmt.Sprintf("message %d of A's burst", i+1))
	}
	tokens := r.p.global.TokensAt(r.clock.Now())
	a4 := r.waits(context.Background(), "A", 0, "A's 4th message")
	a5 := r.waits(context.Background(), "A", 1, "A's 5th message")
	if got := r.p.global.TokensAt(r.clock.Now()); got != tokens {
		t.Fatalf("messages waiting for chat A took tokens of the replica's bucket: %v left, %v before", got, tokens)
	}
	r.goesNow("B", 2, "B's message, behind chat A's")
	if released(a4) || released(a5) {
		t.Fatal("A's waiting messages were released before B's")
	}
	// A's then go in order, one chat pace apart.
	r.clock.Advance(DefaultChatPace)
	if !r.settle(a4, 2) {
		t.Fatal("A's 4th message still waits one chat pace later")
	}
	if released(a5) {
		t.Fatal("A's 5th message went with its 4th")
	}
	r.clock.Advance(DefaultChatPace)
	if !r.settle(a5, 1) {
		t.Fatal("A's 5th message still waits two chat paces later")
	}
}

// TestPacerEditAfterSendGoesAtOnce: the status edit right after a fast tap
// goes out at once within the chat's burst, in a private chat and in a
// group.
func TestPacerEditAfterSendGoesAtOnce(t *testing.T) {
	for _, chat := range []string{"42", "-1001234", "@public_channel"} {
		t.Run(chat, func(t *testing.T) {
			r := newPacerRig(t, DefaultChatPace, DefaultGlobalPace)
			r.goesNow(chat, 0, "the prompt")
			r.goesNow(chat, 0, "the status edit right after it")
		})
	}
}

// TestPacerCancelGivesBack: a message whose context ends while it waits for
// its chat gives its slot back, so the next one takes it.
func TestPacerCancelGivesBack(t *testing.T) {
	r := newPacerRig(t, DefaultChatPace, DefaultGlobalPace)
	for range chatBurst {
		r.goesNow("A", 0, "A's burst")
	}
	ctx, cancel := context.WithCancel(context.Background())
	gone := r.waits(ctx, "A", 0, "the message given up")
	cancel()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("wait of a cancelled message: %v", err)
	}
	next := r.waits(context.Background(), "A", 0, "the next message")
	r.clock.Advance(DefaultChatPace)
	if !r.settle(next, 1) {
		t.Fatal("the next message did not get the slot of the one given up")
	}
}

// TestPacerChatLimitedLosesItsBurst: after a 429 and the calm that
// follows (the first message after it ends the slowdown, and the replica's
// bucket fills up again within a second), other chats get their burst
// back, the chat that got it does not.
func TestPacerChatLimitedLosesItsBurst(t *testing.T) {
	r := newPacerRig(t, DefaultChatPace, DefaultGlobalPace)
	r.goesNow("42", 0, "the message before the 429")
	r.p.limited("42", time.Second)
	r.clock.Advance(calmPeriod + 2*time.Second)
	r.goesNow("43", 0, "the first message after the calm")
	r.clock.Advance(time.Second)
	for range chatBurst {
		r.goesNow("44", 0, "another chat's burst after the calm")
	}
	r.goesNow("42", 0, "the limited chat's next message")
	ctx, cancel := context.WithCancel(context.Background())
	held := r.waits(ctx, "42", 0, "a burst in the chat that got the 429")
	cancel()
	<-held
}

// TestPacerSchedule checks when each of a series of messages, each asked
// for once the one before is released, goes out: at the bound its buckets
// set, within one step of the simulated clock.
func TestPacerSchedule(t *testing.T) {
	const step = 10 * time.Millisecond
	sec := time.Second
	cases := []struct {
		name       string
		chatPace   time.Duration
		globalPace time.Duration
		pause      time.Duration // a 429's retry_after before the first
		chats      []string
		want       func(k int) time.Duration // k counts from 1
	}{
		{
			name: "private chat: a burst of three, then one a second", chatPace: sec, globalPace: sec / 30,
			chats: repeat("42", 6),
			want:  func(k int) time.Duration { return max(0, time.Duration(k-chatBurst)*sec) },
		},
		{
			name: "group: and no more than 20 a minute after a burst of 20", chatPace: sec, globalPace: sec / 30,
			chats: repeat("-100777", 32),
			want: func(k int) time.Duration {
				return max(0, time.Duration(k-chatBurst)*sec, time.Duration(k-groupBurst)*groupFactor*sec)
			},
		},
		{
			name: "many chats: a second's worth of the replica's pace at once", chatPace: sec, globalPace: 100 * time.Millisecond,
			chats: numbered(15),
			want:  func(k int) time.Duration { return max(0, time.Duration(k-10)*100*time.Millisecond) },
		},
		{
			name: "a 429 holds everything, then chats go at half pace without a burst", chatPace: sec, globalPace: sec / 30, pause: 5 * sec,
			chats: repeat("42", 4), // the 5th would come after calmPeriod
			want:  func(k int) time.Duration { return 5*sec + time.Duration(k-1)*2*sec },
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newPacerRig(t, c.chatPace, c.globalPace)
			if c.pause > 0 {
				r.p.limited("", c.pause)
			}
			for i, chat := range c.chats {
				done := r.send(context.Background(), chat)
				for !r.settle(done, 1) {
					r.clock.Advance(step)
				}
				got, want := r.clock.Since(r.start), c.want(i+1)
				if got < want || got > want+step {
					t.Fatalf("message %d (chat %s) went at %s, want %s", i+1, chat, got, want)
				}
			}
		})
	}
}

func repeat(chat string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = chat
	}
	return out
}

func numbered(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint(i + 1)
	}
	return out
}

// BenchmarkPacerWait is the cost of one paced message when nothing has to
// wait: the buckets' bookkeeping only.
func BenchmarkPacerWait(b *testing.B) {
	p := newPacer(time.Nanosecond, time.Nanosecond, clockwork.NewRealClock())
	chats := numbered(100)
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := p.wait(ctx, chats[i%len(chats)]); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPacerHeardHoldsThatChatOnly: a 429 another replica got for a chat
// holds this replica's messages to that chat for its retry_after, and
// neither pauses the other chats nor slows them down.
func TestPacerHeardHoldsThatChatOnly(t *testing.T) {
	r := newPacerRig(t, DefaultChatPace, DefaultGlobalPace)
	r.p.heard("42", 5*time.Second)
	held := r.waits(context.Background(), "42", 0, "a message to the chat another replica was limited in")
	for range chatBurst {
		r.goesNow("43", 1, "another chat's burst while 42 is held")
	}
	if _, paused := r.p.paused(); paused || r.p.slow != 1 {
		t.Fatalf("a 429 heard of paused the replica (%v) or slowed it (×%d)", paused, r.p.slow)
	}
	r.clock.Advance(5*time.Second - time.Millisecond)
	if r.settle(held, 1) {
		t.Fatal("the held chat's message went before the retry_after")
	}
	r.clock.Advance(time.Millisecond)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
}

// TestPacerHeardWhileWaitingForAToken: a message waiting for its chat's
// next token when a 429 for that chat is heard of does not go when the
// token comes due, but once the retry_after has passed.
func TestPacerHeardWhileWaitingForAToken(t *testing.T) {
	r := newPacerRig(t, DefaultChatPace, DefaultGlobalPace)
	for i := range chatBurst {
		r.goesNow("42", 0, fmt.Sprintf("message %d of the chat's burst", i+1))
	}
	next := r.waits(context.Background(), "42", 0, "the message after the burst")
	r.p.heard("42", 5*time.Second)
	r.clock.Advance(DefaultChatPace)
	if r.settle(next, 1) {
		t.Fatal("the message went when its token came due, inside the retry_after heard of")
	}
	r.clock.Advance(5 * time.Second)
	if err := <-next; err != nil {
		t.Fatal(err)
	}
}
