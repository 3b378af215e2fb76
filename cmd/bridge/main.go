// Command askbridge runs askbridge: it shows agents' questions to people on
// Telegram, Discord, Slack or its own web page, and hands the answers back
// through Redis. It is built from cmd/bridge into a binary named askbridge
// (make build writes bin/askbridge).
//
//	askbridge            run the bridge (configured by ASKUSER_* variables)
//	askbridge ask ...    ask a question through Redis and print the result
//	askbridge mcp ...    serve the ask_user tool to an MCP client over stdio
//	askbridge version    print the version
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/askbridge/askbridge/config"
)

// name is the program's name in everything it prints about itself.
const name = "askbridge"

// version is set at build time with -ldflags "-X main.version=...". Left
// "dev", the version comes from the module's build information
// (buildVersion).
var version = "dev"

func main() {
	if n := maxProcs(config.Lookup(os.Environ())); n > 0 {
		runtime.GOMAXPROCS(n)
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Environ()))
}

// defaultMaxProcs is how many threads run the bridge's Go code at once
// unless the GOMAXPROCS variable says otherwise. One: the bridge mostly
// waits on Redis and the chat platforms, and with a second processor idle
// nearly every goroutine made ready (a reply read, a request handed to the
// HTTP client's connection loops) woke a second thread as well, which
// found nothing to do and slept again. docs/performance.md (the wake-up
// row) has the counts; docs/deployment.md says when to raise it.
const defaultMaxProcs = 1

// maxProcs is the GOMAXPROCS main sets: defaultMaxProcs, or 0 (leave it)
// when the GOMAXPROCS variable is set, which the Go runtime has applied.
func maxProcs(getenv func(string) string) int {
	if getenv("GOMAXPROCS") != "" {
		return 0
	}
	return defaultMaxProcs
}

// run is main without the process, in the environment environ ("NAME=value"
// strings, os.Environ): it returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, environ []string) int {
	getenv := config.Lookup(environ)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd := ""
	if len(args) > 0 {
		cmd = args[0]
	}
	switch cmd {
	case "", "serve":
		if len(args) > 1 {
			fmt.Fprintf(stderr, "%s: serve takes no arguments; it is configured by ASKUSER_* variables (see the README)\n", name)
			return 2
		}
		return serve(ctx, environ, stdout, stderr)
	case "ask":
		return ask(ctx, args[1:], stdin, stdout, stderr, getenv)
	case "standing":
		return standing(ctx, args[1:], stdout, stderr, getenv)
	case "mcp":
		return serveMCP(ctx, args[1:], stdin, stdout, stderr, getenv)
	case "healthcheck":
		return healthcheck(ctx, getenv, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, currentBuild().String())
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "%s: unknown command %q\n\n%s", name, cmd, usage)
	return 2
}

const usage = `usage:
  askbridge              run the bridge (configured by ASKUSER_* variables)
  askbridge ask [flags]  ask a question and print the result JSON
                         (askbridge ask -h for its flags)
  askbridge mcp [flags]  serve the ask_user tool to an MCP client (Claude Code,
                         Claude Desktop, Cursor) over stdio (askbridge mcp -h)
  askbridge standing list|revoke
                         list the standing answers, or revoke one
                         (askbridge standing -h)
  askbridge version      print the version and what it was built from
  askbridge healthcheck  exit 0 when the bridge on ASKUSER_HTTP_ADDR is healthy
`
