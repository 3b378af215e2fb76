// Package discord is the Discord channel of the bridge, on
// github.com/bwmarrin/discordgo: it shows questions in Discord channels and
// DMs and brings the answers back from button presses and replies.
//
// # Sending
//
// Send renders a plan (askbridge.BuildPlan with Discord's capabilities) as
// Discord markdown with every piece of agent text escaped (a backslash
// before each markup character, "<" and "@" included, so <@id>, <@&role>,
// @everyone and @here stay text), cut into messages of at most 2000
// characters (room is kept for the status line), and posts them with
// allowed_mentions {"parse": []}, so nothing in them can notify anyone.
// The last message carries the buttons: one primary button per option in
// declared order, five to an action row, then a secondary Skip; each
// custom_id is the bridge's 21-byte payload naming the question and the
// choice. Text prompts (several questions, multi-select) get only Skip. A
// DM target "@<user id>" opens the DM channel first (POST
// /users/@me/channels). Finish edits a message when its question ends:
// components removed, the text kept, a bold status line added.
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
// are switched off; the engine retries, bounded and visibly. Refusals that
// repeating cannot fix (unknown channel, missing access or permissions,
// DMs closed, invalid form body, bad token) are askbridge.Permanent with
// Discord's message as the reason, so the question ends as undeliverable.
//
// # Inbound: one gateway per token
//
// Discord sends every event to every gateway session of a bot, so Run
// keeps exactly one session across replicas: it holds the Store lease
// "discord:gateway:<application id>" (TTL 10s, renewed every third of it;
// standbys try every 2s, so a dead holder is replaced within 12s), closes
// the session at once when the lease is lost, and reports StateStandby
// meanwhile; standbys still send over REST. Events seen twice around a
// hand-over are handled once: the engine records every interaction and
// message id with Store.FirstSeen. Run owns every reconnect (discordgo's
// are off), resumes the session with backoff, and treats close code 4004
// (and a 401 from /users/@me) as "bad credentials": logged, shown by
// State, retried slowly, never fatal.
//
// A button press (INTERACTION_CREATE) goes to Inbox.Tap. Discord wants the
// first response within 3 seconds: when the engine answers within AckAfter
// (1.5s) the press is answered directly — type 7 (update the message:
// buttons gone, status line) when the question has ended, else a type 4
// ephemeral notice; when the engine is slower (Redis slow), the press is
// acknowledged with type 6 (deferred update) and answered afterwards by
// editing @original and an ephemeral follow-up. The presser always gets
// the notice privately. A message (MESSAGE_CREATE, with the
// MESSAGE_CONTENT intent) goes to Inbox.Reply, with its message_reference
// as ReplyTo; the engine's answer (a correction, or "reply to the one you
// mean") is posted as a reply that pings nobody.
//
// The fake Discord the tests drive discordgo against is in discordtest.
package discord
