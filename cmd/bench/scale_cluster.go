package main

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// masterSnaps reads INFO of every master of the Cluster, in the order of
// the Cluster's addresses.
func (w *scaleWorld) masterSnaps(ctx context.Context) ([]redisSnap, error) {
	out := make([]redisSnap, len(w.masters))
	for i, m := range w.masters {
		s, err := snapshot(ctx, m)
		if err != nil {
			return nil, fmt.Errorf("master %s: %w", w.cluster.Addrs[i], err)
		}
		out[i] = s
	}
	return out, nil
}

// sumSnaps adds up the masters' command counts and memory.
func sumSnaps(ss []redisSnap) redisSnap {
	t := redisSnap{byCommand: map[string]int64{}}
	for _, s := range ss {
		t.cmds += s.cmds
		t.scripts += s.scripts
		t.reads += s.reads
		t.usedMemory += s.usedMemory
		t.cpu += s.cpu
		for k, v := range s.byCommand {
			t.byCommand[k] += v
		}
	}
	return t
}

// hotKeys names the master each key shared by all questions lives on
// ("requests → master 2"), from the masters' CLUSTER KEYSLOT and slots.
func (w *scaleWorld) hotKeys(ctx context.Context) string {
	names := []string{"requests", "events", "deadlines", "finishing", "chat:web:web", "web:history", "timers"}
	shards, err := w.rdb.ClusterShards(ctx).Result()
	if err != nil {
		return "?"
	}
	var parts []string
	for _, n := range names {
		slot, err := w.masters[0].ClusterKeySlot(ctx, prefix+n).Result()
		if err != nil {
			return "?"
		}
		if addr, ok := shardMaster(shards, slot); ok {
			parts = append(parts, fmt.Sprintf("%s → master %d", n, w.masterIndex(addr)+1))
		}
	}
	return strings.Join(parts, ", ")
}

// shardMaster returns the address of the master serving slot.
func shardMaster(shards []redis.ClusterShard, slot int64) (string, bool) {
	for _, sh := range shards {
		for _, r := range sh.Slots {
			if slot < r.Start || slot > r.End {
				continue
			}
			for _, node := range sh.Nodes {
				if node.Role == "master" {
					return net.JoinHostPort(node.IP, strconv.FormatInt(node.Port, 10)), true
				}
			}
		}
	}
	return "", false
}

func (w *scaleWorld) masterIndex(addr string) int {
	for i, a := range w.cluster.Addrs {
		if a == addr {
			return i
		}
	}
	return -1
}

// monitorScripts watches master addr with MONITOR for d and counts the
// commands clients sent it (not those run inside scripts), a script
// (EVALSHA) by its name.
func monitorScripts(ctx context.Context, addr string, d time.Duration, names map[string]string) (map[string]int, error) {
	var dl net.Dialer
	conn, err := dl.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		return nil, err
	}
	_ = conn.SetReadDeadline(time.Now().Add(d))
	counts := map[string]int{}
	r := bufio.NewReaderSize(conn, 1<<20)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			break // the deadline
		}
		// +1733486400.123456 [0 127.0.0.1:5555] "evalsha" "<sha>" "1" …
		_, rest, ok := strings.Cut(line, "] ")
		if !ok || strings.Contains(line, " lua] ") {
			continue
		}
		f := strings.SplitN(rest, " ", 3)
		cmd := strings.ToUpper(strings.Trim(f[0], "\"\r\n"))
		if (cmd == "EVALSHA" || cmd == "EVALSHA_RO") && len(f) > 1 {
			sha := strings.Trim(f[1], "\"\r\n")
			if n, ok := names[sha]; ok {
				cmd = n
			} else {
				cmd = "script " + sha[:min(8, len(sha))]
			}
		}
		counts[cmd]++
	}
	return counts, nil
}

// scriptNames maps the SHA-1 of each of the bridge's Lua scripts (one
// file of store/lua, or two joined, as end.lua follows ending.lua) to its
// file name.
func scriptNames(ctx context.Context) map[string]string {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/askbridge/askbridge").Output()
	if err != nil {
		return nil
	}
	files, _ := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "store", "lua", "*.lua"))
	src := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err == nil {
			src[strings.TrimSuffix(filepath.Base(f), ".lua")] = string(b)
		}
	}
	names := map[string]string{}
	sum := func(s string) string { h := sha1.Sum([]byte(s)); return hex.EncodeToString(h[:]) }
	for a, sa := range src {
		names[sum(sa)] = a + ".lua"
		for b, sb := range src {
			if a != b {
				names[sum(sa+sb)] = b + ".lua"
			}
		}
	}
	return names
}

// topOf lists the k largest counts of m, "name n", most first.
func topOf(m map[string]int, k int) string {
	type kv struct {
		k string
		v int
	}
	var all []kv
	total := 0
	for n, v := range m {
		all = append(all, kv{n, v})
		total += v
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v > all[j].v || all[i].v == all[j].v && all[i].k < all[j].k })
	var parts []string
	for _, e := range all[:min(k, len(all))] {
		parts = append(parts, fmt.Sprintf("%s %.0f %%", e.k, 100*float64(e.v)/float64(max(total, 1))))
	}
	return strings.Join(parts, ", ")
}

// topUsec lists the k commands that took a master the most time between
// two of its INFO snapshots (commandstats usec), with their share.
func topUsec(a, b map[string]int64, k int) string {
	m := map[string]int{}
	for n, v := range b {
		if d := v - a[n]; d > 0 {
			m[n] = int(d)
		}
	}
	return topOf(m, k)
}

// commandUsec reads how long each command took a master so far
// (INFO commandstats usec), INFO excluded.
func commandUsec(ctx context.Context, m *redis.Client) (map[string]int64, error) {
	info, err := m.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		name, val, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && strings.HasPrefix(name, "cmdstat_") && name != "cmdstat_info" {
			out[strings.ToUpper(strings.TrimPrefix(name, "cmdstat_"))] = statField(val, "usec")
		}
	}
	return out, nil
}

// machineBusy is the CPU time the whole machine spent busy so far (every
// CPU, /proc/stat: all but idle and iowait); zero where there is none.
func machineBusy() time.Duration {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0
	}
	var busy int64
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		if i != 3 && i != 4 && i < 8 { // idle, iowait; guest time is in user
			busy += n
		}
	}
	return time.Duration(busy) * clockTick
}
