package telegram_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/telegramtest"
	"github.com/askbridge/askbridge/locale"
)

// twoReplicas starts replicas "a" and "b" on one Redis and one fake.
func twoReplicas(t *testing.T, o envOpts) *env {
	e := newEnv(t, o)
	e.start("a")
	e.start("b")
	e.poller()
	return e
}

func TestTapAnswers(t *testing.T) {
	t.Parallel()
	e := twoReplicas(t, envOpts{})
	id := ask1(e, "tap-1", opsGroup)
	p := e.prompt(opsGroup, 1)
	if got := buttonTexts(p); !slices.Equal(got, []string{"Staging (Recommended)", "Production", "Other…", "Skip"}) {
		t.Fatalf("buttons %q", got)
	}
	if len(p.Keyboard[0]) != 1 || len(p.Keyboard[1]) != 1 || len(p.Keyboard[2]) != 2 {
		t.Errorf("want one full-width row per option then Other…|Skip, got %v", p.Keyboard)
	}
	a := e.tap(opsGroup, p.ID, alice, "Production")
	// The tap is answered well inside the time Telegram keeps its spinner
	// and takes an answer (a query answered much later is "too old"); how
	// fast is a benchmark's to say, not this test's.
	if a.Text != en(engine.NoticeRecorded) || a.ShowAlert || a.After > 10*time.Second {
		t.Errorf("notice %+v", a)
	}
	r := e.Result(id, 5*time.Second)
	if r.Status != askbridge.StatusAnswered || r.Via != askbridge.ViaButton {
		t.Fatalf("result %+v", r)
	}
	if got := r.Answers.Answers["deploy_target"]; !slices.Equal(got, []string{"Production"}) {
		t.Errorf("answers %v", got)
	}
	if r.AnsweredBy == nil || r.AnsweredBy.Platform != "telegram" || r.AnsweredBy.ID != "1001" || r.AnsweredBy.Name != "Alice" {
		t.Errorf("answered by %+v", r.AnsweredBy)
	}
	// The question is kept, the instructions are gone.
	m := e.finished(opsGroup, p.ID, "Answered: Production")
	if want := questionOf(p.Text, locale.Default) + "\n\nAnswered: Production"; m.Text != want {
		t.Errorf("the ended message shows\n%s\nwant\n%s", m.Text, want)
	}
	e.NoResult(id)
}

func buttonTexts(m telegramtest.Message) []string {
	var out []string
	for _, row := range m.Keyboard {
		for _, b := range row {
			out = append(out, b.Text)
		}
	}
	return out
}

func TestTextReplies(t *testing.T) {
	t.Parallel()
	e := twoReplicas(t, envOpts{})
	multi := `{"id":%q,"to":%q,"questions":[{"id":"checks","header":"Checks","question":"Which checks?","multiSelect":true,"options":[{"label":"Unit"},{"label":"Integration"},{"label":"Load"}]}]}`
	tests := []struct {
		name    string
		body    string
		chat    int64
		reply   string
		replyTo bool
		want    []string
		status  string
	}{
		{"number", oneQuestion, alice.ID, "2", false, []string{"Production"}, "Answered: Production"},
		{"label", oneQuestion, bob.ID, "staging", true, []string{"Staging (Recommended)"}, "Answered: Staging (Recommended)"},
		{"free text", oneQuestion, carol.ID, "Blue-green on canary", false, []string{"Blue-green on canary"}, "Answered"},
		{"multi-select", multi, -200001, "1, 3", true, []string{"Unit", "Load"}, "Answered: Unit, Load"},
	}
	e.fake.AddChat(-200001, "group", "Checks")
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			from := map[int64]telegramtest.User{alice.ID: alice, bob.ID: bob, carol.ID: carol}[tt.chat]
			if from.ID == 0 {
				from = alice
			}
			id := e.Ask(fmt.Sprintf(tt.body, fmt.Sprint("text-", i), "telegram:"+strconv.FormatInt(tt.chat, 10)))
			p := e.prompt(tt.chat, 1)
			replyTo := 0
			if tt.replyTo {
				replyTo = p.ID
			}
			e.reply(tt.chat, from, replyTo, tt.reply)
			r := e.Result(id, 5*time.Second)
			key := "deploy_target"
			if strings.Contains(tt.body, "checks") {
				key = "checks"
			}
			if r.Via != askbridge.ViaText || !slices.Equal(r.Answers.Answers[key], tt.want) {
				t.Errorf("result %+v, want %v", r, tt.want)
			}
			e.finished(tt.chat, p.ID, tt.status)
		})
	}
}

const threeQuestions = `{"id":%q,"to":%q,"questions":[
 {"id":"target","header":"Target","question":"Where?","options":[{"label":"Staging"},{"label":"Production"}]},
 {"id":"checks","header":"Checks","question":"Which checks?","multiSelect":true,"options":[{"label":"Unit"},{"label":"Integration"},{"label":"Load"}]},
 {"id":"notify","header":"Notify","question":"Who hears?","options":[{"label":"Team"},{"label":"Nobody"}]}]}`

func TestThreeQuestionsWithCorrection(t *testing.T) {
	t.Parallel()
	e := twoReplicas(t, envOpts{})
	id := e.Ask(fmt.Sprintf(threeQuestions, "three-1", "telegram:"+strconv.FormatInt(opsGroup, 10)))
	p := e.prompt(opsGroup, 1)
	if got := buttonTexts(p); !slices.Equal(got, []string{"Skip"}) {
		t.Errorf("a text prompt shows %q, want only Skip", got)
	}
	if strings.Contains(p.Text, "Tap an option") {
		t.Errorf("a text prompt says tap:\n%s", p.Text)
	}
	partial := e.reply(opsGroup, alice, p.ID, "1: staging\n2: 1, 3")
	// The correction is a reply to the partial answer.
	var correction telegramtest.Message
	e.eventually(5*time.Second, "a correction", func() bool {
		for _, m := range e.fake.BotMessages(opsGroup) {
			if m.ReplyTo == partial {
				correction = m
				return true
			}
		}
		return false
	})
	if !strings.Contains(correction.Text, "Notify") {
		t.Errorf("correction %q does not name the missing question", correction.Text)
	}
	e.NoResult(id)
	e.reply(opsGroup, alice, p.ID, "Staging\nUnit, Load\nmy manager")
	r := e.Result(id, 5*time.Second)
	want := map[string][]string{"target": {"Staging"}, "checks": {"Unit", "Load"}, "notify": {"my manager"}}
	if fmt.Sprint(r.Answers.Answers) != fmt.Sprint(want) {
		t.Errorf("answers %v, want %v", r.Answers.Answers, want)
	}
	e.finished(opsGroup, p.ID, "Answered: Staging, Unit, Load")
}

func TestSkipTimeoutCancel(t *testing.T) {
	t.Parallel()
	e := twoReplicas(t, envOpts{})
	e.fake.AddChat(-300001, "group", "Skip")
	e.fake.AddChat(-300002, "group", "Timeout")
	e.fake.AddChat(-300003, "group", "Cancel")
	skip := ask1(e, "skip-1", -300001)
	late := e.Ask(`{"id":"timeout-1","to":"telegram:-300002","timeoutSeconds":30,"questions":[{"id":"a","header":"H","question":"Q?","options":[{"label":"A"},{"label":"B"}]}]}`)
	gone := ask1(e, "cancel-1", -300003)
	ps, pt, pc := e.prompt(-300001, 1), e.prompt(-300002, 1), e.prompt(-300003, 1)

	if a := e.tap(-300001, ps.ID, bob, "Skip"); a.Text != en(engine.NoticeSkipped) {
		t.Errorf("skip notice %+v", a)
	}
	if r := e.Result(skip, 5*time.Second); r.Status != askbridge.StatusNoAnswer || r.Reason != askbridge.ReasonSkipped {
		t.Errorf("skip result %+v", r)
	}
	e.finished(-300001, ps.ID, "Skipped")

	e.Cancel(gone)
	if r := e.Result(gone, 5*time.Second); r.Reason != askbridge.ReasonCancelled {
		t.Errorf("cancel result %+v", r)
	}
	e.finished(-300003, pc.ID, "Cancelled")

	e.clock.Advance(31 * time.Second)
	if r := e.Result(late, 5*time.Second); r.Reason != askbridge.ReasonTimeout {
		t.Errorf("timeout result %+v", r)
	}
	e.finished(-300002, pt.ID, "Expired")
	e.NoResult(skip, late, gone)
}

func TestOtherOpensAReplyBox(t *testing.T) {
	t.Parallel()
	e := twoReplicas(t, envOpts{})
	id := ask1(e, "other-1", opsGroup)
	p := e.prompt(opsGroup, 1)
	if a := e.tap(opsGroup, p.ID, alice, "Other…"); a.Text != en(engine.NoticeOther) {
		t.Errorf("notice %+v", a)
	}
	box := e.prompt(opsGroup, 2)
	if !box.ForceReply || !box.Selective || box.ReplyTo != p.ID || !slices.Equal(box.TextMentions, []int64{alice.ID}) {
		t.Fatalf("reply box %+v", box)
	}
	if !strings.Contains(box.Text, "Where should this deploy?") {
		t.Errorf("reply box text %q", box.Text)
	}
	e.reply(opsGroup, alice, box.ID, "Blue-green on the canary")
	r := e.Result(id, 5*time.Second)
	if got := r.Answers.Answers["deploy_target"]; !slices.Equal(got, []string{"Blue-green on the canary"}) {
		t.Errorf("answers %v", got)
	}
	e.finished(opsGroup, p.ID, "Answered")
	e.finished(opsGroup, box.ID, "Answered")
}

func TestUnauthorizedChangesNothing(t *testing.T) {
	t.Parallel()
	e := twoReplicas(t, envOpts{})
	id := e.Ask(`{"id":"auth-1","to":"telegram:-100500","answerers":["telegram:1001"],"questions":[{"id":"a","header":"H","question":"Q?","options":[{"label":"A"},{"label":"B"}]}]}`)
	p := e.prompt(opsGroup, 1)
	if a := e.tap(opsGroup, p.ID, bob, "A"); a.Text != en(engine.NoticeNotForYou) || a.ShowAlert {
		t.Errorf("bob's tap: %+v", a)
	}
	e.reply(opsGroup, bob, p.ID, "1")
	e.reply(opsGroup, bob, 0, "B")
	// Nor does a bot's message answer, even from someone named.
	e.reply(opsGroup, telegramtest.User{ID: 1001, FirstName: "Imposter", IsBot: true}, p.ID, "A")
	// A forged payload from alice, naming another question, is refused.
	q, err := e.fake.TapData(opsGroup, p.ID, alice, askbridge.EncodePayload("other-question", askbridge.Choice{Kind: askbridge.ControlOption}))
	if err != nil {
		t.Fatal(err)
	}
	// The poller hands updates over one at a time, in order: once the
	// forged tap (the last update) is answered, the replies before it have
	// been handled too.
	if a := e.notice(q); a.Text != en(engine.NoticeUnknown) {
		t.Errorf("forged tap: %+v", a)
	}
	e.NoResult(id)
	if m := e.message(opsGroup, p.ID); m.Edits != 0 || len(m.Keyboard) == 0 {
		t.Errorf("message changed: %+v", m)
	}
	if n := len(e.fake.BotMessages(opsGroup)); n != 1 {
		t.Errorf("the bot posted %d messages, want only the prompt", n)
	}
	if a := e.tap(opsGroup, p.ID, alice, "B"); a.Text != en(engine.NoticeRecorded) {
		t.Errorf("alice's tap: %+v", a)
	}
	if r := e.Result(id, 5*time.Second); r.Answers.Answers["a"][0] != "B" {
		t.Errorf("result %+v", r)
	}
}

func TestLateTapClearsButtons(t *testing.T) {
	t.Parallel()
	e := twoReplicas(t, envOpts{})
	id := ask1(e, "late-1", alice.ID)
	p := e.prompt(alice.ID, 1)
	// Alice blocks the bot, so the edit at the end fails, then comes back
	// and taps the button still on her screen.
	e.fake.Block(alice.ID, telegramtest.ErrBlocked)
	e.Cancel(id)
	if r := e.Result(id, 5*time.Second); r.Reason != askbridge.ReasonCancelled {
		t.Fatalf("result %+v", r)
	}
	e.eventually(5*time.Second, "the finisher's edit refused", func() bool {
		return e.message(alice.ID, p.ID).EditCalls > 0
	})
	if m := e.message(alice.ID, p.ID); len(m.Keyboard) == 0 {
		t.Fatal("the buttons went away although the chat was blocked")
	}
	e.fake.Block(alice.ID, "")
	if a := e.tap(alice.ID, p.ID, alice, "Production"); a.Text != en(engine.NoticeCancelled) {
		t.Errorf("late tap notice %+v", a)
	}
	e.finished(alice.ID, p.ID, "Cancelled")
	e.NoResult(id)
}

func TestDoubleTapAndTwoPeopleAtOnce(t *testing.T) {
	t.Parallel()
	e := twoReplicas(t, envOpts{})
	id := ask1(e, "race-1", opsGroup)
	p := e.prompt(opsGroup, 1)
	type tapped struct {
		who   string
		query string
	}
	var taps []tapped
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, tap := range []struct {
		who   telegramtest.User
		label string
	}{{alice, "Production"}, {alice, "Production"}, {bob, "Staging (Recommended)"}, {carol, "Skip"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q, err := e.fake.Tap(opsGroup, p.ID, tap.who, tap.label)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			taps = append(taps, tapped{tap.who.FirstName, q})
			mu.Unlock()
		}()
	}
	wg.Wait()
	// One person wins. Alice's second tap on her own winning option is
	// told her answer was recorded too (it is the same answer); anyone
	// else is told it was already answered.
	winners := map[string]bool{}
	for _, tp := range taps {
		a := e.notice(tp.query)
		switch noticeOf(a.Text, locale.Default) {
		case engine.NoticeRecorded, engine.NoticeSkipped:
			winners[tp.who] = true
		case engine.NoticeAlreadyAnswered, engine.NoticeAlreadySkipped:
		default:
			t.Errorf("notice %q", a.Text)
		}
	}
	if len(winners) != 1 {
		t.Errorf("taps of %v won, want one person's", winners)
	}
	// Every tap has been answered, so every tap has been handled.
	e.Result(id, 5*time.Second)
	e.NoResult(id)
}

func TestUndeliverable(t *testing.T) {
	t.Parallel()
	e := twoReplicas(t, envOpts{})
	e.fake.AddChat(-400001, "group", "Kicked")
	e.fake.AddChat(-400002, "group", "Muted")
	e.fake.Block(bob.ID, telegramtest.ErrBlocked)
	e.fake.Block(-400001, telegramtest.ErrKicked)
	e.fake.Block(-400002, telegramtest.ErrNoRights)
	tests := []struct {
		chat int64
		want string
	}{
		{-999, telegramtest.ErrChatNotFound},
		{bob.ID, telegramtest.ErrBlocked},
		{-400001, telegramtest.ErrKicked},
		{-400002, telegramtest.ErrNoRights},
	}
	for i, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			start := time.Now()
			id := ask1(e, fmt.Sprint("gone-", i), tt.chat)
			r := e.Result(id, 5*time.Second)
			if r.Reason != askbridge.ReasonUndeliverable || r.Error != tt.want {
				t.Errorf("result %+v, want undeliverable with %q", r, tt.want)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %s; a permanent refusal ends the question at once", d)
			}
		})
	}
}

func TestAgentTextIsEscapedAndPingsNobody(t *testing.T) {
	t.Parallel()
	e := twoReplicas(t, envOpts{})
	id := e.Ask(`{"id":"esc-1","to":"telegram:-100500","agent":"<i>bot</i>","questions":[{"id":"a","header":"<b>&amp;","question":"Tell @everyone and @alice_admin about <script>x</script> & more?","options":[{"label":"<b>Yes</b> @here"},{"label":"No & never"}]}]}`)
	p := e.prompt(opsGroup, 1)
	for _, want := range []string{"<i>bot</i>", "[<b>&amp;]", "<script>x</script> & more?", "<b>Yes</b> @"} {
		if !strings.Contains(p.Text, want) {
			t.Errorf("text lacks %q:\n%s", want, p.Text)
		}
	}
	if len(p.Mentions) != 0 || len(p.TextMentions) != 0 {
		t.Errorf("the prompt mentions %v %v", p.Mentions, p.TextMentions)
	}
	e.tap(opsGroup, p.ID, alice, "<b>Yes</b> @here")
	e.Result(id, 5*time.Second)
	m := e.finished(opsGroup, p.ID, "Answered: <b>Yes</b> @\u2060here")
	if len(m.Mentions) != 0 {
		t.Errorf("the edited message mentions %v", m.Mentions)
	}
}

func TestSkipCommandWithBotName(t *testing.T) {
	t.Parallel()
	e := twoReplicas(t, envOpts{})
	id := e.Ask(fmt.Sprintf(threeQuestions, "cmd-1", "telegram:"+strconv.FormatInt(opsGroup, 10)))
	p := e.prompt(opsGroup, 1)
	e.reply(opsGroup, bob, 0, "/skip@askbridge_test_bot")
	if r := e.Result(id, 5*time.Second); r.Reason != askbridge.ReasonSkipped {
		t.Errorf("result %+v", r)
	}
	e.finished(opsGroup, p.ID, "Skipped")
}

const thaiQuestion = `{"id":%q,"to":%q,"locale":"th","questions":[{"id":"deploy_target","header":"เป้าหมาย","question":"จะปล่อยขึ้นที่ไหน?","options":[{"label":"สเตจจิ้ง (แนะนำ)","description":"ปลอดภัยกว่า"},{"label":"โปรดักชัน"}]}]}`

// TestThai: a request with "locale":"th" is shown in Thai, every word of
// the bridge's included; a reply in Thai digits or the Thai skip word
// answers it; taps get Thai notices; the ended messages show a Thai status
// line and no instructions.
func TestThai(t *testing.T) {
	t.Parallel()
	e := twoReplicas(t, envOpts{})
	th, english := locale.For("th"), locale.For(locale.Default)
	ask := func(id string, chat int64) (string, telegramtest.Message) {
		t.Helper()
		e.fake.AddChat(chat, "group", id)
		q := e.Ask(fmt.Sprintf(thaiQuestion, id, "telegram:"+strconv.FormatInt(chat, 10)))
		return q, e.prompt(chat, 1)
	}
	instructions := []string{th.Get("FreeText"), th.Get("ClosingButtons")}
	noInstructions := func(m telegramtest.Message) {
		t.Helper()
		for _, s := range instructions {
			if strings.Contains(m.Text, s) {
				t.Errorf("the ended message still says %q:\n%s", s, m.Text)
			}
		}
	}

	t.Run("shown in Thai, answered with ๒", func(t *testing.T) {
		id, p := ask("th-digit", -500001)
		for _, want := range append([]string{"มีคำถามถึงคุณ:", "[เป้าหมาย] จะปล่อยขึ้นที่ไหน?", "  1. สเตจจิ้ง (แนะนำ) — ปลอดภัยกว่า"}, instructions...) {
			if !strings.Contains(p.Text, want) {
				t.Errorf("the prompt lacks %q:\n%s", want, p.Text)
			}
		}
		for _, english := range []string{english.Get("FreeText"), english.Get("ClosingButtons"), english.Count("IntroAnon", 1, nil)} {
			if strings.Contains(p.Text, english) {
				t.Errorf("the Thai prompt says %q", english)
			}
		}
		if got := buttonTexts(p); !slices.Equal(got, []string{"สเตจจิ้ง (แนะนำ)", "โปรดักชัน", "อื่น ๆ…", "ข้าม"}) {
			t.Errorf("buttons %q", got)
		}
		e.reply(-500001, alice, 0, "๒")
		r := e.Result(id, 5*time.Second)
		if r.Status != askbridge.StatusAnswered || r.Via != askbridge.ViaText || !slices.Equal(r.Answers.Answers["deploy_target"], []string{"โปรดักชัน"}) {
			t.Fatalf("result %+v", r)
		}
		m := e.finished(-500001, p.ID, "ตอบแล้ว: โปรดักชัน")
		if want := questionOf(p.Text, "th") + "\n\nตอบแล้ว: โปรดักชัน"; m.Text != want {
			t.Errorf("the ended message shows\n%s\nwant\n%s", m.Text, want)
		}
		noInstructions(m)
	})

	t.Run("skipped with ข้าม", func(t *testing.T) {
		id, p := ask("th-skip", -500002)
		e.reply(-500002, bob, p.ID, "ข้าม")
		if r := e.Result(id, 5*time.Second); r.Status != askbridge.StatusNoAnswer || r.Reason != askbridge.ReasonSkipped {
			t.Fatalf("result %+v", r)
		}
		noInstructions(e.finished(-500002, p.ID, "ข้ามแล้ว"))
	})

	t.Run("a tap gets a Thai notice", func(t *testing.T) {
		id, p := ask("th-tap", -500003)
		if a := e.tap(-500003, p.ID, carol, "สเตจจิ้ง (แนะนำ)"); a.Text != "บันทึกคำตอบแล้ว" {
			t.Errorf("notice %q, want บันทึกคำตอบแล้ว", a.Text)
		}
		if r := e.Result(id, 5*time.Second); !slices.Equal(r.Answers.Answers["deploy_target"], []string{"สเตจจิ้ง (แนะนำ)"}) {
			t.Errorf("result %+v", r)
		}
		noInstructions(e.finished(-500003, p.ID, "ตอบแล้ว: สเตจจิ้ง (แนะนำ)"))
	})

	t.Run("Other… opens a Thai reply box", func(t *testing.T) {
		id, p := ask("th-other", -500004)
		if a := e.tap(-500004, p.ID, alice, "อื่น ๆ…"); a.Text != engine.NoticeOther.Text("th") {
			t.Errorf("notice %q", a.Text)
		}
		box := e.prompt(-500004, 2)
		want := "Alice, " + th.Get("ReplyBoxLead") + " จะปล่อยขึ้นที่ไหน?\n" + th.Get("ReplyBoxHint")
		if box.Text != want || box.Placeholder != "คำตอบของคุณ" || !box.Selective || !slices.Equal(box.TextMentions, []int64{alice.ID}) {
			t.Errorf("reply box %q (placeholder %q), want %q", box.Text, box.Placeholder, want)
		}
		e.reply(-500004, alice, box.ID, "บลูกรีนบนแคนารี")
		if r := e.Result(id, 5*time.Second); !slices.Equal(r.Answers.Answers["deploy_target"], []string{"บลูกรีนบนแคนารี"}) {
			t.Errorf("result %+v", r)
		}
		noInstructions(e.finished(-500004, p.ID, "ตอบแล้ว"))
		closed := e.finished(-500004, box.ID, "ตอบแล้ว")
		if want := th.Get("ReplyBoxLead") + " จะปล่อยขึ้นที่ไหน?\n\nตอบแล้ว"; closed.Text != want {
			t.Errorf("the closed box shows %q, want %q", closed.Text, want)
		}
	})
}

// TestSeenThenAnswer: a request with an escalation step offers Seen; a tap
// on it tells the tapper the question stays open, and the prompt is edited
// to say who has seen it, without the Seen button, the options kept; a
// stale tap on Seen is told someone has; an option tapped afterwards
// answers as usual, and the ended message still says who had seen it.
func TestSeenThenAnswer(t *testing.T) {
	t.Parallel()
	e := twoReplicas(t, envOpts{})
	e.fake.AddChat(leadChat, "supergroup", "Leads")
	id := e.Ask(escalation(fmt.Sprintf(oneQuestion, "seen-1", "telegram:"+strconv.FormatInt(opsGroup, 10))))
	p := e.prompt(opsGroup, 1)
	if got := buttonTexts(p); !slices.Equal(got, []string{"Staging (Recommended)", "Production", "Other…", "Skip", "Seen"}) {
		t.Fatalf("buttons %q", got)
	}
	if a := e.tap(opsGroup, p.ID, alice, "Seen"); a.Text != "Marked as seen. The question stays open." || a.ShowAlert {
		t.Errorf("notice %+v", a)
	}
	var m telegramtest.Message
	e.eventually(5*time.Second, "the prompt to say Alice has seen it", func() bool {
		m = e.message(opsGroup, p.ID)
		return strings.HasSuffix(m.Text, "\n\nSeen by Alice")
	})
	if got := buttonTexts(m); !slices.Equal(got, []string{"Staging (Recommended)", "Production", "Other…", "Skip"}) {
		t.Errorf("buttons after Seen %q", got)
	}
	// Still open: it still says how to answer.
	if want := p.Text + "\n\nSeen by Alice"; m.Text != want {
		t.Errorf("the prompt after Seen shows\n%s\nwant\n%s", m.Text, want)
	}
	if m.Edits != 1 {
		t.Errorf("the prompt was edited %d times, want once", m.Edits)
	}
	// A client that still shows the Seen button.
	q, err := e.fake.TapData(opsGroup, p.ID, bob, askbridge.EncodePayload(id, askbridge.Choice{Kind: askbridge.ControlSeen}))
	if err != nil {
		t.Fatal(err)
	}
	if a := e.notice(q); a.Text != en(engine.NoticeAlreadySeen) {
		t.Errorf("a second Seen: notice %q", a.Text)
	}
	e.NoResult(id)

	if a := e.tap(opsGroup, p.ID, bob, "Production"); a.Text != en(engine.NoticeRecorded) {
		t.Errorf("notice %+v", a)
	}
	r := e.Result(id, 5*time.Second)
	if r.Status != askbridge.StatusAnswered || !slices.Equal(r.Answers.Answers["deploy_target"], []string{"Production"}) {
		t.Fatalf("result %+v", r)
	}
	rec, found, err := e.check.Get(context.Background(), id)
	if err != nil || !found {
		t.Fatalf("read the question: %v (found %v)", err, found)
	}
	status := engine.StatusLine(rec.Request, r)
	ended := e.finished(opsGroup, p.ID, status)
	if want := questionOf(p.Text, locale.Default) + "\n\nSeen by Alice\n\n" + status; ended.Text != want {
		t.Errorf("the ended message shows\n%s\nwant\n%s", ended.Text, want)
	}
	if n := len(e.fake.BotMessages(leadChat)); n != 0 {
		t.Errorf("%d messages in the leads' chat: the escalation step came before its time", n)
	}
	e.NoResult(id)
}

// TestReminderAndEscalation: a reminder is posted as a reply to the prompt
// and an escalation step shows the question in its chat, with the line
// saying why; an answer there ends the question everywhere, and the
// reminder is deleted.
func TestReminderAndEscalation(t *testing.T) {
	t.Parallel()
	e := twoReplicas(t, envOpts{})
	e.fake.AddChat(leadChat, "supergroup", "Leads")
	body := strings.Replace(escalation(fmt.Sprintf(oneQuestion, "remind-1", "telegram:"+strconv.FormatInt(opsGroup, 10))),
		`"timeoutSeconds":900,`, `"timeoutSeconds":900,"remindEverySeconds":400,`, 1)
	id := e.Ask(body)
	p := e.prompt(opsGroup, 1)

	e.clock.Advance(401 * time.Second)
	var reminder telegramtest.Message
	e.eventually(5*time.Second, "a reminder", func() bool {
		msgs := e.fake.BotMessages(opsGroup)
		if len(msgs) < 2 {
			return false
		}
		reminder = msgs[1]
		return true
	})
	if reminder.ReplyTo != p.ID || !strings.HasPrefix(reminder.Text, "Still waiting for your answer") || len(reminder.Keyboard) != 0 {
		t.Errorf("reminder %+v, want a reply to the prompt %d", reminder, p.ID)
	}

	// The step, before the second reminder.
	e.clock.Advance(200 * time.Second)
	lead := e.prompt(leadChat, 1)
	if want := "\n\nNo answer after 10 min, so this is asked here too."; !strings.HasSuffix(lead.Text, want) {
		t.Errorf("the escalated prompt does not end with %q:\n%s", want, lead.Text)
	}
	if got := buttonTexts(lead); !slices.Equal(got, buttonTexts(p)) {
		t.Errorf("the escalated prompt's buttons %q, want the first prompt's %q", got, buttonTexts(p))
	}
	if a := e.tap(leadChat, lead.ID, carol, "Production"); a.Text != en(engine.NoticeRecorded) {
		t.Errorf("notice %+v", a)
	}
	r := e.Result(id, 5*time.Second)
	rec, found, err := e.check.Get(context.Background(), id)
	if err != nil || !found {
		t.Fatalf("read the question: %v (found %v)", err, found)
	}
	status := engine.StatusLine(rec.Request, r)
	if !strings.Contains(status, "Carol") || !strings.Contains(status, "telegram:-100600") {
		t.Errorf("status line %q does not say who answered where", status)
	}
	e.finished(opsGroup, p.ID, status)
	if m := e.finished(leadChat, lead.ID, status); !strings.Contains(m.Text, "\n\nNo answer after 10 min, so this is asked here too.\n\n"+status) {
		t.Errorf("the ended escalated prompt lost why it was asked there:\n%s", m.Text)
	}
	e.eventually(5*time.Second, "the reminder deleted", func() bool {
		return len(e.fake.BotMessages(opsGroup)) == 1 && e.fake.Stats().Deleted == 1
	})
	if n := len(e.fake.BotMessages(leadChat)); n != 1 {
		t.Errorf("%d messages in the leads' chat, want the prompt alone", n)
	}
	e.NoResult(id)
}
