package engine

import (
	"slices"
	"strings"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/internal/link"
	"github.com/askbridge/askbridge/locale"
)

// LinkMaker makes the answer link of one person for one place of a
// question (ask-user.md §10): link.Maker, from ASKUSER_PUBLIC_URL and
// ASKUSER_LINK_SECRET.
type LinkMaker interface {
	URL(c link.Claims) (string, error)
}

// withLink adds "Answer in the browser" and the person's answer link to
// plan, the prompt of place k of rec, when the place's route asked for
// links (Place.Links), links are on, the prompt is text (several
// questions, or several choices: a form reads better than numbered text)
// and the place is a DM with one person the link can name. A group never
// gets one: the link answers as the person it names. A link that cannot be
// made is left out (logged); the prompt still goes.
func (c *core) withLink(rec Record, k int, plan Plan) Plan {
	if c.links == nil || k < 0 || k >= len(rec.Places) || !rec.Places[k].Links || plan.Mode != ModeText {
		return plan
	}
	person, ok := dmPerson(rec.Places[k])
	if !ok {
		return plan
	}
	url, err := c.links.URL(link.Claims{ID: rec.ID, Place: k, Person: person, Until: rec.Deadline})
	if err != nil {
		c.log.Warn("could not make an answer link; the prompt goes without it", "question", rec.ID, "err", err)
		return plan
	}
	w := locale.For(plan.Locale)
	plan.Notes = append(slices.Clip(plan.Notes), w.Format("AnswerInBrowser", map[string]any{"URL": url}))
	return plan
}

// dmPerson is the one person of a place that is a DM: a Telegram private
// chat (a positive chat id is the user's id), a Discord DM (@<user id>), a
// Slack DM named by its user (U…, W…). A place whose answerers leave that
// person out has none; every other chat has none.
func dmPerson(p askbridge.Place) (askbridge.Person, bool) {
	t := p.Target
	var id string
	switch t.Platform {
	case "telegram":
		if t.Chat != "" && !strings.HasPrefix(t.Chat, "-") {
			id = t.Chat
		}
	case "discord":
		id, _ = strings.CutPrefix(t.Chat, "@")
		if id == t.Chat {
			id = ""
		}
	case "slack":
		if strings.HasPrefix(t.Chat, "U") || strings.HasPrefix(t.Chat, "W") {
			id = t.Chat
		}
	}
	if id == "" || (len(p.Answerers) > 0 && !slices.Contains(p.Answerers, t.Platform+":"+id)) {
		return askbridge.Person{}, false
	}
	return askbridge.Person{Platform: t.Platform, ID: id}, true
}
