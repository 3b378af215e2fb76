package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/testwait"
)

// The log is JSON unless asked for text, or unless it goes to a terminal
// and no format is set.
func TestNewLogger(t *testing.T) {
	tests := []struct {
		name, format string
		json         bool
	}{
		{"unset, to a buffer", "", true},
		{"json", "json", true},
		{"text", "text", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			newLogger(&buf, "info", tc.format).Info("hello", "part", "test")
			line := strings.TrimSpace(buf.String())
			if json.Valid([]byte(line)) != tc.json {
				t.Errorf("JSON %v, want %v: %q", json.Valid([]byte(line)), tc.json, line)
			}
			if !tc.json && !strings.Contains(line, "level=INFO msg=hello part=test") {
				t.Errorf("not text: %q", line)
			}
		})
	}
	t.Run("unset, to a file", func(t *testing.T) {
		f, err := os.Create(filepath.Join(t.TempDir(), "log"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if isTerminal(f) {
			t.Fatal("a regular file taken for a terminal")
		}
		newLogger(f, "info", "").Info("hello")
		data, _ := os.ReadFile(f.Name())
		if !json.Valid(bytes.TrimSpace(data)) {
			t.Errorf("not JSON: %q", data)
		}
	})
	t.Run("unset, to a character device", func(t *testing.T) {
		// A terminal is a character device; so is /dev/null, which
		// stands in for one here.
		f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if !isTerminal(f) {
			t.Errorf("%s is not taken for a terminal", os.DevNull)
		}
	})
}

// ASKUSER_LOG_FORMAT=text makes the bridge's log text.
func TestLogFormatText(t *testing.T) {
	b := startBridge(t, map[string]string{"ASKUSER_LOG_FORMAT": "text"})
	// The page answers before the start is logged, just after.
	if !testwait.Until(5*time.Second, func() bool { return strings.Contains(b.stderr.String(), `msg="bridge started"`) }) {
		t.Errorf("no start logged: %s", b.stderr.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(b.stderr.String()), "\n") {
		if json.Valid([]byte(line)) || !strings.HasPrefix(line, "time=") {
			t.Errorf("log line is not text: %q", line)
		}
	}
}

// An unknown log format is a configuration error naming the key, for the
// bridge and for askbridge mcp.
func TestBadLogFormat(t *testing.T) {
	var out, errb syncBuffer
	code := serve(context.Background(), envList(map[string]string{"ASKUSER_LOG_FORMAT": "xml"}), &out, &errb)
	if code != 2 || !strings.HasPrefix(errb.String(), "askbridge: configuration: ") || !strings.Contains(errb.String(), `ASKUSER_LOG_FORMAT: "xml" is not one of json, text`) {
		t.Errorf("serve: exit %d, stderr %q", code, errb.String())
	}
	var mcpErr syncBuffer
	code = serveMCP(context.Background(), nil, strings.NewReader(""), &out, &mcpErr, mapEnv(map[string]string{"ASKUSER_LOG_FORMAT": "xml"}))
	if code != 2 || mcpErr.String() != "askbridge mcp: ASKUSER_LOG_FORMAT: \"xml\" is not one of json, text\n" {
		t.Errorf("mcp: exit %d, stderr %q", code, mcpErr.String())
	}
}
