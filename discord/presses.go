package discord

import (
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
)

// pressLife is how long a press can edit the pressed message: Discord
// keeps an interaction's token for 15 minutes; a minute is left spare.
const pressLife = 14 * time.Minute

// presses remembers the presses on messages of questions that had already
// ended. Once such a press is acknowledged with a deferred update (type 6),
// its @original is the pressed message, which the press can edit without
// any permission in the channel: when the finisher's edit of that message
// is refused for lack of access (the bot lost the channel, which is why
// its buttons were left), Finish edits it through the press instead.
type presses struct {
	mu sync.Mutex
	by map[string]*press // message id -> the latest press on it
}

// press is one remembered press; acked says it was acknowledged with a
// deferred update, so its @original is the pressed message.
type press struct {
	i     *discordgo.Interaction
	at    time.Time
	acked bool
}

// add remembers press i on message, not acknowledged yet.
func (ps *presses) add(message string, i *discordgo.Interaction, now time.Time) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.by == nil {
		ps.by = map[string]*press{}
	}
	for m, p := range ps.by {
		if now.Sub(p.at) > pressLife {
			delete(ps.by, m)
		}
	}
	ps.by[message] = &press{i: i, at: now}
}

// acked notes that press i on message was acknowledged with a deferred
// update.
func (ps *presses) acked(message string, i *discordgo.Interaction) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p, ok := ps.by[message]; ok && p.i == i {
		p.acked = true
	}
}

// drop forgets press i on message (it was answered otherwise: its
// @original is not the pressed message).
func (ps *presses) drop(message string, i *discordgo.Interaction) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p, ok := ps.by[message]; ok && p.i == i {
		delete(ps.by, message)
	}
}

// on returns the live press on message, and whether it was acknowledged;
// nil when there is none.
func (ps *presses) on(message string, now time.Time) (i *discordgo.Interaction, acked bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, ok := ps.by[message]
	if !ok || now.Sub(p.at) > pressLife {
		return nil, false
	}
	return p.i, p.acked
}
