// Package examples holds agents in other languages that ask through
// askbridge with nothing but a Redis client — python/ask.py (redis-py) and
// node/ask.mjs (the redis npm package) — and the test that keeps them
// working: it builds the real bridge, runs each example against it, answers
// on the web page's API, and cancels one with Ctrl-C (SIGINT).
package examples
