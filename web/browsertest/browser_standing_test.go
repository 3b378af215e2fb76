package browsertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/askbridge/askbridge/internal/webtest"
)

// browserStanding: a remember question answered on the page shows its
// keep buttons under the ended question; a keep takes them away and
// lists the standing answer with a Revoke button, which revokes it.
func browserStanding(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{Standing: true})
	tb := openTab(t, b, 1100, 800, "", false)
	if !eval[bool](tb, `document.querySelector('[data-testid=standing-panel]').hidden`) {
		t.Error("the standing panel shows with nothing standing")
	}
	id := b.Ask(t, webtest.RememberQuestion("b-standing", "web"))
	tb.do(chromedp.WaitVisible(chromedp.CSS(optionSel(id, "Production"))))
	tb.click(optionSel(id, "Production"))
	tb.waitEnded(id, "answered", 10*time.Second)
	keep := entrySel(id) + ` [data-testid=entry-offer] [data-testid=keep][data-index="1"]`
	tb.do(chromedp.WaitVisible(chromedp.CSS(keep)))
	if got := tb.text(keep); got != "Keep this answer for 1 day" {
		t.Errorf("keep button = %q", got)
	}
	tb.shot("40-offer")
	tb.click(keep)
	row := `[data-testid=standing-entry][data-key="deploy:prod"]`
	tb.do(chromedp.WaitVisible(chromedp.CSS(row + ` [data-testid=revoke]`)))
	tb.waitJS("the offer to go", fmt.Sprintf(`!document.querySelector(%s)`, jsq(entrySel(id)+` [data-testid=entry-offer]`)), 10*time.Second)
	if l, err := b.Engine.Standing(t.Context()); err != nil || len(l) != 1 || l[0].Until.Sub(l[0].Since) != 24*time.Hour {
		t.Fatalf("standing = %+v, %v; want one, for a day", l, err)
	}
	tb.shot("41-standing")
	tb.click(row + ` [data-testid=revoke]`)
	tb.waitJS("the standing panel to hide", `document.querySelector('[data-testid=standing-panel]').hidden`, 10*time.Second)
	if l, err := b.Engine.Standing(t.Context()); err != nil || len(l) != 0 {
		t.Errorf("standing after Revoke = %+v, %v", l, err)
	}
}
