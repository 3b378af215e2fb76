package chaos

import (
	"io"
	"net"
	"sync"
	"time"
)

// tcpProxy stands between the replicas and Redis. Cut drops every
// connection it carries (the replicas see them reset and dial again);
// Pause makes Redis unreachable (connections dropped, new ones closed as
// soon as they come) until Resume, or PauseFor a time.
type tcpProxy struct {
	ln       net.Listener
	upstream string

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	paused bool
	wg     sync.WaitGroup
}

// newProxy listens on a free loopback port and forwards to upstream.
func newProxy(upstream string) (*tcpProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &tcpProxy{ln: ln, upstream: upstream, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is where the replicas connect.
func (p *tcpProxy) Addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		paused := p.paused
		p.mu.Unlock()
		if paused {
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.upstream)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.paused {
			p.mu.Unlock()
			c.Close()
			up.Close()
			continue
		}
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

// pipe copies src to dst; when either side ends, both are closed.
func (p *tcpProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// Cut closes every connection the proxy carries now.
func (p *tcpProxy) Cut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.conns) / 2
	for c := range p.conns {
		c.Close()
	}
	return n
}

// Pause cuts every connection and refuses new ones until Resume.
func (p *tcpProxy) Pause() {
	p.mu.Lock()
	p.paused = true
	p.mu.Unlock()
	p.Cut()
}

// PauseFor pauses for d and then resumes; the returned channel is closed
// once it resumed.
func (p *tcpProxy) PauseFor(d time.Duration) <-chan struct{} {
	p.Pause()
	over := make(chan struct{})
	time.AfterFunc(d, func() { p.Resume(); close(over) })
	return over
}

// Resume lets connections through again.
func (p *tcpProxy) Resume() {
	p.mu.Lock()
	p.paused = false
	p.mu.Unlock()
}

// Close stops the proxy and waits for its goroutines.
func (p *tcpProxy) Close() {
	p.ln.Close()
	p.Cut()
	p.wg.Wait()
}
