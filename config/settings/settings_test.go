package settings

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

type section struct {
	Token  string `yaml:"token" json:"-"`
	APIURL string `yaml:"apiURL"`
	Empty  string `yaml:"emptySecret" json:"-"`
	Wiring time.Duration
}

func TestProblems(t *testing.T) {
	words := Problems{Section: "telegram"}
	named := Problems{Section: "telegram", Names: func(key string) string { return "<" + key + ">" }}
	for _, p := range []*Problems{&words, &named} {
		p.Plain("webhookSecret", "a b")
		p.APIURL("apiURL", "ftp://x")
		p.APIURL("apiURL", "") // the default
		p.Plain("botToken", "fine")
	}
	if got, want := words.Err().Error(), `telegram: webhook secret: must not contain spaces or control characters; telegram: api url: "ftp://x" must be an http:// or https:// URL`; got != want {
		t.Errorf("in words: %s\nwant %s", got, want)
	}
	if got, want := strings.Join(named.List, "; "), `<telegram.webhookSecret>: must not contain spaces or control characters; <telegram.apiURL>: "ftp://x" must be an http:// or https:// URL`; got != want {
		t.Errorf("named: %s\nwant %s", got, want)
	}
	if err := (&Problems{Section: "x"}).Err(); err != nil {
		t.Errorf("no problems: %v", err)
	}
}

func TestRedaction(t *testing.T) {
	s := section{Token: "s3cret", APIURL: "https://x/", Wiring: time.Second}
	if got, want := String(&s), "{Token:[redacted] APIURL:https://x/ Empty:}"; got != want {
		t.Errorf("String = %s, want %s", got, want)
	}
	if got, want := LogValue(s).String(), "[token=[redacted] apiURL=https://x/ emptySecret=]"; got != want {
		t.Errorf("LogValue = %s, want %s", got, want)
	}
	if out := fmt.Sprint(LogValue(s), String(s)); strings.Contains(out, "s3cret") {
		t.Errorf("a secret shows: %s", out)
	}
}

func TestDefault(t *testing.T) {
	d, neg, s, set := time.Duration(0), -time.Second, "", "x"
	Default(&d, time.Minute)
	Default(&neg, time.Minute)
	Default(&s, "def")
	Default(&set, "def")
	if d != time.Minute || neg != time.Minute || s != "def" || set != "x" {
		t.Errorf("got %s %s %q %q", d, neg, s, set)
	}
}
