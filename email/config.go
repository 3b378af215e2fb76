package email

import (
	"fmt"
	"io"
	"log/slog"
	"net/mail"
	"net/url"
	"os"
	"time"

	"github.com/askbridge/askbridge/config/settings"
)

// Config configures the email channel (ask-user.md §10). SMTPURL and From
// are required; every other zero value means its default. Fields with a
// YAML key are what config loads; formatted or logged, a Config shows no
// secret.
type Config struct {
	// SMTPURL is the operator's SMTP server: smtp://host[:port] (port 587
	// by default; STARTTLS is required, a server that does not offer it
	// is refused) or smtps://host[:port] (TLS from the first byte, port
	// 465 by default). It may carry user:password@, which User and
	// Password override.
	SMTPURL string `yaml:"smtpURL" json:"-"`
	// User and Password authenticate (SASL PLAIN, only over TLS); empty
	// User: no authentication.
	User     string `yaml:"user"`
	Password string `yaml:"password" json:"-"`
	// From is the sender: an address, with a display name or without
	// ("Ask Bridge <ask@example.com>").
	From string `yaml:"from"`
	// CAFile is a PEM file of certificates to trust for the server besides
	// the system's (a relay with a private CA).
	CAFile string `yaml:"caFile"`
	// SendTimeout bounds one email's SMTP conversation (default 30s).
	SendTimeout time.Duration `yaml:"-"`
}

// DefaultSendTimeout bounds one email's SMTP conversation.
const DefaultSendTimeout = 30 * time.Second

// Format and LogValue show the settings, secrets redacted.
func (c Config) Format(f fmt.State, _ rune) { io.WriteString(f, settings.String(c)) }
func (c Config) LogValue() slog.Value       { return settings.LogValue(c) }

// server is the parsed SMTPURL: address, implicit TLS, and credentials.
type server struct {
	addr, host     string
	implicitTLS    bool
	user, password string
}

// parseServer reads SMTPURL, with User and Password over the URL's own.
func (c Config) parseServer() (server, error) {
	u, err := url.Parse(c.SMTPURL)
	if err != nil {
		return server{}, fmt.Errorf("not a URL (%s)", settings.URLErrorReason(err))
	}
	s := server{host: u.Hostname()}
	port := u.Port()
	switch u.Scheme {
	case "smtp":
		if port == "" {
			port = "587"
		}
	case "smtps":
		s.implicitTLS = true
		if port == "" {
			port = "465"
		}
	default:
		return server{}, fmt.Errorf("must be smtp://host[:port] (STARTTLS) or smtps://host[:port] (TLS)")
	}
	if s.host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return server{}, fmt.Errorf("must be smtp://host[:port] or smtps://host[:port], with no path or query")
	}
	s.addr = s.host + ":" + port
	if u.User != nil {
		s.user = u.User.Username()
		s.password, _ = u.User.Password()
	}
	if c.User != "" {
		s.user, s.password = c.User, c.Password
	}
	return s, nil
}

// Check adds the problems of c to p, naming each setting.
func (c Config) Check(p *settings.Problems) {
	if c.SMTPURL == "" {
		p.Addf("%s is required", p.Name("smtpURL"))
	} else if s, err := c.parseServer(); err != nil {
		p.Addf("%s: %v", p.Name("smtpURL"), err)
	} else if s.user != "" && s.password == "" {
		p.Addf("%s needs a password (%s, or in the URL)", p.Name("user"), p.Name("password"))
	}
	if c.Password != "" && c.User == "" {
		p.Addf("%s is set but %s is not", p.Name("password"), p.Name("user"))
	}
	if c.From == "" {
		p.Addf("%s is required: the address emails are sent from", p.Name("from"))
	} else if _, err := mail.ParseAddress(c.From); err != nil {
		p.Addf("%s: %q is not an address such as ask@example.com or \"Ask Bridge <ask@example.com>\"", p.Name("from"), c.From)
	}
	if c.CAFile != "" {
		if _, err := os.Stat(c.CAFile); err != nil {
			p.Addf("%s: %v", p.Name("caFile"), err)
		}
	}
	if c.SendTimeout < 0 {
		p.Addf("send timeout must not be negative")
	}
}
