package engine_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/internal/link"
)

// TestAnswerLinkInDM: a route with links adds the person's own answer link
// to a text prompt in a DM, one the link secret checks, naming the
// question, the place and the DM's person; never in a group, never to a
// prompt of buttons, never on a route without links.
func TestAnswerLinkInDM(t *testing.T) {
	signer, err := link.NewSigner(bytes.Repeat([]byte("s"), link.MinSecret))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOpts{links: link.Maker{Base: "https://ask.example.com/", Signer: signer}})
	two := `{"to":%q,"questions":[{"id":"ship","header":"Ship","question":"Ship?","options":[{"label":"Yes"},{"label":"No"}]},{"id":"when","header":"When","question":"When?","options":[{"label":"Now"},{"label":"Later"}]}]}`
	one := `{"to":%q,"questions":[{"id":"ship","header":"Ship","question":"Ship?","options":[{"label":"Yes"},{"label":"No"}]}]}`
	cases := []struct {
		body     string
		wantLink bool
	}{
		{fmt.Sprintf(two, "links:123456"), true},
		{fmt.Sprintf(two, "links:-100123"), false},
		{fmt.Sprintf(one, "links:123456"), false},
		{fmt.Sprintf(two, "telegram:123456"), false},
	}
	for i, c := range cases {
		id := h.ask(c.body)
		p := h.waitSent(i + 1)[i]
		var url string
		for _, n := range p.plan.Notes {
			if _, u, ok := strings.Cut(n, "Answer in the browser: "); ok {
				url = u
			}
		}
		if (url != "") != c.wantLink {
			t.Fatalf("%s: notes %q, want a link: %v", c.body, p.plan.Notes, c.wantLink)
		}
		if url == "" {
			continue
		}
		tok, ok := strings.CutPrefix(url, "https://ask.example.com/a/")
		if !ok {
			t.Fatalf("link %q is not under the public URL", url)
		}
		claims, err := signer.Check(tok, time.Now())
		if err != nil {
			t.Fatalf("the link token %q does not check: %v", tok, err)
		}
		want := askbridge.Person{Platform: "telegram", ID: "123456"}
		if claims.ID != id || claims.Place != 0 || claims.Person != want {
			t.Fatalf("claims %+v, want question %s, place 0, %v", claims, id, want)
		}
	}
}
