// Package discordtest is a fake Discord for tests: the REST API the bridge
// uses and a websocket gateway, on 127.0.0.1, behaving like Discord where
// the bridge can tell — the same request encodings, the same limits
// (content up to 2000 characters; at most 5 action rows of 5 buttons;
// labels up to 80 characters; custom_id up to 100), the same error bodies
// and status codes (400 Invalid Form Body with its nested errors, 401, 403
// Missing Access, 404 Unknown Channel/Message/Interaction/Webhook, 429 with
// retry_after and the X-RateLimit-* bucket headers), replies as Discord
// takes them (a message_reference to a message that is not in the channel
// is refused unless fail_if_not_exists is false, which posts a plain
// message; one naming another channel is refused), deletion of messages
// (204 and MESSAGE_DELETE; 404 Unknown Message for one already gone; 403
// Missing Permissions for another user's, the bot having no Manage
// Messages), the 3-second deadline of an interaction's first response,
// and a gateway that says HELLO, checks IDENTIFY (close 4004 for a wrong
// token), sends READY, acknowledges heartbeats, and resumes (RESUMED, or
// INVALID SESSION for an unknown session). Every gateway session on the
// token receives every event, as on Discord.
//
// A test plays the people: Click presses a button (INTERACTION_CREATE),
// Post writes a message and Reply answers one (MESSAGE_CREATE with a
// message_reference). It reads what the bot did through Messages, Message,
// Deleted (a message the bot deleted, as it was) and Interaction, and
// breaks the connection with DropSessions. Requests lists every REST call
// with what it said of a message (content, allowed_mentions, flags, and
// the message_reference of a reply), so a test can check that no call
// could ping anyone (Sent.Quiet) or unfurl a link (Sent.SuppressesEmbeds);
// Message.Pings and Message.Unfurls say what a message as shown would ping
// or preview. As on Discord, an edit keeps a message's flags unless it
// sets them, and then changes only SUPPRESS_EMBEDS.
//
// Point discordgo at it with the discord package's Config.APIURL = URL:
// REST paths are /api/v9/… (discordgo's version; /api/v10/ works too) and
// GET /api/v9/gateway returns the fake's own ws:// URL.
package discordtest
