package telegram

import (
	"context"
	"encoding/json"
	"time"

	"github.com/askbridge/askbridge/engine"
	"github.com/go-telegram/bot/models"
)

// SetTapPatience sets how long a tap may take before it is answered "try
// again". Call it before Run.
func (c *Channel) SetTapPatience(d time.Duration) { c.tapPatience = d }

// CrashOnStop makes the channel stop like a crashed process: the poller
// lease is kept until it expires.
func (c *Channel) CrashOnStop() { c.crash.Store(true) }

// HandleUpdateJSON feeds one raw update to the update handler, as the
// poller and the webhook do, and waits for the work it started.
func (c *Channel) HandleUpdateJSON(ctx context.Context, in engine.Inbox, data []byte) error {
	var upd models.Update
	if err := json.Unmarshal(data, &upd); err != nil {
		return nil
	}
	err := c.handleUpdate(ctx, in, &upd)
	c.effects.Wait()
	return err
}

// PromptParts exposes the rendering of a plan.
var PromptParts = promptParts

// Held reports whether a 429 another replica got holds sends to chat.
func (c *Channel) Held(chat string) bool {
	_, held := c.pace.chatHeld(c.pace.limits(chat))
	return held
}

// EndedParts exposes the rendering of the parts of an ended prompt.
var EndedParts = endedParts
