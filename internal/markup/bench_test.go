package markup

import "testing"

// BenchmarkTelegram3000 parses a context of MaxChars characters of mixed
// Markdown and renders it for Telegram, cut for a message with room kept
// for a status line.
func BenchmarkTelegram3000(b *testing.B) {
	src := mixed(MaxChars)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		Parse(src).Telegram(3096)
	}
}
