// Package discord is the Discord channel of the bridge, on
// github.com/bwmarrin/discordgo: it shows questions in Discord channels and
// DMs and brings the answers back from button presses and replies.
//
// # Sending
//
// Send renders a plan (engine.BuildPlan with Discord's capabilities) as
// Discord markdown, every word of the bridge in the plan's language: the
// intro, the request's context (internal/markup: its Markdown as Discord
// markdown, mentions neutralised, links in <> so none unfurls), the
// questions with every piece of agent text escaped (a backslash before
// each markup character, "<" and "@" included, so <@id>, <@&role>,
// @everyone and @here stay text), and the instructions (Plan.FreeText,
// Plan.Closing). The prompt is a list of lines (a context block, a
// question's first line, an option, an instruction line) packed into
// messages of at most 2000 characters, room kept for the status line, a
// message ending only between two lines. Every message is posted with
// allowed_mentions {"parse": []}, so nothing in it can notify anyone, and
// flags SUPPRESS_EMBEDS, so no link shows a preview.
// The last message carries the buttons: one primary button per option in
// declared order, five to an action row, then a secondary Skip, and a
// secondary Seen for a request with reminders or escalation (ask-user.md
// §5); each custom_id is the bridge's 21-byte payload naming the question
// and the choice. Text prompts (several questions, multi-select) get only
// Skip (and Seen). The plan's notes (Plan.Notes: why an escalation step
// asks here, who has seen it), escaped, go under the instructions of the
// last message, without moving any line to another message, so a prompt
// takes as many messages whatever its notes. A DM target "@<user id>"
// opens the DM channel first (POST /users/@me/channels). Each message is
// handed to the engine, numbered by its part, as soon as Discord accepted
// it; the engine records it. Finish edits a message when its question
// ends: components removed, the part it showed rendered again from the
// plan with the same split (never read back from Discord) but without the
// instruction lines, its notes kept, and a bold status line added; a part
// that held only instructions shows its notes and the status line alone.
//
// Update edits an open prompt's message in place when what the question
// shows changes (someone pressed Seen): the part as Send would post it for
// the new plan, the new buttons on the last part. Remind posts a reminder
// as a reply to the prompt (message_reference with fail_if_not_exists
// false, so a prompt deleted meanwhile gets a plain message), and Delete
// deletes it when the question ends. All of them ping no one and show no
// embed; a message or channel that is gone counts as done for Update and
// Delete, as for Finish.
//
// # Standing answers
//
// A question asked with remember (ask-user.md §9) ends with the offer to
// keep its answer when Ending.Offer is set: Finish puts its keep buttons
// (secondary, custom_id "k1:<digest>:<index>") under the last part in
// place of the prompt's, and RemoveOffer edits the message to the plain
// ending once the offer closes. After a keep, ShowStanding posts the
// standing answer's message (engine.ViewStanding, escaped) in the channel
// or DM it was kept in, with a red Revoke button (custom_id "r1:<gen>"),
// and EditStanding edits it on a use, a revoke or its end. Presses on
// keep and Revoke buttons go to Inbox.Tap like any other; the presser
// alone sees the notice.
//
// # REST and rate limits
//
// Every REST call goes through a transport that moves discordgo's fixed
// https://discord.com/ endpoints to Config.APIURL, waits for a route
// bucket that X-RateLimit-Remaining/Reset-After said is empty (or for a
// global limit) only as long as the caller's context allows, and turns a
// 429 into a rate-limit error carrying retry_after (the longest of the
// body's retry_after and the X-RateLimit-Reset-After and Retry-After
// headers). discordgo's own limiter and its unbounded retry on 429 and 502
// are switched off: each call is made once and the engine retries, bounded
// and visibly, from the first part not posted. Refusals that repeating
// cannot fix (unknown channel, missing access or permissions, DMs closed,
// invalid form body, bad token) are engine.Permanent with Discord's
// message as the reason, so the question ends as undeliverable. Every
// error is scrubbed before it leaves the channel (redact.go): the bot token
// (which a proxy's error page may quote from the Authorization header) and
// the token segment of interaction and webhook URLs become "<token>".
//
// # Inbound: one gateway per token
//
// Discord sends every event to every gateway session of a bot, so Run
// keeps exactly one session across replicas: with internal/lease it holds
// the Coordinator lease "discord:gateway:<application id>" (TTL 10s;
// standbys try every 2s, so a dead holder is replaced within 12s), closes
// the session at once when the lease is lost, and reports StateStandby
// meanwhile; standbys still send over REST. Events seen twice around a
// hand-over are handled once: the engine records every interaction and
// message id with Coordinator.FirstSeen. Run owns every reconnect
// (discordgo's are off), resumes the session with backoff (internal/retry),
// hands the lease over when connecting keeps failing here, and treats
// close code 4004 (and a 401 from /users/@me) as "bad credentials":
// logged, shown by State, retried slowly, never fatal.
//
// A button press (INTERACTION_CREATE) goes to Inbox.Tap. Discord wants the
// first response within 3 seconds: when the engine answers within AckAfter
// (1.5s) the press is answered directly, else it is acknowledged with type
// 6 (deferred update, which leaves the message as it is) and answered
// afterwards. The presser always gets the notice privately (a type 4
// ephemeral message, or an ephemeral follow-up). The channel never edits
// the pressed message itself: a press that ends the question leaves every
// message to the engine's finisher, so every message is edited once per
// press, and a press on a question that had already ended has the
// finisher make sure the pressed message shows the end. A message (MESSAGE_CREATE, with the
// MESSAGE_CONTENT intent) goes to Inbox.Reply, with its message_reference
// as ReplyTo; the engine's answer (a correction, or "reply to the one you
// mean") is posted as a reply that pings nobody.
//
// When the engine could not reach Redis it answers "try again" (privately
// for a press, as a reply for a message) and forgets the event, so
// Discord's copy of it in another session is handled. A panic in an event
// handler is recovered and logged with its stack; a press whose Inbox.Tap
// panicked is still answered in time, with "try again".
//
// The fake Discord the tests drive discordgo against is in
// internal/discordtest.
package discord
