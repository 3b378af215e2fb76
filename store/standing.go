package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
)

// Standing answers (ask-user.md §9). An offer lives in its question's
// slot (offer:{<id>}), a standing answer, its end mark and the use
// decisions of an agent in the agent's slot ({<agent tag>}); their timers
// share one zset of their own (standing-timers), handed out as the
// reminders' are (timers_due.lua). See keys.go for each key.

// endMarkGrace is how long a standing answer's end mark outlives it: its
// end timer, however late, finds it, and a keep set again after a revoke
// (a recovery) is refused for as long.
const endMarkGrace = 24 * time.Hour

// offerFields are the fields of an offer hash.
func offerFields(o engine.Offer) ([]any, error) {
	by, err := json.Marshal(o.By)
	if err != nil {
		return nil, err
	}
	answers, err := json.Marshal(o.Answers)
	if err != nil {
		return nil, err
	}
	answerers, err := json.Marshal(o.Answerers)
	if err != nil {
		return nil, err
	}
	secs := make([]string, len(o.Durations))
	for i, d := range o.Durations {
		secs[i] = strconv.FormatInt(int64(d/time.Second), 10)
	}
	return []any{
		"agent", o.Agent, "key", o.Key, "shape", o.Shape, "by", string(by), "who", o.By.Platform + ":" + o.By.ID,
		"answers", string(answers), "offer", strings.Join(secs, ","), "ends", o.Ends.UnixMilli(),
		"place", o.Place, "target", o.Target.String(), "locale", o.Locale, "answerers", string(answerers),
	}, nil
}

// OpenOffer records an offer and schedules its end (see engine.Offers):
// the timer first, so an offer is never left without one.
func (s *Store) OpenOffer(ctx context.Context, o engine.Offer) error {
	if err := checkID(o.ID); err != nil {
		return fmt.Errorf("store: open offer: %w", err)
	}
	fields, err := offerFields(o)
	if err != nil {
		return fmt.Errorf("store: open offer: %w", err)
	}
	t := engine.StandingTimer{OfferOf: o.ID, At: o.Ends}
	if err := s.addStandingTimer(ctx, t); err != nil {
		return fmt.Errorf("store: open offer: %w", err)
	}
	// The hash outlives its end by an hour, so its end timer finds it.
	args := append([]any{ms(engine.OfferOpen + time.Hour)}, fields...)
	if _, err := offerOpenScript.run(ctx, s.cl(), []string{s.k.offer(o.ID)}, args...); err != nil {
		return fmt.Errorf("store: open offer: %w", err)
	}
	return nil
}

// TakeOffer takes an offer for a keep (see engine.Offers).
func (s *Store) TakeOffer(ctx context.Context, id string, by askbridge.Person, d time.Duration, gen string, now time.Time) (engine.TakeOutcome, engine.Offer, error) {
	if err := checkID(id); err != nil {
		return 0, engine.Offer{}, fmt.Errorf("store: take offer: %w", err)
	}
	v, err := offerTakeScript.run(ctx, s.cl(), []string{s.k.offer(id)},
		by.Platform+":"+by.ID, int64(d/time.Second), now.UnixMilli(), gen)
	if err != nil {
		return 0, engine.Offer{}, fmt.Errorf("store: take offer: %w", err)
	}
	code, rest, err := codeReply(v)
	if err != nil {
		return 0, engine.Offer{}, fmt.Errorf("store: take offer: %w", err)
	}
	out, ok := takeOutcomes[code]
	if !ok {
		return 0, engine.Offer{}, fmt.Errorf("store: take offer: unexpected code %d", code)
	}
	if len(rest) == 0 {
		return out, engine.Offer{}, nil
	}
	o, err := decodeOffer(id, flatMap(rest[0]))
	if err != nil {
		return 0, engine.Offer{}, fmt.Errorf("store: take offer: %w", err)
	}
	return out, o, nil
}

// takeOutcomes maps offer_take.lua's codes.
var takeOutcomes = map[int64]engine.TakeOutcome{
	1: engine.TakeDone, 2: engine.TakeAgain, 3: engine.TakeNotYours, 4: engine.TakeClosed, 5: engine.TakeNoSuchDuration,
}

// CloseOffer removes an offer (see engine.Offers).
func (s *Store) CloseOffer(ctx context.Context, id string) (engine.Offer, bool, error) {
	if err := checkID(id); err != nil {
		return engine.Offer{}, false, fmt.Errorf("store: close offer: %w", err)
	}
	v, err := offerCloseScript.run(ctx, s.cl(), []string{s.k.offer(id)})
	if err != nil {
		return engine.Offer{}, false, fmt.Errorf("store: close offer: %w", err)
	}
	code, rest, err := codeReply(v)
	if err != nil || code != 1 || len(rest) == 0 {
		return engine.Offer{}, false, err
	}
	o, err := decodeOffer(id, flatMap(rest[0]))
	if err != nil {
		return engine.Offer{}, false, fmt.Errorf("store: close offer: %w", err)
	}
	return o, true, nil
}

// PeekOffer reads the offer of question id, changing nothing (see
// engine.Standings).
func (s *Store) PeekOffer(ctx context.Context, id string) (engine.Offer, bool, error) {
	if err := checkID(id); err != nil {
		return engine.Offer{}, false, fmt.Errorf("store: peek offer: %w", err)
	}
	m, err := s.cl().HGetAll(ctx, s.k.offer(id)).Result()
	if err != nil {
		return engine.Offer{}, false, fmt.Errorf("store: peek offer: %w", err)
	}
	if len(m) == 0 {
		return engine.Offer{}, false, nil
	}
	o, err := decodeOffer(id, m)
	if err != nil {
		return engine.Offer{}, false, fmt.Errorf("store: peek offer: %w", err)
	}
	return o, true, nil
}

// decodeOffer reads an offer hash; a taken one has Kept set.
func decodeOffer(id string, m map[string]string) (engine.Offer, error) {
	o := engine.Offer{ID: id, Agent: m["agent"], Key: m["key"], Shape: m["shape"], Locale: m["locale"]}
	if err := json.Unmarshal([]byte(m["by"]), &o.By); err != nil {
		return o, fmt.Errorf("offer %s: decode by: %w", id, err)
	}
	if err := json.Unmarshal([]byte(m["answers"]), &o.Answers); err != nil {
		return o, fmt.Errorf("offer %s: decode answers: %w", id, err)
	}
	for _, f := range strings.Split(m["offer"], ",") {
		if n, err := strconv.ParseInt(f, 10, 64); err == nil {
			o.Durations = append(o.Durations, time.Duration(n)*time.Second)
		}
	}
	o.Ends = msTime(m["ends"])
	o.Place, _ = strconv.Atoi(m["place"])
	o.Target = targetOf(m["target"])
	_ = json.Unmarshal([]byte(m["answerers"]), &o.Answerers) // none: anyone there
	if gen := m["gen"]; gen != "" {
		o.Kept = &engine.StandingAnswer{
			Agent: o.Agent, Key: o.Key, Shape: o.Shape, Answers: o.Answers, By: o.By, Gen: gen,
			Since: msTime(m["since"]), Until: msTime(m["until"]), From: id, Target: o.Target, Locale: o.Locale,
			Answerers: o.Answerers,
		}
	}
	return o, nil
}

// standingFields are the fields of a standing hash: the protocol's
// (answers, shape, by, since, until, uses) and the bridge's own (gen,
// agent, key, from, target, locale; lastUse, msg and edited, the time of the
// message's last paced edit, come later).
func standingFields(a engine.StandingAnswer) ([]any, string, error) {
	by, err := json.Marshal(a.By)
	if err != nil {
		return nil, "", err
	}
	answers, err := json.Marshal(a.Answers)
	if err != nil {
		return nil, "", err
	}
	answerers, err := json.Marshal(a.Answerers)
	if err != nil {
		return nil, "", err
	}
	return []any{
		"answers", string(answers), "shape", a.Shape, "by", string(by),
		"since", a.Since.UnixMilli(), "until", a.Until.UnixMilli(), "uses", a.Uses,
		"gen", a.Gen, "agent", a.Agent, "key", a.Key, "from", a.From, "target", a.Target.String(), "locale", a.Locale,
		"answerers", string(answerers),
	}, string(by), nil
}

// SetStanding makes a kept answer stand (see engine.Standings): its end
// timer first, then the script.
func (s *Store) SetStanding(ctx context.Context, a engine.StandingAnswer) (bool, error) {
	if !askbridge.ValidRememberKey(a.Key) || a.Gen == "" || strings.Contains(a.Gen, " ") {
		return false, fmt.Errorf("store: set standing: invalid key %q or gen %q", a.Key, a.Gen)
	}
	fields, by, err := standingFields(a)
	if err != nil {
		return false, fmt.Errorf("store: set standing: %w", err)
	}
	t := engine.StandingTimer{Agent: a.Agent, Key: a.Key, Gen: a.Gen, At: a.Until}
	if err := s.addStandingTimer(ctx, t); err != nil {
		return false, fmt.Errorf("store: set standing: %w", err)
	}
	args := append([]any{a.Gen, a.Since.UnixMilli(), a.Until.UnixMilli(), ms(endMarkGrace), by}, fields...)
	v, err := standingSetScript.run(ctx, s.cl(), []string{s.k.Standing(a.Agent, a.Key), s.k.standingEnd(a.Agent, a.Key)}, args...)
	if err != nil {
		return false, fmt.Errorf("store: set standing: %w", err)
	}
	n, _ := v.(int64)
	return n == 1, nil
}

// PeekStanding reads a standing answer (see engine.Standings).
func (s *Store) PeekStanding(ctx context.Context, agent, key string, now time.Time) (engine.StandingAnswer, bool, error) {
	m, err := s.cl().HGetAll(ctx, s.k.Standing(agent, key)).Result()
	if err != nil {
		return engine.StandingAnswer{}, false, fmt.Errorf("store: peek standing: %w", err)
	}
	if len(m) == 0 {
		return engine.StandingAnswer{}, false, nil
	}
	a, err := decodeStanding(m)
	if err != nil {
		return engine.StandingAnswer{}, false, fmt.Errorf("store: peek standing: %w", err)
	}
	return a, a.Until.After(now), nil
}

// UseStanding decides a use once per token (see engine.Standings).
func (s *Store) UseStanding(ctx context.Context, agent, key, gen, shape, token string, now time.Time) (bool, engine.StandingAnswer, error) {
	if err := checkID(token); err != nil {
		return false, engine.StandingAnswer{}, fmt.Errorf("store: use standing: %w", err)
	}
	v, err := standingUseScript.run(ctx, s.cl(), []string{s.k.Standing(agent, key), s.k.standingUse(agent, token)},
		gen, shape, now.UnixMilli(), ms(s.opts.Retention))
	if err != nil {
		return false, engine.StandingAnswer{}, fmt.Errorf("store: use standing: %w", err)
	}
	code, rest, err := codeReply(v)
	if err != nil || code != 1 || len(rest) == 0 {
		return false, engine.StandingAnswer{}, err
	}
	a, err := decodeStanding(flatMap(rest[0]))
	if err != nil {
		return false, engine.StandingAnswer{}, fmt.Errorf("store: use standing: %w", err)
	}
	return true, a, nil
}

// RevokeStanding revokes a standing answer (see engine.Standings).
func (s *Store) RevokeStanding(ctx context.Context, agent, key, gen string) (engine.StandingAnswer, bool, error) {
	v, err := standingRevokeScript.run(ctx, s.cl(), []string{s.k.Standing(agent, key), s.k.standingEnd(agent, key)}, gen)
	if err != nil {
		return engine.StandingAnswer{}, false, fmt.Errorf("store: revoke standing: %w", err)
	}
	code, rest, err := codeReply(v)
	if err != nil || code != 1 || len(rest) == 0 {
		return engine.StandingAnswer{}, false, err
	}
	a, err := decodeStanding(flatMap(rest[0]))
	if err != nil {
		return engine.StandingAnswer{}, false, fmt.Errorf("store: revoke standing: %w", err)
	}
	return a, true, nil
}

// ExpireStanding ends a standing answer at its time (see
// engine.Standings).
func (s *Store) ExpireStanding(ctx context.Context, agent, key, gen string, now time.Time) (engine.ExpireOutcome, engine.StandingAnswer, error) {
	v, err := standingExpireScript.run(ctx, s.cl(), []string{s.k.Standing(agent, key), s.k.standingEnd(agent, key)}, gen, now.UnixMilli())
	if err != nil {
		return 0, engine.StandingAnswer{}, fmt.Errorf("store: expire standing: %w", err)
	}
	code, rest, err := codeReply(v)
	switch {
	case err != nil:
		return 0, engine.StandingAnswer{}, fmt.Errorf("store: expire standing: %w", err)
	case code == 0:
		return engine.ExpireMoot, engine.StandingAnswer{}, nil
	case code == 2:
		return engine.ExpireNotYet, engine.StandingAnswer{}, nil
	case code != 1 || len(rest) < 2:
		return 0, engine.StandingAnswer{}, fmt.Errorf("store: expire standing: unexpected reply %v", v)
	}
	a := engine.StandingAnswer{Agent: agent, Key: key, Gen: gen}
	if m := flatMap(rest[1]); len(m) > 0 {
		if a, err = decodeStanding(m); err != nil {
			return 0, engine.StandingAnswer{}, fmt.Errorf("store: expire standing: %w", err)
		}
	}
	by, _ := rest[0].(string)
	_ = json.Unmarshal([]byte(by), &a.By) // the mark's by; a mark without one names nobody
	return engine.ExpireDone, a, nil
}

// SetStandingMessage records the message of a standing answer (see
// engine.Standings).
func (s *Store) SetStandingMessage(ctx context.Context, agent, key, gen string, ref engine.MessageRef) error {
	b, err := json.Marshal(ref)
	if err != nil {
		return fmt.Errorf("store: standing message: %w", err)
	}
	if _, err := standingNoteScript.run(ctx, s.cl(), []string{s.k.Standing(agent, key)}, gen, string(b)); err != nil {
		return fmt.Errorf("store: standing message: %w", err)
	}
	return nil
}

// PaceStandingEdit paces the edits of a standing answer's message (see
// engine.Standings).
func (s *Store) PaceStandingEdit(ctx context.Context, agent, key, gen string, now time.Time, every time.Duration) (bool, error) {
	v, err := standingPaceScript.run(ctx, s.cl(), []string{s.k.Standing(agent, key)}, gen, now.UnixMilli(), ms(every))
	if err != nil {
		return false, fmt.Errorf("store: pace standing edit: %w", err)
	}
	n, _ := v.(int64)
	return n == 1, nil
}

// decodeStanding reads a standing hash.
func decodeStanding(m map[string]string) (engine.StandingAnswer, error) {
	a := engine.StandingAnswer{
		Agent: m["agent"], Key: m["key"], Shape: m["shape"], Gen: m["gen"], From: m["from"], Locale: m["locale"],
		Since: msTime(m["since"]), Until: msTime(m["until"]), LastUse: msTime(m["lastUse"]),
		Target: targetOf(m["target"]),
	}
	a.Uses, _ = strconv.Atoi(m["uses"])
	_ = json.Unmarshal([]byte(m["answerers"]), &a.Answerers) // none: anyone there
	if err := json.Unmarshal([]byte(m["by"]), &a.By); err != nil {
		return a, fmt.Errorf("standing %s: decode by: %w", a.Key, err)
	}
	if err := json.Unmarshal([]byte(m["answers"]), &a.Answers); err != nil {
		return a, fmt.Errorf("standing %s: decode answers: %w", a.Key, err)
	}
	if v := m["msg"]; v != "" {
		var ref engine.MessageRef
		if err := json.Unmarshal([]byte(v), &ref); err == nil {
			a.Message = &ref
		}
	}
	return a, nil
}

// ListStanding lists the standing answers (see engine.Standings): the end
// timers still ahead name them, one HGETALL each in a pipeline; a revoked
// or replaced one is left out.
func (s *Store) ListStanding(ctx context.Context, now time.Time) ([]engine.StandingAnswer, error) {
	members, err := s.cl().ZRangeByScore(ctx, s.k.standingTimers(), &redis.ZRangeBy{
		Min: strconv.FormatInt(now.UnixMilli()+1, 10), Max: "+inf",
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("store: list standing: %w", err)
	}
	var ts []engine.StandingTimer
	for _, m := range members {
		if t, ok := parseStandingTimer(m); ok && t.OfferOf == "" {
			ts = append(ts, t)
		}
	}
	if len(ts) == 0 {
		return nil, nil
	}
	pipe := s.cl().Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(ts))
	for i, t := range ts {
		cmds[i] = pipe.HGetAll(ctx, s.k.Standing(t.Agent, t.Key))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("store: list standing: %w", err)
	}
	var out []engine.StandingAnswer
	for i, c := range cmds {
		m := c.Val()
		if len(m) == 0 || m["gen"] != ts[i].Gen {
			continue
		}
		a, err := decodeStanding(m)
		if err != nil {
			return nil, fmt.Errorf("store: list standing: %w", err)
		}
		out = append(out, a)
	}
	return out, nil
}

// standingTimerMember is a timer's member of the standing-timers zset:
// "offer <id>" for an offer's end, "end <gen> <key> <agent>" for a
// standing answer's (a gen and a key have no space; the agent, last, may).
func standingTimerMember(t engine.StandingTimer) string {
	if t.OfferOf != "" {
		return "offer " + t.OfferOf
	}
	return "end " + t.Gen + " " + t.Key + " " + t.Agent
}

// parseStandingTimer reads a member standingTimerMember wrote.
func parseStandingTimer(m string) (engine.StandingTimer, bool) {
	if id, ok := strings.CutPrefix(m, "offer "); ok {
		return engine.StandingTimer{OfferOf: id}, checkID(id) == nil
	}
	rest, ok := strings.CutPrefix(m, "end ")
	if !ok {
		return engine.StandingTimer{}, false
	}
	parts := strings.SplitN(rest, " ", 3)
	if len(parts) != 3 || parts[0] == "" || !askbridge.ValidRememberKey(parts[1]) {
		return engine.StandingTimer{}, false
	}
	return engine.StandingTimer{Gen: parts[0], Key: parts[1], Agent: parts[2]}, true
}

// addStandingTimer schedules t (ZADD: a timer scheduled again moves).
func (s *Store) addStandingTimer(ctx context.Context, t engine.StandingTimer) error {
	return s.cl().ZAdd(ctx, s.k.standingTimers(), redis.Z{Score: float64(t.At.UnixMilli()), Member: standingTimerMember(t)}).Err()
}

// DueStandingTimers hands out due standing timers (see engine.Offers),
// with the reminders' script on the standing-timers zset.
func (s *Store) DueStandingTimers(ctx context.Context, now time.Time, hold time.Duration, max int) ([]engine.StandingTimer, error) {
	if max < 1 {
		max = defaultSweepCount
	}
	v, err := timersDueScript.run(ctx, s.cl(), []string{s.k.standingTimers()}, now.UnixMilli(), ms(hold), max)
	if err != nil {
		return nil, fmt.Errorf("store: due standing timers: %w", err)
	}
	items, _ := v.([]any)
	out := make([]engine.StandingTimer, 0, len(items))
	for _, it := range items {
		m, _ := it.(string)
		t, ok := parseStandingTimer(m)
		if !ok {
			s.cl().ZRem(ctx, s.k.standingTimers(), m) // not one this store wrote
			continue
		}
		t.At = now
		out = append(out, t)
	}
	return out, nil
}

// StandingTimerDone removes a standing timer (see engine.Offers).
func (s *Store) StandingTimerDone(ctx context.Context, t engine.StandingTimer) error {
	if err := s.cl().ZRem(ctx, s.k.standingTimers(), standingTimerMember(t)).Err(); err != nil {
		return fmt.Errorf("store: standing timer done: %w", err)
	}
	return nil
}

// Conclude stores a question ended at once (see engine.Standings): the
// reject script, with the request, entry and target kept in the hash.
func (s *Store) Conclude(ctx context.Context, q engine.NewQuestion, res askbridge.Result, now time.Time) (engine.EndResult, error) {
	if err := checkID(q.ID); err != nil {
		return engine.EndResult{}, fmt.Errorf("store: conclude: %w", err)
	}
	body, err := resultBody(q.ID, res)
	if err != nil {
		return engine.EndResult{}, fmt.Errorf("store: conclude: %w", err)
	}
	request, err := json.Marshal(q.Request)
	if err != nil {
		return engine.EndResult{}, fmt.Errorf("store: conclude: %w", err)
	}
	args := []any{string(res.Status), body, now.UnixMilli(), ms(s.opts.Retention),
		fieldRequest, string(request), fieldTarget, q.Target.String()}
	if q.Entry != "" {
		args = append(args, fieldEntry, q.Entry)
	}
	v, err := rejectScript.run(ctx, s.cl(), []string{s.k.Question(q.ID), s.k.Result(q.ID)}, args...)
	if err != nil {
		return engine.EndResult{}, fmt.Errorf("store: conclude: %w", err)
	}
	er, _, err := endReply(q.ID, v)
	if err != nil {
		return engine.EndResult{}, fmt.Errorf("store: conclude: %w", err)
	}
	return er, nil
}

// codeReply splits a reply {code, ...} of the standing scripts.
func codeReply(v any) (int64, []any, error) {
	r, ok := v.([]any)
	if !ok || len(r) == 0 {
		return 0, nil, fmt.Errorf("unexpected script reply %v", v)
	}
	code, ok := r[0].(int64)
	if !ok {
		return 0, nil, fmt.Errorf("script reply opens with %T, want an integer", r[0])
	}
	return code, r[1:], nil
}

// flatMap reads an HGETALL reply a script returned.
func flatMap(v any) map[string]string {
	flat, _ := v.([]any)
	m := make(map[string]string, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		k, _ := flat[i].(string)
		val, _ := flat[i+1].(string)
		m[k] = val
	}
	return m
}

// msTime reads unix milliseconds; zero for none.
func msTime(s string) time.Time {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n == 0 {
		return time.Time{}
	}
	return time.UnixMilli(n)
}

// targetOf reads a target as Target.String wrote it.
func targetOf(s string) askbridge.Target {
	platform, chat, _ := strings.Cut(s, ":")
	return askbridge.Target{Platform: platform, Chat: chat}
}
