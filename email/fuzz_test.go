package email

import (
	"bytes"
	"mime"
	"net/mail"
	"slices"
	"strings"
	"testing"
	"time"

	gomail "github.com/emersion/go-message/mail"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
)

// FuzzCompose: whatever an agent writes in a question, its header, an
// option or the context, the email has exactly the bridge's header
// fields (no line of agent text becomes a header), its subject reads back
// as the one line made of the question, and its HTML part holds no
// markup of the agent's.
func FuzzCompose(f *testing.F) {
	f.Add("Deploy", "Where should v2.3 go?", "Staging (Recommended)", "Release **v2.3** <script>x</script>")
	f.Add("X\r\nBcc: eve@example.com", "Q\nSubject: spoof", "<img src=x onerror=alert(1)>", "[a](javascript:alert(1))")
	f.Add("ติดตั้ง", "ควรติดตั้งที่ไหน?", "สเตจจิง", "=?utf-8?q?=41?=")
	f.Fuzz(func(t *testing.T, header, question, label, context string) {
		p := engine.Plan{ID: "q-fuzz", Mode: engine.ModeText, Locale: "en", Intro: "Question for you:", Context: context,
			Sections: []engine.Section{{ID: "a", Header: header, Question: question, Options: []askbridge.Option{{Label: label, Description: context}}}}}
		l, err := render(promptView(p, goldenLink))
		if err != nil {
			t.Fatal(err)
		}
		env := envelope{From: &gomail.Address{Name: "Ask Bridge", Address: "ask@bridge.example"}, To: alice,
			MessageID: messageID("q-fuzz", 0, "prompt", "bridge.example"), ReplyTo: "x@bridge.example", Date: time.Unix(1_800_000_000, 0)}
		raw, err := compose(env, l)
		if err != nil {
			t.Fatal(err)
		}
		msg, err := mail.ReadMessage(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("the email does not parse: %v", err)
		}
		var keys []string
		for k := range msg.Header {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		want := []string{"Auto-Submitted", "Content-Type", "Date", "From", "In-Reply-To", "Message-Id", "Mime-Version", "References", "Subject", "To", "X-Auto-Response-Suppress"}
		if !slices.Equal(keys, want) {
			t.Fatalf("header fields %v", keys)
		}
		got, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
		if err != nil || got != subject(p) || strings.ContainsAny(got, "\r\n") {
			t.Fatalf("subject %q (%v), want %q", got, err, subject(p))
		}
		lower := strings.ToLower(l.HTML)
		if strings.Contains(lower, "<script") || strings.Contains(lower, "<img") || strings.Contains(lower, `href="javascript`) {
			t.Fatalf("the HTML part carries agent markup:\n%s", l.HTML)
		}
	})
}
