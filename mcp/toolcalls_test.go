package mcp_test

import (
	"strings"
	"testing"

	"github.com/askbridge/askbridge/mcp"
)

// FuzzToolCalls: counting the tool calls of an HTTP request's body (to
// reserve their slots) never panics, and counts no more calls than the
// body names the method.
func FuzzToolCalls(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask_user"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize"}`,
		`[]`, `null`, ``, `[1,"a",{"method":7}]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		n := mcp.ToolCalls(body)
		if most := strings.Count(string(body), "tools/call") + strings.Count(string(body), `\u`); n < 0 || n > most {
			t.Errorf("%d tool calls in %q", n, body)
		}
	})
}

// TestToolCalls: the calls of a message and of a batch are counted, other
// methods and bodies that are no JSON-RPC are not.
func TestToolCalls(t *testing.T) {
	cases := []struct {
		body string
		want int
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`, 1},
		{` [{"method":"tools/call"},{"method":"tools/call"},{"method":"tools/list"}]`, 2},
		{`{"method":"initialize"}`, 0},
		{`{"method":"tools/call"`, 0},
		{`[{"method":"tools/call"},1]`, 0},
	}
	for _, tc := range cases {
		if got := mcp.ToolCalls([]byte(tc.body)); got != tc.want {
			t.Errorf("toolCalls(%s) = %d; want %d", tc.body, got, tc.want)
		}
	}
}
