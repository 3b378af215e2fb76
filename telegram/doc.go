// Package telegram shows ask_user questions in Telegram chats and brings
// the answers back, on the Bot API through github.com/go-telegram/bot.
//
// # Data flow
//
// The engine calls [Channel.Send] with a delivery: a chat, a plan, the first
// part to post and a callback that records each message. The plan is
// rendered as HTML
// (parse_mode HTML) with every piece of agent text escaped (&, <, > and
// quotes) and every "@name" defused with an invisible word joiner, so agent
// text is shown as text and never mentions or notifies anyone. Every word
// of the bridge's own is the plan's (engine.BuildPlan writes them in the
// question's language) or comes from the plan's catalog (locale.For): the
// reply box's lead, hint and placeholder. The request's Markdown context
// sits between the intro and the questions, as Telegram HTML blocks from
// internal/markup (bold, italic, code, code blocks, links); every message
// is sent and edited with link previews disabled, so a link is shown but
// never unfurled. A one-question
// single-select prompt gets an inline keyboard: one full-width row per
// option, in the declared order, then a row with "Other…" and "Skip"; text
// prompts (several questions, multi-select) get only "Skip". A request with
// reminders or escalation adds "Seen" to that last row. Each button's
// callback_data is the 21-byte payload of askbridge.EncodePayload (Telegram
// allows 1-64 bytes). A prompt longer than one message is cut between lines
// into parts of at most 3096 characters as Telegram counts them, leaving
// room for the status line; a question with its options, a context block
// and the instructions each stay in one part when they fit one. The
// keyboard goes under the last part. Each
// message goes to the delivery's callback as soon as it is posted, with its
// part number, and the engine records it: the channel keeps no question
// state and reads none.
//
// Sends and edits are paced by token buckets that are independent of each
// other (pacer.go, on golang.org/x/time/rate): one per chat
// (Config.ChatPace, default one a second after a burst of 3), one more per
// group (one per 3 × ChatPace after a burst of 20), and one per replica
// (Config.GlobalPace, default thirty a second after a burst of at most 30),
// following Telegram's advice of about one message per second in a chat,
// twenty a minute in a group and thirty per second overall. A message takes
// the chat's token before it asks for the replica's, so a message waiting
// for its chat never delays another chat, and the status edit right after a
// fast tap goes out at once within the burst. A 429 holds every send of the
// replica for its retry_after (Telegram does not say whether the chat or
// the bot hit the limit), slows every chat's pace down and takes the bursts
// away until it is calm again (for good in the chat that got it); the call
// itself is not retried here but returned to the engine
// with its retry_after, and the engine tries again from the first part not
// posted, so a burst is delivered late, never dropped. Only the messages the
// channel posts on its own (a correction to a reply, a reply box) are tried
// again by the channel, a few times. The pacing is per replica: with N
// replicas, give each 1/N of the bot's budget.
//
// Telegram's refusals are classified at this boundary: 429 is RateLimited;
// 400, 401, 403 and 404 are Permanent — "Bad Request: chat not found",
// "Forbidden: bot was blocked by the user", "Forbidden: bot was kicked from
// the group chat", "Bad Request: not enough rights to send text messages to
// the chat" end the question as undeliverable at once, with Telegram's own
// description as the reason; network errors, 5xx and 409 are Temporary.
//
// When a question ends, [Channel.Finish] edits each of its messages with
// editMessageText: the same text (the part the message showed, rendered
// again from the plan, or the reply box) without the instructions (the
// free-text line and how to reply: nobody can answer any more), the status
// line ("Answered: …", "Skipped", "Expired", "Cancelled", in the question's
// language) in bold under it, and the keyboard removed. The parts are cut
// once, from the full prompt, so part k of the ended question is the
// message that showed part k; a part that held only instructions shows the
// status line alone. "message is not modified" counts as success and "message to edit
// not found" (someone deleted it) is logged and skipped.
//
// # Reminders, escalation and Seen
//
// The notes a question's state adds to its plan (ask-user.md §5: "No answer
// after 15 min, so this is asked here too.", "Seen by Alice") are shown,
// escaped, after the instructions on the last part, a paragraph of their
// own, and stay when the question ends, above the status line. They are
// added after the prompt is cut into parts, so a note never moves a line
// to another part, and take what room the message has left (4096
// characters, less the status line once the question ends): a quorum's
// tally (ask-user.md §6), which grows with the answers given, is cut there
// with "…", so the edit that ends the question is never refused as too
// long and its buttons always go. When someone presses Seen, the engine calls
// [Channel.Update] on the last part of each prompt: editMessageText with
// the text Send would post now and the keyboard without Seen; "message is
// not modified" and a message that is gone count as success.
// [Channel.Remind] posts a reminder as a reply to the prompt (which
// notifies the chat; posted even when the prompt is gone), and
// [Channel.Delete] deletes it with deleteMessage when the question ends: a
// message already gone counts as success, and one older than the 48 hours
// in which Telegram lets a bot delete its own messages ("message can't be
// deleted") is a permanent refusal. Both are paced like every other call.
//
// # Taps and replies
//
// A callback query goes to the engine's Inbox.Tap and is answered with
// answerCallbackQuery at once (a toast, not an alert) with the engine's
// notice, in the question's language: recorded, skipped, already answered,
// expired, cancelled, not for you, no longer valid, marked as seen (the
// question stays open), already seen. (When no question can
// be known — the store could not be asked, or the button is not one the
// bridge sends — the notice is in locale.Default's words.) Then the channel does what the engine's TapAction
// says. "Other…" (TapOpenReply) posts a force-reply message under the
// prompt and attaches it to the question, so the reply to it answers; in a
// group the box is selective and mentions the tapper, so it opens for them
// only. A tap that ended the question (TapDone) leaves every message, the
// tapped one included, to the engine's finisher: one edit per message; a
// tap on a question that had already ended has the finisher make sure the
// tapped message shows the end.
//
// A text message goes to Inbox.Reply with the message it replies to
// (reply_to_message), the sender as Person{Platform: "telegram", ID: the
// user id, Name}, and FromBot from from.is_bot; "/skip@this_bot" is read as
// "/skip". A correction or a "reply to the question you mean" is posted as a
// reply to the person's message.
//
// # Privacy mode in groups
//
// With privacy mode on (the default for bots), a bot in a group receives only
// commands, replies to its own messages, and messages that mention it. The
// bridge works with that: replying to a prompt (or to the reply box "Other…"
// opens) always reaches it, and so does "/skip". A plain message in a group
// that is not a reply reaches the bridge only when privacy mode is off
// (@BotFather → /setprivacy → Disable) or the bot is a group admin. Private
// chats see every message.
//
// # Receiving updates across replicas
//
// Telegram allows one getUpdates consumer per bot token: a second one makes
// the first fail with 409 "Conflict: terminated by other getUpdates request".
// So in polling mode (the default) [Channel.Run] polls in exactly one
// replica: the one holding the coordinator's lease "telegram:poll:<bot id>"
// (named by the bot's id, never its token), held with internal/lease. The
// holder renews it every RenewEvery
// (default 1 s); it lives LeaseTTL (default 4 s); the other replicas stand by
// (State "standby") and try to take it every RenewEvery, so one takes over
// within LeaseTTL + RenewEvery = 5 s of the holder dying. A replica that
// stops gracefully releases the lease at once.
//
// The update offset is a coordinator cursor of the same name, written with
// SetCursor fenced by the lease (a replica that lost the lease cannot move
// it) once an update is handled: at once when the last write is a second
// old, else with the next write, at most a second later (and when polling
// stops), so a burst of updates costs one write a second. The poller starts
// from the stored offset (one that lags asks Telegram for updates it
// already confirmed, which it no longer has, or for ones it had not, which
// come again and are skipped by their settled marks), and its getUpdates
// calls are held until every update the previous call returned is handled:
// Telegram forgets every update below the offset it is asked for, and the
// library asks for the next offset as soon as it has queued an update, so
// without that hold a crash could lose updates fetched but not handled. Every update_id also goes
// through Coordinator.FirstSeen (kept 24 h, as long as Telegram keeps an
// unconfirmed update), so an update delivered twice (after a takeover, or a
// webhook retry) is handled once.
//
// # When Redis fails
//
// An update that cannot be handled (the dedupe or the engine cannot reach
// Redis) is never confirmed: the poller tries it again with backoff for as
// long as it holds the lease, and when the lease ends first it gives the
// update back, so the next poller (or this one, once Redis is back) gets it
// again from Telegram. A tap is answered "try again" after its first failed
// try, or when it is not handled within a few seconds (Redis hanging), and
// never a second time; a reply the engine asks to try again gets that
// answer once. The update's first-seen mark is set before it is handed on,
// so of two pollers during a hand-over only one hands it to the engine; the
// replica that set it keeps it while it tries again and undoes it
// (ForgetSeen) when it gives the update back or answers a webhook 500, so
// the next delivery is not taken for a duplicate. Updates behind the one
// being tried wait at Telegram, unanswered, until it is handled.
//
// A panic while handling an update, in the poller's or the webhook's
// handler or in the work a tap or reply starts in the background, is
// recovered and logged at error level with its stack; a tap is answered
// "try again", and the update counts as handled (it would panic again), so
// the next one is handled.
//
// # Webhook mode
//
// With Config.WebhookURL (an https URL; ASKUSER_TELEGRAM_WEBHOOK_URL in the
// bridge's configuration) and Config.WebhookSecret, every replica calls
// setWebhook with the URL, secret_token and allowed_updates on start, and
// serves [Channel.WebhookHandler] on [Channel.WebhookPath] (the URL's path;
// mount it on the bridge's HTTP server). Telegram may deliver to any replica
// behind the load balancer. The handler checks the
// X-Telegram-Bot-Api-Secret-Token header on every request (401 otherwise)
// by comparing SHA-256 digests in constant time, so neither the secret's
// length nor a right prefix shows in the timing; the secret must have at
// least 16 characters. It hands the update to the engine before answering,
// and answers 500 when the update could not be handled (Redis could not be
// reached) so Telegram delivers it again.
// Switching back to polling needs nothing: the poller calls deleteWebhook
// when it takes the lease (getUpdates fails while a webhook is set).
//
// # Secrets in errors
//
// The Bot API puts the token in every URL (…/bot<token>/getUpdates), so
// every *url.Error of a call names it, and a proxy's error page that the
// library quotes may too. Every error that leaves the channel (a log line,
// a SendError's Reason and Err) goes through the scrubber of redact.go
// first: the token, its secret half and the webhook secret become
// "<redacted>", in the URL of a *url.Error too.
//
// # Tests
//
// Package internal/telegramtest is a fake Bot API that the tests
// drive the real library against: the same request encodings, limits and
// error bodies, 409 for a superseded getUpdates, 429 with retry_after over
// configurable rates, and helpers to play a person. The tests run with a
// real redis-server and the engine, and fail when a goroutine is left
// behind.
package telegram
