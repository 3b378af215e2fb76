package textparse

import (
	"strconv"
	"strings"
	"time"
)

// keepCommand is the command understood in every language: "/keep 1h".
const keepCommand = "keep"

// maxKeepChars bounds a reply read as a keep: a word and a duration.
const maxKeepChars = 64

// ParseKeep reads a reply that keeps an answer (ask-user.md §9): a keep
// word of words ("keep"; Thai "จำไว้"), or the command "/keep", then a
// duration: a whole number and a unit, m, h or d ("keep 1h", "keep 24h",
// "keep 7d", "keep 90 m"). Words compare as labels do (any case, any
// normalisation, blanks collapsed). ok is false for any other reply;
// whether the duration is one offered is the caller's to check.
func ParseKeep(text string, words []Words) (d time.Duration, ok bool) {
	text = trim(text)
	if text == "" || len(text) > maxKeepChars*4 {
		return 0, false
	}
	fields := strings.Fields(text)
	if len(fields) < 2 || len(fields) > 3 {
		return 0, false
	}
	head, amount := fields[0], strings.Join(fields[1:], "")
	if !isKeepWord(head, words) {
		return 0, false
	}
	return keepDuration(strings.ToLower(amount))
}

// isKeepWord reports whether s is "/keep" or a keep word of words
// (English's when words is empty).
func isKeepWord(s string, words []Words) bool {
	if strings.EqualFold(s, "/"+keepCommand) {
		return true
	}
	if len(words) == 0 {
		words = []Words{EnglishWords()}
	}
	k := foldKey(s)
	for _, w := range words {
		for _, kw := range w.Keep {
			if foldKey(kw) == k {
				return true
			}
		}
	}
	return false
}

// keepDuration reads "<n>m", "<n>h" or "<n>d"; n is 1 to 9999.
func keepDuration(s string) (time.Duration, bool) {
	if len(s) < 2 {
		return 0, false
	}
	unit := map[byte]time.Duration{'m': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}[s[len(s)-1]]
	if unit == 0 {
		return 0, false
	}
	n, err := strconv.Atoi(s[:len(s)-1])
	if err != nil || n < 1 || n > 9999 || strings.HasPrefix(s, "+") {
		return 0, false
	}
	return time.Duration(n) * unit, true
}
