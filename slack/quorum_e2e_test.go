package slack_test

// End-to-end tests of quorum (ask-user.md §6) across platforms: two bridge
// replicas, each with a Telegram, a Slack and a web channel, on one Redis
// (newPlacesEnv); Alice votes on Telegram, Bob and Carol on Slack.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/internal/telegramtest"
	"github.com/askbridge/askbridge/slack"
	"github.com/askbridge/askbridge/slack/internal/slacktest"
	"github.com/askbridge/askbridge/telegram"
)

// quorumQuestion is a 2-of-3 request shown in the Telegram group and the
// Slack channel, for Alice (on Telegram), Bob and Carol (on Slack); its
// questions (a JSON list) are %s. The deadline is ten minutes away: a test
// that sees it end has not waited for it.
const quorumQuestion = `{"id":%q,"agent":"deploy-bot","to":["telegram:%d","slack:%s"],"timeoutSeconds":600,` +
	`"quorum":2,"answerers":["slack:%s","slack:%s","telegram:%d"],"questions":%s}`

// quorumApproval is one question with two options, Approve and Reject.
const quorumApproval = `[{"id":"go","header":"Go","question":"Ship it?","options":[{"label":"Approve"},{"label":"Reject"}]}]`

// quorumTargets is one question with three options, so three people can
// give three different answers.
const quorumTargets = `[{"id":"env","header":"Env","question":"Where?","options":[{"label":"Dev"},{"label":"Staging"},{"label":"Prod"}]}]`

var (
	// quorumAlice votes on Telegram.
	quorumAlice = telegramtest.User{ID: 4201, FirstName: "Alice"}
	// quorumCarol votes on Slack, as Bob does.
	quorumCarol = slacktest.Person{ID: "UCAROL", Name: "carol"}
)

// The bridge's words, in English, that these tests expect.
const (
	quorumRecorded1 = "Vote recorded (1 of 2 needed)."
	quorumRecorded2 = "Vote recorded (2 of 2 needed)."
	quorumAgain     = "You already answered; your first answer stands."
	quorumLate      = "This question was already answered."
	quorumNoQuorum  = "No agreement"
)

// askQuorum pushes a 2-of-3 request with questions and returns its id.
func (e *placesEnv) askQuorum(id, questions string) string {
	e.t.Helper()
	return e.agent.Ask(e.t, fmt.Sprintf(quorumQuestion, id, placesGroup, opsChannel, bob.ID, quorumCarol.ID, quorumAlice.ID, questions))
}

// quorumPrompts waits until both places' prompts of question id are posted
// and recorded, and returns the Telegram one and the Slack one.
func (e *placesEnv) quorumPrompts(id string) (telegramtest.Message, slacktest.Message) {
	e.t.Helper()
	byPlace := e.recorded(id, 0, 1)
	var tg telegramtest.Message
	e.wait("the Telegram prompt", func() bool {
		msgs := e.telegram.BotMessages(placesGroup)
		if len(msgs) == 0 {
			return false
		}
		tg = msgs[0]
		return true
	})
	if strconv.Itoa(tg.ID) != byPlace[0][0].Message || len(tg.Keyboard) == 0 {
		e.t.Fatalf("Telegram prompt %d with keyboard %v; recorded %+v", tg.ID, tg.Keyboard, byPlace[0])
	}
	sl := e.slackPrompt(opsChannel, id)
	if sl.TS != byPlace[1][0].Message {
		e.t.Fatalf("Slack prompt %s; recorded %+v", sl.TS, byPlace[1])
	}
	return tg, sl
}

// tap taps the button label of Telegram message msg as user and returns
// what the bridge answered the tap (the callback query's notice).
func (e *placesEnv) tap(msg int, user telegramtest.User, label string) string {
	e.t.Helper()
	q, err := e.telegram.Tap(placesGroup, msg, user, label)
	if err != nil {
		e.t.Fatal(err)
	}
	var a telegramtest.Answer
	e.wait(fmt.Sprintf("the answer to %s's tap on %q", user.FirstName, label), func() bool {
		var ok bool
		a, ok = e.telegram.Answer(q)
		return ok
	})
	return a.Text
}

// waitEphemeral waits until user was told text privately on Slack.
func (e *placesEnv) waitEphemeral(user slacktest.Person, text string) {
	e.t.Helper()
	deadline := placesWithin
	if !e.slack.Wait(deadline, func() bool {
		return slices.ContainsFunc(e.slack.Ephemerals(user.ID), func(m slacktest.Ephemeral) bool { return m.Text == text })
	}) {
		e.t.Fatalf("%s was never told %q; told %+v", user.Name, text, e.slack.Ephemerals(user.ID))
	}
}

// waitTally waits until both prompts show tally as a note while keeping
// every button in buttons, and returns them as they then stand.
func (e *placesEnv) waitTally(tgID int, slTS, tally string, buttons ...string) (telegramtest.Message, slacktest.Message) {
	e.t.Helper()
	var tg telegramtest.Message
	e.wait(fmt.Sprintf("the Telegram prompt %d to show %q with its buttons", tgID, tally), func() bool {
		tg, _ = e.telegramMessage(placesGroup, tgID)
		return strings.HasSuffix(tg.Text, "\n\n"+tally) && hasAll(telegramButtons(tg), buttons)
	})
	var sl slacktest.Message
	e.wait(fmt.Sprintf("the Slack prompt %s to show %q with its buttons", slTS, tally), func() bool {
		sl, _ = e.slack.Message(opsChannel, slTS)
		return strings.Contains(sl.Text, "\n\n"+tally) && strings.Contains(string(sl.Blocks), `"askbridge_notes"`) &&
			strings.Contains(string(sl.Blocks), jsonString(tally)) && hasAll(slacktest.Buttons(sl.Blocks), buttons)
	})
	return tg, sl
}

// waitQuorumEnded waits until both messages show the ended question: no
// buttons, the question kept, then the tally note and the status line.
func (e *placesEnv) waitQuorumEnded(tgID int, slTS, question, tally, status string) {
	e.t.Helper()
	var tg telegramtest.Message
	e.wait(fmt.Sprintf("the Telegram message %d to end with %q then %q", tgID, tally, status), func() bool {
		tg, _ = e.telegramMessage(placesGroup, tgID)
		return len(tg.Keyboard) == 0 && strings.HasSuffix(tg.Text, "\n\n"+tally+"\n\n"+status)
	})
	if !strings.Contains(tg.Text, question) {
		e.t.Errorf("the Telegram message lost its question: %q", tg.Text)
	}
	e.checkSlackEnded(e.waitSlackQuorumEnded(slTS, tally, status), question)
}

// waitSlackQuorumEnded waits until Slack message ts shows no button and
// ends, in its text and in its closing context block, with the tally note
// and then the status line.
func (e *placesEnv) waitSlackQuorumEnded(ts, tally, status string) slacktest.Message {
	e.t.Helper()
	var m slacktest.Message
	e.wait(fmt.Sprintf("the Slack message %s to end with %q then %q", ts, tally, status), func() bool {
		m, _ = e.slack.Message(opsChannel, ts)
		return slackQuorumEnded(m, tally, status)
	})
	return m
}

// slackQuorumEnded reports whether m shows an ended quorum question.
func slackQuorumEnded(m slacktest.Message, tally, status string) bool {
	closing := tally + "\n" + status
	return len(slacktest.Buttons(m.Blocks)) == 0 && strings.HasSuffix(m.Text, "\n\n"+closing) &&
		strings.Contains(string(m.Blocks), `"askbridge_status"`) && strings.Contains(string(m.Blocks), jsonString(closing))
}

func (e *placesEnv) checkSlackEnded(m slacktest.Message, question string) {
	e.t.Helper()
	if !strings.Contains(m.Text, question) {
		e.t.Errorf("the Slack message lost its question: %q", m.Text)
	}
}

// votedBy lists who the voted events of evs name, in order.
func votedBy(evs []askbridge.Event) []string {
	var out []string
	for _, ev := range evs {
		if ev.Kind == askbridge.EventVoted {
			out = append(out, ev.By)
		}
	}
	return out
}

// checkVotes checks that r's votes are, in order, by who with the answers
// of question qid in want, each dated, none skipped.
func checkVotes(t *testing.T, r askbridge.Result, qid string, who []askbridge.Person, want []string) {
	t.Helper()
	if len(r.Votes) != len(who) {
		t.Fatalf("votes %+v, want %d", r.Votes, len(who))
	}
	var last int64
	for i, v := range r.Votes {
		if v.By != who[i] || v.Skipped || len(v.Answers) != 1 || !slices.Equal(v.Answers[qid], []string{want[i]}) {
			t.Errorf("vote %d is %+v, want %s by %+v", i, v, want[i], who[i])
		}
		if v.At == 0 || v.At < last {
			t.Errorf("vote %d dated %d after a vote dated %d; want every vote dated, in order", i, v.At, last)
		}
		last = v.At
	}
}

func telegramButtons(m telegramtest.Message) []string {
	var out []string
	for _, row := range m.Keyboard {
		for _, b := range row {
			out = append(out, b.Text)
		}
	}
	return out
}

func hasAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// A 2-of-3 question shown on Telegram and on Slack by two replicas: every
// vote is counted once, whatever the platform and the replica; every
// message shows the tally while it is open and keeps it when it ends; the
// question ends as soon as two agree, or as soon as they no longer can.
func TestQuorumAcrossPlatforms(t *testing.T) {
	aliceVoter := askbridge.Person{Platform: telegram.Platform, ID: strconv.FormatInt(quorumAlice.ID, 10), Name: quorumAlice.FirstName}
	bobVoter := askbridge.Person{Platform: slack.Platform, ID: bob.ID, Name: bob.Name}
	carolVoter := askbridge.Person{Platform: slack.Platform, ID: quorumCarol.ID, Name: quorumCarol.Name}

	t.Run("two agree across Telegram and Slack", func(t *testing.T) {
		e := newPlacesEnv(t)
		id := e.askQuorum("quorum-agree", quorumApproval)
		tgPrompt, slPrompt := e.quorumPrompts(id)

		// Alice's vote on Telegram does not decide: she is told it was
		// recorded, and both places show the tally, buttons still live.
		if got := e.tap(tgPrompt.ID, quorumAlice, "Approve"); got != quorumRecorded1 {
			t.Fatalf("Alice's vote was answered %q, want %q", got, quorumRecorded1)
		}
		_, slOpen := e.waitTally(tgPrompt.ID, slPrompt.TS, "Votes: 1 of 2 needed — Approve 1, Reject 0", "Approve", "Reject")
		if n := e.agent.ResultCount(t, id); n != 0 {
			t.Fatalf("%d results pushed after one vote of two", n)
		}
		if rec, found, err := e.store.Get(context.Background(), id); err != nil || !found || rec.Status != askbridge.StatusPending || len(rec.Votes) != 1 {
			t.Fatalf("after Alice's vote: status %q, votes %+v (found %v, %v); want pending with one vote", rec.Status, rec.Votes, found, err)
		}

		// Bob agrees on Slack: that decides it.
		if _, err := e.slack.Press(bob, opsChannel, slPrompt.TS, "Approve"); err != nil {
			t.Fatal(err)
		}
		r := e.agent.Result(t, id, placesWithin)
		if r.Status != askbridge.StatusAnswered || answers(r) != "map[go:[Approve]]" {
			t.Errorf("result %+v %s; want answered Approve", r, answers(r))
		}
		checkVotes(t, r, "go", []askbridge.Person{aliceVoter, bobVoter}, []string{"Approve", "Approve"})
		e.waitEphemeral(bob, quorumRecorded2)

		// Both messages end: the question, the tally, the status line.
		tally := "Votes: 2 of 2 needed — Approve 2, Reject 0"
		e.waitQuorumEnded(tgPrompt.ID, slPrompt.TS, "Ship it?", tally, "Answered: Approve")

		// Carol, late, presses on the message as her Slack still shows it.
		if _, err := e.slack.PressOn(quorumCarol, slOpen, "Reject"); err != nil {
			t.Fatal(err)
		}
		e.waitEphemeral(quorumCarol, quorumLate)

		// Once nothing moves any more: one result, two votes, both
		// messages still ended.
		e.settle()
		if n := e.agent.ResultCount(t, id); n != 0 {
			t.Errorf("%d more results pushed, want exactly one", n)
		}
		if by := votedBy(e.events(id)); !slices.Equal(by, []string{"telegram:" + aliceVoter.ID, "slack:" + bob.ID}) {
			t.Errorf("voted events by %v, want two: Alice's on Telegram, then Bob's on Slack", by)
		}
		if rec, _, err := e.store.Get(context.Background(), id); err != nil || len(rec.Votes) != 2 {
			t.Errorf("the question holds votes %+v (%v), want Alice's and Bob's alone", rec.Votes, err)
		}
		if m, _ := e.slack.Message(opsChannel, slPrompt.TS); !slackQuorumEnded(m, tally, "Answered: Approve") {
			t.Errorf("after Carol's press the Slack message shows text %q blocks %s", m.Text, m.Blocks)
		}
		if msgs := e.telegram.BotMessages(placesGroup); len(msgs) != 1 {
			t.Errorf("Telegram holds %d bot messages, want the one prompt", len(msgs))
		}
		if prompts := e.slackTopLevel(opsChannel); len(prompts) != 1 {
			t.Errorf("Slack holds %d bot messages, want the one prompt", len(prompts))
		}
	})

	t.Run("three different answers end it at once", func(t *testing.T) {
		e := newPlacesEnv(t)
		id := e.askQuorum("quorum-split", quorumTargets)
		tgPrompt, slPrompt := e.quorumPrompts(id)

		if got := e.tap(tgPrompt.ID, quorumAlice, "Dev"); got != quorumRecorded1 {
			t.Fatalf("Alice's vote was answered %q, want %q", got, quorumRecorded1)
		}
		// Two different answers: agreement is still possible.
		if _, err := e.slack.Press(bob, opsChannel, slPrompt.TS, "Staging"); err != nil {
			t.Fatal(err)
		}
		e.waitEphemeral(bob, quorumRecorded1)
		e.waitTally(tgPrompt.ID, slPrompt.TS, "Votes: 1 of 2 needed — Dev 1, Staging 1, Prod 0", "Dev", "Staging", "Prod")
		if n := e.agent.ResultCount(t, id); n != 0 {
			t.Fatalf("%d results pushed while two could still agree", n)
		}

		// The third, different: no two can agree any more. It ends now,
		// ten minutes before its deadline.
		if _, err := e.slack.Press(quorumCarol, opsChannel, slPrompt.TS, "Prod"); err != nil {
			t.Fatal(err)
		}
		r := e.agent.Result(t, id, placesWithin)
		if r.Status != askbridge.StatusNoAnswer || r.Reason != askbridge.ReasonNoQuorum {
			t.Errorf("result %+v, want no_answer with reason no_quorum", r)
		}
		if r.Answers != nil && len(r.Answers.Answers) != 0 {
			t.Errorf("a question without agreement answered %s", answers(r))
		}
		checkVotes(t, r, "env", []askbridge.Person{aliceVoter, bobVoter, carolVoter}, []string{"Dev", "Staging", "Prod"})
		e.waitQuorumEnded(tgPrompt.ID, slPrompt.TS, "Where?", "Votes: 1 of 2 needed — Dev 1, Staging 1, Prod 1", quorumNoQuorum)

		e.settle()
		if n := e.agent.ResultCount(t, id); n != 0 {
			t.Errorf("%d more results pushed, want exactly one", n)
		}
		if by := votedBy(e.events(id)); len(by) != 3 {
			t.Errorf("voted events by %v, want three", by)
		}
	})

	t.Run("a second vote does not count", func(t *testing.T) {
		e := newPlacesEnv(t)
		id := e.askQuorum("quorum-again", quorumApproval)
		tgPrompt, slPrompt := e.quorumPrompts(id)

		if got := e.tap(tgPrompt.ID, quorumAlice, "Approve"); got != quorumRecorded1 {
			t.Fatalf("Alice's vote was answered %q, want %q", got, quorumRecorded1)
		}
		tally := "Votes: 1 of 2 needed — Approve 1, Reject 0"
		e.waitTally(tgPrompt.ID, slPrompt.TS, tally, "Approve", "Reject")

		// Alice changes her mind: her first answer stands, the tally
		// stays, and nothing is edited.
		if got := e.tap(tgPrompt.ID, quorumAlice, "Reject"); got != quorumAgain {
			t.Fatalf("Alice's second vote was answered %q, want %q", got, quorumAgain)
		}
		rec, found, err := e.store.Get(context.Background(), id)
		if err != nil || !found || rec.Status != askbridge.StatusPending {
			t.Fatalf("after Alice's second vote: status %q (found %v, %v), want pending", rec.Status, found, err)
		}
		if len(rec.Votes) != 1 || !slices.Equal(rec.Votes[0].Answers["go"], []string{"Approve"}) {
			t.Fatalf("after Alice's second vote the question holds votes %+v, want her first alone", rec.Votes)
		}
		tg, sl := e.waitTally(tgPrompt.ID, slPrompt.TS, tally, "Approve", "Reject")
		if tg.Edits != 1 || sl.Updates != 1 {
			t.Errorf("the prompts were edited %d times on Telegram and %d on Slack, want once each (for the first vote)", tg.Edits, sl.Updates)
		}
		if n := e.agent.ResultCount(t, id); n != 0 {
			t.Fatalf("%d results pushed after one person's two votes", n)
		}

		// Bob agrees with Alice's first answer: answered Approve.
		if _, err := e.slack.Press(bob, opsChannel, slPrompt.TS, "Approve"); err != nil {
			t.Fatal(err)
		}
		r := e.agent.Result(t, id, placesWithin)
		if r.Status != askbridge.StatusAnswered || answers(r) != "map[go:[Approve]]" {
			t.Errorf("result %+v %s; want answered Approve", r, answers(r))
		}
		checkVotes(t, r, "go", []askbridge.Person{aliceVoter, bobVoter}, []string{"Approve", "Approve"})
		e.waitQuorumEnded(tgPrompt.ID, slPrompt.TS, "Ship it?", "Votes: 2 of 2 needed — Approve 2, Reject 0", "Answered: Approve")

		e.settle()
		if n := e.agent.ResultCount(t, id); n != 0 {
			t.Errorf("%d more results pushed, want exactly one", n)
		}
		if by := votedBy(e.events(id)); len(by) != 2 {
			t.Errorf("voted events by %v, want two (Alice's second vote is none)", by)
		}
		if msgs := e.telegram.BotMessages(placesGroup); len(msgs) != 1 || msgs[0].Edits != 2 {
			t.Errorf("Telegram bot messages %+v; want the one prompt, changed twice (the tally, the end)", msgs)
		}
	})
}
