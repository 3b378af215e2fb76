package textparse

import "unicode"

// parseNumber reads an option or question number: decimal digits of any one
// script (ASCII "2", Thai "๒", Arabic-Indic "٢", Extended Arabic-Indic "۲",
// Devanagari "२", full-width "２" as Chinese and Japanese keyboards type,
// and every other run of Unicode category Nd), leading zeros allowed. Digits
// of two scripts in one number ("1๒") are not a number. With dotted set, one
// trailing "." or ")" is allowed too, as people copy the "1." of a numbered
// list. Large numbers saturate rather than overflow; they are out of range
// either way.
func parseNumber(s string, dotted bool) (int, bool) {
	if dotted && len(s) > 1 && (s[len(s)-1] == '.' || s[len(s)-1] == ')') {
		s = s[:len(s)-1]
	}
	if s == "" {
		return 0, false
	}
	const saturated = 1 << 20
	n := 0
	var script rune = -1 // the zero of the first digit's run
	for _, r := range s {
		d, zero, ok := digit(r)
		if !ok || (script >= 0 && zero != script) {
			return 0, false
		}
		script = zero
		n = min(n*10+d, saturated)
	}
	return n, true
}

// digit returns the value of a Unicode decimal digit (category Nd) and the
// zero of its script's run of ten, which tells two scripts apart. Every Nd
// range of the Unicode tables is made of whole runs "0" to "9" in code point
// order, each starting at its zero (TestDigitRuns checks this against the
// character names), so a digit's value is its distance from the range start
// modulo 10.
func digit(r rune) (value int, zero rune, ok bool) {
	if r >= '0' && r <= '9' {
		return int(r - '0'), '0', true
	}
	if r < 0x80 || !unicode.Is(unicode.Nd, r) {
		return 0, 0, false
	}
	for _, rg := range unicode.Nd.R16 {
		if lo, hi := rune(rg.Lo), rune(rg.Hi); r >= lo && r <= hi {
			v := (r - lo) % 10
			return int(v), r - v, true
		}
	}
	for _, rg := range unicode.Nd.R32 {
		if lo, hi := rune(rg.Lo), rune(rg.Hi); r >= lo && r <= hi {
			v := (r - lo) % 10
			return int(v), r - v, true
		}
	}
	return 0, 0, false
}

// isDigit reports whether r is a decimal digit of any script.
func isDigit(r rune) bool {
	_, _, ok := digit(r)
	return ok
}
