// Package textparse reads a person's typed reply to a prompt of questions:
// strings in, a typed [Outcome] out. It implements ask-user.md §3 "Text
// replies" and imports nothing from the project.
//
// # Data flow
//
// The engine converts the questions of a request into [Question] values (id,
// header, declared option labels, multi-select flag) and passes them with the
// message text to [Parse]. Parse says what the message is:
//
//   - [Empty]: nothing but blanks; ignore it.
//   - [Skip]: decline the whole prompt (no_answer, reason skipped).
//   - [Answer]: every question answered; Outcome.Answers maps each question
//     id to its values, ready for the result's answers.answers.
//   - [Incomplete]: some questions unanswered; Outcome.Missing names them and
//     [Correction] renders the one short reply the bridge sends back while
//     the question stays open.
//
// # Rules
//
// Before anything else the text is cut at [MaxTextBytes], invalid UTF-8 is
// replaced with U+FFFD, and CRLF, CR and the Unicode line separators become
// "\n". "Blank" below means Unicode white space, control characters and the
// invisible zero-width space, word joiner and byte-order mark.
//
// Skip: the whole message "skip" or "/skip", in any case, with blanks around
// and trailing "." or "!" ignored; "/skip@botname" (Telegram's form in
// groups) too. "skip this one" is free text. When a question declares an
// option named Skip, a bare "skip" picks that option and only "/skip"
// declines.
//
// One answer is normalised like this: blanks are trimmed; all digits (ASCII
// or full-width, leading zeros allowed, one trailing "." or ")" allowed) in
// 1..option count pick that option's declared label; otherwise a text equal
// to a label picks it, comparing with Unicode simple case folding plus ß =
// "ss", collapsing runs of blanks, ignoring emoji variation selectors, and
// also accepting the label without a " (Recommended)" suffix; otherwise the
// trimmed text itself is the free-text answer. So "0", "7" (of 4), "-1" and
// "2.5" are free text. A chosen option is always the label exactly as
// declared.
//
// One question: the whole message is the answer. A multi-select question
// first tries the whole message as one label (labels may contain commas);
// otherwise it splits on "," ";" and newlines (and the full-width comma and
// semicolon, the ideographic comma and the Arabic comma). Before a part is
// read alone, the longest run of parts that names a label is taken as that
// label, so with labels "Red, dark" and "Blue" the reply "Red, dark, Blue"
// picks both. Each remaining part is a number, a label, several
// space-separated in-range numbers ("1 3"), or free text; empty parts are
// dropped and repeats (compared like labels) are dropped, keeping the first.
// A message keyed by the question's id or header ("Target: staging") has its
// key dropped when the value names declared options only.
//
// Several questions: one line per question, keyed or positional. A keyed line
// is "key: value", "key = value" or "key - value" (also with an en or em
// dash, a full-width colon or equals sign, and "1. value" or "1) value" for
// a number key); the key is the question number, id or header, in any case.
// Separators are tried left to right and the first that follows a known key
// splits the line, so a line whose prefix is not a key ("14:30",
// "https://example.com", "C:\dir") is positional text. Even after a number
// key, a colon in a time ("1:30"), a URL or a path, and a dash between
// digits ("1-2 weeks", "2026-05-01") do not split. Positional lines fill
// the questions not keyed, in order; if the non-blank ones are exactly as
// many as those questions, blank lines are ignored, otherwise every blank
// line holds a place (leaving a line empty skips a question but keeps the
// later answers aligned). Extra positional lines continue the last free
// question's answer; when every question is keyed, unkeyed lines are
// ignored. A single-select question keyed twice keeps the first answer; a
// multi-select one gathers both. Each line is normalised as above, and a
// multi-select question's line is split like a one-question reply. A per-line
// "skip" is free text: skip declines the whole prompt or nothing. A whole
// reply on one line ("Staging, Small") is not split across questions; it
// answers the first question and the correction asks for one line each.
//
// # Cost
//
// Parse does work linear in the text, whatever the text: it reads at most
// [MaxTextBytes], looks for a line's key no further than the longest key,
// and joins multi-select parts into a candidate label no further than the
// longest label. A hostile message of that size parses in milliseconds.
package textparse
