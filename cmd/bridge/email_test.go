package main

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/smtptest"
	"github.com/askbridge/askbridge/internal/testwait"
)

// TestEmailWalkthrough is the operator's setup and the person's path: a
// bridge with an SMTP server (STARTTLS, a private CA), a public URL and a
// link secret; `askbridge ask --to email:…` sends one email; its link's
// page, opened with GET (as a mail scanner would, then as the person),
// answers nothing; the form's POST answers, as the link's person; the
// agent gets the answer with answeredBy email.
func TestEmailWalkthrough(t *testing.T) {
	mail := smtptest.New(t, smtptest.Options{})
	http1 := freeAddr(t)
	b := startBridge(t, map[string]string{
		"ASKUSER_HTTP_ADDR":     http1,
		"ASKUSER_SMTP_URL":      "smtp://" + mail.Addr(),
		"ASKUSER_SMTP_USER":     smtptest.User,
		"ASKUSER_SMTP_PASSWORD": smtptest.Password,
		"ASKUSER_SMTP_FROM":     "Ask Bridge <ask@bridge.example>",
		"ASKUSER_SMTP_CA_FILE":  mail.CAFile(),
		"ASKUSER_PUBLIC_URL":    "http://" + http1,
		"ASKUSER_LINK_SECRET":   strings.Repeat("k", 32),
	})
	env := map[string]string{"ASKUSER_EMBEDDED_REDIS_ADDR": b.redisAddr}
	res := askAsync(context.Background(), env, "--to", "email:Alice@Example.com", "--question", "Ship build 4812?", "--option", "Ship", "--option", "Hold")

	testwait.For(t, 15*time.Second, "one email", func() bool { return len(mail.Received()) == 1 })
	m := mail.Received()[0]
	if len(m.To) != 1 || m.To[0] != "alice@example.com" {
		t.Fatalf("email to %v", m.To)
	}
	text := smtptest.Parse(t, m.Raw).Text
	link := regexp.MustCompile(`http://` + regexp.QuoteMeta(http1) + `/a/[A-Za-z0-9_-]+`).FindString(text)
	if link == "" || !strings.Contains(text, "Ship build 4812?") {
		t.Fatalf("no question or answer link in the email's text:\n%s", text)
	}

	// A scanner's GET, then the person's: the same form, nothing answered.
	page := ""
	for _, ua := range []string{"Microsoft Office/16.0 (Windows NT 10.0; Microsoft Outlook 16.0.4266; Pro)", "Mozilla/5.0 (iPhone)"} {
		code, body := getWith(t, link, ua)
		if code != http.StatusOK || !strings.Contains(body, "Ship build 4812?") || !strings.Contains(body, `name="form"`) {
			t.Fatalf("GET %s as %q: %d\n%s", link, ua, code, body)
		}
		page = body
	}
	select {
	case r := <-res:
		t.Fatalf("answered by opening the link: %+v", r)
	default:
	}

	form := url.Values{"form": {hiddenValue(t, page, "form")}, "do": {"answer"}}
	choice := regexp.MustCompile(`type="radio" name="([^"]+)" value="([0-9]+)"`).FindAllStringSubmatch(page, -1)
	if len(choice) != 2 {
		t.Fatalf("choices %v in\n%s", choice, page)
	}
	form.Set(choice[1][1], choice[1][2]) // Hold
	req, _ := http.NewRequest(http.MethodPost, link, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://"+http1)
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("POST: %d\n%s", resp.StatusCode, body)
	}
	select {
	case r := <-res:
		for _, want := range []string{`"status":"answered"`, `"Hold"`, `"platform":"email"`, `"id":"alice@example.com"`, `"via":"link"`} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("result lacks %s: %s", want, r.stdout)
			}
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no result after the form was posted")
	}
	if _, body := getWith(t, link, "Mozilla/5.0 (iPhone)"); !strings.Contains(body, "Hold") || strings.Contains(body, `name="form"`) {
		t.Errorf("the link's page after the answer:\n%s", body)
	}
	if n := len(mail.Received()); n != 1 {
		t.Errorf("%d emails, want 1", n)
	}
}

func getWith(t *testing.T, u, userAgent string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("User-Agent", userAgent)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// hiddenValue is the value of the page's hidden input name.
func hiddenValue(t *testing.T, page, name string) string {
	t.Helper()
	m := regexp.MustCompile(`<input type="hidden" name="` + name + `" value="([^"]+)">`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no hidden %s in\n%s", name, page)
	}
	return m[1]
}
