package discord_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/engine"
)

// TestRunLeavesNothingBehind runs alone (not parallel): after Run returns,
// no goroutine of the channel or of discordgo's gateway is left.
func TestRunLeavesNothingBehind(t *testing.T) {
	e := newEnv(t, envOpts{replicas: 1})
	e.waitGateway()
	id := e.Ask(`{"id":"leak-1","questions":[{"id":"a","header":"H","question":"Q?","options":[{"label":"Yes"},{"label":"No"}]}]}`)
	p := e.shown(id)[0]
	e.click(e.alice, p.ID, buttonIDs(p)[0])
	e.Result(id, 5*time.Second)
	e.reps[0].stop()
	e.eventually(5*time.Second, "no goroutines left", func() bool {
		return leftover() == ""
	})
	if s := leftover(); s != "" {
		t.Errorf("goroutines left:\n%s", s)
	}
}

func leftover() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var left []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "leftover(") {
			continue
		}
		if strings.Contains(g, "askbridge/discord.") || strings.Contains(g, "askbridge/internal/lease.") || strings.Contains(g, "discordgo.(*Session).listen") || strings.Contains(g, "discordgo.(*Session).heartbeat") {
			left = append(left, g)
		}
	}
	return strings.Join(left, "\n\n")
}

func TestInvalidSessionIdentifiesAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{replicas: 1})
	e.waitGateway()
	identifies, _, _ := e.fake.GatewayStats()
	e.fake.ForgetSessions()
	e.fake.DropSessions()
	e.eventually(10*time.Second, "a new session", func() bool {
		n, _, _ := e.fake.GatewayStats()
		return n > identifies && e.fake.Sessions() == 1
	})
	id := e.Ask(`{"id":"invalid-1","questions":[{"id":"a","header":"H","question":"Q?","options":[{"label":"Yes"},{"label":"No"}]}]}`)
	p := e.shown(id)[0]
	e.click(e.alice, p.ID, buttonIDs(p)[1])
	if r := e.Result(id, 5*time.Second); answers(r)["a"][0] != "No" {
		t.Errorf("result %+v", r)
	}
	if st := e.reps[0].ch.State(); st != engine.StateConnected {
		t.Errorf("state %s", st)
	}
}
