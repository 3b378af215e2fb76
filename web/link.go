package web

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/link"
)

// The page of an answer link (ask-user.md §10): GET and HEAD
// BasePath+"a/<token>" show the link's question as a form (or how it
// ended), POST answers it. See doc.go and docs/security.md.

// linkPolicy is the Content-Security-Policy of the link's page: nothing
// but its own stylesheet, no script at all, and forms that post only to
// the page's own origin.
const linkPolicy = "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// maxLinkForm bounds the body of a POST to a link's page: three questions
// of up to four options and a free-text field each (CheckAnswers allows
// 2,000 characters per value, 6 bytes each at worst when percent-encoded
// as UTF-8) fit; more is refused.
const maxLinkForm = 16 << 10

// linkForm* are the names of the fields of a link's form.
const (
	// linkFormToken is the hidden anti-forgery token (link.Signer.FormToken).
	linkFormToken = "form"
	// linkFormAction is the button pressed: linkActionAnswer or linkActionSkip.
	linkFormAction   = "do"
	linkActionAnswer = "answer"
	linkActionSkip   = "skip"
	// linkFormChoice + a question's id holds the index of each option
	// chosen; linkFormOther + the id holds the free text.
	linkFormChoice = "a."
	linkFormOther  = "o."
)

// linkSetup checks the link configuration and prepares the page's routes
// on h.linkMux. Without cfg.Links, links are off and it does nothing.
func (h *Handler) linkSetup(cfg Config) error {
	if cfg.Links == nil {
		if cfg.PublicURL != "" {
			if _, _, err := parsePublicURL(cfg.PublicURL); err != nil {
				return err
			}
		}
		return nil
	}
	if cfg.PublicURL == "" {
		return errors.New("web: config: PublicURL is required with Links (the address people open answer links at)")
	}
	o, host, err := parsePublicURL(cfg.PublicURL)
	if err != nil {
		return err
	}
	pages, err := loadLinkPages()
	if err != nil {
		return err
	}
	h.links, h.publicOrigin, h.publicHost, h.linkPages = cfg.Links, o, host, pages
	h.linkBase = h.base + strings.TrimPrefix(link.PathPrefix, "/")
	h.linkMux = http.NewServeMux()
	h.linkMux.HandleFunc("GET "+h.linkBase+"link.css", h.linkFile("text/css; charset=utf-8", pages.style))
	h.linkMux.HandleFunc("GET "+h.linkBase+"favicon.svg", h.linkFile("image/svg+xml", pages.icon))
	h.linkMux.HandleFunc("GET "+h.linkBase+"{token}", h.linkGet)
	h.linkMux.HandleFunc("POST "+h.linkBase+"{token}", h.linkPost)
	h.linkMux.HandleFunc("GET "+h.linkBase, h.linkNotValid)
	return nil
}

// parsePublicURL reads Config.PublicURL: an http(s) URL with a host and
// perhaps a path, nothing else. It returns its origin and its host name.
func parsePublicURL(s string) (origin, string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return origin{}, "", fmt.Errorf("web: config: public URL %q must be http(s)://host[:port][/path], with no user, query or fragment", s)
	}
	o, ok := parseOrigin(u.Scheme + "://" + u.Host)
	if !ok {
		return origin{}, "", fmt.Errorf("web: config: public URL %q has no usable origin", s)
	}
	return o, strings.ToLower(u.Hostname()), nil
}

// isLinkPath reports whether r asks for the link's page (or its style):
// it is served outside the API's token and the loopback-only rule.
func (h *Handler) isLinkPath(r *http.Request) bool {
	return h.links != nil && strings.HasPrefix(r.URL.Path, h.linkBase)
}

// serveLink serves every request under the link's path: its own headers
// on every response, and only to a host the page is reached at (a
// loopback name or the public URL's host; others get 421, as DNS
// rebinding would send its own). It needs neither the page's token nor
// a request made on this machine: the signed token in the path is the
// capability, and people open the link through the operator's proxy.
func (h *Handler) serveLink(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	pageHeaders(hd, linkPolicy)
	hd.Set("X-Robots-Tag", "noindex, nofollow")
	hd.Set("Cache-Control", "no-store")
	if !h.linkHost(r.Host) {
		writeText(w, http.StatusMisdirectedRequest, "This address is not where the bridge's answer links are served.\n")
		return
	}
	h.linkMux.ServeHTTP(w, r)
}

// linkHost reports whether host (a Host header) is one the link's page is
// served to: a loopback name, or the public URL's host, on any port.
func (h *Handler) linkHost(host string) bool {
	if LoopbackHost(host) {
		return true
	}
	if name, _, err := net.SplitHostPort(host); err == nil {
		host = name
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return strings.EqualFold(host, h.publicHost)
}

// linkTarget is what a valid link points at: its claims, and its question
// as just read.
type linkTarget struct {
	token  string
	claims link.Claims
	rec    engine.Record
}

// person is who answers through the link: the token's person, named by
// their id (an address).
func (t linkTarget) person() askbridge.Person {
	p := t.claims.Person
	p.Name = p.ID
	return p
}

// openLink checks token and reads its question (with Lookup, a record a
// moment old, when lookup; else Get). ok is false when the link points
// nowhere it may: a bad token, an unknown question, a place out of range
// or not reached, or a person who may not answer there; err is trouble
// reaching the store, or a refused request (kept with no questions). It
// only reads.
func (h *Handler) openLink(ctx context.Context, token string, lookup bool) (t linkTarget, ok bool, err error) {
	c, err := h.links.Check(token, time.Now())
	if err != nil || !askbridge.ValidRequestID(c.ID) {
		return t, false, nil
	}
	get := h.questions.Get
	if lookup {
		get = h.questions.Lookup
	}
	rec, found, err := get(ctx, c.ID)
	// A request the bridge refused is kept with no questions to show.
	if err != nil || !found || c.Place < 0 || c.Place >= len(rec.Places) || len(rec.Request.Questions) == 0 {
		return t, false, err
	}
	reached, err := rec.Reached(c.Place, h.messagesOf(ctx, rec.ID))
	if err != nil || !reached || !mayAnswerByLink(rec, c) {
		return t, false, err
	}
	return linkTarget{token: token, claims: c, rec: rec}, true, nil
}

// mayAnswerByLink reports whether the link's person may answer rec in the
// link's place: engine.Record.MayAnswerIn, the one rule (an email place
// that names no answerers has its own address as its only answerer).
func mayAnswerByLink(rec engine.Record, c link.Claims) bool {
	return rec.MayAnswerIn(c.Person, c.Place)
}

// linkGet: GET (and HEAD) a link's page. It never changes anything: a
// mail filter, an unfurler or a browser's prefetch sees the same page a
// person does, and only reads Redis.
func (h *Handler) linkGet(w http.ResponseWriter, r *http.Request) {
	t, ok, err := h.openLink(r.Context(), r.PathValue("token"), false)
	switch {
	case err != nil:
		h.linkFail(w, r, "read question", err)
	case !ok:
		h.linkNotValid(w, r)
	default:
		h.renderLink(w, r, http.StatusOK, h.linkView(t, nil, ""))
	}
}

// linkPost: POST a link's form. The token, the form token and the
// request's origin are checked before anything is read; then the engine
// decides (SubmitRecord), and the person is sent back to the page
// (303, Post/Redirect/Get), which shows what became of the answer.
func (h *Handler) linkPost(w http.ResponseWriter, r *http.Request) {
	token := r.PathValue("token")
	form, ok := h.readLinkForm(w, r, token)
	if !ok {
		h.linkRefuse(w)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), submitTimeout)
	defer cancel()
	t, ok, err := h.openLink(ctx, token, true)
	switch {
	case err != nil:
		h.linkFail(w, r, "read question", err)
		return
	case !ok || t.rec.Status != askbridge.StatusPending || t.rec.Result != nil:
		h.linkRefuse(w)
		return
	}
	filled := parseLinkForm(t.rec.Request, form)
	a := engine.Answer{By: t.person(), Via: askbridge.ViaLink, Place: t.claims.Place, Skip: filled.skip}
	if !filled.skip {
		values, problem := filled.values(t.rec.Request, t.rec.Request.Locale)
		if problem != "" {
			h.renderLink(w, r, http.StatusUnprocessableEntity, h.linkView(t, &filled, problem))
			return
		}
		a.Values = values
	}
	h.linkSubmit(ctx, w, r, t, filled, a)
}

// readLinkForm checks what a POST carries before any read of Redis: an
// origin of the page's (crossSiteLink), the token, a form body within
// maxLinkForm, and a form token issued for this link. ok is false when
// any fails; they are refused alike.
func (h *Handler) readLinkForm(w http.ResponseWriter, r *http.Request, token string) (url.Values, bool) {
	now := time.Now()
	if h.crossSiteLink(r) {
		return nil, false
	}
	if _, err := h.links.Check(token, now); err != nil {
		return nil, false
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/x-www-form-urlencoded" {
		return nil, false
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxLinkForm)
	if err := r.ParseForm(); err != nil {
		return nil, false
	}
	if !h.links.CheckForm(token, r.PostForm.Get(linkFormToken), now) {
		return nil, false
	}
	return r.PostForm, true
}

// crossSiteLink reports whether a POST to a link's page comes from
// another site. A browser marks the request: Sec-Fetch-Site must be
// same-origin (or none, a person's own action), and an Origin must be the
// public URL's or one of the page's (Config.Origins). The page is served
// with Referrer-Policy: no-referrer, under which browsers send its own
// form's POST with "Origin: null": that is taken only from a browser that
// says same-origin, or one too old to send Sec-Fetch-Site (the form token
// is then the wall). A request with neither header is not a browser's.
func (h *Handler) crossSiteLink(r *http.Request) bool {
	site := r.Header.Get("Sec-Fetch-Site")
	switch site {
	case "", "same-origin", "none":
	default:
		return true
	}
	raw := r.Header.Get("Origin")
	switch {
	case raw == "":
		return false
	case raw == "null":
		return site == "none"
	}
	o, ok := parseOrigin(raw)
	if !ok {
		return true
	}
	if h.publicOrigin.admits(o) {
		return false
	}
	for _, allowed := range h.origins {
		if allowed.admits(o) {
			return false
		}
	}
	return true
}

// linkSubmit hands the answer to the engine and answers the POST: 303
// back to the page when it ended the question or was counted as a vote;
// the form again (422) for an answer that does not fit; the page with the
// notice AlreadyVoted (409) for a second vote; the refusal when the
// question had ended meanwhile.
func (h *Handler) linkSubmit(ctx context.Context, w http.ResponseWriter, r *http.Request, t linkTarget, filled linkFilled, a engine.Answer) {
	sub, err := h.submitter.SubmitRecord(ctx, t.rec, a)
	var invalid *askbridge.ValidationError
	switch {
	case errors.As(err, &invalid):
		h.renderLink(w, r, http.StatusUnprocessableEntity, h.linkView(t, &filled, wordsOf(t.rec).Get("LinkNotAccepted")))
	case err != nil:
		h.linkFail(w, r, "submit answer", err)
	case sub.Won, sub.Notice == engine.NoticeVoted, sub.Notice == engine.NoticeAbstained:
		// The page, read again, shows the outcome or the vote.
		w.Header().Set("Location", t.token)
		w.WriteHeader(http.StatusSeeOther)
	case sub.Notice == engine.NoticeAlreadyVoted && sub.End.Result.Status == askbridge.StatusPending:
		v := h.linkView(t, nil, "")
		v.Notice = sub.Notice.Text(v.Lang)
		h.renderLink(w, r, http.StatusConflict, v)
	default:
		// Ended meanwhile, gone, or not this person's: refused like any
		// link that may not answer.
		h.linkRefuse(w)
	}
}

// linkFail answers a request the store could not serve: 503 with a page
// that says so, and the failure in the log (never the token).
func (h *Handler) linkFail(w http.ResponseWriter, r *http.Request, op string, err error) {
	h.log.Error("web: link page: "+op, "err", err)
	w.Header().Set("Retry-After", "5")
	h.writeLinkPage(w, r, http.StatusServiceUnavailable, h.linkPages.trouble)
}

// linkNotValid is the one 404 of a link that points nowhere, whatever is
// wrong with it: the same bytes every time.
func (h *Handler) linkNotValid(w http.ResponseWriter, r *http.Request) {
	h.writeLinkPage(w, r, http.StatusNotFound, h.linkPages.notValid)
}

// linkRefuse is the one 403 of a POST that may not answer, whatever the
// reason: the same bytes every time.
func (h *Handler) linkRefuse(w http.ResponseWriter) {
	h.writeLinkPage(w, nil, http.StatusForbidden, h.linkPages.refused)
}

// linkFile serves one of the page's own files, the stylesheet or the
// icon (no-store, as everything under the link's path).
func (h *Handler) linkFile(ctype string, body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctype)
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			_, _ = w.Write(body)
		}
	}
}

// writeLinkPage writes one of the page's fixed HTML bodies with code.
func (h *Handler) writeLinkPage(w http.ResponseWriter, r *http.Request, code int, body []byte) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	if r == nil || r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

func writeText(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(msg))
}
