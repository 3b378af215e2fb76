package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// replicaSet is the scale run's bridge replicas: the same binary and
// settings, each on a port of its own with its profiler on another, each
// start named apart (scale-<i>.<start>), as a Deployment names its pods.
type replicaSet struct {
	bin, dir string
	env      map[string]string

	mu    sync.Mutex
	procs []*proc  // nil while down
	pprof []string // each replica's profiler address
	gens  []int
	// killed is the replica killed last (-1 before any kill); kills
	// counts them.
	killed, kills int
	// deadCPU is the CPU time of the processes killed so far; deadPeak
	// the largest peak RSS (VmHWM) among them.
	deadCPU  time.Duration
	deadPeak int64

	rr atomic.Uint64
}

func newReplicaSet(bin, dir string, env map[string]string, n int) *replicaSet {
	return &replicaSet{bin: bin, dir: dir, env: env, procs: make([]*proc, n), pprof: make([]string, n), gens: make([]int, n), killed: -1}
}

// start starts replica i (it must be down) and waits until it serves its
// page.
func (s *replicaSet) start(i int) error {
	s.mu.Lock()
	s.gens[i]++
	name := fmt.Sprintf("scale-%d.%d", i, s.gens[i])
	if s.pprof[i] == "" {
		a, err := freeAddr()
		if err != nil {
			s.mu.Unlock()
			return err
		}
		s.pprof[i] = a
	}
	env := map[string]string{"ASKUSER_PPROF_ADDR": s.pprof[i]}
	for k, v := range s.env {
		env[k] = v
	}
	s.mu.Unlock()
	p, err := startBridge(s.bin, name, s.dir, env)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.procs[i] = p
	s.mu.Unlock()
	return nil
}

// startAll starts every replica, a few at a time.
func (s *replicaSet) startAll() error {
	errs := make([]error, len(s.procs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i := range s.procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = s.start(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// addrs are the page addresses of the replicas up.
func (s *replicaSet) addrs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, p := range s.procs {
		if p != nil {
			out = append(out, p.addr)
		}
	}
	return out
}

// pick is the page address of a replica up, round robin, other than
// avoid when there is another; "" when none is up.
func (s *replicaSet) pick(avoid string) string {
	as := s.addrs()
	if len(as) == 0 {
		return ""
	}
	n := s.rr.Add(1)
	a := as[n%uint64(len(as))]
	if a == avoid && len(as) > 1 {
		a = as[(n+1)%uint64(len(as))]
	}
	return a
}

// killNext SIGKILLs the next replica, round robin, and starts it again.
// It returns the replica's index.
func (s *replicaSet) killNext() (int, error) {
	s.mu.Lock()
	i := (s.killed + 1) % len(s.procs)
	p := s.procs[i]
	s.procs[i] = nil
	s.killed = i
	s.kills++
	if p != nil {
		if c, err := p.cpu(); err == nil {
			s.deadCPU += c
		}
		if h, err := peakRSS(p); err == nil {
			s.deadPeak = max(s.deadPeak, h)
		}
	}
	s.mu.Unlock()
	if p != nil {
		p.kill()
	}
	return i, s.start(i)
}

// killLoop kills and restarts a replica every d until ctx is done; it
// returns the errors of restarts that failed.
func (s *replicaSet) killLoop(ctx context.Context, d time.Duration, logf func(string, ...any)) error {
	if d <= 0 {
		return nil
	}
	var errs []error
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return errors.Join(errs...)
		case <-t.C:
		}
		at := time.Now()
		i, err := s.killNext()
		if err != nil {
			errs = append(errs, err)
			logf("kill: replica %d did not start again: %v", i, err)
			continue
		}
		logf("kill: SIGKILLed replica %d, started again in %s", i, time.Since(at).Round(time.Millisecond))
	}
}

// lastKilled is the replica killed last, or 0 before any kill, and its
// profiler's address.
func (s *replicaSet) lastKilled() (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := max(s.killed, 0)
	return i, s.pprof[i]
}

// cpu is the CPU time every replica process used so far, those killed
// included (up to just before their kill).
func (s *replicaSet) cpu() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.deadCPU
	for _, p := range s.procs {
		if p != nil {
			c, _ := p.cpu()
			t += c
		}
	}
	return t
}

// peak is the largest peak RSS (VmHWM) of any replica process so far,
// those killed included.
func (s *replicaSet) peak() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.deadPeak
	for _, p := range s.procs {
		if p != nil {
			if h, err := peakRSS(p); err == nil {
				m = max(m, h)
			}
		}
	}
	return m
}

// peakRSS is a process's peak resident set size, from /proc/<pid>/status.
func peakRSS(p *proc) (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("bench: no VmHWM in /proc status")
}

// killCount is how many replicas were killed so far.
func (s *replicaSet) killCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.kills
}

// rss is the resident memory of each replica up, and the index of each.
func (s *replicaSet) rss() (idx []int, rss []int64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, p := range s.procs {
		if p == nil {
			continue
		}
		r, e := p.rss()
		if e != nil {
			err = errors.Join(err, e)
			continue
		}
		idx, rss = append(idx, i), append(rss, r)
	}
	return idx, rss, err
}

// stopAll stops every replica up (SIGTERM, then SIGKILL after grace).
func (s *replicaSet) stopAll(grace time.Duration) {
	s.mu.Lock()
	procs := append([]*proc(nil), s.procs...)
	clear(s.procs)
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		if p != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.stop(grace)
			}()
		}
	}
	wg.Wait()
}
