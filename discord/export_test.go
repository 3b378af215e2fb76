package discord

import (
	"context"

	"github.com/askbridge/askbridge/engine"
	"github.com/bwmarrin/discordgo"
)

// Escape is escape, for the external tests.
var Escape = escape

// Acknowledge makes the first response to press id (an ephemeral notice)
// and returns its error as the channel classifies it.
func (c *Channel) Acknowledge(ctx context.Context, id, token string) error {
	err := c.rest.InteractionRespond(&discordgo.Interaction{ID: id, Token: token},
		&discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate}, discordgo.WithContext(ctx))
	return c.classify("acknowledge", err)
}

// Respond answers press id as the gateway handler does once the engine
// has answered r; what fails is logged.
func (c *Channel) Respond(ctx context.Context, id, token string, deferred bool, r engine.TapReply) {
	c.respond(ctx, c.log, &discordgo.Interaction{ID: id, AppID: "1", Token: token, Type: discordgo.InteractionMessageComponent}, deferred, r)
}
