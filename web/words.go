package web

import (
	"net/http"
	"strings"
	"sync"

	"golang.org/x/text/language"

	"github.com/askbridge/askbridge/locale"
)

// wordPrefixes are the catalog messages the page shows (ask-user.md §7):
// its own words (Web…), and the bridge's words it shares with every
// platform, the buttons (ButtonSkip) and the status words of an ended
// question (StatusSkipped…, StatusNoQuorum). Only messages without fields are served; the
// page fills a Web message's {name} placeholders itself.
var wordPrefixes = []string{"Web", "Button", "Status"}

// wordIDs are the other shared messages the page uses: how a list of
// labels is joined, what a card says when the page tries to vote again on
// a quorum question (the notice the bridge gives then), and the words
// agents put in parentheses after a recommended option (comma-separated,
// "Recommended", "แนะนำ"): every catalog's are recognised on every card,
// as in a chat reply.
var wordIDs = []string{"ListSeparator", "NoticeAlreadyVoted", "WordsRecommended"}

// Bounds of the languages a page names.
const (
	maxPageLangs   = 16
	maxPageLangLen = 64
)

// wordsReply is GET words: the catalog the page's own text follows (Lang)
// and the words of every shipped catalog, so each question's card is
// shown in the question's language whatever the page's.
type wordsReply struct {
	Lang     string                       `json:"lang"`
	Catalogs map[string]map[string]string `json:"catalogs"`
}

// catalogWords is the page's words of every shipped catalog, by tag and
// message id. The catalogs are built into the binary, so once is enough.
var catalogWords = sync.OnceValue(func() map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, tag := range locale.Tags() {
		w := locale.For(tag)
		m := map[string]string{}
		for _, p := range wordPrefixes {
			for id, text := range w.Prefixed(p) {
				m[id] = text
			}
		}
		for _, id := range wordIDs {
			m[id] = w.Get(id)
		}
		out[tag] = m
	}
	return out
})

// words: GET words?lang=th-TH,th,en, the page's words. lang is the
// browser's languages in its order of preference (navigator.languages);
// without it the Accept-Language header says. The page's own text follows
// the first of them a catalog is shipped for (locale.Match), English when
// none. The page's words are no secret (they are in the binary), so this
// needs no token: the token dialog is worded with them.
func (h *Handler) words(w http.ResponseWriter, r *http.Request) {
	var langs []string
	if q := r.URL.Query(); q.Has("lang") {
		langs = strings.Split(q.Get("lang"), ",")
	} else {
		w.Header().Set("Vary", "Accept-Language")
		tags, _, _ := language.ParseAcceptLanguage(r.Header.Get("Accept-Language"))
		for _, t := range tags {
			langs = append(langs, t.String())
		}
	}
	w.Header().Set("Cache-Control", "no-cache")
	writeJSON(w, http.StatusOK, wordsReply{Lang: pageLang(langs), Catalogs: catalogWords()})
}

// pageLang is the shipped catalog for the first of langs (BCP 47 tags,
// most preferred first) that has one, by language: "th-TH" gives "th";
// "fr, th" gives "th"; "en-GB, th" gives "en"; nothing that matches gives
// locale.Default.
func pageLang(langs []string) string {
	if len(langs) > maxPageLangs {
		langs = langs[:maxPageLangs]
	}
	def, _ := language.Make(locale.Default).Base()
	for _, tag := range langs {
		tag = strings.TrimSpace(tag)
		if len(tag) > maxPageLangLen {
			continue
		}
		t, err := language.Parse(tag)
		if err != nil {
			continue
		}
		// locale.Match falls back to Default for a language without a
		// catalog: that is a match only for Default's own language.
		if m := locale.Match(tag); m != locale.Default {
			return m
		}
		if base, conf := t.Base(); conf != language.No && base == def {
			return locale.Default
		}
	}
	return locale.Default
}
