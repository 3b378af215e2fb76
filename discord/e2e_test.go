package discord_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
)

func TestButtonAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.waitGateway()
	id := e.ask(fmt.Sprintf(oneQuestion, "button-1"))
	p := e.prompts(e.room, 1)[0]
	ids := buttonIDs(p)
	if len(ids) != 3 {
		t.Fatalf("buttons %v, want 2 options and Skip", ids)
	}
	in := e.click(e.alice, p.ID, ids[1])
	if in.AckType != 7 || in.Failed || in.AckLatency > 3*time.Second {
		t.Errorf("press answered with type %d after %s (failed %v), want an update within 3s", in.AckType, in.AckLatency, in.Failed)
	}
	if got := notice(in); got != "Answer recorded\\." {
		t.Errorf("notice %q", got)
	}
	r := e.result(id, 5*time.Second)
	if r.Status != askbridge.StatusAnswered || !reflect.DeepEqual(answers(r), map[string][]string{"deploy_target": {"Production"}}) || r.Via != askbridge.ViaButton {
		t.Errorf("result %+v", r)
	}
	if r.AnsweredBy == nil || r.AnsweredBy.ID != e.alice || r.AnsweredBy.Platform != "discord" || r.AnsweredBy.Name != "alice" {
		t.Errorf("answered by %+v", r.AnsweredBy)
	}
	e.message(p.ID, "finished", ended("Answered: Production"))
}
