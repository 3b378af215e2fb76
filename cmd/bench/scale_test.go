package main

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"flag"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/redistest"
)

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 20000: "20,000", 1000000: "1,000,000", -1234: "-1,234"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestQuantile(t *testing.T) {
	vs := make([]float64, 100)
	for i := range vs {
		vs[i] = float64(100 - i) // 100 … 1, unsorted
	}
	for p, want := range map[float64]float64{50: 50, 99: 99, 100: 100, 1: 1} {
		if got := quantile(vs, p); got != want {
			t.Errorf("quantile(p%v) = %v, want %v", p, got, want)
		}
	}
	if vs[0] != 100 {
		t.Error("quantile sorted its argument")
	}
	if !math.IsNaN(quantile(nil, 99)) {
		t.Error("quantile of nothing is not NaN")
	}
}

// TestScaleFlags: the defaults are issue 33's full size, the lead is worked
// out from the pending count, and sizes the run cannot take are refused.
func TestScaleFlags(t *testing.T) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	s := addScaleFlags(fs)
	if err := fs.Parse([]string{"-scale"}); err != nil {
		t.Fatal(err)
	}
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
	if !s.on || s.pending != 1_000_000 || s.replicas != 10 || s.window != 10*time.Minute || s.killEvery != time.Minute {
		t.Errorf("defaults: %+v", *s)
	}
	if want := time.Minute + 1_000_000*time.Second/5000; s.lead != want {
		t.Errorf("lead %s, want %s", s.lead, want)
	}
	for _, args := range [][]string{
		{"-scale-pending", "10"}, {"-scale-replicas", "1"}, {"-scale-to", "telegram"},
		{"-scale-lead", "20s"}, {"-scale-duration", "59m"}, {"-scale-rate", "0"},
	} {
		fs := flag.NewFlagSet("bench", flag.ContinueOnError)
		s := addScaleFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if err := s.check(); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

// TestMonitorScripts: what a master is sent is counted by command, a
// script by the name its SHA-1 stands for, and what scripts run inside
// Redis is left out.
func TestMonitorScripts(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sha := strings.Repeat("ab", 20)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		if line, _ := bufio.NewReader(c).ReadString('\n'); line != "MONITOR\r\n" {
			return
		}
		io.WriteString(c, "+OK\r\n"+
			`+1733486400.1 [0 127.0.0.1:5555] "evalsha" "`+sha+`" "1" "askuser:question:{a}"`+"\r\n"+
			`+1733486400.2 [0 lua] "hset" "askuser:question:{a}" "status" "x"`+"\r\n"+
			`+1733486400.3 [0 127.0.0.1:5555] "evalsha" "`+strings.Repeat("cd", 20)+`" "0"`+"\r\n"+
			`+1733486400.4 [0 127.0.0.1:5556] "ZREM" "askuser:finishing" "a"`+"\r\n"+
			`+1733486400.5 [0 127.0.0.1:5556] "zrem" "askuser:finishing" "b"`+"\r\n")
		time.Sleep(2 * time.Second)
	}()
	got, err := monitorScripts(context.Background(), l.Addr().String(), 500*time.Millisecond, map[string]string{sha: "end.lua"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"end.lua": 1, "script cdcdcdcd": 1, "ZREM": 2}
	if len(got) != len(want) {
		t.Fatalf("counts %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("counts %v, want %v", got, want)
		}
	}
	if top := topOf(got, 1); top != "ZREM 50 %" {
		t.Errorf("topOf = %q", top)
	}
}

// TestScriptNames: the bridge's scripts are named by their SHA-1, end.lua
// as it is loaded (after ending.lua).
func TestScriptNames(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/askbridge/askbridge").Output()
	if err != nil {
		t.Fatalf("go list -m github.com/askbridge/askbridge (the bench module replaces it with ../..): %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "store", "lua")
	read := func(n string) string {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	sum := func(s string) string { h := sha1.Sum([]byte(s)); return hex.EncodeToString(h[:]) }
	names := scriptNames(context.Background())
	if got := names[sum(read("create.lua"))]; got != "create.lua" {
		t.Errorf("create.lua is named %q", got)
	}
	if got := names[sum(read("ending.lua")+read("end.lua"))]; got != "end.lua" {
		t.Errorf("ending.lua + end.lua is named %q", got)
	}
}

func TestParsePprofTop(t *testing.T) {
	out := `File: bridge
Showing top 5 nodes out of 80
      flat  flat%   sum%        cum   cum%
      20ms 28.57% 28.57%       20ms 28.57%  internal/runtime/syscall/linux.Syscall6
      10ms 14.29% 71.43%       10ms 14.29%  main.(*metrics).Ended
`
	if got, want := parsePprofTop(out), "internal/runtime/syscall/linux.Syscall6 28.57%, main.(*metrics).Ended 14.29%"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestScaleTable: each row's verdict follows its numbers; one result
// pushed twice fails exactly-once, and a scaled-down run says so with the
// arithmetic for the full size.
func TestScaleTable(t *testing.T) {
	w := &scaleWorld{
		o:       scaleOptions{pending: 1000, replicas: 3, window: time.Minute, rate: 50, killEvery: time.Minute, backlog: 5000, to: "web"},
		cluster: &redistest.Cluster{Addrs: []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}},
	}
	late := make([]float64, 1000)
	for i := range late {
		late[i] = float64(i) // p99 990 ms: met
	}
	r := &scaleResult{
		full: fullPending{pending: 1000, base: []int64{0, 0, 0}, mem: []int64{1 << 20, 1 << 20, 3 << 19}, memPer: 1300, memRaw: 1310,
			rss: []int64{50 << 20, 70 << 20}, rssIdx: []int{0, 1}},
		idleCmds: 30, idleSecs: 10,
		ended:     scaleEnded{once: 1000, late: late, first: 0, last: 60_000, peak: 20},
		ag:        agentCounts{asked: 10, answered: 10},
		masterCPU: []float64{0.01, 0.02, 0.01}, masterCmds: []float64{1, 2, 3}, masterUsec: []string{"", "", ""},
	}
	verdicts := func(out string) map[string]string {
		v := map[string]string{}
		for _, line := range strings.Split(out, "\n") {
			f := strings.Split(line, " | ")
			if len(f) == 4 && strings.HasPrefix(line, "| ") {
				v[strings.TrimPrefix(f[0], "| ")] = strings.TrimSuffix(f[3], " |")
			}
		}
		return v
	}
	out := w.table(r)
	v := verdicts(out)
	want := map[string]string{"memory per pending": "met", "how evenly": "met", "RSS": "missed", "lateness": "met", "exactly once": "met", "idle cost": "met"}
	for key, verdict := range want {
		found := false
		for measure, got := range v {
			if strings.Contains(measure, key) {
				found = true
				if got != verdict {
					t.Errorf("%s: %s, want %s", measure, got, verdict)
				}
			}
		}
		if !found {
			t.Errorf("no row for %q in\n%s", key, out)
		}
	}
	if !strings.Contains(out, "5 of 6 goals met") || !strings.Contains(out, "÷ 1000") || !strings.Contains(out, "1300 B × 1,000,000 = 1.21 GiB") {
		t.Errorf("table:\n%s", out)
	}
	r.ended.once, r.ended.doubled = 999, 1
	for measure, got := range verdicts(w.table(r)) {
		if strings.Contains(measure, "exactly once") && got != "missed" {
			t.Errorf("a result pushed twice: %s", got)
		}
	}
}
