package askbridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rivo/uniseg"
	"golang.org/x/text/language"

	"github.com/askbridge/askbridge/internal/lazyre"
)

// Option is one choice of a question.
type Option struct {
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// Question is one question of a request.
type Question struct {
	ID          string   `json:"id"`
	Header      string   `json:"header"`
	Question    string   `json:"question"`
	Options     []Option `json:"options"`
	MultiSelect bool     `json:"multiSelect,omitempty"`
}

// Request is a normalised ask request: ask-user.md §1 plus the protocol
// fields of redis-protocol.md. Only DecodeRequest makes one.
type Request struct {
	ID string `json:"id,omitempty"`
	// To is where the question is shown: one target or route name, or
	// several (ask-user.md §5); empty for the default route.
	To             ToList     `json:"to,omitempty"`
	Answerers      []string   `json:"answerers,omitempty"`
	Agent          string     `json:"agent,omitempty"`
	Questions      []Question `json:"questions"`
	TimeoutSeconds int        `json:"timeoutSeconds"`
	// Callback is the URL the result is also POSTed to (ask-user.md §8),
	// checked here for its form only (ParseCallbackURL); whether the
	// bridge may call it is the operator's CallbackPolicy.
	Callback string `json:"callback,omitempty"`
	// Context is Markdown shown above the questions (ask-user.md §7), at
	// most MaxContextChars as a person counts them.
	Context string `json:"context,omitempty"`
	// Locale is the language of the bridge's own words in the prompt: a
	// BCP 47 tag as the agent gave it. The engine replaces it with the
	// shipped catalog it resolves to (request, route, bridge default), so
	// every replica shows a question in the same words.
	Locale string `json:"locale,omitempty"`
	// RemindEverySeconds asks for a reminder in every place this often
	// while the question is open and not acknowledged, at most
	// MaxReminders times (ask-user.md §5); 0 for none.
	RemindEverySeconds int `json:"remindEverySeconds,omitempty"`
	// Escalate lists the escalation steps, AfterSeconds increasing; the
	// engine fills in a route's default ladder when the request has none.
	Escalate []Step `json:"escalate,omitempty"`
	// Quorum is how many people must give the same answer (ask-user.md
	// §6); 0 when one answer ends the question.
	Quorum int `json:"quorum,omitempty"`
	// Remember asks that the person who answers be offered to let the
	// answer stand for a while (ask-user.md §9); nil for none.
	Remember *Remember `json:"remember,omitempty"`
	// NotifyEnd asks for a short follow-up email, to each email place,
	// saying how the question ended and who answered (ask-user.md §10):
	// an email cannot be edited to show it.
	NotifyEnd bool `json:"notifyEnd,omitempty"`
}

// Limits of a request. The counts, the label length and the timeout range
// come from ask-user.md §1; the other bounds keep a prompt readable in a chat
// and a request cheap to hold.
const (
	MaxRequestBytes = 64 << 10
	// MaxEntryBytes bounds a requests stream entry, field names and values
	// together: a request of MaxRequestBytes and room for a few small
	// fields besides. A larger entry is refused without being read.
	MaxEntryBytes       = MaxRequestBytes + 4<<10
	MinQuestions        = 1
	MaxQuestions        = 3
	MinOptions          = 2
	MaxOptions          = 4
	MaxHeaderGraphemes  = 12  // ask-user.md: header cut to 12 characters
	MaxHeaderInput      = 200 // longer input is a mistake, not a header
	MaxQuestionChars    = 500
	MaxLabelChars       = 64 // Telegram button text is the tightest transport
	MaxDescriptionChars = 200
	MaxAgentChars       = 64
	MaxContextChars     = 3000
	MaxLocaleChars      = 35 // BCP 47's longest useful tags are shorter
	MaxToChars          = 200
	MaxAnswerers        = 50
	MaxAnswererChars    = 200
	DefaultTimeout      = 900
	MinTimeout          = 30
	MaxTimeout          = 3600
)

var (
	questionIDPattern = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	// redis-protocol.md: the id of a whole request.
	requestIDPattern = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`)
)

// MaxQuestionIDChars bounds a question id; it is a map key in the result.
const MaxQuestionIDChars = 64

// Platforms a person may be named on in answerers.
var answererPlatforms = []string{"telegram", "discord", "slack", "matrix", PlatformEmail, "web", PlatformMCP}

// MaxProblems is how many problems a ValidationError names. A request with
// more (a 64 KB request of unknown keys has thousands) is refused naming
// the first MaxProblems and how many more there are, so its refusal, which
// is kept in the result, the events stream and the log, stays a few KB.
const MaxProblems = 20

// maxKeyBytes is how much of an unknown field's name a problem quotes.
const maxKeyBytes = 64

// ValidationError lists the problems found in a request, in the order
// found, each naming the path of the field (`questions[1].options[0].label
// must be at most 64 characters`).
type ValidationError struct {
	// Problems holds the first problems found: DecodeRequest keeps at most
	// MaxProblems.
	Problems []string
	// More counts the problems found beyond those in Problems.
	More int
}

// Error joins the first MaxProblems problems with "; ", and says how many
// more there are: "…; … and 4980 more".
func (e *ValidationError) Error() string {
	shown, more := e.Problems, e.More
	if len(shown) > MaxProblems {
		shown, more = shown[:MaxProblems], more+len(shown)-MaxProblems
	}
	msg := strings.Join(shown, "; ")
	if more > 0 {
		msg += fmt.Sprintf("; … and %d more", more)
	}
	return msg
}

// ValidLocale reports whether tag is a well-formed BCP 47 language tag
// of at most MaxLocaleChars, which is what a request's locale (and a
// route's, and the bridge's default) must be; whether a catalog is shipped
// for it does not matter (the bridge falls back to English).
func ValidLocale(tag string) bool {
	if tag == "" || len(tag) > MaxLocaleChars {
		return false
	}
	_, err := language.Parse(tag)
	return err == nil
}

// ValidRequestID reports whether id is a valid protocol request id.
func ValidRequestID(id string) bool {
	return requestIDPattern().MatchString(id)
}

// DecodeRequest strictly decodes and normalises an ask request. Every
// problem is reported with the path of the field; unknown fields are
// rejected at every level; out-of-range timeouts are clamped. Any input,
// however malformed, gives a request or a *ValidationError, never a panic.
//
// DecodeRequest reads JSON with encoding/json alone; DecodeRequestWith
// tries a faster reader first.
func DecodeRequest(data []byte) (Request, error) {
	return DecodeRequestWith(data, nil)
}

// A TreeReader reads data, one JSON value and nothing after it, into the
// tree encoding/json decodes into an any with UseNumber: map[string]any,
// []any, json.Number (the number as written), string, bool and nil, a
// repeated name keeping its last value. ok is false for anything it
// cannot read; encoding/json then reads data, and its verdict and error
// message stand.
type TreeReader func(data []byte) (tree any, ok bool)

// DecodeRequestWith is DecodeRequest reading the JSON with read first
// (nil: encoding/json alone). Only the speed differs: a reader that gives
// encoding/json's tree, or false, gives the same request and the same
// errors.
func DecodeRequestWith(data []byte, read TreeReader) (Request, error) {
	v := &validator{read: read}
	raw, ok := v.parse(data)
	if !ok {
		return Request{}, v.err()
	}
	req := v.request(raw)
	if len(v.problems) > 0 {
		return Request{}, v.err()
	}
	return req, nil
}

type validator struct {
	// problems holds the first MaxProblems problems, more counts the rest.
	problems []string
	more     int
	// read is the fast reader of the JSON tree tried first, if any.
	read TreeReader
}

// addf adds a problem; past MaxProblems it is only counted.
func (v *validator) addf(format string, args ...any) {
	if len(v.problems) >= MaxProblems {
		v.more++
		return
	}
	v.problems = append(v.problems, fmt.Sprintf(format, args...))
}

func (v *validator) err() error {
	return &ValidationError{Problems: v.problems, More: v.more}
}

// parse reads one JSON value, keeping numbers exact so an integer check is
// possible.
func (v *validator) parse(data []byte) (any, bool) {
	return v.parseAs("request", MaxRequestBytes, data)
}

// parseAs is parse of a document the problems call what (a request, an
// answer), of at most limit bytes.
func (v *validator) parseAs(what string, limit int, data []byte) (any, bool) {
	if len(data) > limit {
		v.addf("%s must be at most %d bytes (got %d)", what, limit, len(data))
		return nil, false
	}
	if len(bytes.TrimSpace(data)) == 0 {
		v.addf("%s is empty: expected a JSON object", what)
		return nil, false
	}
	if !utf8.Valid(data) {
		v.addf("%s is not valid UTF-8", what)
		return nil, false
	}
	if v.read != nil {
		if raw, ok := v.read(data); ok {
			return raw, true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		v.addf("%s is not valid JSON: %s", what, jsonProblem(err))
		return nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		v.addf("%s must be a single JSON object, found more after it", what)
		return nil, false
	}
	return raw, true
}

func jsonProblem(err error) string {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Sprintf("%s (at byte %d)", syn.Error(), syn.Offset)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "unexpected end of input"
	}
	return err.Error()
}

func (v *validator) request(raw any) Request {
	var req Request
	obj, ok := v.object("request", raw)
	if !ok {
		return req
	}
	v.unknown("", obj, "id", "to", "answerers", "agent", "questions", "timeoutSeconds", "callback", "context", "locale",
		"remindEverySeconds", "escalate", "quorum", "remember", "notifyEnd")

	if s, ok := v.optionalString("id", obj); ok {
		if !requestIDPattern().MatchString(s) {
			v.addf("id must be 1 to 128 characters of letters, digits, '_', '.', ':' or '-', starting with a letter or digit")
		}
		req.ID = s
	}
	if raw, ok := obj["to"]; ok {
		req.To = v.toList("to", raw)
	}
	req.Agent = v.agent(obj)
	if s, ok := v.optionalString("callback", obj); ok {
		if _, err := ParseCallbackURL(s); err != nil {
			v.addf("%v", err)
		} else {
			req.Callback = s
		}
	}
	if s, ok := v.optionalString("context", obj); ok {
		s = strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n"))
		switch {
		case uniseg.GraphemeClusterCount(s) > MaxContextChars:
			v.addf("context must be at most %d characters (got %d)", MaxContextChars, uniseg.GraphemeClusterCount(s))
		case hasControlExceptLines(s):
			v.addf("context must not contain control characters other than line breaks and tabs")
		}
		req.Context = s
	}
	if s, ok := v.optionalString("locale", obj); ok {
		s = strings.TrimSpace(s)
		if !ValidLocale(s) {
			v.addf("locale must be a language tag such as \"en\" or \"th\" (BCP 47, at most %d characters); an unknown language falls back to English", MaxLocaleChars)
		}
		req.Locale = s
	}
	req.Answerers = v.answerers(obj)
	req.Questions = v.questions(obj)
	req.TimeoutSeconds = v.timeout(obj)
	v.reach(obj, &req)
	if raw, ok := obj["quorum"]; ok {
		num, isNum := raw.(json.Number)
		n, err := strconv.Atoi(num.String())
		switch {
		case !isNum || err != nil:
			v.addf("quorum must be an integer: how many people must give the same answer")
		case n < 2:
			v.addf("quorum must be at least 2 (got %d): one answer is the default", n)
		case n > MaxAnswerers:
			v.addf("quorum must be at most %d (got %d)", MaxAnswerers, n)
		default:
			req.Quorum = n
		}
	}
	if raw, ok := obj["notifyEnd"]; ok {
		b, isBool := raw.(bool)
		if !isBool {
			v.addf("notifyEnd must be true or false")
		}
		req.NotifyEnd = b
	}
	if raw, ok := obj["remember"]; ok {
		req.Remember = v.remember(raw)
		if req.Quorum > 0 {
			v.addf("remember cannot be used with quorum: a standing answer is one person's")
		}
	}
	return req
}

func (v *validator) answerers(obj map[string]any) []string {
	raw, present := obj["answerers"]
	if !present {
		return nil
	}
	list, ok := raw.([]any)
	if !ok {
		v.addf("answerers must be a list of \"<platform>:<user id>\" strings")
		return nil
	}
	if len(list) > MaxAnswerers {
		v.addf("answerers must have at most %d entries", MaxAnswerers)
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for i, item := range list {
		path := fmt.Sprintf("answerers[%d]", i)
		s, ok := item.(string)
		if !ok {
			v.addf("%s must be a string", path)
			continue
		}
		s = strings.TrimSpace(s)
		platform, user, found := strings.Cut(s, ":")
		switch {
		case !found || user == "" || !contains(answererPlatforms, platform):
			v.addf("%s must be \"<platform>:<user id>\" with platform one of %s", path, strings.Join(answererPlatforms, ", "))
			continue
		case len(s) > MaxAnswererChars || hasControl(s) || strings.ContainsAny(user, " \t"):
			v.addf("%s has an invalid user id", path)
			continue
		case platform == PlatformEmail:
			addr, err := ParseEmailAddress(user)
			if err != nil {
				v.addf("%s: %v", path, err)
				continue
			}
			s = platform + ":" + addr
		}
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func (v *validator) questions(obj map[string]any) []Question {
	raw, present := obj["questions"]
	if !present {
		v.addf("questions is required: a list of 1 to 3 questions")
		return nil
	}
	list, ok := raw.([]any)
	if !ok {
		v.addf("questions must be a list of 1 to 3 questions")
		return nil
	}
	if len(list) < MinQuestions || len(list) > MaxQuestions {
		v.addf("questions must contain %d to %d questions (got %d)", MinQuestions, MaxQuestions, len(list))
		return nil
	}
	out := make([]Question, 0, len(list))
	firstIndex := map[string]int{}
	for i, item := range list {
		q := v.question(i, item)
		if q.ID != "" {
			if j, dup := firstIndex[q.ID]; dup {
				v.addf("questions[%d].id %q is already used by questions[%d]", i, q.ID, j)
			} else {
				firstIndex[q.ID] = i
			}
		}
		// A keyed reply ("Target: staging") names a question by its
		// header, in any case: two headers alike after the cut would make
		// such a reply go to the first.
		for j, prev := range out {
			if q.Header != "" && strings.EqualFold(q.Header, prev.Header) {
				v.addf("questions[%d].header and questions[%d].header are both %q once cut to %d characters: make them differ within their first %d", j, i, q.Header, MaxHeaderGraphemes, MaxHeaderGraphemes)
				break
			}
		}
		out = append(out, q)
	}
	return out
}

// fieldPaths are the paths of the fields of the questions and options a
// request may have, built once: validating a request builds no path.
type fieldPaths struct {
	base, dot, id, header, question, options string
	opts                                     [MaxOptions]optionPaths
}

type optionPaths struct{ base, dot, label string }

var questionPaths = func() (qs [MaxQuestions]fieldPaths) {
	for i := range qs {
		base := fmt.Sprintf("questions[%d]", i)
		q := fieldPaths{base: base, dot: base + ".", id: base + ".id", header: base + ".header", question: base + ".question", options: base + ".options"}
		for j := range q.opts {
			o := fmt.Sprintf("%s[%d]", q.options, j)
			q.opts[j] = optionPaths{base: o, dot: o + ".", label: o + ".label"}
		}
		qs[i] = q
	}
	return qs
}()

// question checks questions[i]; i < MaxQuestions (questions checked the
// length).
func (v *validator) question(i int, raw any) Question {
	qp := &questionPaths[i]
	path := qp.base
	var q Question
	obj, ok := v.object(path, raw)
	if !ok {
		return q
	}
	v.unknown(qp.dot, obj, "id", "header", "question", "options", "multiSelect")

	if s, ok := v.requiredString(qp.id, obj, "id"); ok {
		s = strings.TrimSpace(s)
		switch {
		case len(s) > MaxQuestionIDChars:
			v.addf("%s.id must be at most %d characters", path, MaxQuestionIDChars)
		case !questionIDPattern.MatchString(s):
			v.addf("%s.id must be snake_case: a lowercase letter, then lowercase letters, digits or '_' (for example, deploy_target)", path)
		default:
			q.ID = s
		}
	}
	if s, ok := v.text(qp.header, obj, "header", MaxHeaderInput); ok {
		q.Header = CutGraphemes(s, MaxHeaderGraphemes)
	}
	if s, ok := v.text(qp.question, obj, "question", MaxQuestionChars); ok {
		q.Question = s
	}
	q.Options = v.options(qp, obj)
	if raw, present := obj["multiSelect"]; present {
		b, ok := raw.(bool)
		if !ok {
			v.addf("%s.multiSelect must be a boolean", path)
		}
		q.MultiSelect = b
	}
	return q
}

func (v *validator) options(qp *fieldPaths, obj map[string]any) []Option {
	path := qp.options
	raw, present := obj["options"]
	if !present {
		v.addf("%s is required: a list of %d to %d options", path, MinOptions, MaxOptions)
		return nil
	}
	list, ok := raw.([]any)
	if !ok {
		v.addf("%s must be a list of %d to %d options", path, MinOptions, MaxOptions)
		return nil
	}
	if len(list) < MinOptions || len(list) > MaxOptions {
		v.addf("%s must contain %d to %d options (got %d)", path, MinOptions, MaxOptions, len(list))
		return nil
	}
	out := make([]Option, 0, len(list))
	firstIndex := map[string]int{}
	for j, item := range list {
		op := &qp.opts[j] // j < MaxOptions: the length was checked
		opath := op.base
		o, ok := v.object(opath, item)
		if !ok {
			continue
		}
		v.unknown(op.dot, o, "label", "description")
		var opt Option
		if s, ok := v.text(op.label, o, "label", MaxLabelChars); ok {
			key := strings.ToLower(s)
			if k, dup := firstIndex[key]; dup {
				v.addf("%s.label %q repeats %s[%d].label (labels must be unique, ignoring case)", opath, s, path, k)
			} else {
				firstIndex[key] = j
			}
			opt.Label = s
		}
		if raw, present := o["description"]; present {
			s, ok := raw.(string)
			switch {
			case !ok:
				v.addf("%s.description must be a string", opath)
			case uniseg.GraphemeClusterCount(strings.TrimSpace(s)) > MaxDescriptionChars:
				v.addf("%s.description must be at most %d characters", opath, MaxDescriptionChars)
			default:
				opt.Description = strings.TrimSpace(s)
			}
		}
		out = append(out, opt)
	}
	return out
}

func (v *validator) timeout(obj map[string]any) int {
	raw, present := obj["timeoutSeconds"]
	if !present {
		return DefaultTimeout
	}
	num, ok := raw.(json.Number)
	if !ok {
		v.addf("timeoutSeconds must be an integer number of seconds")
		return DefaultTimeout
	}
	n, err := strconv.ParseInt(num.String(), 10, 64)
	if err != nil {
		if !isIntegerLiteral(num.String()) {
			v.addf("timeoutSeconds must be an integer number of seconds (got %s)", num.String())
			return DefaultTimeout
		}
		// An integer too large for int64: clamp like any other.
		if strings.HasPrefix(num.String(), "-") {
			return MinTimeout
		}
		return MaxTimeout
	}
	return int(min(max(n, MinTimeout), MaxTimeout))
}

func isIntegerLiteral(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// object checks that raw is a JSON object.
func (v *validator) object(path string, raw any) (map[string]any, bool) {
	obj, ok := raw.(map[string]any)
	if !ok {
		v.addf("%s must be a JSON object (got %s)", path, jsonKind(raw))
	}
	return obj, ok
}

// unknown reports every field of obj that is not allowed, in sorted order.
func (v *validator) unknown(prefix string, obj map[string]any, allowed ...string) {
	var extra []string
	for k := range obj {
		if !contains(allowed, k) {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	for _, k := range extra {
		v.addf("%s%s is not a known field", prefix, strconv.Quote(shortKey(k)))
	}
}

// shortKey is k cut to its first maxKeyBytes bytes (on a character
// boundary) and "…", when longer: a problem names a key, it does not
// repeat it.
func shortKey(k string) string {
	if len(k) <= maxKeyBytes {
		return k
	}
	cut := maxKeyBytes
	for cut > 0 && !utf8.RuneStart(k[cut]) {
		cut--
	}
	return k[:cut] + "…"
}

func (v *validator) optionalString(key string, obj map[string]any) (string, bool) {
	raw, present := obj[key]
	if !present {
		return "", false
	}
	s, ok := raw.(string)
	if !ok {
		v.addf("%s must be a string", key)
	}
	return s, ok
}

func (v *validator) requiredString(path string, obj map[string]any, key string) (string, bool) {
	raw, present := obj[key]
	if !present {
		v.addf("%s is required", path)
		return "", false
	}
	s, ok := raw.(string)
	if !ok {
		v.addf("%s must be a string", path)
	}
	return s, ok
}

// text reads a required human-readable string: trimmed, non-empty, at most
// limit characters, without control characters other than line breaks.
func (v *validator) text(path string, obj map[string]any, key string, limit int) (string, bool) {
	s, ok := v.requiredString(path, obj, key)
	if !ok {
		return "", false
	}
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		v.addf("%s must not be empty", path)
	case uniseg.GraphemeClusterCount(s) > limit:
		// Characters as a person sees them: a Thai letter with its vowel
		// and tone mark, or an emoji with its modifiers, is one.
		v.addf("%s must be at most %d characters", path, limit)
	case strings.IndexFunc(s, controlBesidesBreaks) >= 0:
		v.addf("%s must not contain control characters", path)
	default:
		return s, true
	}
	return "", false
}

// CutGraphemes returns at most n grapheme clusters of s, so an emoji or an
// accented letter is never split.
func CutGraphemes(s string, n int) string {
	state := -1
	rest := s
	for i := 0; i < n && rest != ""; i++ {
		_, rest, _, state = uniseg.FirstGraphemeClusterInString(rest, state)
	}
	return strings.TrimSpace(s[:len(s)-len(rest)])
}

// controlBesidesBreaks reports a control character other than a line break
// or a tab.
func controlBesidesBreaks(r rune) bool { return r != '\n' && r != '\t' && unicode.IsControl(r) }

func hasControl(s string) bool {
	return strings.IndexFunc(s, unicode.IsControl) >= 0
}

// hasControlExceptLines is hasControl allowing line breaks and tabs, which
// Markdown context is made of.
func hasControlExceptLines(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool {
		return unicode.IsControl(r) && r != '\n' && r != '\t'
	}) >= 0
}

func contains(list []string, s string) bool {
	return slices.Contains(list, s)
}

func jsonKind(raw any) string {
	switch raw.(type) {
	case nil:
		return "null"
	case []any:
		return "a list"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "an object"
}

// RequestIDOf returns the id a bridge answers a raw request under, when
// the request names one: the string value of the top-level key "id" of the
// JSON object data opens with, read only as far as the object parses, so a
// request cut short (an oversize entry) or broken after its id still has
// it. "" when data is not such an object or breaks off before an id; the
// bridge then answers under the stream entry id. The last "id" wins, as in
// encoding/json, when the whole object parses. The id may still be
// invalid: check it with ValidRequestID.
func RequestIDOf(data []byte) string {
	return TopLevelString(data, "id")
}

// TopLevelString is the string value of key in the JSON object data opens
// with, read only as far as the object parses (see RequestIDOf); "" when
// there is none. The last one wins, as in encoding/json.
func TopLevelString(data []byte, key string) string {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	found := ""
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return found
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return found
		}
		if k == key {
			var s string
			if json.Unmarshal(v, &s) == nil {
				found = s
			}
		}
	}
	return found
}
