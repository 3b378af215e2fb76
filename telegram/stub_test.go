package telegram_test

import (
	"context"

	"github.com/askbridge/askbridge/engine"
)

// sendAll shows plan in chat from its first part and returns the messages
// Send handed to Sent, in order.
func sendAll(ctx context.Context, ch engine.Channel, chat string, plan engine.Plan) ([]engine.MessageRef, error) {
	var refs []engine.MessageRef
	err := ch.Send(ctx, engine.Delivery{Chat: chat, Plan: plan, Sent: func(ref engine.MessageRef) bool {
		refs = append(refs, ref)
		return true
	}})
	return refs, err
}
