package config

import (
	"net"
	"net/url"
	"strings"

	"github.com/askbridge/askbridge/config/settings"
	"github.com/askbridge/askbridge/internal/link"
)

// LinksOn reports whether answer links are on (ask-user.md §10): a public
// URL and a link secret are both set.
func (c *Config) LinksOn() bool { return c.PublicURL != "" && c.LinkSecret != "" }

// checkLinks checks the public URL and the link secret, which go together,
// and that email, whose every message carries a link, has them.
func (c *Config) checkLinks(p *settings.Problems) {
	if c.PublicURL != "" {
		if err := checkPublicURL(c.PublicURL); err != "" {
			p.Addf("%s: %s", p.Name("publicURL"), err)
		}
	}
	switch {
	case c.PublicURL != "" && c.LinkSecret == "":
		p.Addf("%s needs %s: the secret that signs answer links (openssl rand -hex 32)", p.Name("publicURL"), p.Name("linkSecret"))
	case c.LinkSecret != "" && c.PublicURL == "":
		p.Addf("%s is set but %s is not: links need the address people reach the bridge at", p.Name("linkSecret"), p.Name("publicURL"))
	case c.LinkSecret != "" && len(c.LinkSecret) < link.MinSecret:
		p.Addf("%s: must be at least %d bytes (it has %d); make one with `openssl rand -hex 32`", p.Name("linkSecret"), link.MinSecret, len(c.LinkSecret))
	}
	if c.Email != nil && !c.LinksOn() {
		p.Addf("email (%s) needs answer links: set %s and %s, since every email carries the person's link", p.Name("email.smtpURL"), p.Name("publicURL"), p.Name("linkSecret"))
	}
}

// checkPublicURL says what is wrong with a public URL, or "": http(s),
// a host, no query or fragment; http only on a loopback host, since a
// link's token must not cross the network in the clear.
func checkPublicURL(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "not a URL (" + settings.URLErrorReason(err) + ")"
	case u.Scheme != "https" && u.Scheme != "http", u.Host == "":
		return "must be an https:// URL such as https://ask.example.com"
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return "must have no query, fragment or user"
	case u.Scheme == "http" && !loopbackHost(u.Hostname()):
		return "must be https:// (http:// only on a loopback host): links carry a token"
	}
	return ""
}

func loopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
