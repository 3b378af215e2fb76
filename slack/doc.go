// Package slack is the Slack channel of the bridge, on slack-go.
//
// Sending: a plan becomes Block Kit messages (render.go), every word of
// the bridge in it taken from the plan, in the plan's language: a header
// with the intro, the agent's Markdown context as mrkdwn sections
// (internal/markup), a section per question (its header, the question with
// the plan's MultiHint, the numbered options with descriptions), the
// free-text hint and the closing lines, the plan's notes (why an
// escalation step asks here, who has seen it) as a context block, and one
// actions block with the buttons in declared order, Skip, and Seen for a
// question with reminders or escalation. All agent text is escaped for mrkdwn
// (&, <, >), so no mention in it can notify anyone; the plain `text`
// fallback (the context through markup's Plain) is always set. Every post
// and edit asks for no link or media unfurling and never sends link_names.
// A prompt that needs more than 50 blocks is posted as several messages,
// each handed to the engine (Delivery.Sent, with its part number) as soon
// as it is posted; the engine records them. Send makes one try of each
// call and classifies a refusal (a 429 with Slack's Retry-After); the
// engine retries from the first part not posted. A target user id (U…,
// W…) is reached in its DM (conversations.open).
//
// Rate limits are per channel (ratelimit.go): a 429 holds that channel, and
// only that one, for its Retry-After. Every Web API call that names a
// channel passes the channel's gate first, so the other calls to it (edits,
// posts, notices) wait out the Retry-After another call just got instead
// of running into the limit again; a caller whose deadline comes first gets
// a RateLimited refusal at once, without a call. The gate is per replica.
//
// Inbound, two modes. Socket mode (an app token): every replica opens a
// connection and Slack hands each event to one of them; any replica can
// handle any question because the state is in Redis. slack-go's run loop
// gives up when a reconnect fails, so Run starts it again with backoff,
// forever. HTTP mode (a signing secret of at least 16 characters):
// HTTPHandler serves the Events API and interactivity endpoints, checking
// every request's signature. Either
// way each event is acknowledged at once (in HTTP mode, an Events API event
// once its handling decided, within 2 seconds), deduplicated by its id
// through the coordinator (Slack retries), and handled in the background:
//
//	block_actions → Inbox.Tap → ephemeral notice (the engine's finisher edits messages)
//	message       → Inbox.Reply → the engine's response in the thread
//
// When the engine could not reach Redis (Retry in its answer), the event's
// first-seen mark is forgotten, so a delivery of it again is handled, and
// the person is told privately to try again; in HTTP mode a message event
// is instead answered 503 while Slack has a retry left, and Slack delivers
// it again. A panic while handling one event is recovered and logged with
// its stack; the next event is handled as usual.
//
// A tap that ends the question (TapDone) edits nothing itself: the engine's
// finisher edits every message, the tapped one included, once. Nor does a
// press of Seen: the engine calls Update, which edits the open prompt in
// place with chat.update to show the plan as it now is ("Seen by …", no
// Seen button), part for part as Send posted it.
//
// Reminders (Remind) are plain replies in the prompt's thread; Delete
// removes them with chat.delete once the question ends. A message already
// gone counts as deleted, as it counts as edited for Update and Finish.
//
// A message in a question's thread answers that question; elsewhere the
// engine takes the only open question of that person in that channel or DM.
// When a question ends, Finish edits each of its messages with chat.update:
// part MessageRef.Part of the Ending's plan, laid out again with the same
// cut into messages as the prompt, without the instructions and the
// buttons, and with a context block holding the status line (after the
// plan's notes, on the last part). A part that held only instructions and
// buttons shows the status line alone. Nothing is read back from the store
// or from Slack.
//
// Standing answers (ask-user.md §9, standing.go): while the offer to keep
// an answer is open, Finish ends the last part of the ended message with
// an actions block of its keep buttons (or, where it has none, its hint on
// the line after the status line); RemoveOffer edits the ending again
// without it. ShowStanding posts the standing answer's message, with its
// Revoke button, in the channel it was kept in (a user id's DM), and
// EditStanding edits it with chat.update. Keep and Revoke presses are
// block_actions like any other: the engine decides, and its notice goes to
// the presser alone (chat.postEphemeral).
//
// No error leaves the channel with a secret in it (redact.go): the
// configured tokens and signing secret, anything shaped like a Slack token,
// and the ticket of a socket mode URL are replaced before an error is
// classified or logged.
package slack
