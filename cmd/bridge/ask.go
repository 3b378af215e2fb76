package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/store"
)

// Exit statuses of bridge ask.
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
	fs := flag.NewFlagSet("bridge ask", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		to       = fs.String("to", "", "where to ask: a route name, web, telegram:<chat>, discord:<channel>, slack:<channel> (default: the bridge's default route)")
		question = fs.String("question", "", "the question sentence")
		header   = fs.String("header", "Question", "a short label for the question (up to 12 characters)")
		multi    = fs.Bool("multi", false, "let the person pick several options")
		timeout  = fs.Int("timeout", 0, "seconds to wait for an answer, 30 to 3600 (default 900)")
		id       = fs.String("id", "", "the question id (default: the stream entry id)")
		agent    = fs.String("agent", "", "who is asking, shown as \"Question from <agent>:\"")
		jsonFile = fs.String("json", "", "read the whole request JSON from FILE, or - for stdin")
		redisURL = fs.String("redis", "", "Redis URL (default: ASKUSER_REDIS_URL, else the embedded Redis address)")
		options  optionFlags
	)
	fs.Var(&options, "option", `an option, "label" or "label: description" (repeat 2 to 4 times)`)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: bridge ask --question TEXT --option A --option B [flags]\n       bridge ask --json FILE|-\n\nExit status: 0 answered, 1 no answer, 2 refused or error.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitAnswered
		}
		return exitError
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "bridge ask: unexpected argument %q\n", fs.Arg(0))
		return exitError
	}

	var body []byte
	if *jsonFile != "" {
		var err error
		body, err = readRequestFile(*jsonFile, stdin)
		if err != nil {
			fmt.Fprintf(stderr, "bridge ask: %v\n", err)
			return exitError
		}
	} else {
		if *question == "" || len(options) == 0 {
			fmt.Fprintf(stderr, "bridge ask: --question and at least two --option are required (or --json)\n")
			return exitError
		}
		body = buildRequest(*to, *question, *header, *multi, *timeout, *id, *agent, options)
	}
	reqID, wait := requestMeta(body)

	url, prefix, err := redisTarget(*redisURL, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "bridge ask: %v\n", err)
		return exitError
	}
	rdb, err := store.Connect(ctx, url)
	if err != nil {
		fmt.Fprintf(stderr, "bridge ask: %v\n", err)
		return exitError
	}
	defer rdb.Close()

	entryID, err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: prefix + "requests", Values: []string{"ask", string(body)}}).Result()
	if err != nil {
		fmt.Fprintf(stderr, "bridge ask: push the request: %v\n", err)
		return exitError
	}
	if reqID == "" {
		reqID = entryID
	}
	fmt.Fprintf(stderr, "bridge ask: asked %s; waiting for the answer (Ctrl-C cancels)\n", reqID)
	result, err := waitResult(ctx, rdb, prefix, reqID, wait, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "bridge ask: %v\n", err)
		return exitError
	}
	fmt.Fprintln(stdout, result)
	return exitStatus(result)
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

// requestMeta reads the id and the timeout from a request, leniently: the
// bridge is the one that validates it.
func requestMeta(body []byte) (string, time.Duration) {
	var meta struct {
		ID      any `json:"id"`
		Timeout any `json:"timeoutSeconds"`
	}
	_ = json.Unmarshal(body, &meta)
	id, _ := meta.ID.(string)
	secs := 900.0
	if t, ok := meta.Timeout.(float64); ok {
		secs = min(max(t, 30), 3600)
	}
	return id, time.Duration(secs) * time.Second
}

// redisTarget finds the Redis the bridge uses: the flag, else
// ASKUSER_REDIS_URL, else the embedded Redis address.
func redisTarget(flagURL string, getenv func(string) string) (string, string, error) {
	prefix := getenv("ASKUSER_REDIS_PREFIX")
	if prefix == "" {
		prefix = config.DefaultPrefix
	}
	if flagURL != "" {
		return flagURL, prefix, nil
	}
	url, err := config.Secret(getenv, os.ReadFile, "ASKUSER_REDIS_URL")
	if err != nil {
		return "", "", err
	}
	if url != "" {
		return url, prefix, nil
	}
	addr := getenv("ASKUSER_EMBEDDED_REDIS_ADDR")
	if addr == "" {
		addr = config.DefaultEmbeddedAddr
	}
	return "redis://" + addr, prefix, nil
}

// waitResult long-polls the result list until the result arrives. It cancels
// the question when ctx is done (Ctrl-C) and then waits briefly for the
// cancelled result.
func waitResult(ctx context.Context, rdb redis.UniversalClient, prefix, id string, wait time.Duration, stderr io.Writer) (string, error) {
	key := prefix + "result:{" + id + "}"
	bg := context.WithoutCancel(ctx)
	start := time.Now()
	giveUp := start.Add(wait + time.Minute)
	warned := false
	for {
		if ctx.Err() != nil {
			return cancelAndWait(bg, rdb, prefix, id, key, stderr)
		}
		res, err := rdb.BLPop(ctx, 2*time.Second, key).Result()
		switch {
		case err == nil:
			return res[1], nil
		case errors.Is(err, redis.Nil):
		case ctx.Err() != nil:
			continue
		default:
			return "", fmt.Errorf("wait for the result: %w", err)
		}
		if !warned && time.Since(start) > 10*time.Second {
			n, err := rdb.Exists(bg, prefix+"question:{"+id+"}").Result()
			if err == nil && n == 0 {
				fmt.Fprintf(stderr, "bridge ask: no bridge has taken the request yet; is one running on this Redis?\n")
			}
			warned = true
		}
		if time.Now().After(giveUp) {
			return "", fmt.Errorf("no result for %s within its timeout; is a bridge running on this Redis?", id)
		}
	}
}

func cancelAndWait(ctx context.Context, rdb redis.UniversalClient, prefix, id, key string, stderr io.Writer) (string, error) {
	fmt.Fprintf(stderr, "bridge ask: cancelling %s\n", id)
	if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: prefix + "requests", Values: []string{"cancel", id}}).Err(); err != nil {
		return "", fmt.Errorf("cancel: %w", err)
	}
	res, err := rdb.BLPop(ctx, 10*time.Second, key).Result()
	if err != nil {
		return "", fmt.Errorf("cancelled, but no result arrived: %w", err)
	}
	return res[1], nil
}

func exitStatus(result string) int {
	var r struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(result), &r); err != nil {
		return exitError
	}
	switch r.Status {
	case "answered":
		return exitAnswered
	case "no_answer":
		return exitNoAnswer
	}
	return exitError
}
