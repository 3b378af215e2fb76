package askbridge

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of ask-user.md §5.
const (
	// MaxPlaces bounds the places of one `to` list.
	MaxPlaces = 5
	// MaxSteps bounds the escalation steps of a request.
	MaxSteps = 3
	// MinRemindEvery is the shortest reminder interval, in seconds.
	MinRemindEvery = 60
	// MaxReminders is how many reminders one place gets at most.
	MaxReminders = 3
)

// ToList is a request's `to`: one target or route name, or a list of up to
// MaxPlaces distinct ones. It is written as a string when it holds one,
// so a v1 request reads back the same.
type ToList []string

// MarshalJSON writes one place as a string, several as a list.
func (t ToList) MarshalJSON() ([]byte, error) {
	if len(t) == 1 {
		return json.Marshal(t[0])
	}
	return json.Marshal([]string(t))
}

// UnmarshalJSON reads a string or a list of strings.
func (t *ToList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*t = ToList{one}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("to: a string or a list of strings: %w", err)
	}
	*t = list
	return nil
}

// String joins the places with commas, for logs.
func (t ToList) String() string { return strings.Join(t, ",") }

// Step is one escalation step (ask-user.md §5): AfterSeconds after the
// request was accepted, if the question is still open and nobody has
// acknowledged it, it is also shown in To.
type Step struct {
	AfterSeconds int    `json:"afterSeconds"`
	To           ToList `json:"to"`
}

// Pings reports whether the request asks for reminders or escalation, and
// so whether its prompts offer Seen.
func (r Request) Pings() bool { return r.RemindEverySeconds > 0 || len(r.Escalate) > 0 }

// Place is one place a question is shown: where, who may answer there, and
// the escalation step that adds it (0: one of the request's `to`, shown at
// once).
type Place struct {
	// Name is the place as the request or route named it: a target
	// ("slack:C0123") or a route name ("oncall").
	Name      string   `json:"name"`
	Target    Target   `json:"target"`
	Answerers []string `json:"answerers,omitempty"`
	Step      int      `json:"step,omitempty"`
	// Links says the place's route adds answer links to its text prompts
	// in a DM (ask-user.md §10).
	Links bool `json:"links,omitempty"`
}

// toList reads `to` (path names it in problems): a string, or a list of 1
// to MaxPlaces distinct strings. present is false when obj has no such key.
func (v *validator) toList(path string, raw any) ToList {
	switch t := raw.(type) {
	case string:
		if s, ok := v.toEntry(path, t); ok {
			return ToList{s}
		}
		return nil
	case []any:
		if len(t) == 0 || len(t) > MaxPlaces {
			v.addf("%s must list 1 to %d places (got %d)", path, MaxPlaces, len(t))
			return nil
		}
		var out ToList
		first := map[string]int{}
		for i, item := range t {
			p := fmt.Sprintf("%s[%d]", path, i)
			s, ok := item.(string)
			if !ok {
				v.addf("%s must be a string: a target such as \"telegram:42\" or a route name", p)
				continue
			}
			s, ok = v.toEntry(p, s)
			if !ok {
				continue
			}
			if j, dup := first[s]; dup {
				v.addf("%s repeats %s[%d] (%q): list each place once", p, path, j, s)
				continue
			}
			first[s] = i
			out = append(out, s)
		}
		return out
	}
	v.addf("%s must be a string or a list of 1 to %d strings (got %s)", path, MaxPlaces, jsonKind(raw))
	return nil
}

func (v *validator) toEntry(path, s string) (string, bool) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		v.addf("%s must not be empty when present", path)
	case utf8.RuneCountInString(s) > MaxToChars:
		v.addf("%s must be at most %d characters", path, MaxToChars)
	case hasControl(s) || strings.ContainsAny(s, " \t"):
		v.addf("%s must not contain spaces or control characters", path)
	default:
		return s, true
	}
	return "", false
}

// wholeSeconds reads an integer number of seconds at path; ok is false
// (with a problem added) when raw is not one.
func (v *validator) wholeSeconds(path string, raw any) (int, bool) {
	num, ok := raw.(json.Number)
	if !ok {
		v.addf("%s must be an integer number of seconds", path)
		return 0, false
	}
	n, err := strconv.ParseInt(num.String(), 10, 32)
	if err != nil {
		v.addf("%s must be an integer number of seconds (got %s)", path, num.String())
		return 0, false
	}
	return int(n), true
}

// reach reads remindEverySeconds and escalate (ask-user.md §5) into req,
// whose timeout is already read.
func (v *validator) reach(obj map[string]any, req *Request) {
	if raw, ok := obj["remindEverySeconds"]; ok {
		if n, ok := v.wholeSeconds("remindEverySeconds", raw); ok {
			switch {
			case n < MinRemindEvery:
				v.addf("remindEverySeconds must be at least %d (got %d)", MinRemindEvery, n)
			case n >= req.TimeoutSeconds:
				v.addf("remindEverySeconds (%d) must be below timeoutSeconds (%d): no reminder would come before the end", n, req.TimeoutSeconds)
			default:
				req.RemindEverySeconds = n
			}
		}
	}
	raw, ok := obj["escalate"]
	if !ok {
		return
	}
	list, ok := raw.([]any)
	if !ok || len(list) == 0 || len(list) > MaxSteps {
		v.addf("escalate must be a list of 1 to %d steps, each {\"afterSeconds\": N, \"to\": …}", MaxSteps)
		return
	}
	prev := 0
	for i, item := range list {
		path := fmt.Sprintf("escalate[%d]", i)
		o, ok := v.object(path, item)
		if !ok {
			continue
		}
		v.unknown(path+".", o, "afterSeconds", "to")
		var st Step
		if raw, ok := o["afterSeconds"]; !ok {
			v.addf("%s.afterSeconds is required", path)
		} else if n, ok := v.wholeSeconds(path+".afterSeconds", raw); ok {
			switch {
			case n < 1:
				v.addf("%s.afterSeconds must be at least 1 (got %d)", path, n)
			case n <= prev:
				v.addf("%s.afterSeconds (%d) must be greater than escalate[%d].afterSeconds (%d)", path, n, i-1, prev)
			case n >= req.TimeoutSeconds:
				v.addf("%s.afterSeconds (%d) must be below timeoutSeconds (%d)", path, n, req.TimeoutSeconds)
			}
			st.AfterSeconds, prev = n, max(n, prev)
		}
		if raw, ok := o["to"]; !ok {
			v.addf("%s.to is required: a target, a route name, or a list of them", path)
		} else {
			st.To = v.toList(path+".to", raw)
		}
		req.Escalate = append(req.Escalate, st)
	}
}
