// Command bench is askbridge's end-to-end benchmark (issues 12 and 33). It
// starts everything itself and measures the bridge as it is run:
//
//   - a redis-server on a free loopback port, in a directory of its own,
//     and redis-benchmark against it for the ceiling of this machine;
//   - the bridge: ./cmd/bridge built once into a temporary directory and
//     run as a process configured by ASKUSER_* variables, as operators run
//     it (so its CPU time and RSS are its own, read from /proc);
//   - the in-repo fake Telegram (internal/telegramtest) behind a small
//     front that records when each Bot API call came.
//
// Agents talk to the bridge only through the public Redis protocol
// (docs/redis-protocol.md: XADD the request, BLPOP the result). People
// answer on the web page through its HTTP API (its event stream, then POST
// api/questions/{id}/answer) and on Telegram by tapping buttons on the fake.
// The table, one figure per row from this one run, goes to stdout: issue
// 33's goals as counts (Redis commands, round trips, wake-ups) or ratios to
// ceilings measured in the same run, then rows without a goal. Plots
// (latency.svg, throughput.svg) go to -artifacts. docs/performance.md says
// how to read each row.
//
//	go run ./cmd/bench           the full run (a few minutes)
//	go run ./cmd/bench -short    small and quick, as CI runs it
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
)

func main() {
	os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr))
}

// cli is main without the process: it returns the exit status (1 when a
// phase failed; goals missed are not a failure, the table says so).
func cli(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o Options
	fs.BoolVar(&o.Short, "short", false, "small and quick: 2,000 requests in the batch, short phases, one failover (CI)")
	fs.IntVar(&o.N, "n", 0, "requests in the intake and timeout batch (default 100,000; 2,000 with -short)")
	fs.IntVar(&o.BatchRuns, "batch-runs", 0, "how many times the batch (intake, then its deadlines) runs; the lateness row gives each run's p99 (default 3; 1 with -short)")
	fs.StringVar(&o.Artifacts, "artifacts", "artifacts", "directory for the plots")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "take the bridge's CPU profile during the highest web level, the saturated Telegram phase and the first seconds of the batch intake into `prefix`-web.pprof, prefix-telegram.pprof and prefix-intake.pprof")
	fs.BoolVar(&o.Keep, "keep", false, "keep the temporary directory with the bridges' logs")
	fs.Func("bridge-env", "`KEY=VALUE` added to each bridge's environment, after the bench's own (repeatable; e.g. GOMAXPROCS=1)", func(kv string) error {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("want KEY=VALUE, not %q", kv)
		}
		if o.BridgeEnv == nil {
			o.BridgeEnv = map[string]string{}
		}
		o.BridgeEnv[k] = v
		return nil
	})
	phases := fs.String("phases", "", "run only these phases, comma-separated: "+strings.Join(phaseNames, ", ")+" (\"batch\" for both batch phases)")
	quiet := fs.Bool("q", false, "print only the table")
	scale := addScaleFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "bench: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *phases != "" {
		o.Phases = strings.Split(*phases, ",")
		for _, p := range o.Phases {
			if !slices.ContainsFunc(phaseNames, Options{Phases: []string{p}}.runs) {
				fmt.Fprintf(stderr, "bench: unknown phase %q (phases: %s)\n", p, strings.Join(phaseNames, ", "))
				return 2
			}
		}
	}
	if !*quiet {
		o.Progress = stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if scale.on {
		return runScale(ctx, scale, o, stdout, stderr)
	}
	rep, err := run(ctx, o)
	if rep != nil {
		rep.Print(stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	if len(rep.Errors) > 0 {
		return 1
	}
	return 0
}
