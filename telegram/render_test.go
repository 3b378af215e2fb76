package telegram

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestPackLines packs random paragraphs of random lines, some of them
// blocks with newlines inside, and checks every rule of a prompt's parts:
// each within the limit, the lines whole and in order, a paragraph that
// fits a part never cut, and no part starting or ending with a blank line.
func TestPackLines(t *testing.T) {
	t.Parallel()
	const limit = 200
	rng := rand.New(rand.NewPCG(1, 2))
	rounds := 500
	if testing.Short() {
		rounds = 100 // the fast tier; the full tier packs all 500
	}
	for round := range rounds {
		var lines []promptLine
		var paras [][]string
		for p := range 1 + rng.IntN(30) {
			if p > 0 {
				lines = append(lines, promptLine{})
			}
			var para []string
			for l := range 1 + rng.IntN(6) {
				// Up to a whole part, markup and entities included, at
				// times a block of several lines.
				long := limit - 20
				if round%2 == 0 {
					long = 30 // many short lines: parts filled to the last character
				}
				text := strings.Repeat("x", rng.IntN(long))
				if rng.IntN(4) == 0 {
					text = "<b>" + text + "</b>\n<pre>&amp;</pre>"
				}
				html := fmt.Sprintf("%d.%d %s", p, l, text)
				para = append(para, html)
				lines = append(lines, promptLine{html: html, instruction: rng.IntN(3) == 0})
			}
			paras = append(paras, para)
		}
		parts := packLines(lines, limit)
		var got []string
		for i, part := range parts {
			joined := joinLines(part, false)
			if n := plainLen(joined); n > limit {
				t.Fatalf("round %d: part %d has %d characters", round, i, n)
			}
			if part[0].html == "" || part[len(part)-1].html == "" {
				t.Fatalf("round %d: part %d starts or ends with a blank line", round, i)
			}
			for _, l := range part {
				if l.html != "" {
					got = append(got, l.html)
				}
			}
		}
		if want := slices.Concat(paras...); !slices.Equal(got, want) {
			t.Fatalf("round %d: lines lost, doubled or reordered", round)
		}
		for _, para := range paras {
			if plainLen(strings.Join(para, "\n")) > limit {
				continue
			}
			in := slices.IndexFunc(parts, func(part []promptLine) bool {
				return slices.ContainsFunc(part, func(l promptLine) bool { return l.html == para[0] })
			})
			if !strings.Contains(joinLines(parts[in], false), strings.Join(para, "\n")) {
				t.Fatalf("round %d: a paragraph that fits a part was cut: %.12q", round, para[0])
			}
		}
	}
}

// TestJoinLinesEnded: an ended part leaves out the instructions and the
// blank lines they leave behind; a part of instructions only is empty.
func TestJoinLinesEnded(t *testing.T) {
	t.Parallel()
	q := promptLine{html: "<b>[H]</b> Q?"}
	o := promptLine{html: "  1. A"}
	free := promptLine{html: "<i>Free.</i>", instruction: true}
	closing := promptLine{html: "Reply.", instruction: true}
	tests := []struct {
		name  string
		lines []promptLine
		want  string
	}{
		{"question then instructions", []promptLine{q, o, {}, free, closing}, "<b>[H]</b> Q?\n  1. A"},
		{"instructions only", []promptLine{free, closing}, ""},
		{"no instructions", []promptLine{q, {}, o}, "<b>[H]</b> Q?\n\n  1. A"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := joinLines(tt.lines, true); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	if got := withStatus("", "Expired"); got != "<b>Expired</b>" {
		t.Errorf("a part of instructions only shows %q", got)
	}
}
