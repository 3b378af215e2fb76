package telegram

import (
	"errors"
	"strings"
	"time"

	"github.com/askbridge/askbridge/engine"
	"github.com/go-telegram/bot"
)

// classify turns an error of the Bot API library into the engine's kinds:
// 429 → RateLimited with its retry_after; 400, 401, 403 and 404 →
// Permanent (the same request gets the same answer: chat not found, bot
// blocked or kicked, not enough rights, message too long, bad token);
// everything else (network, 5xx, 409) → Temporary. Reason is Telegram's own
// description, such as "Forbidden: bot was blocked by the user".
func classify(op string, err error) *engine.SendError {
	if err == nil {
		return nil
	}
	se := &engine.SendError{Kind: engine.Temporary, Reason: description(err), Err: wrap(op, err)}
	var tooMany *bot.TooManyRequestsError
	var migrate *bot.MigrateError
	switch {
	case errors.As(err, &tooMany):
		se.Kind = engine.RateLimited
		// Telegram: retry_after is in whole seconds; 0 would spin.
		se.RetryAfter = time.Duration(max(tooMany.RetryAfter, 1)) * time.Second
	case errors.As(err, &migrate):
		se.Kind = engine.Permanent
	case errors.Is(err, bot.ErrorBadRequest), errors.Is(err, bot.ErrorForbidden),
		errors.Is(err, bot.ErrorUnauthorized), errors.Is(err, bot.ErrorNotFound):
		se.Kind = engine.Permanent
	}
	return se
}

type opError struct {
	op  string
	err error
}

func (e *opError) Error() string { return "telegram: " + e.op + ": " + e.err.Error() }
func (e *opError) Unwrap() error { return e.err }

func wrap(op string, err error) error { return &opError{op: op, err: err} }

// description recovers Telegram's description from the library's error
// text ("bad request, Bad Request: chat not found").
func description(err error) string {
	var tooMany *bot.TooManyRequestsError
	if errors.As(err, &tooMany) {
		return strings.TrimPrefix(tooMany.Message, bot.ErrorTooManyRequests.Error()+", ")
	}
	var migrate *bot.MigrateError
	if errors.As(err, &migrate) {
		return strings.TrimPrefix(migrate.Message, bot.ErrorBadRequest.Error()+": ") + " (the group became a supergroup; route to its new chat id)"
	}
	msg := err.Error()
	for _, sentinel := range []error{bot.ErrorBadRequest, bot.ErrorForbidden, bot.ErrorUnauthorized, bot.ErrorNotFound, bot.ErrorConflict} {
		if errors.Is(err, sentinel) {
			if i := strings.Index(msg, sentinel.Error()+", "); i >= 0 {
				return msg[i+len(sentinel.Error())+2:]
			}
		}
	}
	return msg
}

// Descriptions of Telegram's harmless edit and delete refusals.
const (
	notModified     = "message is not modified"
	editNotFound    = "message to edit not found"
	deleteNotFound  = "message to delete not found"
	cannotBeEdited  = "message can't be edited"
	queryTooOld     = "query is too old"
	webhookIsActive = "can't use getUpdates method while webhook is active"
)

func hasDescription(err error, s string) bool {
	return err != nil && strings.Contains(description(err), s)
}
