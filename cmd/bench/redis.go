package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
)

// prefix is the bridge's default key prefix; agents use the keys of
// docs/redis-protocol.md under it.
const prefix = askbridge.DefaultPrefix

// keys are the protocol's keys under prefix.
var keys = askbridge.Keys{Prefix: prefix}

func requestsKey() string        { return keys.Requests() }
func resultKey(id string) string { return keys.Result(id) }

// questionKey is the question's hash, which the protocol lets agents read
// (status, result, created, deadline).
func questionKey(id string) string { return keys.Question(id) }

// askBody is a request of one single-select question with two options: a
// native button prompt on every platform.
func askBody(id, to string, timeoutSeconds int) string {
	var dest askbridge.ToList
	if to != "" {
		dest = askbridge.ToList{to}
	}
	b, _ := json.Marshal(askbridge.Request{
		ID: id, To: dest, Agent: "bench", TimeoutSeconds: timeoutSeconds,
		Questions: []askbridge.Question{{
			ID: "pick", Header: "Pick", Question: "Ship it?",
			Options: []askbridge.Option{{Label: "Yes"}, {Label: "No"}},
		}},
	})
	return string(b)
}

// answerTimeout is the timeout of the questions people answer: long enough
// that none of them ends by itself.
const answerTimeout = 600

// ask pushes a request, as an agent does.
func ask(ctx context.Context, rdb *redis.Client, id, to string, timeoutSeconds int) error {
	return rdb.XAdd(ctx, xadd(id, to, timeoutSeconds)).Err()
}

// xadd is the XADD of a request.
func xadd(id, to string, timeoutSeconds int) *redis.XAddArgs {
	return &redis.XAddArgs{Stream: requestsKey(), Values: []string{"ask", askBody(id, to, timeoutSeconds)}}
}

// xaddCancel is the XADD that cancels question id.
func xaddCancel(id string) *redis.XAddArgs {
	return &redis.XAddArgs{Stream: requestsKey(), Values: []string{"cancel", id}}
}

// result waits up to within for question id's result, as an agent does.
func result(ctx context.Context, rdb *redis.Client, id string, within time.Duration) (askbridge.Result, error) {
	v, err := rdb.BLPop(ctx, within, resultKey(id)).Result()
	if err != nil {
		return askbridge.Result{}, fmt.Errorf("no result for %s within %s: %w", id, within, err)
	}
	var r askbridge.Result
	if err := json.Unmarshal([]byte(v[1]), &r); err != nil {
		return askbridge.Result{}, fmt.Errorf("result of %s: %w", id, err)
	}
	return r, nil
}

// leftover counts results still waiting on the lists of ids: after each
// agent took its one, any is a result pushed twice.
func leftover(ctx context.Context, rdb *redis.Client, ids []string) (int, error) {
	n := 0
	for start := 0; start < len(ids); start += 1000 {
		pipe := rdb.Pipeline()
		cmds := make([]*redis.IntCmd, 0, 1000)
		for _, id := range ids[start:min(start+1000, len(ids))] {
			cmds = append(cmds, pipe.LLen(ctx, resultKey(id)))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return 0, err
		}
		for _, c := range cmds {
			n += int(c.Val())
		}
	}
	return n, nil
}

// redisSnap is what Redis has done so far, from INFO.
type redisSnap struct {
	// cmds counts every command executed, those run inside Lua scripts
	// included (INFO commandstats), except INFO itself.
	cmds int64
	// scripts counts EVAL, EVALSHA and FCALL calls.
	scripts int64
	// reads counts read events on client connections (total_reads_processed):
	// one per request or pipeline that arrives in one piece, so a count of
	// round trips.
	reads int64
	// usedMemory is INFO memory's used_memory, in bytes.
	usedMemory int64
	// cpu is the CPU time redis-server used so far (INFO cpu).
	cpu time.Duration
	// byCommand counts the calls of each command (INFO excluded).
	byCommand map[string]int64
}

// snapshot reads INFO commandstats, stats and memory in one round trip.
func snapshot(ctx context.Context, admin *redis.Client) (redisSnap, error) {
	info, err := admin.Info(ctx, "commandstats", "stats", "memory", "cpu").Result()
	if err != nil {
		return redisSnap{}, fmt.Errorf("bench: INFO: %w", err)
	}
	s := redisSnap{byCommand: map[string]int64{}}
	for _, line := range strings.Split(info, "\n") {
		name, val, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch {
		case strings.HasPrefix(name, "cmdstat_"):
			if name == "cmdstat_info" {
				continue
			}
			calls := statField(val, "calls")
			s.cmds += calls
			s.byCommand[strings.ToUpper(strings.TrimPrefix(name, "cmdstat_"))] = calls
			switch name {
			case "cmdstat_eval", "cmdstat_evalsha", "cmdstat_eval_ro", "cmdstat_evalsha_ro", "cmdstat_fcall", "cmdstat_fcall_ro":
				s.scripts += calls
			}
		case name == "total_reads_processed":
			s.reads, _ = strconv.ParseInt(val, 10, 64)
		case name == "used_memory":
			s.usedMemory, _ = strconv.ParseInt(val, 10, 64)
		case name == "used_cpu_sys" || name == "used_cpu_user":
			secs, _ := strconv.ParseFloat(val, 64)
			s.cpu += time.Duration(secs * float64(time.Second))
		}
	}
	if s.cmds == 0 {
		return s, errors.New("bench: INFO commandstats is empty (not a real redis-server?)")
	}
	return s, nil
}

// statField reads key=value from a commandstats line.
func statField(val, key string) int64 {
	for _, kv := range strings.Split(val, ",") {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// perQuestion is Redis work per answered question between two snapshots.
type perQuestion struct {
	cmds, scripts, trips float64
	// top names the commands run most per question, most first
	// ("EVALSHA 4.1, XADD 3.0, …"), for the progress lines.
	top string
}

func redisPer(a, b redisSnap, answered int) perQuestion {
	if answered == 0 {
		return perQuestion{cmds: nan(), scripts: nan(), trips: nan()}
	}
	n := float64(answered)
	// The later snapshot's own request is one read.
	return perQuestion{
		cmds:    float64(b.cmds-a.cmds) / n,
		scripts: float64(b.scripts-a.scripts) / n,
		trips:   float64(b.reads-a.reads-1) / n,
		top:     topCommands(a, b, n),
	}
}

// topCommands lists the commands run between two snapshots, per question,
// most first.
func topCommands(a, b redisSnap, n float64) string {
	type count struct {
		name string
		per  float64
	}
	var all []count
	for name, calls := range b.byCommand {
		if d := calls - a.byCommand[name]; d > 0 {
			all = append(all, count{name, float64(d) / n})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].per != all[j].per {
			return all[i].per > all[j].per
		}
		return all[i].name < all[j].name
	})
	parts := make([]string, 0, len(all))
	for _, c := range all {
		if c.per >= 0.05 {
			parts = append(parts, fmt.Sprintf("%s %.1f", c.name, c.per))
		}
	}
	return strings.Join(parts, ", ")
}

// redisBenchmark runs redis-benchmark against addr (SET and GET, 50
// clients, no pipelining) and returns the mean of their requests per
// second: the ceiling of this Redis on this machine.
func redisBenchmark(ctx context.Context, addr string, n int) (float64, error) {
	host, port, _ := strings.Cut(addr, ":")
	out, err := exec.CommandContext(ctx, "redis-benchmark", "-h", host, "-p", port, "-t", "set,get",
		"-n", strconv.Itoa(n), "-c", "50", "--csv").Output()
	if err != nil {
		return 0, fmt.Errorf("bench: redis-benchmark: %w", err)
	}
	var sum float64
	var k int
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(line, ",")
		if len(f) < 2 {
			continue
		}
		name := strings.Trim(f[0], `"`)
		if name != "SET" && name != "GET" {
			continue
		}
		rps, err := strconv.ParseFloat(strings.Trim(f[1], `"`), 64)
		if err != nil {
			continue
		}
		sum += rps
		k++
	}
	if k == 0 {
		return 0, fmt.Errorf("bench: redis-benchmark printed no rates:\n%s", out)
	}
	return sum / float64(k), nil
}

// roundTripCost is what one Redis round trip (a PING on a connection of
// its own) costs this process in CPU time: busy, with the next sent as soon
// as the reply is in, and after idle, with the process asleep for 10 ms
// between them, as a bridge is between the questions of a chat paced by
// its platform. The second includes waking up from the sleep. They say what
// a round trip, and a wake-up, cost on this machine: on a virtual machine
// whose scheduler is slow to wake a process they dwarf the bridge's own
// work. Zero where the process's CPU time is not measured.
func roundTripCost(ctx context.Context, addr string) (busy, idle time.Duration, err error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, 0, fmt.Errorf("bench: round trip cost: %w", err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	ping := func() error {
		if _, err := conn.Write([]byte("PING\r\n")); err != nil {
			return err
		}
		line, err := r.ReadString('\n')
		if err == nil && line != "+PONG\r\n" {
			err = fmt.Errorf("PING answered %q", line)
		}
		return err
	}
	measure := func(n int, gap time.Duration) (time.Duration, error) {
		c0 := selfCPU()
		for range n {
			if err := ping(); err != nil {
				return 0, fmt.Errorf("bench: round trip cost: %w", err)
			}
			if gap > 0 {
				time.Sleep(gap)
			}
		}
		return (selfCPU() - c0) / time.Duration(n), nil
	}
	if busy, err = measure(10_000, 0); err != nil {
		return 0, 0, err
	}
	idle, err = measure(100, 10*time.Millisecond)
	return busy, idle, err
}

// redisVersion is the server's version.
func redisVersion(ctx context.Context, admin *redis.Client) string {
	info, err := admin.Info(ctx, "server").Result()
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v
		}
	}
	return "?"
}
