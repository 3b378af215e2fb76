package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/client"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/store"
)

// standing is `askbridge standing list|revoke`: the standing answers
// (ask-user.md §9) on the bridge's Redis, as redisTarget finds it.
func standing(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	sub := ""
	if len(args) > 0 {
		sub = args[0]
	}
	switch sub {
	case "list":
		return standingList(ctx, args[1:], stdout, stderr, getenv)
	case "revoke":
		return standingRevoke(ctx, args[1:], stdout, stderr, getenv)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, standingUsage)
		return 0
	}
	fmt.Fprintf(stderr, "askbridge standing: unknown command %q\n\n%s", sub, standingUsage)
	return exitError
}

const standingUsage = `usage:
  askbridge standing list [--json] [--redis URL]
      the standing answers: agent, key, answers, who kept them, until, uses
  askbridge standing revoke [--wait DURATION] [--redis URL] AGENT KEY
      revoke the standing answer of AGENT ("" for none) under KEY, and wait
      (default 5s, 0 not at all) for the bridge to say it was revoked
`

// standingConn connects to the bridge's Redis: the store's view (to list
// and read events) and the protocol client (to push a revoke entry).
func standingConn(ctx context.Context, flagURL string, getenv func(string) string) (*store.Store, *client.Client, func(), error) {
	url, prefix, err := redisTarget(flagURL, getenv)
	if err != nil {
		return nil, nil, nil, err
	}
	rdb, err := store.Connect(ctx, url)
	if err != nil {
		return nil, nil, nil, errors.New(unreachable(url, flagURL != "", getenv, err))
	}
	st := store.New(rdb, store.Options{Prefix: prefix})
	c := client.New(rdb, client.Options{Prefix: prefix})
	return st, c, func() { _ = rdb.Close() }, nil
}

// standingLine is a standing answer as `standing list --json` prints it,
// one JSON object a line; times are unix milliseconds.
type standingLine struct {
	Agent   string              `json:"agent"`
	Key     string              `json:"key"`
	Answers map[string][]string `json:"answers"`
	By      askbridge.Person    `json:"by"`
	Since   int64               `json:"since"`
	Until   int64               `json:"until"`
	Uses    int                 `json:"uses"`
}

func standingList(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("askbridge standing list", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print one JSON object a line")
	redisURL := fs.String("redis", "", "Redis URL (default: ASKUSER_REDIS_URL, else the embedded Redis address)")
	if err := fs.Parse(args); err != nil {
		return exitStatusOfParse(err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "askbridge standing list: unexpected argument %q\n", fs.Arg(0))
		return exitError
	}
	st, _, closeRedis, err := standingConn(ctx, *redisURL, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "askbridge standing list: %v\n", err)
		return exitError
	}
	defer closeRedis()
	list, err := st.ListStanding(ctx, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "askbridge standing list: %v\n", err)
		return exitError
	}
	slices.SortFunc(list, func(a, b engine.StandingAnswer) int {
		return strings.Compare(a.Agent+"\x00"+a.Key, b.Agent+"\x00"+b.Key)
	})
	if *asJSON {
		enc := json.NewEncoder(stdout)
		for _, s := range list {
			_ = enc.Encode(standingLine{Agent: s.Agent, Key: s.Key, Answers: s.Answers, By: s.By,
				Since: s.Since.UnixMilli(), Until: s.Until.UnixMilli(), Uses: s.Uses})
		}
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tKEY\tANSWERS\tBY\tUNTIL\tUSES")
	for _, s := range list {
		agent := s.Agent
		if agent == "" {
			agent = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", agent, s.Key, answersText(s.Answers), s.By.Display(), s.Until.UTC().Format("2006-01-02 15:04 UTC"), s.Uses)
	}
	_ = tw.Flush()
	return 0
}

// answersText is a standing answer's labels, question by question in
// the order of their ids: "target=Production; checks=Unit,Load".
func answersText(answers map[string][]string) string {
	ids := make([]string, 0, len(answers))
	for id := range answers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = id + "=" + strings.Join(answers[id], ",")
	}
	return strings.Join(parts, "; ")
}

func exitStatusOfParse(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return exitError
}

// standingRevoke pushes a revoke entry for the standing answer of agent
// and key, when one stands, and waits up to --wait for the bridge's
// revoked event. Exit status: 0 revoked (or pushed, with --wait 0), 1
// none stands or no bridge said so in time, 2 refused or error.
func standingRevoke(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("askbridge standing revoke", flag.ContinueOnError)
	fs.SetOutput(stderr)
	wait := fs.Duration("wait", 5*time.Second, "how long to wait for the bridge to say it was revoked (0: do not wait)")
	redisURL := fs.String("redis", "", "Redis URL (default: ASKUSER_REDIS_URL, else the embedded Redis address)")
	fs.Usage = func() { fmt.Fprint(stderr, standingUsage) }
	if err := fs.Parse(args); err != nil {
		return exitStatusOfParse(err)
	}
	if fs.NArg() != 2 {
		fmt.Fprintf(stderr, "askbridge standing revoke: want AGENT and KEY (\"\" for a request without an agent), got %d arguments\n", fs.NArg())
		return exitError
	}
	agent, key := fs.Arg(0), fs.Arg(1)
	entry, _ := json.Marshal(askbridge.RevokeEntry{Agent: agent, Key: key}) // two strings: cannot fail
	if _, err := askbridge.DecodeRevokeEntry(entry); err != nil {
		fmt.Fprintf(stderr, "askbridge standing revoke: %v\n", err)
		return exitError
	}
	st, c, closeRedis, err := standingConn(ctx, *redisURL, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "askbridge standing revoke: %v\n", err)
		return exitError
	}
	defer closeRedis()
	s, found, err := st.PeekStanding(ctx, agent, key, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "askbridge standing revoke: %v\n", err)
		return exitError
	}
	if !found {
		fmt.Fprintf(stderr, "askbridge standing revoke: no standing answer of %q under %q\n", agent, key)
		return exitNoAnswer
	}
	// The events from here on: the revoked event comes after the push.
	_, after, err := st.Events(ctx, "$", 1, 0)
	if err != nil {
		fmt.Fprintf(stderr, "askbridge standing revoke: %v\n", err)
		return exitError
	}
	pushed, err := c.Revoke(ctx, agent, key)
	if err != nil {
		fmt.Fprintf(stderr, "askbridge standing revoke: %v\n", err)
		return exitError
	}
	if *wait <= 0 {
		fmt.Fprintf(stdout, "asked the bridge to revoke %s's %s (kept by %s)\n", agentName(agent), key, s.By.Display())
		return exitAnswered
	}
	return awaitRevoked(ctx, st, after, pushed, s, *wait, stdout, stderr)
}

// awaitRevoked reads the events after stream id after, up to wait, for
// the revoked event of s, or the rejected event of revoke entry pushed.
func awaitRevoked(ctx context.Context, st *store.Store, after, pushed string, s engine.StandingAnswer, wait time.Duration, stdout, stderr io.Writer) int {
	deadline := time.Now().Add(wait)
	for {
		left := time.Until(deadline)
		if left <= 0 || ctx.Err() != nil {
			fmt.Fprintf(stderr, "askbridge standing revoke: asked the bridge to revoke %s's %s, and no bridge said it did within %s: is one running on this Redis?\n", agentName(s.Agent), s.Key, wait)
			return exitNoAnswer
		}
		evs, next, err := st.Events(ctx, after, 100, min(left, time.Second))
		if err != nil {
			fmt.Fprintf(stderr, "askbridge standing revoke: %v\n", err)
			return exitError
		}
		after = next
		for _, ev := range evs {
			switch {
			case ev.Kind == askbridge.EventRevoked && ev.Agent == s.Agent && ev.Key == s.Key:
				fmt.Fprintf(stdout, "revoked %s's %s (kept by %s)\n", agentName(s.Agent), s.Key, s.By.Display())
				return exitAnswered
			case ev.Kind == askbridge.EventRejected && ev.ID == pushed:
				fmt.Fprintf(stderr, "askbridge standing revoke: the bridge refused it: %s\n", ev.Error)
				return exitError
			}
		}
	}
}

// agentName names an agent in a sentence ("no agent" for "").
func agentName(agent string) string {
	if agent == "" {
		return "no agent"
	}
	return agent
}
