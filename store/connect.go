package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Default ports of a Redis server and of a Sentinel.
const (
	defaultRedisPort    = "6379"
	defaultSentinelPort = "26379"
)

// Connect opens a client for a Redis address and checks it with PING. The
// forms it accepts:
//
//	redis://[[user]:password@]host[:port][/db][?option=value&...]
//	rediss://...                      the same over TLS
//	unix://[[user]:password@]/path/to/redis.sock[?db=N]
//	redis-sentinel://[[user]:password@]host[:port][,host[:port]...]/master[/db][?option=value&...]
//	rediss-sentinel://...             the same over TLS
//	redis-cluster://[[user]:password@]host[:port][,host[:port]...][?option=value&...]
//	rediss-cluster://...              the same over TLS
//	host:port                         short for redis://host:port
//
// The port defaults to 6379, and to 26379 for the Sentinel hosts. The user
// and password authenticate to the Redis servers; for a Sentinel that needs
// its own, pass sentinel_username and sentinel_password as options. Other
// options are the go-redis ones (dial_timeout=3s, pool_size=50, ...);
// unknown options are refused. Several hosts need the sentinel or cluster
// scheme.
func Connect(ctx context.Context, rawURL string) (redis.UniversalClient, error) {
	return ConnectWith(ctx, rawURL, ConnectOptions{})
}

// ConnectOptions shape a client of ConnectWith beyond its URL.
type ConnectOptions struct {
	// PoolSize, when set, is the most connections the client opens (per
	// node of a Cluster), overriding the URL's pool_size.
	PoolSize int
	// Name, when set, names the client's connections (CLIENT SETNAME), so
	// CLIENT LIST tells them apart.
	Name string
}

// ConnectWith is Connect with options: a second client of the same Redis
// with a pool of its own, for work that must not wait behind another's.
func ConnectWith(ctx context.Context, rawURL string, o ConnectOptions) (redis.UniversalClient, error) {
	spec, err := parseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("store: connect %s: %w", redact(rawURL), err)
	}
	spec.apply(o)
	c := spec.client()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("store: connect %s: %w", redact(rawURL), err)
	}
	return c, nil
}

// connSpec is a parsed address: exactly one field is set.
type connSpec struct {
	single   *redis.Options
	failover *redis.FailoverOptions
	cluster  *redis.ClusterOptions
}

// apply sets o's pool size and name on whichever options c holds.
func (c connSpec) apply(o ConnectOptions) {
	switch {
	case c.failover != nil:
		c.failover.PoolSize = cmp.Or(o.PoolSize, c.failover.PoolSize)
		c.failover.ClientName = cmp.Or(o.Name, c.failover.ClientName)
	case c.cluster != nil:
		c.cluster.PoolSize = cmp.Or(o.PoolSize, c.cluster.PoolSize)
		c.cluster.ClientName = cmp.Or(o.Name, c.cluster.ClientName)
	case c.single != nil:
		c.single.PoolSize = cmp.Or(o.PoolSize, c.single.PoolSize)
		c.single.ClientName = cmp.Or(o.Name, c.single.ClientName)
	}
}

func (c connSpec) client() redis.UniversalClient {
	switch {
	case c.failover != nil:
		return redis.NewFailoverClient(c.failover)
	case c.cluster != nil:
		return redis.NewClusterClient(c.cluster)
	}
	return redis.NewClient(c.single)
}

func parseURL(raw string) (connSpec, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return connSpec{}, errors.New("empty Redis address")
	}
	if !strings.Contains(raw, "://") {
		raw = "redis://" + raw
	}
	scheme, rest, _ := strings.Cut(raw, "://")
	switch strings.ToLower(scheme) {
	case "redis", "rediss":
		if authority, _, _ := cutAuthority(rest); strings.Contains(hostPart(authority), ",") {
			return connSpec{}, fmt.Errorf("several hosts need %s-cluster:// or %s-sentinel://", scheme, scheme)
		}
		o, err := redis.ParseURL(raw)
		if err != nil {
			return connSpec{}, err
		}
		return connSpec{single: o}, nil
	case "unix":
		o, err := redis.ParseURL(raw)
		if err != nil {
			return connSpec{}, err
		}
		return connSpec{single: o}, nil
	case "redis-sentinel", "rediss-sentinel":
		return parseSentinel(strings.TrimSuffix(strings.ToLower(scheme), "-sentinel"), rest)
	case "redis-cluster", "rediss-cluster":
		return parseCluster(strings.TrimSuffix(strings.ToLower(scheme), "-cluster"), rest)
	}
	return connSpec{}, fmt.Errorf("unknown scheme %q (want redis, rediss, unix, redis-sentinel, rediss-sentinel, redis-cluster or rediss-cluster)", scheme)
}

// multiURL is a URL with several comma-separated hosts, which net/url does
// not parse.
type multiURL struct {
	user  *url.Userinfo
	hosts []string
	path  []string
	query url.Values
}

// cutAuthority splits what follows "scheme://" into the authority
// (userinfo and hosts) and the path with the query.
func cutAuthority(rest string) (authority, tail string, ok bool) {
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		return rest, "", true
	}
	return rest[:end], rest[end:], true
}

// hostPart is the authority without its userinfo.
func hostPart(authority string) string {
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		return authority[i+1:]
	}
	return authority
}

func parseMulti(rest, defaultPort string) (multiURL, error) {
	authority, tail, _ := cutAuthority(rest)
	var m multiURL
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		u, err := url.Parse("redis://" + authority[:i] + "@host")
		if err != nil {
			return m, errors.New("invalid user or password")
		}
		m.user = u.User
	}
	for _, h := range strings.Split(hostPart(authority), ",") {
		hp, err := withPort(h, defaultPort)
		if err != nil {
			return m, err
		}
		m.hosts = append(m.hosts, hp)
	}
	u, err := url.Parse("redis://host" + tail)
	if err != nil {
		return m, err
	}
	m.path = strings.FieldsFunc(u.Path, func(r rune) bool { return r == '/' })
	m.query = u.Query()
	return m, nil
}

// withPort checks one host[:port] and adds the default port when missing.
func withPort(h, defaultPort string) (string, error) {
	if h == "" {
		return "", errors.New("empty host in host list")
	}
	if host, port, err := net.SplitHostPort(h); err == nil {
		if host == "" || port == "" {
			return "", fmt.Errorf("invalid host %q", h)
		}
		return net.JoinHostPort(host, port), nil
	}
	host := strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if strings.ContainsAny(host, "[]") || (strings.Contains(host, ":") && !strings.HasPrefix(h, "[")) {
		return "", fmt.Errorf("invalid host %q", h)
	}
	return net.JoinHostPort(host, defaultPort), nil
}

// parseSentinel translates redis-sentinel://... into the form
// redis.ParseFailoverURL reads (the first sentinel as host, the others as
// addr options, the master's credentials as username and password options,
// the sentinel's as userinfo).
func parseSentinel(scheme, rest string) (connSpec, error) {
	m, err := parseMulti(rest, defaultSentinelPort)
	if err != nil {
		return connSpec{}, err
	}
	if len(m.path) == 0 || len(m.path) > 2 {
		return connSpec{}, errors.New("sentinel address needs /<master name>[/<db>] after the hosts")
	}
	q := m.query
	for _, k := range []string{"master_name", "addr", "username", "password"} {
		if q.Has(k) {
			return connSpec{}, fmt.Errorf("option %s is given by the address itself", k)
		}
	}
	u := url.URL{Scheme: scheme, Host: m.hosts[0]}
	if su, sp := q.Get("sentinel_username"), q.Get("sentinel_password"); su != "" || sp != "" {
		u.User = url.UserPassword(su, sp)
	}
	q.Del("sentinel_username")
	q.Del("sentinel_password")
	q.Set("master_name", m.path[0])
	if len(m.path) == 2 {
		q.Set("db", m.path[1])
	}
	for _, h := range m.hosts[1:] {
		q.Add("addr", h)
	}
	if m.user != nil {
		if name := m.user.Username(); name != "" {
			q.Set("username", name)
		}
		if pw, ok := m.user.Password(); ok {
			q.Set("password", pw)
		}
	}
	u.RawQuery = q.Encode()
	o, err := redis.ParseFailoverURL(u.String())
	if err != nil {
		return connSpec{}, err
	}
	return connSpec{failover: o}, nil
}

// parseCluster translates redis-cluster://... into the form
// redis.ParseClusterURL reads (the first node as host, the others as addr
// options).
func parseCluster(scheme, rest string) (connSpec, error) {
	m, err := parseMulti(rest, defaultRedisPort)
	if err != nil {
		return connSpec{}, err
	}
	if len(m.path) > 0 {
		return connSpec{}, errors.New("a cluster address has no database path (Redis Cluster has only db 0)")
	}
	q := m.query
	if q.Has("addr") {
		return connSpec{}, errors.New("option addr is given by the address itself")
	}
	for _, h := range m.hosts[1:] {
		q.Add("addr", h)
	}
	u := url.URL{Scheme: scheme, User: m.user, Host: m.hosts[0], RawQuery: q.Encode()}
	o, err := redis.ParseClusterURL(u.String())
	if err != nil {
		return connSpec{}, err
	}
	return connSpec{cluster: o}, nil
}

// redact hides the password of an address, for error messages.
func redact(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	authority, tail, _ := cutAuthority(rest)
	i := strings.LastIndex(authority, "@")
	if i < 0 {
		return raw
	}
	user, _, hasPw := strings.Cut(authority[:i], ":")
	if !hasPw {
		return raw
	}
	return scheme + "://" + user + ":xxxxx@" + authority[i+1:] + redactQuery(tail)
}

// redactQuery hides password options of an address's tail.
func redactQuery(tail string) string {
	path, query, ok := strings.Cut(tail, "?")
	if !ok {
		return tail
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return path + "?xxxxx"
	}
	for _, k := range []string{"password", "sentinel_password"} {
		if q.Has(k) {
			q.Set(k, "xxxxx")
		}
	}
	return path + "?" + q.Encode()
}
