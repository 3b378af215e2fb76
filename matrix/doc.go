// Package matrix is Matrix as a platform (ask-user.md §11): targets
// "matrix:!room:server", answerers "matrix:@user:server", on mautrix's
// client (maunium.net/go/mautrix).
//
// # Prompts
//
// A single-select question (engine.ModeButtons) is a disclosed poll. One
// event has one type, and two polls would show as two, so it is sent
// with the type every poll-capable client renders today,
// org.matrix.msc3381.poll.start (Element Web's matrix-js-sdk takes either
// type; Element X's matrix-rust-sdk renders this one; mautrix defines
// it), and its content carries both forms: the poll block under
// org.matrix.msc3381.poll.start and m.poll.start, one value, and every
// text (the fallback, the question, each answer) under
// org.matrix.msc1767.text and m.text, so a client that reads the stable
// keys only (matrix-js-sdk reads either key of each pair, Element
// Android prefers m.poll.start) renders the same poll. Its end does the
// same: org.matrix.msc3381.poll.end beside m.poll.end. Its answers are
// the plan's buttons, each answer id the button's payload, so a vote maps
// back to a tap; its text fallback (body and the text keys) is the whole
// prompt with numbered options, for clients without polls. Every other prompt (engine.ModeText) is an m.text
// message with an org.matrix.custom.html formatted_body. Everything the
// agent wrote is escaped, links to Matrix permalinks lose their link and
// matrix.to URLs are broken with a word joiner (never a pill), and
// m.mentions is empty, so nobody is pinged. A prompt is one event (part 0).
//
// Each event a prompt or its end takes has a transaction id derived from
// the question id, the part and the kind ("ab-" and 24 hex digits of a
// SHA-256), so a send retried after a lost reply, on the same access
// token, is recognised by the homeserver and posted once (Dendrite keeps
// them in memory, per access token, room and event type).
//
// # The end
//
// Finish ends a poll (org.matrix.msc3381.poll.end with m.poll.end in its
// content, relating to the poll, with the status line as its text) and edits it (m.replace) so its text
// fallback shows the status line, keeping the answers it was posted with;
// a text prompt is edited to its text
// without the instructions and with the status line. Safe to repeat.
//
// # Seen, quorum and reminders
//
// A 👀 reaction (m.reaction, an m.annotation of the prompt, key U+1F440
// with or without U+FE0F) by a person who may answer marks the question
// seen as the reply word "seen" does, through the engine's SeenMarker:
// reminders and escalation stop, the agent gets an acknowledged event and
// the prompt is edited. Like the reply word it counts only on a question
// with reminders or escalation. Nothing is said back to a reaction: one
// from someone who may not answer, on an ended prompt or after another's
// Seen changes nothing and stays unanswered; other keys are ignored
// before any mark is taken. The prompt's text does not mention the
// reaction, as it does not mention the word.
//
// Update edits an open prompt (m.replace) to show its new plan: "Seen by
// Alice" once someone replied "seen", voted Seen or reacted 👀, a quorum question's
// tally ("Votes: 1 of 2 needed — …") after every vote, both after the
// instructions. A poll's edit changes its text fallback only: it keeps the
// answers it was posted with (read back from the homeserver), so every
// vote still maps to its choice; the Seen answer stays in the poll, and a
// Seen vote after someone has seen the question is told so. The text
// never offers Seen. The edit's transaction id is derived from the
// question, the part and a hash of the new content, so the same update
// twice posts one edit.
//
// Remind posts a reminder as an m.notice replying to the prompt in its
// thread, pinging nobody (m.mentions empty), with a transaction id derived
// from the prompt event and a hash of its text. Delete redacts it (the
// engine's finisher deletes every reminder when the question ends); an
// event the homeserver does not know counts as deleted.
//
// # Who may answer
//
// A question with answerers ("matrix:@alice:server") takes votes and
// replies from those people only. Anyone else's vote leaves it open and
// gets the engine's "not for you" notice in the prompt's thread (it does
// not repeat their answer); their text replies are not taken and get no
// notice, as the engine leaves alone the text of people who may not
// answer. A quorum question takes one vote per answerer and ends when
// enough agree.
//
// # Answers
//
// Run syncs in one replica at a time: the syncer lease (LeaseTTL 4 s,
// renewed every second: a standby takes over within about 5 s), the since
// token kept in the store (TextCursor, fenced by the lease) and advanced
// only once every event of a batch was handled, and each event claimed
// with a first-seen mark and settled once handled, so a failover neither
// loses nor repeats a vote. A poll response (unstable or stable) from a
// person is an engine tap; a 👀 reaction is a Seen mark; a text message replying to a prompt
// (m.in_reply_to) or in its thread (m.thread) is a text reply. The
// engine's notices go in the prompt's thread, as m.notice; a tap's notice
// is told once per person, question and notice (a late voter reads
// "already answered" once). An invitation from a room whose server is in
// Config.AutoJoin is accepted; others are ignored.
//
// # Refusals
//
// M_LIMIT_EXCEEDED (429) is a rate limit with retry_after_ms, held for the
// room here and shared with the other replicas through the store; any
// other 4xx (M_FORBIDDEN, M_NOT_FOUND, an unknown room) is permanent with
// the homeserver's words, M_UNKNOWN_TOKEN also makes the state "bad
// credentials"; 5xx and network trouble are temporary. A room with
// m.room.encryption state is refused before anything is sent: the bridge
// does not serve end-to-end encrypted rooms yet.
package matrix
