// Package web is the bridge's own web page as a channel (target "web"): a
// page embedded in the binary, a small JSON API behind it, and a stream of
// Server-Sent Events that keeps every open page current.
//
// Data flows like this. The engine sends a question for target "web" through
// [Channel.Send], which posts nothing: it hands the engine one message
// reference (platform "web", chat "web", message = the question id, part 0),
// and the engine records it, so the question is indexed as shown in the web
// chat. The page lists those questions with GET api/questions (the store's
// open questions of the web chat), learns of new ones and of ends from GET
// api/events (the store's events stream, tailed once per process and fanned
// out to every page), and answers with POST api/questions/{id}/answer, which
// goes to the engine's Submit, the one path every answer takes: the engine
// decides and says what became of the answer, and the page turns that into a
// status code. When a question ends, the engine calls [Channel.Finish] with
// everything the entry needs (engine.Ending), which appends a compact entry
// to the timeline kept in Redis (see [History]); GET api/history reads it
// back, newest first.
//
// Several places (ask-user.md §5): the page is a place like any other. A
// question is the page's when one of its places (Record.Places) has the
// target "web", whichever place that is: the first (the request's `to`) or
// one an escalation step adds later, which the engine shows by the same
// Send. A place of an escalation step is the page's only once the step is
// taken (Record.Reached: its timer fired, or its prompt recorded): before,
// the page neither lists the question nor streams its events, and its
// answer and Seen get 404 as for an unknown id, so the page can neither
// answer ahead of the step nor stop it. GET api/questions lists it once
// its prompt is recorded; who may
// answer on the page is decided for that place (Record.MayAnswerIn), and
// an answer says it was given there. Each listed question also carries
// whether it offers Seen (a request with reminders or escalation), who has
// seen it, the notes of its prompt on the page (Record.PlanFor: why an
// escalation step brought it here, who has seen it), the other places it
// is open in (those with a prompt posted: name and platform, never who may
// answer there) and how many reminders the page has shown. The last two
// are read from the question's recorded messages, one more read per
// question, made only for a question in several places or with reminders.
// The events stream carries the events of every question with a place on
// the page that has been reached, found by reading the question (once per
// question and process, but again while its place awaits its step),
// since the end of a question shown first elsewhere, a Seen given on
// another platform, a reminder and an escalation step do not name the
// page. The page shows reminded, escalated, acknowledged, and undeliverable
// with `to` (one place could not be reached; the question stays open) as
// what happened to the question, on its card and, for as long as the page
// stays open, on its timeline entry.
//
// Seen: POST api/questions/{id}/seen with the body {} is the page's Seen,
// by the same rules as an answer (the token; JSON from one of the page's
// origins; a question the page shows, whose place on the page the page
// may answer in). It goes to the engine's Acknowledge: reminders and
// escalation stop and the question stays open. The reply is JSON like an
// answer's: the notice as a code (notice) and its text in the question's
// language (message, locale); 200 when this Seen marked it, 409 when
// someone had (AlreadySeen) or the question has ended (then outcome and
// status say how), 400 for a question that offers no Seen (Unknown), 403
// (NotForYou) and 404 as for an answer. The engine then publishes an
// acknowledged event, on which every page lists the questions again: the
// card shows "Seen by …" and no Seen button, so [Channel.Update] has
// nothing to do. A reminder on the page ([Channel.Remind]) is a message
// reference the engine records as the question's; the card counts them.
//
// Quorum (ask-user.md §6): on a question that needs several people to
// agree, the page is one voter, "web:web", when the answerers name it. Its
// answer is a vote: 200 with the notice Voted (and its count, "Vote
// recorded (1 of 2 needed).") or Abstained (a skip) and open: true while
// the question stays open; 409 with AlreadyVoted and open: true for a
// second vote, since a person's first vote stands; 200 with the outcome,
// as for any answer, when its vote decides it (answered, or no_quorum
// when agreement has become impossible). GET api/questions gives each
// quorum question its quorum, its tally line (taken out of the notes),
// the tally by answer (labels only; free text is "own words"), the
// abstentions, who has voted (names, never their answers), and whether
// the page has voted and how: the card then shows the page's vote and
// takes no other. The events stream carries each vote (voted, with by)
// and the end without agreement (no_quorum), on which the page lists the
// questions again; the timeline entry keeps every vote, who and what.
//
// Order: GET api/questions lists the open questions in the order the
// agents asked them (each with its asked time), not the order replicas
// took them up in, which concurrent handling can swap. The time of an ask
// is its requests stream entry; engine.Record does not carry the entry
// the store keeps with the question, so the page reads it only from the
// id of a question asked without one (named after its entry), and places
// any other by when it was taken up (Record.Created).
//
// What stays in the browser: the page keeps its own free-text answers in
// the browser's localStorage, by question id, and shows them on those
// questions' timeline entries there; the timeline the bridge keeps says
// only "own words". It also keeps whether the person opted in to
// notifications of new questions while the tab is in the background.
//
// Answer links (ask-user.md §10): with Config.Links (and PublicURL), the
// handler also serves the page of an answer link, BasePath+"a/<token>"
// (link.go, linkpage.go): one question for one person, opened from an
// email with no login. It is server-side HTML (html/template, the
// embedded linkpage/ directory) that needs no script: GET reads the
// question (Questions.Get) and shows it as a form in its locale, or how
// it ended; a POST with the page's anti-forgery token
// (link.Signer.FormToken) goes to the engine's SubmitRecord as the
// link's person (Via "link"), and 303s back to the page. GET and HEAD
// only read, whoever asks (mail filters, unfurlers and prefetch open
// every link). A link that points nowhere gets one 404 page and a refused
// POST one 403 page, each the same bytes whatever the reason. The path has
// its own wall (serveLink): the signed token stands for the API's token
// and for LocalOnly, but the Host must be a loopback name or PublicURL's
// host, and its responses carry a stricter CSP (no script at all,
// form-action 'self'), no-referrer, noindex and no-store.
//
// Everything the page shows comes from Redis, so any replica can serve it
// and a question answered on one replica's page ends on all of them.
//
// Words (ask-user.md §7): every word the page shows comes from the locale
// catalogs. GET words?lang=<the browser's languages> returns the page's
// messages (Web…, the shared Button… and Status… ones, and the words that
// mark a recommended option, WordsRecommended) of every shipped catalog,
// and the catalog the page's own text follows, matched to the browser's
// languages in their order (English when none has a catalog).
// Each question's card is worded in the question's own catalog (the API's
// locale field), whatever the page's: a Thai question reads in Thai on an
// English page. The API gives codes for decisions (outcome, notice) beside
// the words for people (status, message), which are in the question's
// language; the page never decides anything from words.
//
// Context: a question's Markdown context is sent as sanitised HTML
// (internal/markup: paragraphs, emphasis, code, lists and http(s)/mailto
// links that open in a new tab with rel="noopener noreferrer"), in its own
// field, contextHTML, the only thing the page inserts as HTML. The timeline
// keeps the Markdown and renders it again each time it is read.
//
// Security: the page itself holds no data (nor do its words); every api/
// request needs the token when one is configured (an Authorization: Bearer header; the events
// stream may take it as a token query parameter, since EventSource cannot set
// headers). Without a token the handler serves only requests made on this
// machine (LocalOnly): they must name a loopback host (localhost,
// 127.0.0.0/8, [::1]), so a site whose name resolves to this machine (DNS
// rebinding) gets 421, and they must carry no header a reverse proxy adds
// (Forwarded, X-Forwarded-For, X-Real-IP, Via), so a proxy that forwards
// to 127.0.0.1 gets 403 naming ASKUSER_HTTP_TOKEN. Answers and Seens are POSTs with a JSON
// body from one of the origins the page is served at (Config.Origins, never
// the request's own Host); nothing changes state on GET. At most
// Config.MaxStreams event streams are open at once. Responses carry a strict
// Content-Security-Policy and agent text is only ever inserted into the page
// as text, but for the context, which goes through markup's sanitiser. Handler.Guard puts the bridge's other endpoints (/mcp, /metrics,
// /readyz) behind the same wall. docs/security.md has the whole picture.
package web
