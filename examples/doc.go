// Package examples holds agents in other languages that ask through
// askbridge with nothing but a Redis client — python/ask.py (redis-py,
// pinned in python/requirements.txt) and node/ask.mjs (the redis npm
// package, pinned in node/package-lock.json), each with a README that says
// how to install and run it — and the test that keeps them working: it
// builds the real bridge, runs each example against it, answers on the web
// page's API, and cancels one with Ctrl-C (SIGINT). cmd/bridge's
// TestWalkthrough runs the command each README marks, as a reader would.
package examples
