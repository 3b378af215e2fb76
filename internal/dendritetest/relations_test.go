package dendritetest

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
)

// reference relates a poll response or end to the poll.
func reference(poll id.EventID) map[string]any {
	return map[string]any{"rel_type": "m.reference", "event_id": poll.String()}
}

// pollEvents are the three events of one poll in one of its two
// spellings: the start the bot sends, a person's response, and the end.
type pollEvents struct {
	name                 string
	start, response, end string
	startContent         map[string]any
	responseContent      func(poll id.EventID) map[string]any
	endContent           func(poll id.EventID) map[string]any
}

var polls = []pollEvents{{
	name: "stable", start: "m.poll.start", response: "m.poll.response", end: "m.poll.end",
	startContent: map[string]any{
		"m.poll": map[string]any{
			"kind": "m.poll.disclosed", "max_selections": float64(1),
			"question": map[string]any{"m.text": []any{map[string]any{"body": "Which plan?"}}},
			"answers": []any{
				map[string]any{"m.id": "a", "m.text": []any{map[string]any{"body": "Basic"}}},
				map[string]any{"m.id": "b", "m.text": []any{map[string]any{"body": "Pro"}}},
			},
		},
		"m.text": []any{map[string]any{"body": "Which plan?\n1. Basic\n2. Pro"}},
	},
	responseContent: func(poll id.EventID) map[string]any {
		return map[string]any{"m.relates_to": reference(poll), "m.selections": []any{"b"}}
	},
	endContent: func(poll id.EventID) map[string]any {
		return map[string]any{"m.relates_to": reference(poll), "m.text": []any{map[string]any{"body": "Answered: Pro"}}}
	},
}, {
	name: "unstable", start: "org.matrix.msc3381.poll.start", response: "org.matrix.msc3381.poll.response", end: "org.matrix.msc3381.poll.end",
	startContent: map[string]any{
		"org.matrix.msc3381.poll.start": map[string]any{
			"kind": "org.matrix.msc3381.poll.disclosed", "max_selections": float64(1),
			"question": map[string]any{"org.matrix.msc1767.text": "Which plan?"},
			"answers": []any{
				map[string]any{"id": "a", "org.matrix.msc1767.text": "Basic"},
				map[string]any{"id": "b", "org.matrix.msc1767.text": "Pro"},
			},
		},
		"org.matrix.msc1767.text": "Which plan?\n1. Basic\n2. Pro",
		"body":                    "Which plan?\n1. Basic\n2. Pro",
	},
	responseContent: func(poll id.EventID) map[string]any {
		return map[string]any{"m.relates_to": reference(poll), "org.matrix.msc3381.poll.response": map[string]any{"answers": []any{"b"}}}
	},
	endContent: func(poll id.EventID) map[string]any {
		return map[string]any{"m.relates_to": reference(poll), "org.matrix.msc3381.poll.end": map[string]any{}, "org.matrix.msc1767.text": "Answered: Pro"}
	},
}}

// Dendrite stores and relays poll events (types it does not know) as they
// were sent: another member's sync returns them with their type and
// content unchanged, and /relations finds the response and the end.
func TestPollsAreRelayed(t *testing.T) {
	SkipShort(t)
	t.Parallel()
	for _, p := range polls {
		t.Run(p.name, func(t *testing.T) {
			r := newRoom(t, "poll-"+p.name)
			bobTL := NewTimeline(t, r.bobCli, r.id)
			poll := Send(t, r.botCli, r.id, msgType(p.start), p.startContent)
			vote := Send(t, r.aliceCli, r.id, msgType(p.response), p.responseContent(poll))
			end := Send(t, r.botCli, r.id, msgType(p.end), p.endContent(poll))

			for _, want := range []struct {
				id      id.EventID
				typ     string
				sender  id.UserID
				content map[string]any
			}{
				{poll, p.start, r.bot, p.startContent},
				{vote, p.response, r.alice, p.responseContent(poll)},
				{end, p.end, r.bot, p.endContent(poll)},
			} {
				got := bobTL.Next(t, ofID(want.id))
				if got.Type.Type != want.typ || got.Sender != want.sender {
					t.Errorf("bob saw %s from %s, want %s from %s", got.Type.Type, got.Sender, want.typ, want.sender)
				}
				if !reflect.DeepEqual(got.Content.Raw, want.content) {
					t.Errorf("bob saw %s with content\n%s\nwant\n%s", want.typ, jsonOf(got.Content.Raw), jsonOf(want.content))
				}
			}
			related := relations(t, r.bobCli, r.id, poll, event.RelReference)
			if !reflect.DeepEqual(related, []id.EventID{end, vote}) {
				t.Errorf("/relations of the poll: %v, want the end and the vote, newest first: %v", related, []id.EventID{end, vote})
			}
		})
	}
}

// An edit (m.replace) and a thread reply (m.thread) arrive through sync as
// events of their own, with m.relates_to as sent; the original is not
// changed in sync and carries no bundled relations (unsigned.m.relations)
// when fetched again; /relations lists each relation.
func TestEditsAndThreadRepliesAreRelayed(t *testing.T) {
	t.Parallel()
	r := newRoom(t, "rel")
	bobTL := NewTimeline(t, r.bobCli, r.id)
	orig := Send(t, r.botCli, r.id, event.EventMessage, text("Which plan? 1. Basic 2. Pro"))
	editContent := map[string]any{
		"msgtype": "m.text", "body": "* Which plan? Answered: Pro",
		"m.new_content": text("Which plan? Answered: Pro"),
		"m.relates_to":  map[string]any{"rel_type": "m.replace", "event_id": orig.String()},
	}
	edit := Send(t, r.botCli, r.id, event.EventMessage, editContent)
	replyContent := map[string]any{
		"msgtype": "m.text", "body": "2",
		"m.relates_to": map[string]any{
			"rel_type": "m.thread", "event_id": orig.String(), "is_falling_back": true,
			"m.in_reply_to": map[string]any{"event_id": orig.String()},
		},
	}
	reply := Send(t, r.aliceCli, r.id, event.EventMessage, replyContent)

	got := bobTL.Upto(t, reply)
	if len(got) != 3 || got[0].ID != orig || got[1].ID != edit {
		t.Fatalf("bob's timeline: %v, want the original %s, the edit %s and the reply %s", ids(got), orig, edit, reply)
	}
	if got[0].Content.Raw["body"] != "Which plan? 1. Basic 2. Pro" {
		t.Errorf("the original in sync says %q: sync changed it", got[0].Content.Raw["body"])
	}
	if !reflect.DeepEqual(got[1].Content.Raw, editContent) || !reflect.DeepEqual(got[2].Content.Raw, replyContent) {
		t.Errorf("the edit and the reply arrived as\n%s\n%s\nwant\n%s\n%s", jsonOf(got[1].Content.Raw), jsonOf(got[2].Content.Raw), jsonOf(editContent), jsonOf(replyContent))
	}
	again, err := r.bobCli.GetEvent(context.Background(), r.id, orig)
	if err != nil {
		t.Fatalf("fetch the original: %v", err)
	}
	if again.Unsigned.Relations != nil || again.Content.Raw["body"] != "Which plan? 1. Basic 2. Pro" {
		t.Errorf("the original fetched again: body %q, unsigned.m.relations %+v; want it unchanged, without bundled relations", again.Content.Raw["body"], again.Unsigned.Relations)
	}
	if rel := relations(t, r.bobCli, r.id, orig, event.RelReplace); !reflect.DeepEqual(rel, []id.EventID{edit}) {
		t.Errorf("/relations m.replace: %v, want [%s]", rel, edit)
	}
	if rel := relations(t, r.bobCli, r.id, orig, event.RelThread); !reflect.DeepEqual(rel, []id.EventID{reply}) {
		t.Errorf("/relations m.thread: %v, want [%s]", rel, reply)
	}
}

// relations returns the IDs of the events /relations lists for eventID
// with relation type rel.
func relations(t *testing.T, cli *mautrix.Client, room id.RoomID, eventID id.EventID, rel event.RelationType) []id.EventID {
	t.Helper()
	resp, err := cli.GetRelations(context.Background(), room, eventID, &mautrix.ReqGetRelations{RelationType: rel})
	if err != nil {
		t.Fatalf("/relations %s of %s: %v", rel, eventID, err)
	}
	return ids(resp.Chunk)
}

func ids(evts []*event.Event) []id.EventID {
	out := make([]id.EventID, 0, len(evts))
	for _, evt := range evts {
		out = append(out, evt.ID)
	}
	return out
}

func msgType(typ string) event.Type { return event.Type{Type: typ, Class: event.MessageEventType} }

func jsonOf(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}
