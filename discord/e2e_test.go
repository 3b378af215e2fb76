package discord_test

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/discord"
	"github.com/askbridge/askbridge/discord/internal/discordtest"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/locale"
)

func TestButtonAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.waitGateway()
	id := e.Ask(fmt.Sprintf(oneQuestion, "button-1"))
	p := e.shown(id)[0]
	ids := buttonIDs(p)
	if len(ids) != 3 {
		t.Fatalf("buttons %v, want 2 options and Skip", ids)
	}
	in := e.click(e.alice, p.ID, ids[1])
	// The press is answered with the notice alone; the engine's finisher
	// edits the message.
	if in.AckType != 4 || in.Failed || in.AckLatency > 3*time.Second {
		t.Errorf("press answered with type %d after %s (failed %v), want an ephemeral notice within 3s", in.AckType, in.AckLatency, in.Failed)
	}
	if got := notice(in); got != "Answer recorded." {
		t.Errorf("notice %q", got)
	}
	r := e.Result(id, 5*time.Second)
	if r.Status != askbridge.StatusAnswered || !reflect.DeepEqual(answers(r), map[string][]string{"deploy_target": {"Production"}}) || r.Via != askbridge.ViaButton {
		t.Errorf("result %+v", r)
	}
	if r.AnsweredBy == nil || r.AnsweredBy.ID != e.alice || r.AnsweredBy.Platform != "discord" || r.AnsweredBy.Name != "alice" {
		t.Errorf("answered by %+v", r.AnsweredBy)
	}
	e.message(p.ID, "finished", ended("Answered: Production"))
}

func TestTextReplies(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.waitGateway()
	multi := `{"id":%q,"questions":[{"id":"checks","header":"Checks","question":"Which checks?","multiSelect":true,"options":[{"label":"Unit"},{"label":"Integration"},{"label":"Load"}]}]}`
	three := `{"id":%q,"questions":[
 {"id":"target","header":"Target","question":"Where?","options":[{"label":"Staging"},{"label":"Production"}]},
 {"id":"checks","header":"Checks","question":"Which checks?","multiSelect":true,"options":[{"label":"Unit"},{"label":"Integration"},{"label":"Load"}]},
 {"id":"notify","header":"Notify","question":"Who hears?","options":[{"label":"Team"},{"label":"Nobody"}]}]}`
	cases := []struct {
		name, body, reply string
		want              map[string][]string
		status            string
	}{
		{"number", oneQuestion, "2", map[string][]string{"deploy_target": {"Production"}}, "Answered: Production"},
		{"label", oneQuestion, "staging", map[string][]string{"deploy_target": {"Staging (Recommended)"}}, "Answered: Staging (Recommended)"},
		{"free text", oneQuestion, "the canary cluster", map[string][]string{"deploy_target": {"the canary cluster"}}, "Answered"},
		{"multi-select", multi, "1, load", map[string][]string{"checks": {"Unit", "Load"}}, "Answered: Unit, Load"},
		{"three questions", three, "1: production\n2: 1, 2\n3: nobody", map[string][]string{"target": {"Production"}, "checks": {"Unit", "Integration"}, "notify": {"Nobody"}}, "Answered: Production, Unit, Integration, Nobody"},
	}
	for i, c := range cases {
		id := e.Ask(fmt.Sprintf(c.body, fmt.Sprintf("text-%d", i)))
		p := e.shown(id)[0]
		if _, err := e.fake.Reply(e.alice, e.room, p.ID, c.reply); err != nil {
			t.Fatal(err)
		}
		r := e.Result(id, 5*time.Second)
		if r.Status != askbridge.StatusAnswered || r.Via != askbridge.ViaText || !reflect.DeepEqual(answers(r), c.want) {
			t.Errorf("%s: result %+v answers %v", c.name, r, answers(r))
		}
		e.message(p.ID, c.status, ended(c.status))
	}
}

func TestPartialReplyGetsCorrection(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.waitGateway()
	id := e.Ask(`{"id":"partial-1","questions":[
 {"id":"target","header":"Target","question":"Where?","options":[{"label":"Staging"},{"label":"Production"}]},
 {"id":"checks","header":"Checks","question":"Which checks?","multiSelect":true,"options":[{"label":"Unit"},{"label":"Integration"}]},
 {"id":"notify","header":"Notify","question":"Who hears?","options":[{"label":"Team"},{"label":"Nobody"}]}]}`)
	p := e.shown(id)[0]
	if ids := buttonIDs(p); len(ids) != 1 || p.Components[0].Components[0].Label != "Skip" {
		t.Errorf("a text prompt shows %v, want only Skip", ids)
	}
	first, err := e.fake.Reply(e.alice, e.room, p.ID, "1: staging")
	if err != nil {
		t.Fatal(err)
	}
	corr := e.replyTo(e.room, first)
	if !strings.Contains(corr.Content, "Checks") || !strings.Contains(corr.Content, "Notify") {
		t.Errorf("correction %q does not name the missing questions", corr.Content)
	}
	if corr.AllowedMentions == nil || corr.AllowedMentions.Parse == nil || len(corr.AllowedMentions.Parse) != 0 || corr.AllowedMentions.RepliedUser {
		t.Errorf("correction allowed_mentions %+v, want parse [] and no replied-user ping", corr.AllowedMentions)
	}
	e.NoResult(id)
	if _, err := e.fake.Reply(e.alice, e.room, p.ID, "staging\nunit, integration\nteam"); err != nil {
		t.Fatal(err)
	}
	r := e.Result(id, 5*time.Second)
	want := map[string][]string{"target": {"Staging"}, "checks": {"Unit", "Integration"}, "notify": {"Team"}}
	if !reflect.DeepEqual(answers(r), want) {
		t.Errorf("answers %v, want %v", answers(r), want)
	}
}

func TestSkip(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.waitGateway()
	byButton := e.Ask(fmt.Sprintf(oneQuestion, "skip-button"))
	p := e.shown(byButton)[0]
	ids := buttonIDs(p)
	skip := p.Components[len(p.Components)-1].Components[0]
	if skip.Label != "Skip" || skip.Style != 2 || skip.CustomID != ids[len(ids)-1] {
		t.Fatalf("last button %+v, want a secondary Skip", skip)
	}
	in := e.click(e.alice, p.ID, skip.CustomID)
	if notice(in) != "Skipped." {
		t.Errorf("notice %q", notice(in))
	}
	if r := e.Result(byButton, 5*time.Second); r.Status != askbridge.StatusNoAnswer || r.Reason != askbridge.ReasonSkipped {
		t.Errorf("result %+v", r)
	}
	e.message(p.ID, "skipped", ended("Skipped"))

	byText := e.Ask(fmt.Sprintf(oneQuestion, "skip-text"))
	p = e.shown(byText)[0]
	if _, err := e.fake.Reply(e.alice, e.room, p.ID, "/skip"); err != nil {
		t.Fatal(err)
	}
	if r := e.Result(byText, 5*time.Second); r.Reason != askbridge.ReasonSkipped {
		t.Errorf("result %+v", r)
	}
	e.message(p.ID, "skipped", ended("Skipped"))
}

func TestTimeoutAndCancel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.waitGateway()
	late := e.Ask(`{"id":"late-1","timeoutSeconds":30,"questions":[{"id":"a","header":"H","question":"Q?","options":[{"label":"A"},{"label":"B"}]}]}`)
	cancelled := e.Ask(fmt.Sprintf(oneQuestion, "cancel-1"))
	ps := []discordtest.Message{e.shown(late)[0], e.shown(cancelled)[0]}
	e.Cancel(cancelled)
	if r := e.Result(cancelled, 5*time.Second); r.Reason != askbridge.ReasonCancelled {
		t.Errorf("cancel result %+v", r)
	}
	e.clock.Advance(31 * time.Second)
	if r := e.Result(late, 5*time.Second); r.Reason != askbridge.ReasonTimeout {
		t.Errorf("timeout result %+v", r)
	}
	for _, p := range ps {
		want := "Expired"
		if strings.Contains(p.Content, "deploy") {
			want = "Cancelled"
		}
		m := e.message(p.ID, want, ended(want))
		if !kept(m.Content, p.Content) {
			t.Errorf("the edit did not keep the text:\n%s\nwas\n%s", m.Content, p.Content)
		}
	}
	// A press on the expired question: a notice, and the message stays final.
	in := e.click(e.alice, ps[0].ID, buttonIDs(ps[0])[0])
	if in.AckType != 6 || notice(in) != "This question has expired." {
		t.Errorf("press on an expired question: type %d notice %q", in.AckType, notice(in))
	}
}

// TestLatePressRemovesStaleButtons: the bot lost access to the channel, so
// the edit at the end failed and the buttons stayed; a press on them gets
// the notice and the buttons go: the finisher's edit, refused again, goes
// through the press (an interaction's @original needs no channel
// permission).
func TestLatePressRemovesStaleButtons(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.waitGateway()
	room := e.fake.AddChannel()
	id := e.Ask(fmt.Sprintf(`{"id":"stale-1","to":"discord:%s","questions":[{"id":"a","header":"H","question":"Q?","options":[{"label":"Yes"},{"label":"No"}]}]}`, room))
	p := e.shown(id)[0]
	e.fake.DenyChannel(room)
	e.Cancel(id)
	e.Result(id, 5*time.Second)
	e.eventually(10*time.Second, "the finisher's edit refused", func() bool {
		for _, r := range e.requests("PATCH", "channels/"+room+"/messages/"+p.ID) {
			if r.Status == 403 {
				return true
			}
		}
		return false
	})
	if m, _ := e.fake.Message(p.ID); len(m.Components) == 0 {
		t.Fatal("the edit went through a denied channel")
	}
	in := e.click(e.alice, p.ID, buttonIDs(p)[0])
	if in.AckType != 6 || notice(in) != "This question was cancelled." {
		t.Errorf("late press: type %d notice %q", in.AckType, notice(in))
	}
	e.message(p.ID, "cancelled", ended("Cancelled"))
}

func TestUnauthorizedChangesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.waitGateway()
	id := e.Ask(fmt.Sprintf(oneQuestion, "auth-1"))
	p := e.shown(id)[0]
	in := e.click(e.bob, p.ID, buttonIDs(p)[0])
	if in.AckType != 4 || notice(in) != "This question is not for you." {
		t.Errorf("bob's press: type %d notice %q", in.AckType, notice(in))
	}
	// Forged presses: a custom_id the bridge never made, and a real-looking
	// one for another question.
	for _, forged := range []string{"evil", askbridge.EncodePayload("another-question", askbridge.Choice{Kind: askbridge.ControlOption})} {
		if in := e.click(e.alice, p.ID, forged); notice(in) != "This button is no longer valid." {
			t.Errorf("forged press %q: notice %q", forged, notice(in))
		}
	}
	reply, err := e.fake.Reply(e.bob, e.room, p.ID, "2")
	if err != nil {
		t.Fatal(err)
	}
	if _, outs := e.handled(reply, 1); outs[0].Claimed || outs[0].Respond != "" {
		t.Errorf("bob's text: %+v, want it ignored", outs[0])
	}
	e.NoResult(id)
	m, _ := e.fake.Message(p.ID)
	if m.Edits != 0 || len(m.Components) == 0 {
		t.Errorf("the prompt changed: %d edits, %d rows", m.Edits, len(m.Components))
	}
	for _, m := range e.fake.Messages(e.room) {
		if m.ReplyTo == reply {
			t.Errorf("the bot answered bob's text: %q", m.Content)
		}
	}
	e.click(e.alice, p.ID, buttonIDs(p)[0])
	if r := e.Result(id, 5*time.Second); r.AnsweredBy == nil || r.AnsweredBy.ID != e.alice {
		t.Errorf("result %+v", r)
	}
}

func TestLateAndDoubleClicks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.waitGateway()
	id := e.Ask(fmt.Sprintf(oneQuestion, "double-1"))
	p := e.shown(id)[0]
	ids := buttonIDs(p)
	// Two presses at once (two interactions): one result.
	i1, err := e.fake.Click(e.alice, p.ID, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	i2, err := e.fake.Click(e.alice, p.ID, ids[1])
	if err != nil {
		t.Fatal(err)
	}
	r := e.Result(id, 5*time.Second)
	var notices []string
	e.eventually(5*time.Second, "both presses answered", func() bool {
		notices = notices[:0]
		for _, iid := range []string{i1, i2} {
			in, _ := e.fake.Interaction(iid)
			if n := notice(in); n != "" {
				notices = append(notices, n)
			}
		}
		return len(notices) == 2
	})
	sort.Strings(notices)
	if !reflect.DeepEqual(notices, []string{"Answer recorded.", "This question was already answered."}) {
		t.Errorf("notices %q", notices)
	}
	e.message(p.ID, "finished", ended(engine.StatusLine(askbridge.Request{Questions: []askbridge.Question{{ID: "deploy_target", Options: []askbridge.Option{{Label: "Staging (Recommended)"}, {Label: "Production"}}}}}, r)))
	// Both presses were answered, so both went through the engine: a
	// second result would be there by now.
	if n, _ := e.agent.LLen(t.Context(), e.prefix+"result:{"+id+"}").Result(); n != 0 {
		t.Errorf("%d more results", n)
	}
	// A late press, long after: a notice, and the buttons are (still) gone.
	late := e.click(e.bob, p.ID, ids[0])
	if notice(late) != "This question was already answered." || late.AckType != 6 {
		t.Errorf("late press: type %d notice %q", late.AckType, notice(late))
	}
	m, _ := e.fake.Message(p.ID)
	if len(m.Components) != 0 {
		t.Errorf("buttons left after a late press: %v", m.Components)
	}
}

func TestMentionsDoNotPing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.waitGateway()
	body := fmt.Sprintf(`{"id":"ping-1","agent":"@everyone bot","questions":[{"id":"a","header":"<@&42>","question":"Hey @here and <@%s>, **really** [click](https://x.test) || > # -# ?","options":[{"label":"@everyone yes","description":"<@%s> says _so_"},{"label":"no <#123>"}]}]}`, e.alice, e.alice)
	id := e.Ask(body)
	p := e.shown(id)[0]
	if pings := p.Pings(); len(pings) > 0 {
		t.Errorf("the prompt pings %v:\n%s", pings, p.Content)
	}
	if p.AllowedMentions == nil || p.AllowedMentions.Parse == nil || len(p.AllowedMentions.Parse) != 0 {
		t.Errorf("allowed_mentions %+v, want parse []", p.AllowedMentions)
	}
	for _, raw := range []string{"@everyone", "@here", "<@" + e.alice + ">", "<@&42>", "**really**", "[click]", "<#123>"} {
		if unescaped(p.Content, raw) {
			t.Errorf("the prompt shows %q unescaped:\n%s", raw, p.Content)
		}
	}
	if !strings.Contains(p.Content, `\@everyone`) || !strings.Contains(p.Content, `\<\@`+e.alice+`\>`) {
		t.Errorf("escaped mentions missing:\n%s", p.Content)
	}
	e.click(e.alice, p.ID, buttonIDs(p)[0])
	e.Result(id, 5*time.Second)
	m := e.message(p.ID, "answered", ended("Answered: @everyone yes"))
	if pings := m.Pings(); len(pings) > 0 {
		t.Errorf("the edited prompt pings %v", pings)
	}
}

func TestWhichQuestionAndBots(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.waitGateway()
	first := e.Ask(fmt.Sprintf(oneQuestion, "which-1"))
	second := e.Ask(fmt.Sprintf(oneQuestion, "which-2"))
	p1, p2 := e.shown(first)[0], e.shown(second)[0]
	// Another bot replying with a valid answer answers nothing.
	bot := e.fake.AddBot("otherbot")
	if _, err := e.fake.Reply(bot, e.room, p1.ID, "1"); err != nil {
		t.Fatal(err)
	}
	// Two questions open, a message that replies to neither: the bot asks
	// which one and claims nothing.
	msg, err := e.fake.Post(e.alice, e.room, "2")
	if err != nil {
		t.Fatal(err)
	}
	ask := e.replyTo(e.room, msg)
	if !strings.Contains(ask.Content, "2 open questions") {
		t.Errorf("reply %q", ask.Content)
	}
	e.NoResult(first)
	e.NoResult(second)
	if _, err := e.fake.Reply(e.alice, e.room, p2.ID, "2"); err != nil {
		t.Fatal(err)
	}
	if r := e.Result(second, 5*time.Second); answers(r)["deploy_target"][0] != "Production" {
		t.Errorf("result %+v", r)
	}
	// Now only one is open: a plain message answers it.
	if _, err := e.fake.Post(e.alice, e.room, "1"); err != nil {
		t.Fatal(err)
	}
	if r := e.Result(first, 5*time.Second); answers(r)["deploy_target"][0] != "Staging (Recommended)" {
		t.Errorf("result %+v", r)
	}
}

// TestPressEditsEachMessageOnce: a press that ends a question costs one
// edit of each message, the pressed one included (the finisher's; the
// press itself is answered with the notice alone), and finishing a prompt
// of several parts reads nothing back from Discord.
func TestPressEditsEachMessageOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.waitGateway()
	long := strings.Repeat("Why does this matter so much? ", 16)
	desc := strings.Repeat("d", 190)
	var qs []string
	for i := range 3 {
		qs = append(qs, fmt.Sprintf(`{"id":"q%d","header":"H%d","question":%q,"options":[{"label":"A","description":%q},{"label":"B","description":%q},{"label":"C","description":%q},{"label":"D","description":%q}]}`, i, i, long, desc, desc, desc, desc))
	}
	id := e.Ask(`{"id":"once-1","questions":[` + strings.Join(qs, ",") + `]}`)
	ps := e.shownWhole(id)
	if len(ps) < 2 {
		t.Fatalf("%d parts, want a prompt of several", len(ps))
	}
	last := ps[len(ps)-1]
	in := e.click(e.alice, last.ID, buttonIDs(last)[0]) // Skip
	if in.AckType != 4 || notice(in) != "Skipped." {
		t.Errorf("press answered with type %d notice %q, want the notice alone", in.AckType, notice(in))
	}
	e.Result(id, 5*time.Second)
	for i, p := range ps {
		e.message(p.ID, "skipped", ended("Skipped"))
		e.eventually(10*time.Second, "the finisher's edit of part "+fmt.Sprint(i), func() bool {
			return len(e.requests("PATCH", "channels/"+e.room+"/messages/"+p.ID)) > 0
		})
	}
	// The press was answered (its notice is there) and the finisher edited
	// every message: nothing more is on its way.
	for i, p := range ps {
		m, _ := e.fake.Message(p.ID)
		if m.Edits != 1 {
			t.Errorf("part %d edited %d times, want once", i, m.Edits)
		}
		if !kept(m.Content, p.Content) {
			t.Errorf("part %d lost its text:\n%s\nwas\n%s", i, m.Content, p.Content)
		}
		if got := e.requests("GET", "channels/"+e.room+"/messages/"+p.ID); len(got) > 0 {
			t.Errorf("part %d was read back from Discord %d times", i, len(got))
		}
	}
	if in, _ = e.fake.Interaction(in.ID); in.Calls != 1 || len(in.Responses) != 1 {
		t.Errorf("the press got %d callbacks and %d messages, want one notice", in.Calls, len(in.Responses))
	}
}

// thaiQuestion is a one-question request in Thai ("locale":"th").
const thaiQuestion = `{"id":%q,"locale":"th","questions":[{"id":"deploy_target","header":"เป้าหมาย","question":"จะปล่อยขึ้นที่ไหน?","options":[{"label":"สเตจจิ้ง (แนะนำ)","description":"ปลอดภัยกว่า"},{"label":"โปรดักชัน"}]}]}`

// TestThaiPrompt: a Thai request is shown in Thai — intro, instructions,
// the Skip button "ข้าม" — and answered by the text reply ๒ (Thai digit
// two) to the prompt: the result has the second option's label and the
// message ends as "ตอบแล้ว: โปรดักชัน" with no instruction left. A second
// one is skipped with the reply ข้าม, and a press on a third gets its
// ephemeral notice in Thai, as does a late press, which leaves the ended
// message as it is.
func TestThaiPrompt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.waitGateway()
	th := locale.For("th")

	texted := e.Ask(fmt.Sprintf(thaiQuestion, "thai-text"))
	p := e.shown(texted)[0]
	for _, want := range []string{
		"**" + discord.Escape(th.Count("IntroAnon", 1, nil)) + "**\n\n",
		"**เป้าหมาย** จะปล่อยขึ้นที่ไหน?\n1\\. สเตจจิ้ง \\(แนะนำ\\) — ปลอดภัยกว่า\n2\\. โปรดักชัน\n\n",
		discord.Escape(th.Get("FreeText")) + "\n" + discord.Escape(th.Get("ClosingButtons")),
	} {
		if !strings.Contains(p.Content, want) {
			t.Errorf("the Thai prompt lacks %q:\n%s", want, p.Content)
		}
	}
	if strings.Contains(p.Content, discord.Escape(locale.For("en").Get("FreeText"))) || strings.Contains(p.Content, "Question") {
		t.Errorf("the Thai prompt has English words:\n%s", p.Content)
	}
	var labels []string
	for _, row := range p.Components {
		for _, b := range row.Components {
			labels = append(labels, b.Label)
		}
	}
	if want := []string{"สเตจจิ้ง (แนะนำ)", "โปรดักชัน", "ข้าม"}; !reflect.DeepEqual(labels, want) {
		t.Errorf("buttons %q, want %q", labels, want)
	}
	if _, err := e.fake.Reply(e.alice, e.room, p.ID, "๒"); err != nil {
		t.Fatal(err)
	}
	r := e.Result(texted, 5*time.Second)
	if r.Status != askbridge.StatusAnswered || r.Via != askbridge.ViaText || !reflect.DeepEqual(answers(r), map[string][]string{"deploy_target": {"โปรดักชัน"}}) {
		t.Errorf("result %+v answers %v", r, answers(r))
	}
	m := e.message(p.ID, "ended in Thai", ended("ตอบแล้ว: โปรดักชัน"))
	if !kept(m.Content, p.Content) || strings.Contains(m.Content, discord.Escape(th.Get("FreeText"))) {
		t.Errorf("the answered message:\n%s\nwas\n%s", m.Content, p.Content)
	}

	skipped := e.Ask(fmt.Sprintf(thaiQuestion, "thai-skip"))
	p = e.shown(skipped)[0]
	if _, err := e.fake.Reply(e.alice, e.room, p.ID, "ข้าม"); err != nil {
		t.Fatal(err)
	}
	if r := e.Result(skipped, 5*time.Second); r.Status != askbridge.StatusNoAnswer || r.Reason != askbridge.ReasonSkipped {
		t.Errorf("result %+v, want no_answer skipped", r)
	}
	m = e.message(p.ID, "skipped in Thai", ended("ข้ามแล้ว"))
	if !kept(m.Content, p.Content) {
		t.Errorf("the skipped message:\n%s\nwas\n%s", m.Content, p.Content)
	}

	tapped := e.Ask(fmt.Sprintf(thaiQuestion, "thai-tap"))
	p = e.shown(tapped)[0]
	in := e.click(e.alice, p.ID, buttonIDs(p)[0])
	if in.AckType != 4 || notice(in) != "บันทึกคำตอบแล้ว" {
		t.Errorf("press answered with type %d notice %q, want an ephemeral %q", in.AckType, notice(in), "บันทึกคำตอบแล้ว")
	}
	if r := e.Result(tapped, 5*time.Second); !reflect.DeepEqual(answers(r), map[string][]string{"deploy_target": {"สเตจจิ้ง (แนะนำ)"}}) {
		t.Errorf("result %+v", r)
	}
	done := e.message(p.ID, "answered in Thai", ended("ตอบแล้ว: สเตจจิ้ง (แนะนำ)"))
	late := e.click(e.alice, p.ID, buttonIDs(p)[1])
	if late.AckType != 6 || notice(late) != th.Get("NoticeAlreadyAnswered") {
		t.Errorf("late press: type %d notice %q, want a deferred update and %q", late.AckType, notice(late), th.Get("NoticeAlreadyAnswered"))
	}
	if m, _ := e.fake.Message(p.ID); m.Content != done.Content || len(m.Components) != 0 {
		t.Errorf("the late press changed the ended message:\n%s\nwas\n%s", m.Content, done.Content)
	}
}

// buildFailure is the context of ask-user.md §7's example, with a link and
// an @everyone.
const buildFailure = "Build **#4812** failed on `main`:\n```\nTestPay … FAIL\n```\nSee [the log](https://ci.example.com/4812) — @everyone"

// TestContextShownQuietly: a request's context shows between the intro and
// the question as Discord markdown, pings no one, unfurls no link, and
// stays when the question ends. A context of 3,000 characters takes
// several messages, each edited when the question ends: a press on Skip
// ends it, in Thai.
func TestContextShownQuietly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.waitGateway()
	id := e.Ask(fmt.Sprintf(`{"id":"context-1","context":%q,"questions":[{"id":"a","header":"Next","question":"Retry the build?","options":[{"label":"Yes"},{"label":"No"}]}]}`, buildFailure))
	p := e.shown(id)[0]
	context := "Build **\\#4812** failed on `main`:\n\n```\nTestPay … FAIL\n```\n\nSee [the log](<https://ci.example.com/4812>) — \\@\u2060everyone"
	intro, ctx, question := strings.Index(p.Content, "**Question for you:**"), strings.Index(p.Content, context), strings.Index(p.Content, "**Next** Retry the build?")
	if intro != 0 || ctx < 0 || question < ctx {
		t.Errorf("want the intro, the context, then the question:\n%s", p.Content)
	}
	if pings := p.Pings(); len(pings) > 0 {
		t.Errorf("the prompt pings %v", pings)
	}
	if p.Flags&discordtest.SuppressEmbeds == 0 || len(p.Unfurls()) > 0 {
		t.Errorf("the prompt (flags %d) unfurls %v", p.Flags, p.Unfurls())
	}
	e.Cancel(id)
	e.Result(id, 5*time.Second)
	m := e.message(p.ID, "cancelled", ended("Cancelled"))
	if !strings.Contains(m.Content, context) || !kept(m.Content, p.Content) || len(m.Pings()) > 0 || len(m.Unfurls()) > 0 {
		t.Errorf("the ended message (flags %d):\n%s", m.Flags, m.Content)
	}

	var long strings.Builder
	long.WriteString("Build **#4812** failed on `main`, @here:\n\n```\n")
	for i := 1; long.Len() < 2900; i++ {
		fmt.Fprintf(&long, "--- FAIL: TestPay/case_%03d (0.01s) <@%s>\n", i, e.alice)
	}
	long.WriteString("```\n\nSee https://ci.example.com/4812.")
	id = e.Ask(fmt.Sprintf(`{"id":"context-2","locale":"th","context":%q,"questions":[{"id":"a","header":"ถัดไป","question":"บิลด์ใหม่ไหม?","options":[{"label":"ใช่"},{"label":"ไม่"}]}]}`, long.String()))
	// The parts are posted and recorded in order, the buttons under the
	// last.
	var ps []discordtest.Message
	e.eventually(10*time.Second, "every part of context-2 recorded", func() bool {
		ps = e.shown(id)
		return len(ps[len(ps)-1].Components) > 0
	})
	if len(ps) < 2 {
		t.Fatalf("%d messages, want the context split over several", len(ps))
	}
	for i, p := range ps {
		if len(p.Pings()) > 0 || len(p.Unfurls()) > 0 || strings.Count(p.Content, "```")%2 != 0 {
			t.Errorf("part %d pings %v, unfurls %v, or leaves a code block open:\n%s", i, p.Pings(), p.Unfurls(), p.Content)
		}
	}
	last := ps[len(ps)-1]
	in := e.click(e.alice, last.ID, buttonIDs(last)[len(buttonIDs(last))-1])
	if notice(in) != "ข้ามคำถามนี้แล้ว" {
		t.Errorf("notice %q", notice(in))
	}
	e.Result(id, 5*time.Second)
	for i, p := range ps {
		if m := e.message(p.ID, "skipped", ended("ข้ามแล้ว")); !kept(m.Content, p.Content) || len(m.Unfurls()) > 0 {
			t.Errorf("part %d ended as:\n%s\nwas\n%s", i, m.Content, p.Content)
		}
	}
}

// escalated is oneQuestion for a request with an escalation step: after
// 10 minutes it is also asked in channel %s.
const escalated = `{"id":%q,"timeoutSeconds":900,"escalate":[{"afterSeconds":600,"to":"discord:%s"}],"questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)","description":"Safer default"},{"label":"Production"}]}]}`

// labels lists a message's button labels.
func labels(m discordtest.Message) []string {
	var out []string
	for _, row := range m.Components {
		for _, b := range row.Components {
			out = append(out, b.Label)
		}
	}
	return out
}

// TestSeen: a request with an escalation step shows a Seen button. Bob,
// who may not answer, cannot press it; Alice's press gets the private
// notice "Marked as seen. The question stays open.", answers nothing, and
// the prompt is edited in place to show "Seen by alice" under the
// instructions, without the Seen button, keeping the options; a stale
// press on Seen is told someone has. An option pressed then answers as
// usual, and the ended message keeps "Seen by alice" above its status.
func TestSeen(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.waitGateway()
	other := e.fake.AddChannel()
	body := fmt.Sprintf(escalated, "seen-1", other)
	id := e.Ask(body)
	p := e.shown(id)[0]
	if got, want := labels(p), []string{"Staging (Recommended)", "Production", "Skip", "Seen"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("buttons %q, want %q", got, want)
	}
	seenBtn := p.Components[len(p.Components)-1].Components[1]
	if seenBtn.Style != 2 || seenBtn.CustomID != askbridge.EncodePayload(id, askbridge.Choice{Kind: askbridge.ControlSeen}) {
		t.Errorf("the Seen button %+v, want a secondary button with the Seen payload", seenBtn)
	}

	if in := e.click(e.bob, p.ID, seenBtn.CustomID); notice(in) != "This question is not for you." {
		t.Errorf("bob's Seen: notice %q", notice(in))
	}
	in := e.click(e.alice, p.ID, seenBtn.CustomID)
	if in.AckType != 4 || in.Failed || notice(in) != "Marked as seen. The question stays open." {
		t.Errorf("Seen answered with type %d (failed %v) notice %q", in.AckType, in.Failed, notice(in))
	}
	m := e.message(p.ID, "edited to show who has seen it", func(m discordtest.Message) bool {
		return strings.Contains(m.Content, "Seen by alice")
	})
	if want := p.Content + "\n\nSeen by alice"; m.Content != want {
		t.Errorf("the prompt after Seen:\n%s\nwant\n%s", m.Content, want)
	}
	if got, want := labels(m), []string{"Staging (Recommended)", "Production", "Skip"}; !reflect.DeepEqual(got, want) {
		t.Errorf("buttons after Seen %q, want %q", got, want)
	}
	if pings := m.Pings(); len(pings) > 0 || m.Flags&discordtest.SuppressEmbeds == 0 {
		t.Errorf("the edited prompt pings %v (flags %d)", pings, m.Flags)
	}
	e.NoResult(id)
	if in := e.click(e.alice, p.ID, seenBtn.CustomID); notice(in) != "Someone has already marked this as seen." {
		t.Errorf("a stale Seen: notice %q", notice(in))
	}

	in = e.click(e.alice, p.ID, buttonIDs(m)[1])
	if notice(in) != "Answer recorded." {
		t.Errorf("the answer's notice %q", notice(in))
	}
	r := e.Result(id, 5*time.Second)
	if r.Status != askbridge.StatusAnswered || !reflect.DeepEqual(answers(r), map[string][]string{"deploy_target": {"Production"}}) {
		t.Errorf("result %+v", r)
	}
	req, err := askbridge.DecodeRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	status := engine.StatusLine(req, r)
	done := e.message(p.ID, "answered", ended(status))
	text, _, _ := strings.Cut(p.Content, "\n\n"+discord.Escape(locale.For("en").Get("FreeText")))
	if want := text + "\n\nSeen by alice\n\n**" + discord.Escape(status) + "**"; done.Content != want {
		t.Errorf("the answered message:\n%s\nwant\n%s", done.Content, want)
	}
	if msgs := e.fake.Messages(other); len(msgs) != 0 {
		t.Errorf("the escalation channel shows %d messages", len(msgs))
	}
}

// TestRemindersAndEscalation: while nobody has seen a question, a
// reminder is posted as a quiet reply to the prompt, and at its step the
// question is also asked in the escalation channel, saying why, with a
// Seen button. An answer there ends it everywhere: both prompts show the
// status, and the reminders are deleted.
func TestRemindersAndEscalation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.waitGateway()
	other := e.fake.AddChannel()
	body := strings.Replace(fmt.Sprintf(escalated, "remind-1", other), `"timeoutSeconds":900`, `"timeoutSeconds":900,"remindEverySeconds":300`, 1)
	id := e.Ask(body)
	p := e.shown(id)[0]

	e.clock.Advance(301 * time.Second)
	reminder := e.replyTo(e.room, p.ID)
	if !strings.HasPrefix(reminder.Content, "Still waiting for your answer") || len(reminder.Pings()) > 0 || reminder.Flags&discordtest.SuppressEmbeds == 0 {
		t.Errorf("the reminder (flags %d) pings %v:\n%s", reminder.Flags, reminder.Pings(), reminder.Content)
	}

	e.clock.Advance(300 * time.Second)
	var step discordtest.Message
	defer func() {
		if t.Failed() {
			t.Logf("other %s: %+v; room: %+v", other, e.fake.Messages(other), e.fake.Messages(e.room))
		}
	}()
	e.eventually(10*time.Second, "the question asked in the escalation channel", func() bool {
		for _, m := range e.fake.Messages(other) {
			if m.Author.ID == e.fake.BotID && len(m.Components) > 0 {
				step = m
				return true
			}
		}
		return false
	})
	if !strings.HasSuffix(step.Content, "\n\nNo answer after 10 min, so this is asked here too.") {
		t.Errorf("the escalated prompt does not say why:\n%s", step.Content)
	}
	if got, want := labels(step), []string{"Staging (Recommended)", "Production", "Skip", "Seen"}; !reflect.DeepEqual(got, want) {
		t.Errorf("the escalated prompt's buttons %q, want %q", got, want)
	}
	e.shown(id) // every prompt recorded, so a press finds its question

	in := e.click(e.bob, step.ID, buttonIDs(step)[1])
	if notice(in) != "Answer recorded." {
		t.Errorf("bob's answer in the escalation channel: notice %q", notice(in))
	}
	r := e.Result(id, 5*time.Second)
	if r.AnsweredBy == nil || r.AnsweredBy.ID != e.bob || !reflect.DeepEqual(answers(r), map[string][]string{"deploy_target": {"Production"}}) {
		t.Errorf("result %+v", r)
	}
	req, err := askbridge.DecodeRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	status := engine.StatusLine(req, r)
	e.message(p.ID, "ended", ended(status))
	m := e.message(step.ID, "ended", ended(status))
	if !strings.Contains(m.Content, "\n\nNo answer after 10 min, so this is asked here too.\n\n**") {
		t.Errorf("the ended escalated prompt lost its note:\n%s", m.Content)
	}
	e.eventually(10*time.Second, "every reminder deleted", func() bool {
		for _, ch := range []string{e.room, other} {
			for _, m := range e.fake.Messages(ch) {
				if m.Author.ID == e.fake.BotID && (m.ReplyTo == p.ID || m.ReplyTo == step.ID) {
					return false
				}
			}
		}
		_, deleted := e.fake.Deleted(reminder.ID)
		return deleted
	})
}
