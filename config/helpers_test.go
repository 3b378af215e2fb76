package config

import (
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"
)

// env returns vars as an environment for Load, so tests never touch the
// process environment.
func env(vars map[string]string) []string {
	var environ []string
	for k, v := range vars {
		environ = append(environ, k+"="+v)
	}
	slices.Sort(environ)
	return environ
}

// files returns a readFile over an in-memory file system.
func files(m map[string]string) func(string) ([]byte, error) {
	return func(path string) ([]byte, error) {
		s, ok := m[path]
		if !ok {
			return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
		}
		return []byte(s), nil
	}
}

// noFiles fails the test if Load reads any file.
func noFiles(t *testing.T) func(string) ([]byte, error) {
	return func(path string) ([]byte, error) {
		t.Errorf("unexpected read of %s", path)
		return nil, fs.ErrNotExist
	}
}

// problemsOf returns the problems of a *ValidationError, failing otherwise.
func problemsOf(t *testing.T, err error) []string {
	t.Helper()
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("error = %v (%T), want *ValidationError", err, err)
	}
	return verr.Problems
}

// Tokens that pass validation.
const (
	tgToken      = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
	discordToken = "MTA5ODc2NTQzMjEwOTg3NjU0.GhIjKl.mNoPqRsTuVwXyZaBcDeFgHiJkLmNoPqRsTuVw"
	slackBot     = "xoxb-1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
	slackApp     = "xapp-1-A0123456789-1234567890123-abcdef0123456789abcdef"
	slackSigning = "8f742231b10e8888abcd99yyyzzz85a5"
	httpToken    = "s3cr3t-web-page-token-0123456789"
	redisPass    = "p4ssw0rd-do-not-print"
	hookSecret   = "hook_secret-0123456789"
)

func joinProblems(p []string) string { return strings.Join(p, "\n") }
