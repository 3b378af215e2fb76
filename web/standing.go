package web

import (
	"context"
	"net/http"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/locale"
)

// The page's part in standing answers (ask-user.md §9): the keep buttons
// under an ended question the page answered (HistoryEntry.Offer, POST
// api/questions/{id}/keep), and the list of standing answers with their
// Revoke buttons (GET api/standing, POST api/standing/revoke), which is
// the page's message of each standing answer (Channel.ShowStanding).

// maxStandingBody bounds a keep or a revoke: an index or seconds, an
// agent and a key.
const maxStandingBody = 4 << 10

// keepRequest is the body of POST api/questions/{id}/keep: the duration
// by its index in remember.offer, or its length in seconds.
type keepRequest struct {
	Index   *int   `json:"index"`
	Seconds *int64 `json:"seconds"`
}

// standingReply tells the page what became of a keep or a revoke: the
// engine's notice as a code, its text in Locale, and the standing answer
// it concerns, when there is one.
type standingReply struct {
	ID       string        `json:"id,omitempty"`
	Notice   string        `json:"notice"`
	Message  string        `json:"message"`
	Locale   string        `json:"locale"`
	Standing *standingView `json:"standing,omitempty"`
}

// keep: POST api/questions/{id}/keep with {"index":n} or {"seconds":s},
// the page's keep button under an ended question (ask-user.md §9). The
// engine decides (Keeper.Keep) as for a keep tap: 200 when this kept the
// answer (notice Kept), 409 when it was kept before (KeptAgain) or the
// offer is closed (KeepClosed), 403 when the answer is not the page's
// (KeepNotYours), 400 for a duration the offer does not have; 403 and 404
// as for an answer.
func (h *Handler) keep(w http.ResponseWriter, r *http.Request) {
	var req keepRequest
	if !h.readPost(w, r, &req, maxStandingBody, "the body must be a JSON object with index or seconds") {
		return
	}
	if (req.Index == nil) == (req.Seconds == nil) {
		writeError(w, http.StatusBadRequest, "send index or seconds, one of them")
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), submitTimeout)
	defer cancel()
	rec, _, ok := h.pageQuestion(ctx, w, r)
	if !ok {
		return
	}
	tag := locale.For(rec.Request.Locale).Tag()
	d, ok := keepDuration(rec.Request.Remember, req)
	if !ok {
		writeNotice(w, http.StatusBadRequest, engine.NoticeKeepNoSuchDuration, tag)
		return
	}
	out, err := h.submitter.Keep(ctx, rec.ID, pagePerson, d)
	if err != nil {
		h.fail(w, r, "keep", err)
		return
	}
	n := out.Notice()
	reply := standingReply{ID: rec.ID, Notice: string(n), Message: n.Text(tag), Locale: tag}
	if out.Result == engine.KeepKept || out.Result == engine.KeepAgain {
		v := viewStanding(out.Standing)
		reply.Standing = &v
	}
	code := map[engine.KeepResult]int{
		engine.KeepKept: http.StatusOK, engine.KeepAgain: http.StatusConflict, engine.KeepClosed: http.StatusConflict,
		engine.KeepNotYours: http.StatusForbidden, engine.KeepNoSuchDuration: http.StatusBadRequest,
	}[out.Result]
	if code == 0 {
		code = http.StatusConflict
	}
	writeJSON(w, code, reply)
}

// keepDuration is the duration req names among rem's offer: ok is false
// when the question offers none such (or none at all).
func keepDuration(rem *askbridge.Remember, req keepRequest) (time.Duration, bool) {
	if rem == nil {
		return 0, false
	}
	ds := rem.Durations()
	if req.Index != nil {
		if *req.Index < 0 || *req.Index >= len(ds) {
			return 0, false
		}
		return ds[*req.Index], true
	}
	for _, d := range ds {
		if int64(d/time.Second) == *req.Seconds {
			return d, true
		}
	}
	return 0, false
}

// standingView is a standing answer as the page lists it.
type standingView struct {
	Agent string `json:"agent"`
	Key   string `json:"key"`
	// Answers are the labels that stand, by question id.
	Answers map[string][]string `json:"answers"`
	// By names the person who kept it.
	By string `json:"by"`
	// Since, Until and LastUse are unix milliseconds (LastUse left out
	// while it has not been used).
	Since   int64 `json:"since"`
	Until   int64 `json:"until"`
	Uses    int   `json:"uses"`
	LastUse int64 `json:"lastUse,omitempty"`
	// Text is its message in its question's words (engine.ViewStanding),
	// in Locale.
	Text   string `json:"text"`
	Locale string `json:"locale"`
	// MayRevoke is true when the page may revoke it (the engine's rule:
	// the keeper, or anyone allowed to answer where it was kept).
	MayRevoke bool `json:"mayRevoke"`
}

func viewStanding(s engine.StandingAnswer) standingView {
	text := engine.ViewStanding(s, engine.StandingKept, engine.Capabilities{})
	v := standingView{
		Agent: s.Agent, Key: s.Key, Answers: s.Answers, By: personName(s.By),
		Since: s.Since.UnixMilli(), Until: s.Until.UnixMilli(), Uses: s.Uses,
		Text: text.Text, Locale: text.Locale, MayRevoke: s.MayRevoke(pagePerson),
	}
	if !s.LastUse.IsZero() {
		v.LastUse = s.LastUse.UnixMilli()
	}
	return v
}

// listStanding: GET api/standing, the standing answers, with the server's
// clock for their countdowns.
func (h *Handler) listStanding(w http.ResponseWriter, r *http.Request) {
	list, err := h.submitter.Standing(r.Context())
	if err != nil {
		h.fail(w, r, "list standing answers", err)
		return
	}
	views := []standingView{}
	for _, s := range list {
		views = append(views, viewStanding(s))
	}
	writeJSON(w, http.StatusOK, map[string]any{"now": time.Now().UnixMilli(), "standing": views})
}

// revokeRequest is the body of POST api/standing/revoke.
type revokeRequest struct {
	Agent string `json:"agent"`
	Key   string `json:"key"`
}

// revoke: POST api/standing/revoke with {"agent":…,"key":…}, the page's
// Revoke button. The engine decides (Keeper.Revoke, by the page): 200
// when this revoked it (notice Revoked), 403 when the page may not
// (RevokeNotAllowed), 404 when none stands (RevokeGone).
func (h *Handler) revoke(w http.ResponseWriter, r *http.Request) {
	var req revokeRequest
	if !h.readPost(w, r, &req, maxStandingBody, "the body must be a JSON object with agent and key") {
		return
	}
	if req.Key == "" {
		writeError(w, http.StatusBadRequest, "key is required")
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), submitTimeout)
	defer cancel()
	by := pagePerson
	out, err := h.submitter.Revoke(ctx, req.Agent, req.Key, &by)
	if err != nil {
		h.fail(w, r, "revoke", err)
		return
	}
	tag := locale.For(out.Standing.Locale).Tag()
	reply := standingReply{Locale: tag}
	code := http.StatusNotFound
	n := engine.NoticeRevokeGone
	switch {
	case out.NotAllowed:
		code, n = http.StatusForbidden, engine.NoticeRevokeNotAllowed
	case out.Revoked:
		code, n = http.StatusOK, engine.NoticeRevoked
	}
	if out.NotAllowed || out.Revoked {
		v := viewStanding(out.Standing)
		reply.Standing = &v
	}
	reply.Notice, reply.Message = string(n), n.Text(tag)
	writeJSON(w, code, reply)
}
