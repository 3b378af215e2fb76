// Package browsertest holds the end-to-end tests of the web page (package
// web) in a real headless Chromium, driven with chromedp. It is a module of
// its own, so that chromedp is no requirement of github.com/askbridge/askbridge
// (and of every program that imports its client). It has no code of its
// own: the tests run the page as package web's tests do (internal/webtest)
// and check what a person sees and does in the browser, and draw the
// pictures the docs show (an email, the Matrix channel's prompts). Run them from this
// directory (go test ./...), or with `make test` at the repository's root.
package browsertest
