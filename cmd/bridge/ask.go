package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	neturl "net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/client"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/redislog"
	"github.com/askbridge/askbridge/internal/retry"
	"github.com/askbridge/askbridge/store"
)

// Exit statuses of askbridge ask.
const (
	exitAnswered = 0
	exitNoAnswer = 1
	exitError    = 2
)

type optionFlags []string

func (o *optionFlags) String() string     { return strings.Join(*o, ", ") }
func (o *optionFlags) Set(v string) error { *o = append(*o, v); return nil }

// ask pushes one request through the protocol, waits for its result and
// prints it. Ctrl-C cancels the question.
func ask(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("askbridge ask", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		to       = fs.String("to", "", "where to ask: a route name, web, telegram:<chat>, discord:<channel>, slack:<channel>, email:<address> (default: the bridge's default route)")
		question = fs.String("question", "", "the question sentence")
		header   = fs.String("header", "Question", "a short label for the question (up to 12 characters)")
		multi    = fs.Bool("multi", false, "let the person pick several options")
		timeout  = fs.Int("timeout", 0, "seconds to wait for an answer, 30 to 3600, another number brought to the nearer bound (default 900)")
		id       = fs.String("id", "", "the question id (default: a new one, ask-<32 hex digits>)")
		agent    = fs.String("agent", "", "who is asking, shown as \"Question from <agent>:\"")
		jsonFile = fs.String("json", "", "read the whole request JSON from FILE, or - for stdin")
		redisURL = fs.String("redis", "", "Redis URL (default: ASKUSER_REDIS_URL, else the embedded Redis address)")
		options  optionFlags
	)
	fs.Var(&options, "option", `an option, "label" or "label: description" (repeat 2 to 4 times)`)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: askbridge ask --question TEXT --option A --option B [flags]\n       askbridge ask --json FILE|-\n\nExit status: 0 answered, 1 no answer, 2 refused or error.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitAnswered
		}
		return exitError
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "askbridge ask: unexpected argument %q\n", fs.Arg(0))
		return exitError
	}

	body, err := requestBody(*jsonFile, stdin, func() ([]byte, error) {
		if *question == "" || len(options) == 0 {
			return nil, errors.New("--question and at least two --option are required (or --json)")
		}
		return buildRequest(*to, *question, *header, *multi, *timeout, *id, *agent, options), nil
	})
	if err != nil {
		fmt.Fprintf(stderr, "askbridge ask: %v\n", err)
		return exitError
	}
	wait := requestWait(body, *jsonFile == "", stderr)
	c, closeRedis, err := askClient(ctx, *redisURL, getenv, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "askbridge ask: %v\n", err)
		return exitError
	}
	defer closeRedis()

	reqID, err := c.PushJSON(ctx, body)
	if err != nil {
		fmt.Fprintf(stderr, "askbridge ask: %v\n", err)
		return exitError
	}
	announce(ctx, c, reqID, stderr)
	result, err := waitResult(ctx, c, reqID, wait, stderr)
	var refused *client.RefusedError
	switch {
	case errors.As(err, &refused):
		fmt.Fprintf(stderr, "askbridge ask: the bridge refused request %s: %s\n", refused.ID, refused.Message)
	case err != nil:
		fmt.Fprintf(stderr, "askbridge ask: %v\n", err)
		return exitError
	}
	fmt.Fprintln(stdout, string(result.Raw))
	return exitStatus(result)
}

// requestWait is how long the question of request body waits, and says so
// on stderr when the request's timeout is out of bounds: the bridge clamps
// it (ask-user.md §1), and a person who typed --timeout 10 learns it
// waits 30. fromFlags names the flag instead of the JSON field.
func requestWait(body []byte, fromFlags bool, stderr io.Writer) time.Duration {
	wait, clamped := requestTimeout(body)
	if clamped != "" {
		name := "timeoutSeconds"
		if fromFlags {
			name = "--timeout"
		}
		fmt.Fprintf(stderr, "askbridge ask: %s %s: the question waits %d seconds\n", name, clamped, int(wait/time.Second))
	}
	return wait
}

// askClient connects to the bridge's Redis (redisTarget) and returns the
// protocol client and what closes it. Its error is one line that says
// what failed and what to check.
func askClient(ctx context.Context, flagURL string, getenv func(string) string, stderr io.Writer) (*client.Client, func(), error) {
	// go-redis's own lines (each failed dial of its pool) would come
	// before the one line that says what failed: they show only at
	// ASKUSER_LOG_LEVEL=debug.
	redislog.UseAt(newLogger(stderr, getenv("ASKUSER_LOG_LEVEL"), strings.ToLower(getenv("ASKUSER_LOG_FORMAT"))).With("part", "redis"), slog.LevelDebug)
	url, prefix, err := redisTarget(flagURL, getenv)
	if err != nil {
		return nil, nil, err
	}
	rdb, err := store.Connect(ctx, url)
	if err != nil {
		return nil, nil, errors.New(unreachable(url, flagURL != "", getenv, err))
	}
	c := client.New(rdb, client.Options{
		Prefix: prefix,
		NotTaken: func(string) {
			fmt.Fprintf(stderr, "askbridge ask: no bridge has taken the request yet; is one running on this Redis?\n")
		},
	})
	return c, func() { _ = rdb.Close() }, nil
}

// announceWithin bounds how long announce waits for a bridge to take the
// request; a bridge takes one within milliseconds.
const announceWithin = 2 * time.Second

// announce says that ask waits for the answer once a bridge has taken
// request id; it says nothing when the bridge refused it, as it does at
// once (the refusal, printed next, says why). With no bridge taking it
// within announceWithin, it says it waits all the same (and the client
// says later that no bridge took it).
func announce(ctx context.Context, c *client.Client, id string, stderr io.Writer) {
	deadline := time.Now().Add(announceWithin)
	for {
		q, found, err := c.Status(ctx, id)
		if err == nil && found && q.Status == askbridge.StatusError {
			return
		}
		if err != nil || found || time.Now().After(deadline) || !retry.Sleep(ctx, 50*time.Millisecond) {
			fmt.Fprintf(stderr, "askbridge ask: asked %s; waiting for the answer (Ctrl-C cancels)\n", id)
			return
		}
	}
}

// requestBody is the request to push: the JSON file's (jsonFile, "-" for
// stdin) when one is named, else the one the flags build.
func requestBody(jsonFile string, stdin io.Reader, fromFlags func() ([]byte, error)) ([]byte, error) {
	if jsonFile != "" {
		return readRequestFile(jsonFile, stdin)
	}
	return fromFlags()
}

func readRequestFile(name string, stdin io.Reader) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(io.LimitReader(stdin, 1<<20))
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("read request: %w", err)
	}
	return b, nil
}

func buildRequest(to, question, header string, multi bool, timeout int, id, agent string, options []string) []byte {
	type option struct {
		Label       string `json:"label"`
		Description string `json:"description,omitempty"`
	}
	q := map[string]any{"id": "answer", "header": header, "question": question}
	var opts []option
	for _, o := range options {
		label, desc, _ := strings.Cut(o, ":")
		opts = append(opts, option{Label: strings.TrimSpace(label), Description: strings.TrimSpace(desc)})
	}
	q["options"] = opts
	if multi {
		q["multiSelect"] = true
	}
	req := map[string]any{"questions": []any{q}}
	if id == "" {
		// An id of our own makes a retried push safe (the protocol's
		// default, the stream entry id, would ask twice).
		id = client.NewID()
	}
	for k, v := range map[string]string{"to": to, "id": id, "agent": agent} {
		if v != "" {
			req[k] = v
		}
	}
	if timeout != 0 {
		req["timeoutSeconds"] = timeout
	}
	b, _ := json.Marshal(req)
	return b
}

// requestTimeout reads the timeout of a request, leniently: the bridge is
// the one that validates it. clamped, when the timeout is a whole number
// outside [MinTimeout, MaxTimeout], says which bound it was brought to
// ("10 is below the least, 30"), as the bridge does.
func requestTimeout(body []byte) (wait time.Duration, clamped string) {
	var meta struct {
		Timeout any `json:"timeoutSeconds"`
	}
	_ = json.Unmarshal(body, &meta)
	secs := float64(askbridge.DefaultTimeout)
	if t, ok := meta.Timeout.(float64); ok {
		secs = min(max(t, askbridge.MinTimeout), askbridge.MaxTimeout)
		switch {
		case t != math.Trunc(t): // not a whole number: the bridge refuses it
		case t < askbridge.MinTimeout:
			clamped = fmt.Sprintf("%s is below the least, %d", strconv.FormatFloat(t, 'f', -1, 64), askbridge.MinTimeout)
		case t > askbridge.MaxTimeout:
			clamped = fmt.Sprintf("%s is above the most, %d", strconv.FormatFloat(t, 'f', -1, 64), askbridge.MaxTimeout)
		}
	}
	return time.Duration(secs) * time.Second, clamped
}

// redisTarget finds the Redis the bridge uses: the flag, else
// ASKUSER_REDIS_URL, else the embedded Redis address. A URL is one of the
// bridge's forms, with a scheme, as the bridge requires of
// ASKUSER_REDIS_URL.
func redisTarget(flagURL string, getenv func(string) string) (string, string, error) {
	prefix := getenv("ASKUSER_REDIS_PREFIX")
	if prefix == "" {
		prefix = config.DefaultPrefix
	}
	if flagURL != "" {
		return flagURL, prefix, needScheme("--redis", flagURL)
	}
	url, err := config.Secret(getenv, os.ReadFile, "ASKUSER_REDIS_URL")
	if err != nil {
		return "", "", err
	}
	if url != "" {
		return url, prefix, needScheme("ASKUSER_REDIS_URL", url)
	}
	addr := getenv("ASKUSER_EMBEDDED_REDIS_ADDR")
	if addr == "" {
		addr = config.DefaultEmbeddedAddr
	}
	return "redis://" + addr, prefix, nil
}

// needScheme says to add redis:// to a URL without a scheme. The URL may
// hold a password: it is not shown.
func needScheme(key, url string) error {
	if strings.Contains(url, "://") {
		return nil
	}
	return fmt.Errorf("%s has no scheme: add redis:// in front (redis://host:port, rediss:// for TLS)", key)
}

// unreachable is the one line that says the Redis at url did not answer
// (err, from store.Connect) and what to check: the address the bridge
// uses (flag tells whether --redis gave it), whether the bridge runs, and
// for the embedded Redis, its port.
func unreachable(url string, flag bool, getenv func(string) string, err error) string {
	if inner := errors.Unwrap(err); inner != nil {
		err = inner // without "store: connect <url>:", said here
	}
	shown := "the configured Redis"
	if u, perr := neturl.Parse(url); perr == nil && u.Host != "" {
		shown = u.Redacted()
	}
	switch {
	case flag:
		return fmt.Sprintf("cannot reach Redis at %s (%v): check --redis (the Redis your bridge uses, its ASKUSER_REDIS_URL) and that the bridge is running", shown, err)
	case getenv("ASKUSER_REDIS_URL") != "" || getenv("ASKUSER_REDIS_URL_FILE") != "":
		return fmt.Sprintf("cannot reach Redis at %s (%v): check ASKUSER_REDIS_URL (the Redis your bridge uses) and that the bridge is running", shown, err)
	}
	return fmt.Sprintf("cannot reach Redis at %s (%v): ASKUSER_REDIS_URL is not set, so this is the embedded Redis of a bridge on this machine: "+
		"check that the bridge is running and that its ASKUSER_EMBEDDED_REDIS_ADDR is this one's (default %s), or set ASKUSER_REDIS_URL to the Redis your bridge uses",
		shown, err, config.DefaultEmbeddedAddr)
}

// waitResult waits for the result of question id. It cancels the question
// when ctx is done (Ctrl-C) and then waits briefly for the cancelled
// result; it gives up, cancelling too, when no result came within the
// question's timeout and a minute (no bridge took the request).
func waitResult(ctx context.Context, c *client.Client, id string, wait time.Duration, stderr io.Writer) (client.Result, error) {
	wctx, stop := context.WithTimeout(ctx, wait+time.Minute)
	defer stop()
	res, err := c.Wait(wctx, id)
	if err == nil || wctx.Err() == nil || !errors.Is(err, wctx.Err()) {
		return res, err
	}
	timedOut := ctx.Err() == nil
	if !timedOut {
		fmt.Fprintf(stderr, "askbridge ask: cancelling %s\n", id)
	}
	res, err = c.CancelAndWait(context.WithoutCancel(ctx), id)
	if err != nil && timedOut {
		return res, fmt.Errorf("no result for %s within its timeout; is a bridge running on this Redis?", id)
	}
	return res, err
}

func exitStatus(result client.Result) int {
	switch result.Status {
	case askbridge.StatusAnswered:
		return exitAnswered
	case askbridge.StatusNoAnswer:
		return exitNoAnswer
	}
	return exitError
}
