package web

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/text/unicode/norm"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/locale"
)

// linkFiles are the link page's template and stylesheet: server-side HTML
// with no script, so the page works without JavaScript.
//
//go:embed linkpage
var linkFiles embed.FS

// linkPages holds the link page's template and its fixed pages, made once
// (they depend only on the catalogs built into the binary).
type linkPages struct {
	page *template.Template
	// notValid, refused and trouble are the fixed bodies of the 404, the
	// 403 and the 503: the same bytes for every request, worded in every
	// shipped catalog, since whose link it is cannot be known.
	notValid, refused, trouble []byte
	// style and icon are the page's stylesheet and icon (the web page's).
	style, icon []byte
}

var loadLinkPages = sync.OnceValues(func() (*linkPages, error) {
	tmpl, err := template.ParseFS(linkFiles, "linkpage/page.html")
	if err != nil {
		return nil, fmt.Errorf("web: link page template: %w", err)
	}
	style, err := linkFiles.ReadFile("linkpage/link.css")
	if err != nil {
		return nil, fmt.Errorf("web: link page style: %w", err)
	}
	icon, err := static.ReadFile("static/favicon.svg")
	if err != nil {
		return nil, fmt.Errorf("web: link page icon: %w", err)
	}
	p := &linkPages{page: tmpl, style: style, icon: icon}
	for _, f := range []struct {
		out              *[]byte
		title, hint      string
		again, noLocales bool
	}{
		{out: &p.notValid, title: "LinkNotValid", hint: "LinkNotValidHint"},
		{out: &p.refused, title: "LinkRefused", hint: "LinkRefusedHint", again: true},
		{out: &p.trouble, title: "LinkTrouble", again: true},
	} {
		if *f.out, err = fixedPage(tmpl, f.title, f.hint, f.again); err != nil {
			return nil, err
		}
	}
	return p, nil
})

// fixedPage renders a page that says title and hint in every shipped
// catalog, English first, with a link back to the page itself when again.
func fixedPage(tmpl *template.Template, title, hint string, again bool) ([]byte, error) {
	v := linkView{Lang: locale.Default, Fixed: true}
	for _, tag := range locale.Tags() {
		w := locale.For(tag)
		m := linkMessage{Lang: w.Tag(), Title: w.Get(title)}
		if hint != "" {
			m.Hint = w.Get(hint)
		}
		if again {
			m.Again = w.Get("LinkOpenAgain")
		}
		v.Messages = append(v.Messages, m)
		if v.Title == "" {
			v.Title = m.Title
		}
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, v); err != nil {
		return nil, fmt.Errorf("web: link page %s: %w", title, err)
	}
	return b.Bytes(), nil
}

// linkView is what the link's page shows.
type linkView struct {
	// Lang is the catalog the page is worded in (<html lang>).
	Lang  string
	Title string
	// Fixed marks a fixed page: Messages, one per catalog, and nothing
	// else.
	Fixed    bool
	Messages []linkMessage

	Intro    string
	AnswerAs string
	Context  template.HTML
	Notes    []string
	// Notice is what became of the person's answer (recorded, a vote).
	Notice string
	// Ended: Status is the question's status line and Detail who answered
	// and when, or when it ended; there is no form.
	Ended  bool
	Status string
	Detail string
	// Form: the questions as a form, with its anti-forgery token, and the
	// problem of an answer that did not fit (Error).
	Form      bool
	FormToken string
	Error     string
	Questions []linkQuestion
	Words     linkWords
	Footer    string
}

// linkMessage is a fixed page's words in one catalog.
type linkMessage struct{ Lang, Title, Hint, Again string }

// linkWords are the form's own words, in the question's catalog.
type linkWords struct {
	ChooseOne, ChooseMany, Recommended, Other, OtherPlaceholder, Submit, Skip, SkipHint string
}

// linkQuestion is one question of the form.
type linkQuestion struct {
	N        int
	ID       string
	Header   string
	Text     string
	Multi    bool
	Options  []linkOption
	Other    string
	Problem  bool
	Choice   string // the field name of its options
	OtherFor string // the field name of its free text
}

// linkOption is one option of a question on the form.
type linkOption struct {
	Index       int
	Label       string
	Description string
	Recommended bool
	Checked     bool
}

// wordsOf is the catalog rec is worded in.
func wordsOf(rec engine.Record) *locale.Words { return locale.For(rec.Request.Locale) }

// linkView is the page of link t: the question as a form while it is
// open and the person has not voted on it; how it ended, or the person's
// vote, otherwise. filled and problem are an answer that did not fit,
// shown again with what was chosen and what is wrong.
func (h *Handler) linkView(t linkTarget, filled *linkFilled, problem string) linkView {
	rec, k := t.rec, t.claims.Place
	plan := rec.PlanFor(k, pageCapabilities)
	w := locale.For(plan.Locale)
	v := linkView{
		Lang: plan.Locale, Title: w.Get("LinkTitle"), Intro: plan.Intro,
		AnswerAs: w.Format("LinkAnswerAs", map[string]any{"Who": t.claims.Person.ID}),
		Context:  template.HTML(contextHTML(plan.Context)), // #nosec G203 -- sanitised by internal/markup
		Notes:    plan.Notes, Footer: w.Get("LinkFooter"),
	}
	if rec.Result != nil {
		endedView(&v, w, rec, t.claims.Person)
		return v
	}
	if vote, ok := voteOf(rec, t.claims.Person); ok {
		v.Notice = voteNotice(rec, vote, v.Lang)
		v.Detail = w.Get("LinkVoteStands")
		return v
	}
	v.Form, v.FormToken, v.Error = true, h.links.FormToken(t.token, time.Now()), problem
	v.Words = linkWords{
		ChooseOne: w.Get("WebChooseOne"), ChooseMany: w.Get("WebChooseMany"), Recommended: w.Get("WebRecommended"),
		Other: w.Get("WebOtherLabel"), OtherPlaceholder: w.Get("WebOtherPlaceholder"),
		Submit: w.Get("WebSubmit"), Skip: w.Get("ButtonSkip"), SkipHint: w.Get("WebSkipHint"),
	}
	v.Questions = formQuestions(rec.Request, filled)
	return v
}

// endedView fills v with how rec ended: the status line, who answered
// and when (or when it ended), and, when the link's person answered,
// that their answer was recorded.
func endedView(v *linkView, w *locale.Words, rec engine.Record, me askbridge.Person) {
	res := *rec.Result
	v.Ended, v.Status, v.Notes, v.AnswerAs = true, engine.StatusLine(rec.Request, res), nil, ""
	when := ""
	if res.EndedAt > 0 {
		when = time.UnixMilli(res.EndedAt).UTC().Format("2006-01-02 15:04 UTC")
	}
	switch {
	case res.AnsweredBy != nil && when != "":
		v.Detail = w.Format("LinkAnsweredBy", map[string]any{"Who": res.AnsweredBy.Display(), "When": when})
	case when != "":
		v.Detail = w.Format("LinkEndedAt", map[string]any{"When": when})
	}
	if res.AnsweredBy != nil && res.AnsweredBy.Platform == me.Platform && res.AnsweredBy.ID == me.ID {
		v.Notice = w.Get("LinkRecorded")
	} else {
		v.Notice = w.Get("LinkClosed")
	}
}

// voteOf is the vote by p on quorum question rec, when p has voted.
func voteOf(rec engine.Record, p askbridge.Person) (askbridge.Vote, bool) {
	if rec.Request.Quorum == 0 {
		return askbridge.Vote{}, false
	}
	for _, v := range rec.Votes {
		if v.By.Platform == p.Platform && v.By.ID == p.ID {
			return v, true
		}
	}
	return askbridge.Vote{}, false
}

// voteNotice words a vote as the engine's notice does when it counts it:
// Voted with how many agree of how many must, or Abstained.
func voteNotice(rec engine.Record, vote askbridge.Vote, tag string) string {
	if vote.Skipped {
		return engine.NoticeAbstained.Text(tag)
	}
	return engine.NoticeVoted.TextCount(tag, engine.TallyOf(rec).Count(vote), rec.Request.Quorum)
}

// formQuestions are req's questions as the form shows them, with what
// filled had chosen and typed, if anything.
func formQuestions(req askbridge.Request, filled *linkFilled) []linkQuestion {
	out := make([]linkQuestion, 0, len(req.Questions))
	for i, q := range req.Questions {
		lq := linkQuestion{
			N: i, ID: q.ID, Header: q.Header, Text: q.Question, Multi: q.MultiSelect,
			Choice: linkFormChoice + q.ID, OtherFor: linkFormOther + q.ID,
		}
		if filled != nil {
			lq.Other = filled.other[q.ID]
			lq.Problem = filled.problem == q.ID
		}
		for j, o := range q.Options {
			text, rec := optionText(o.Label)
			lo := linkOption{Index: j, Label: text, Description: o.Description, Recommended: rec}
			if filled != nil {
				lo.Checked = slices.Contains(filled.chosen[q.ID], j)
			}
			lq.Options = append(lq.Options, lo)
		}
		out = append(out, lq)
	}
	return out
}

// suffix matches a label's last parenthesised words: "Staging
// (Recommended)", "สเตจจิ้ง (แนะนำ)", full-width parentheses too.
var suffix = regexp.MustCompile(`^(.*?\S)\s*[(（]\s*([^()（）]*?)\s*[)）]\s*$`)

// recommendedWords are the words of every catalog that mark a recommended
// option, folded: any marks an option whatever the question's language,
// as on the web page and in a chat reply.
var recommendedWords = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, tag := range locale.Tags() {
		for _, s := range strings.Split(locale.For(tag).Get("WordsRecommended"), ",") {
			s = strings.Trim(foldWord(s), "(（)） ")
			if s != "" {
				m[s] = true
			}
		}
	}
	return m
})

func foldWord(s string) string {
	return strings.Join(strings.Fields(strings.ToLower(norm.NFKC.String(s))), " ")
}

// optionText is how the form shows a label: without a recommended
// suffix, which becomes a mark instead. The answer still carries the
// label as declared (the form sends the option's index).
func optionText(label string) (string, bool) {
	if m := suffix.FindStringSubmatch(label); m != nil && recommendedWords()[foldWord(m[2])] {
		return m[1], true
	}
	return label, false
}

// renderLink writes the page v with code.
func (h *Handler) renderLink(w http.ResponseWriter, r *http.Request, code int, v linkView) {
	var b bytes.Buffer
	if err := h.linkPages.page.Execute(&b, v); err != nil {
		h.linkFail(w, r, "render page", err)
		return
	}
	h.writeLinkPage(w, r, code, b.Bytes())
}

// linkFilled is what a person filled in on the link's form.
type linkFilled struct {
	skip bool
	// chosen holds the indexes of the options chosen, per question id, in
	// the form's order; bad is set when one is not an option's index.
	chosen map[string][]int
	bad    bool
	// other holds the free text, trimmed, per question id.
	other map[string]string
	// problem is the id of the question the form's message is about.
	problem string
}

// parseLinkForm reads a link's form for req's questions. Fields of other
// names are ignored.
func parseLinkForm(req askbridge.Request, f url.Values) linkFilled {
	out := linkFilled{skip: f.Get(linkFormAction) == linkActionSkip, chosen: map[string][]int{}, other: map[string]string{}}
	for _, q := range req.Questions {
		for _, s := range f[linkFormChoice+q.ID] {
			i, err := strconv.Atoi(s)
			if err != nil || i < 0 || i >= len(q.Options) {
				out.bad = true
				continue
			}
			if !slices.Contains(out.chosen[q.ID], i) {
				out.chosen[q.ID] = append(out.chosen[q.ID], i)
			}
		}
		if s := strings.TrimSpace(f.Get(linkFormOther + q.ID)); s != "" {
			out.other[q.ID] = s
		}
	}
	return out
}

// values is the answer the form gives, per question id, or the problem
// with it in catalog tag (and f.problem names its question). The rule:
// on a single-select question, free text wins over a chosen option (a
// radio button cannot be unchosen without script, so whoever typed meant
// it); on a multi-select question, the free text is one more value after
// the chosen options. Every question needs a value; a single-select one
// takes one option. engine.CheckAnswers checks the rest.
func (f *linkFilled) values(req askbridge.Request, tag string) (map[string][]string, string) {
	w := locale.For(tag)
	if f.bad {
		return nil, w.Get("LinkNotAccepted")
	}
	out := map[string][]string{}
	for _, q := range req.Questions {
		var vals []string
		for _, i := range f.chosen[q.ID] {
			vals = append(vals, q.Options[i].Label)
		}
		other := f.other[q.ID]
		switch {
		case !q.MultiSelect && other != "":
			vals = []string{other}
		case other != "":
			vals = append(vals, other)
		}
		switch {
		case len(vals) == 0:
			f.problem = q.ID
			return nil, w.Format("LinkNeedAnswer", map[string]any{"Header": q.Header})
		case !q.MultiSelect && len(vals) > 1:
			f.problem = q.ID
			return nil, w.Format("LinkOnlyOne", map[string]any{"Header": q.Header})
		}
		out[q.ID] = vals
	}
	return out, ""
}
