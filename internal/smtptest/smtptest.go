// Package smtptest is a real SMTP server for tests: go-smtp's server on
// 127.0.0.1 with STARTTLS (or TLS from the first byte) from a certificate
// made per test, AUTH PLAIN, faults on demand, and a backend that keeps
// every email it accepts.
package smtptest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Test SMTP credentials.
const (
	User     = "bridge"
	Password = "s3cret-password"
)

// Faults are what the test SMTP server does wrong on demand. Counters
// count down: each use spends one.
type Faults struct {
	// Refuse lists recipients answered 550 5.1.1.
	Refuse map[string]bool
	// Rcpt451 and Data451: answer 451 to that many RCPTs, or final
	// dots.
	Rcpt451, Data451 int
	// Drop: on that many DATA commands, reset the connection right after
	// the 354, before reading the email.
	Drop int
	// DotDelay: wait this long before answering a final dot (the email
	// is recorded once the wait is over).
	DotDelay time.Duration
}

// Received is an email the server accepted.
type Received struct {
	From string
	To   []string
	Raw  []byte
}

// Server is go-smtp's server on 127.0.0.1: STARTTLS (or TLS from the
// first byte) with a certificate made for the test, AUTH PLAIN, and a
// backend that keeps every email it accepts.
type Server struct {
	t      testing.TB
	srv    *smtp.Server
	addr   string
	roots  *x509.CertPool
	caFile string

	mu     sync.Mutex
	faults Faults
	mails  []Received
	// conns are the TCP connections by remote address, to reset one.
	conns map[string]*net.TCPConn
	// dots counts the final dots received (accepted or not), mailCmds
	// the MAIL commands taken, closed the connections closed.
	dots, mailCmds, closed int
	// helo is the name the last MAIL's client greeted with.
	helo string
}

type Options struct {
	// NoTLS offers no STARTTLS; Implicit serves TLS from the first byte.
	NoTLS, Implicit bool
}

func New(t testing.TB, o Options) *Server {
	t.Helper()
	cert, roots, caFile := SelfSigned(t)
	m := &Server{t: t, roots: roots, caFile: caFile, conns: map[string]*net.TCPConn{}}
	m.srv = smtp.NewServer(m)
	m.srv.Domain = "mail.test"
	m.srv.ErrorLog = log.New(io.Discard, "", 0)
	m.srv.ReadTimeout, m.srv.WriteTimeout = 10*time.Second, 10*time.Second
	tc := &tls.Config{Certificates: []tls.Certificate{cert}}
	if !o.NoTLS {
		m.srv.TLSConfig = tc
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m.addr = l.Addr().String()
	var ln net.Listener = &trackListener{Listener: l, m: m}
	if o.Implicit {
		ln = tls.NewListener(ln, tc)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = m.srv.Serve(ln) }()
	t.Cleanup(func() { _ = m.srv.Close(); <-done })
	return m
}

// Addr is the server's host:port.
func (m *Server) Addr() string { return m.addr }

// Roots trusts the server's certificate; CAFile is the same certificate
// as a PEM file (ASKUSER_SMTP_CA_FILE).
func (m *Server) Roots() *x509.CertPool { return m.roots }
func (m *Server) CAFile() string        { return m.caFile }

// Helo is the name the last MAIL's client greeted with.
func (m *Server) Helo() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.helo
}

// SetFaults replaces the faults.
func (m *Server) SetFaults(f Faults) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.faults = f
}

// Received returns the emails accepted so far.
func (m *Server) Received() []Received {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Received(nil), m.mails...)
}

// DotCount is how many final dots arrived.
func (m *Server) DotCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.dots
}

// MailCount is how many MAIL commands the server took.
func (m *Server) MailCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mailCmds
}

// ClosedCount is how many connections the server has closed.
func (m *Server) ClosedCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// trackListener keeps each TCP connection by remote address.
type trackListener struct {
	net.Listener
	m *Server
}

func (l *trackListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	l.m.conns[c.RemoteAddr().String()] = c.(*net.TCPConn)
	return &countedConn{Conn: c, m: l.m}, nil
}

// countedConn counts its closing.
type countedConn struct {
	net.Conn
	m    *Server
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() {
		c.m.mu.Lock()
		c.m.closed++
		c.m.mu.Unlock()
	})
	return c.Conn.Close()
}

// NewSession starts a session (smtp.Backend).
func (m *Server) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &testSession{m: m, conn: c}, nil
}

// testSession is one SMTP session of the test server.
type testSession struct {
	m      *Server
	conn   *smtp.Conn
	authed bool
	from   string
	to     []string
}

var errNoAuth = &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0}, Message: "authentication required"}

func (s *testSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *testSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != User || pass != Password {
			return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "authentication credentials invalid"}
		}
		s.authed = true
		return nil
	}), nil
}

func (s *testSession) Mail(from string, _ *smtp.MailOptions) error {
	if !s.authed {
		return errNoAuth
	}
	s.m.mu.Lock()
	s.m.mailCmds++
	s.m.helo = s.conn.Hostname()
	s.m.mu.Unlock()
	s.from = from
	return nil
}

func (s *testSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	m := s.m
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.faults.Refuse[to]:
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user here"}
	case m.faults.Rcpt451 > 0:
		m.faults.Rcpt451--
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"}
	}
	s.to = append(s.to, to)
	return nil
}

func (s *testSession) Data(r io.Reader) error {
	m := s.m
	m.mu.Lock()
	drop := m.faults.Drop > 0
	if drop {
		m.faults.Drop--
		c := m.conns[s.conn.Conn().RemoteAddr().String()]
		m.mu.Unlock()
		// RST, not FIN: the client's next write fails at once.
		_ = c.SetLinger(0)
		_ = c.Close()
		return errors.New("dropped")
	}
	m.mu.Unlock()
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.dots++
	delay := m.faults.DotDelay
	if m.faults.Data451 > 0 {
		m.faults.Data451--
		m.mu.Unlock()
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "local error, try again"}
	}
	m.mu.Unlock()
	// The test waits for the client to give up on the reply; nothing
	// else can hold a real server's answer back.
	time.Sleep(delay)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mails = append(m.mails, Received{From: s.from, To: s.to, Raw: raw})
	return nil
}

func (s *testSession) Reset()        { s.from, s.to = "", nil }
func (s *testSession) Logout() error { return nil }

// SelfSigned makes a certificate for 127.0.0.1, the pool that trusts it,
// and a PEM file of it (for Config.CAFile).
func SelfSigned(t testing.TB) (tls.Certificate, *x509.CertPool, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mail.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	var pemBuf bytes.Buffer
	_ = pem.Encode(&pemBuf, &pem.Block{Type: "CERTIFICATE", Bytes: der})
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pemBuf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, roots, caFile
}

// Message is an email as a reader's program sees it: its header and its
// decoded text and HTML parts, line breaks as "\n".
type Message struct {
	Header     mail.Header
	Text, HTML string
}

// Parse reads raw with net/mail and mime/multipart: it must be a
// multipart/alternative of a quoted-printable text/plain and text/html
// part in UTF-8.
func Parse(t testing.TB, raw []byte) Message {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("read the email: %v", err)
	}
	typ, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || typ != "multipart/alternative" {
		t.Fatalf("Content-Type %q: %v", msg.Header.Get("Content-Type"), err)
	}
	m := Message{Header: msg.Header}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		part, err := mr.NextRawPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body := readPart(t, part)
		switch pt, pp, _ := mime.ParseMediaType(part.Header.Get("Content-Type")); {
		case pt == "text/plain" && pp["charset"] == "utf-8":
			m.Text = body
		case pt == "text/html" && pp["charset"] == "utf-8":
			m.HTML = body
		default:
			t.Fatalf("unexpected part %q", part.Header.Get("Content-Type"))
		}
	}
	if m.Text == "" || m.HTML == "" {
		t.Fatalf("the email lacks a text or an HTML part:\n%s", raw)
	}
	return m
}

// readPart decodes a quoted-printable part, with its line breaks as "\n".
func readPart(t testing.TB, part *multipart.Part) string {
	t.Helper()
	if enc := part.Header.Get("Content-Transfer-Encoding"); enc != "quoted-printable" {
		t.Fatalf("Content-Transfer-Encoding %q, want quoted-printable", enc)
	}
	b, err := io.ReadAll(quotedprintable.NewReader(part))
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), "\r\n", "\n")
}
