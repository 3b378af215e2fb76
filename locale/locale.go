// Package locale holds every word the bridge itself writes, in one message
// catalog per language (ask-user.md §7): instructions, buttons, status
// lines, notices, corrections, the web page's own text, and the reply words
// it understands. The catalogs are the YAML files in catalog/, one per
// language, embedded at build time; adding a language is adding one file
// (docs/languages.md).
//
// A tag resolves to the closest shipped catalog: "th-TH" to "th", an
// unknown language to English. Resolution never fails.
package locale

import (
	"embed"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/nicksnyder/go-i18n/v2/i18n"
	"go.yaml.in/yaml/v3"
	"golang.org/x/text/language"

	"github.com/askbridge/askbridge/textparse"
)

// Default is the catalog of last resort, and the reference every other
// catalog has the same messages as.
const Default = "en"

//go:embed catalog/*.yaml
var files embed.FS

// catalogs is loaded once, on first use.
var catalogs = sync.OnceValue(load)

type set struct {
	bundle  *i18n.Bundle
	tags    []string // shipped, Default first
	ids     []string // every message id of Default, sorted
	words   map[string]*Words
	reply   []textparse.Words
	loadErr error
}

// shipped are the shipped catalogs' tags and their matcher, read from the
// catalogs' file names alone (catalog/<tag>.yaml), once, on first use.
// Matching a tag needs no message: the bridge matches its default
// language as it starts, and parsing every catalog then was most of its
// start before it polls. The catalogs are parsed when a message is first
// needed.
var shipped = sync.OnceValue(readTags)

type tagSet struct {
	tags    []string // Default first, then by tag
	matcher language.Matcher
}

func readTags() *tagSet {
	entries, err := files.ReadDir("catalog")
	if err != nil {
		panic(fmt.Sprintf("locale: embedded catalogs: %v", err))
	}
	var tags []language.Tag
	for _, e := range entries {
		tags = append(tags, fileTag(e.Name()))
	}
	slices.SortFunc(tags, func(a, b language.Tag) int {
		switch {
		case a == language.English:
			return -1
		case b == language.English:
			return 1
		}
		return strings.Compare(a.String(), b.String())
	})
	ts := &tagSet{matcher: language.NewMatcher(tags)}
	for _, t := range tags {
		ts.tags = append(ts.tags, t.String())
	}
	return ts
}

// fileTag is the language tag of a catalog's file name, read as go-i18n
// reads it when it parses the file: the part before the extension, after
// any other dot ("th.yaml", "active.th.yaml": th).
func fileTag(name string) language.Tag {
	base := strings.TrimSuffix(name, path.Ext(name))
	if i := strings.LastIndexByte(base, '.'); i >= 0 {
		base = base[i+1:]
	}
	return language.Make(base)
}

func load() *set {
	s := &set{bundle: i18n.NewBundle(language.English), words: map[string]*Words{}, tags: shipped().tags}
	s.bundle.RegisterUnmarshalFunc("yaml", yaml.Unmarshal)
	entries, err := files.ReadDir("catalog")
	if err != nil {
		panic(fmt.Sprintf("locale: embedded catalogs: %v", err))
	}
	for _, e := range entries {
		name := path.Join("catalog", e.Name())
		buf, err := files.ReadFile(name)
		if err != nil {
			panic(fmt.Sprintf("locale: %s: %v", name, err))
		}
		f, err := s.bundle.ParseMessageFileBytes(buf, e.Name())
		if err != nil {
			// A broken catalog is a build mistake; TestCatalogs names it.
			s.loadErr = fmt.Errorf("locale: %s: %w", name, err)
			continue
		}
		if f.Tag != fileTag(e.Name()) {
			s.loadErr = fmt.Errorf("locale: %s: read as %s, named %s", name, f.Tag, fileTag(e.Name()))
		}
		if f.Tag == language.English {
			for _, m := range f.Messages {
				s.ids = append(s.ids, m.ID)
			}
		}
	}
	slices.Sort(s.ids)
	for _, tag := range s.tags {
		w := newWords(s, tag)
		s.words[tag] = w
		s.reply = append(s.reply, w.replyWords())
	}
	return s
}

// Tags lists the shipped catalogs, "en" first.
func Tags() []string { return slices.Clone(shipped().tags) }

// Match returns the shipped catalog for tag: the same language when one is
// shipped (a region or script is ignored where no closer catalog exists),
// otherwise Default. An empty or malformed tag gives Default.
func Match(tag string) string {
	if m, ok := matched.Load(tag); ok {
		return m.(string)
	}
	m := match(tag)
	// Requests name few languages; a flood of distinct tags stops being
	// remembered once matchedMax are.
	if matchedN.Load() < matchedMax {
		if _, loaded := matched.LoadOrStore(tag, m); !loaded {
			matchedN.Add(1)
		}
	}
	return m
}

// matched remembers Match's answer by tag (up to matchedMax tags): parsing
// a tag and running the matcher was a few per cent of the bridge's CPU,
// paid for each question several times.
var (
	matched  sync.Map
	matchedN atomic.Int64
)

const matchedMax = 1024

func match(tag string) string {
	s := shipped()
	t, err := language.Parse(strings.TrimSpace(tag))
	if err != nil || tag == "" {
		return Default
	}
	_, i, conf := s.matcher.Match(t)
	if conf == language.No {
		return Default
	}
	return s.tags[i]
}

// Resolve returns the catalog for the first non-empty tag of tags: the
// request's, then the route's, then the bridge's default (ask-user.md §7).
func Resolve(tags ...string) string {
	for _, t := range tags {
		if strings.TrimSpace(t) != "" {
			return Match(t)
		}
	}
	return Default
}

// ReplyWords are the reply words of every shipped catalog, Default first:
// a text reply is read with all of them at once, whatever the prompt's
// language.
func ReplyWords() []textparse.Words { return slices.Clone(catalogs().reply) }

// Words are the messages of one catalog. The zero value is not usable; get
// one from For. Safe for concurrent use.
type Words struct {
	tag string
	l   *i18n.Localizer
	// static caches the messages without fields, which are most of them.
	static map[string]string
	// counted caches Count's texts by message, count and fields (up to
	// countedMax): every prompt's intro is one, and running its template
	// each time was most of building a plan.
	counted  sync.Map
	countedN atomic.Int64
}

const countedMax = 1024

// For returns the words of the catalog Match(tag) gives.
func For(tag string) *Words {
	s := catalogs()
	return s.words[Match(tag)]
}

func newWords(s *set, tag string) *Words {
	w := &Words{tag: tag, l: i18n.NewLocalizer(s.bundle, tag, Default), static: map[string]string{}}
	for _, id := range s.ids {
		text, err := w.l.Localize(&i18n.LocalizeConfig{MessageID: id})
		if err == nil && !strings.Contains(text, "<no value>") {
			w.static[id] = text
		}
	}
	return w
}

// Tag is the catalog's language tag, as a request or the web page names it.
func (w *Words) Tag() string { return w.tag }

// Get returns message id, which has no fields.
func (w *Words) Get(id string) string {
	if text, ok := w.static[id]; ok {
		return text
	}
	return w.Format(id, nil)
}

// Format returns message id with its fields filled from data. An unknown id
// gives the id itself, so a mistake shows rather than vanishes (the catalog
// tests catch it first).
func (w *Words) Format(id string, data map[string]any) string {
	text, err := w.l.Localize(&i18n.LocalizeConfig{MessageID: id, TemplateData: data})
	if err != nil {
		return id
	}
	return text
}

// Count returns message id in the plural form for n, with data's fields
// and Count = n.
func (w *Words) Count(id string, n int, data map[string]any) string {
	key, cacheable := countKey(id, n, data)
	if cacheable {
		if text, ok := w.counted.Load(key); ok {
			return text.(string)
		}
	}
	d := map[string]any{"Count": n}
	for k, v := range data {
		d[k] = v
	}
	text, err := w.l.Localize(&i18n.LocalizeConfig{MessageID: id, TemplateData: d, PluralCount: n})
	if err != nil {
		return id
	}
	if cacheable && w.countedN.Load() < countedMax {
		if _, loaded := w.counted.LoadOrStore(key, text); !loaded {
			w.countedN.Add(1)
		}
	}
	return text
}

// countKey is the cache key of a Count call: its message, count and
// fields, when every field is a short string (a template's output depends
// on nothing else). Other calls are not cached.
func countKey(id string, n int, data map[string]any) (string, bool) {
	var b strings.Builder
	b.WriteString(id)
	b.WriteByte(0)
	b.WriteString(strconv.Itoa(n))
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v, ok := data[k].(string)
		if !ok || len(v) > 256 {
			return "", false
		}
		b.WriteByte(0)
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(v)
	}
	return b.String(), true
}

// List joins items the way the catalog writes a list: "a", "a and b",
// "a, b and c".
func (w *Words) List(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], w.Get("ListSeparator")) + w.Get("ListLastSeparator") + items[len(items)-1]
}

// Prefixed returns every message without fields whose id starts with
// prefix, by id: the web page's own text is the catalog's "Web" messages.
func (w *Words) Prefixed(prefix string) map[string]string {
	out := map[string]string{}
	for id, text := range w.static {
		if strings.HasPrefix(id, prefix) {
			out[id] = text
		}
	}
	return out
}

func (w *Words) replyWords() textparse.Words {
	return textparse.Words{
		Skip:        splitWords(w.Get("WordsSkip")),
		Acknowledge: splitWords(w.Get("WordsSeen")),
		Recommended: splitWords(w.Get("WordsRecommended")),
		Keep:        splitWords(w.Get("WordsKeep")),
	}
}

func splitWords(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
