// Package textparse reads a person's typed reply to a prompt of questions:
// strings in, a typed [Outcome] out. It implements ask-user.md §3 "Text
// replies", understood in every shipped language at once as §7 asks, and
// imports nothing from the project.
//
// # Data flow
//
// The engine converts the questions of a request into [Question] values (id,
// header, declared option labels, multi-select flag) and passes them with the
// message text to [ParseWith], with [Options] carrying the reply [Words] of
// every language it ships (taken from its message catalogs) and whether the
// question may be acknowledged. [Parse] is ParseWith with English words only.
// The result says what the message is:
//
//   - [Empty]: nothing but blanks; ignore it.
//   - [Skip]: decline the whole prompt (no_answer, reason skipped).
//   - [Acknowledge]: the person saw the question (ask-user.md §5); only
//     when Options.Acknowledge is set.
//   - [Answer]: every question answered; Outcome.Answers maps each question
//     id to its values, ready for the result's answers.answers.
//   - [Incomplete]: some questions unanswered; Outcome.Missing names them,
//     for the one short reply the bridge sends back (in the prompt's
//     language, with an [Example] line) while the question stays open.
//
// # Rules
//
// Before anything else the text is cut at [MaxTextBytes], invalid UTF-8 is
// replaced with U+FFFD, and CRLF, CR and the Unicode line separators become
// "\n". "Blank" below means Unicode white space, control characters and the
// invisible zero-width space, word joiner and byte-order mark.
//
// Comparing: a reply, a label, a key and a reply word are compared by a fold
// key (foldKey in fold.go): the text in Unicode NFC, blanks trimmed and runs
// of them collapsed, emoji variation selectors and zero-width spaces
// ignored, Unicode simple case folding plus ß = "ss", and the Thai marks
// above and below one consonant in one order. So these compare equal: "é"
// precomposed and "e" plus U+0301; combining marks of different classes in
// either order (Thai "กุ้" as ก + ุ + ้ or ก + ้ + ุ, which NFC reorders); a
// Thai above vowel and tone mark in either order ("กั้" as ก + ั + ้ or
// ก + ้ + ั, which NFC keeps apart since the vowel has combining class 0);
// "ใช่ครับ" with and without a zero-width space inside. These do not:
// full-width "Ａ" and "A" (NFKC is not applied), "ﬁ" and "fi", Thai ำ typed
// before a tone mark ("นำ้") and after it ("น้ำ"), "Evry" and "Évry".
// Thai has no letter case and no spaces between words, so folding leaves
// Thai letters as they are and only the blanks a person typed collapse.
//
// Reply words: the skip, acknowledge and recommended words of every
// language in Options.Words count at once, whatever the language the prompt
// was shown in; with none given they are the English "skip", "seen" and
// "Recommended". The commands "/skip" and "/seen" work in every language.
//
// Skip: the whole message a skip word ("skip"; Thai "ข้าม", "ข้ามไป") or
// "/skip", compared as above, with blanks around and trailing "." or "!"
// ignored; "/skip@botname" (Telegram's form in groups) too. "skip this one"
// is free text. When a question declares an option a skip word names (an
// option "Skip" or "ข้าม"), that bare word picks the option and only "/skip"
// declines. Acknowledge is read the same way from the acknowledge words
// ("seen"; Thai "รับทราบ", "เห็นแล้ว") and "/seen", only when
// Options.Acknowledge is set; otherwise they are ordinary text. Skip wins
// when a word is both.
//
// One answer is normalised like this: blanks are trimmed; a number — decimal
// digits of one script (ASCII "2", Thai "๒", Arabic-Indic "٢", Extended
// Arabic-Indic "۲", Devanagari "२", full-width "２", any Unicode Nd run),
// leading zeros allowed, one trailing "." or ")" allowed — in 1..option
// count picks that option's declared label; digits of two scripts ("1๒")
// are not a number. Otherwise a text whose fold key equals a label's picks
// it; a label ending in a recommended word in parentheses ("Staging
// (Recommended)", "สเตจจิ้ง (แนะนำ)") is also picked by the text without
// that suffix, or with the suffix of any language, written with ASCII or
// full-width parentheses, with or without a blank before them ("Staging
// （แนะนำ）", "สเตจจิ้ง(แนะนำ)"); a label without the suffix is not picked
// by a text that adds one. Otherwise the trimmed text itself is the
// free-text answer, exactly as typed: it is not normalised, since it goes to
// the agent as the person wrote it. So "0", "7" (of 4), "-1" and "2.5" are
// free text. A chosen option is always the label exactly as declared.
//
// One question: the whole message is the answer. A multi-select question
// first tries the whole message as one label (labels may contain commas);
// otherwise it splits on "," ";" and newlines (and the full-width comma and
// semicolon, the ideographic comma and the Arabic comma). Before a part is
// read alone, the longest run of parts that names a label is taken as that
// label, so with labels "Red, dark" and "Blue" the reply "Red, dark, Blue"
// picks both. Each remaining part is a number, a label, several
// blank-separated words each an in-range number or a whole label ("1 3",
// "eu us", Thai "๑ ๓" or "แดง เขียว", since Thai lists are usually
// separated by spaces), or free text; empty parts are dropped and repeats
// (compared like labels) are dropped, keeping the first.
// A message keyed by the question's id or header ("Target: staging") has its
// key dropped when the value names declared options only.
//
// Several questions: one line per question, keyed or positional. A keyed line
// is "key: value", "key = value" or "key - value" (also with an en or em
// dash, a full-width colon or equals sign, and "1. value" or "1) value" for
// a number key); the key is the question number (in the digits of any
// script, "๒: ใช่"), id or header, compared like labels.
// Separators are tried left to right and the first that follows a known key
// splits the line, so a line whose prefix is not a key ("14:30",
// "https://example.com", "C:\dir") is positional text. Even after a number
// key, a colon in a time ("1:30", "๑:๓๐"), a URL or a path, and a dash
// between digits ("1-2 weeks", "2026-05-01", "๑-๒") do not split.
// Positional lines fill the questions not keyed, in order; if the non-blank ones are exactly as
// many as those questions, blank lines are ignored, otherwise every blank
// line holds a place (leaving a line empty skips a question but keeps the
// later answers aligned). Extra positional lines continue the last free
// question's answer; when every question is keyed, unkeyed lines are
// ignored. A single-select question keyed twice keeps the first answer; a
// multi-select one gathers both. Each line is normalised as above, and a
// multi-select question's line is split like a one-question reply. A skip
// word on one line of several is free text: skip declines the whole prompt
// or nothing. A whole
// reply on one line ("Staging, Small") is not split across questions; it
// answers the first question and the correction asks for one line each.
//
// # Cost
//
// Parse does work linear in the text, whatever the text: it reads at most
// [MaxTextBytes], looks for a line's key no further than the longest key,
// joins multi-select parts into a candidate label no further than the
// longest label, and compares the whole message with the reply words only
// when it is short enough to be one. Normalisation works on one segment
// (a character and the marks that may combine with it) at a time. A hostile
// message of that size parses in milliseconds.
package textparse
