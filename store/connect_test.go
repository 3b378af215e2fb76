package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/redistest"
)

func TestParseURL(t *testing.T) {
	tests := []struct {
		name  string
		url   string
		check func(t *testing.T, c connSpec)
		err   string
	}{
		{name: "redis with db", url: "redis://localhost:6380/2", check: func(t *testing.T, c connSpec) {
			o := single(t, c)
			if o.Addr != "localhost:6380" || o.DB != 2 || o.TLSConfig != nil {
				t.Fatalf("%+v", o)
			}
		}},
		{name: "user and escaped password", url: "redis://agent:p%40ss@10.0.0.5/0?dial_timeout=3s", check: func(t *testing.T, c connSpec) {
			o := single(t, c)
			if o.Addr != "10.0.0.5:6379" || o.Username != "agent" || o.Password != "p@ss" || o.DialTimeout != 3*time.Second {
				t.Fatalf("%+v", o)
			}
		}},
		{name: "password only", url: "redis://:secret@h:1", check: func(t *testing.T, c connSpec) {
			o := single(t, c)
			if o.Username != "" || o.Password != "secret" {
				t.Fatalf("%+v", o)
			}
		}},
		{name: "tls", url: "rediss://cache.example:6380", check: func(t *testing.T, c connSpec) {
			o := single(t, c)
			if o.TLSConfig == nil || o.TLSConfig.ServerName != "cache.example" {
				t.Fatalf("%+v", o)
			}
		}},
		{name: "bare host:port", url: "127.0.0.1:7000", check: func(t *testing.T, c connSpec) {
			if o := single(t, c); o.Addr != "127.0.0.1:7000" {
				t.Fatalf("%+v", o)
			}
		}},
		{name: "unix socket", url: "unix:///run/redis.sock?db=3", check: func(t *testing.T, c connSpec) {
			o := single(t, c)
			if o.Network != "unix" || o.Addr != "/run/redis.sock" || o.DB != 3 {
				t.Fatalf("%+v", o)
			}
		}},
		{name: "sentinel", url: "redis-sentinel://:pw@s1,s2:26380,[::1]:26381/mymaster/1?sentinel_password=sp&dial_timeout=2s", check: func(t *testing.T, c connSpec) {
			o := c.failover
			if o == nil {
				t.Fatalf("not a sentinel spec: %+v", c)
			}
			if o.MasterName != "mymaster" || o.DB != 1 || o.Password != "pw" || o.Username != "" ||
				o.SentinelPassword != "sp" || o.DialTimeout != 2*time.Second || o.TLSConfig != nil ||
				strings.Join(o.SentinelAddrs, " ") != "s1:26379 s2:26380 [::1]:26381" {
				t.Fatalf("%+v", o)
			}
		}},
		{name: "sentinel tls with user", url: "rediss-sentinel://bridge:pw@s1/m", check: func(t *testing.T, c connSpec) {
			o := c.failover
			if o == nil || o.TLSConfig == nil || o.Username != "bridge" || o.Password != "pw" || o.MasterName != "m" || o.SentinelPassword != "" {
				t.Fatalf("%+v", o)
			}
		}},
		{name: "cluster", url: "redis-cluster://u:p@n1:7000,n2:7001,[::1]:7002?pool_size=5", check: func(t *testing.T, c connSpec) {
			o := c.cluster
			if o == nil || o.Username != "u" || o.Password != "p" || o.PoolSize != 5 || o.TLSConfig != nil ||
				strings.Join(o.Addrs, " ") != "n1:7000 n2:7001 [::1]:7002" {
				t.Fatalf("%+v", o)
			}
		}},
		{name: "cluster tls, default port", url: "rediss-cluster://n1", check: func(t *testing.T, c connSpec) {
			o := c.cluster
			if o == nil || o.TLSConfig == nil || strings.Join(o.Addrs, " ") != "n1:6379" {
				t.Fatalf("%+v", o)
			}
		}},
		{name: "empty", url: " ", err: "empty"},
		{name: "unknown scheme", url: "http://h", err: "unknown scheme"},
		{name: "several hosts without scheme", url: "redis://a:1,b:2", err: "redis-cluster://"},
		{name: "sentinel without master", url: "redis-sentinel://s1", err: "master name"},
		{name: "sentinel master twice", url: "redis-sentinel://s1/m?master_name=x", err: "master_name"},
		{name: "cluster with db", url: "redis-cluster://n1/3", err: "no database"},
		{name: "empty host in list", url: "redis-cluster://n1,,n2", err: "empty host"},
		{name: "unknown option", url: "redis://h?bogus=1", err: "bogus"},
		{name: "bad db", url: "redis://h/x", err: "database"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseURL(tc.url)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("parseURL(%q) = %+v, %v; want an error about %q", tc.url, c, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseURL(%q): %v", tc.url, err)
			}
			tc.check(t, c)
		})
	}
}

func single(t *testing.T, c connSpec) *redis.Options {
	t.Helper()
	if c.single == nil {
		t.Fatalf("not a single-server spec: %+v", c)
	}
	return c.single
}

func TestRedact(t *testing.T) {
	tests := []struct{ in, want string }{
		{"redis://u:secret@h:1/0", "redis://u:xxxxx@h:1/0"},
		{"redis://:secret@h", "redis://:xxxxx@h"},
		{"redis://h:1", "redis://h:1"},
		{"redis-sentinel://:pw@s1,s2/m?sentinel_password=sp", "redis-sentinel://:xxxxx@s1,s2/m?sentinel_password=xxxxx"},
	}
	for _, tc := range tests {
		if got := redact(tc.in); got != tc.want {
			t.Errorf("redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestConnect connects through every scheme to the servers of this test
// binary: the single server (also with an ACL user), the cluster, the
// embedded server, and a Sentinel started for the test.
func TestConnect(t *testing.T) {
	ctx := ctxT(t)
	roundTrip := func(t *testing.T, c redis.UniversalClient) {
		t.Helper()
		defer c.Close()
		for i := range 5 {
			k := fmt.Sprintf("%sconnect:{%d}", testPrefix(), i)
			if err := c.Set(ctx, k, "v", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			if v := c.Get(ctx, k).Val(); v != "v" {
				t.Fatalf("GET %s = %q", k, v)
			}
		}
	}
	t.Run("redis", func(t *testing.T) {
		c, err := Connect(ctx, "redis://"+backendSingle.addrs[0]+"/0")
		if err != nil {
			t.Fatal(err)
		}
		roundTrip(t, c)
	})
	t.Run("cluster", func(t *testing.T) {
		needCluster(t)
		c, err := Connect(ctx, "redis-cluster://"+strings.Join(backendCluster.addrs, ","))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := c.(*redis.ClusterClient); !ok {
			t.Fatalf("client %T, want a cluster client", c)
		}
		roundTrip(t, c)
	})
	t.Run("embedded", func(t *testing.T) {
		c, err := Connect(ctx, backendEmbedded.addrs[0])
		if err != nil {
			t.Fatal(err)
		}
		roundTrip(t, c)
	})
	t.Run("with options", func(t *testing.T) {
		// A pool of its own, named: what MCP calls wait on in the bridge.
		c, err := ConnectWith(ctx, "redis://"+backendSingle.addrs[0]+"/0?pool_size=50", ConnectOptions{PoolSize: 3, Name: "askbridge-test"})
		if err != nil {
			t.Fatal(err)
		}
		if o := c.(*redis.Client).Options(); o.PoolSize != 3 || o.ClientName != "askbridge-test" {
			t.Errorf("pool size %d, name %q; want 3, askbridge-test", o.PoolSize, o.ClientName)
		}
		if name, err := c.ClientGetName(ctx).Result(); err != nil || name != "askbridge-test" {
			t.Errorf("CLIENT GETNAME = %q, %v", name, err)
		}
		roundTrip(t, c)
	})
	t.Run("refused", func(t *testing.T) {
		_, err := Connect(ctx, "redis://:hunter2@127.0.0.1:1/0?dial_timeout=1s&max_retries=-1")
		if err == nil {
			t.Fatal("connected to a closed port")
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("the error shows the password: %v", err)
		}
	})
	if !backendSingle.real {
		return // ACL users and Sentinel need a real redis-server
	}
	t.Run("acl user", func(t *testing.T) {
		admin := backendSingle.client(t)
		user := "agent" + strings.TrimSuffix(testPrefix(), ":")
		if err := admin.Do(ctx, "ACL", "SETUSER", user, "on", ">s3cr/t", "~*", "&*", "+@all").Err(); err != nil {
			t.Fatal(err)
		}
		c, err := Connect(ctx, "redis://"+user+":s3cr%2Ft@"+backendSingle.addrs[0])
		if err != nil {
			t.Fatal(err)
		}
		roundTrip(t, c)
		_, err = Connect(ctx, "redis://"+user+":wrong@"+backendSingle.addrs[0])
		if err == nil || strings.Contains(err.Error(), "wrong") {
			t.Fatalf("wrong password: %v", err)
		}
	})
	t.Run("sentinel", func(t *testing.T) {
		sentinel, err := redistest.StartSentinel(backendSingle.addrs[0], "askmaster")
		if err != nil {
			t.Fatal(err)
		}
		defer sentinel.Close()
		c, err := Connect(ctx, "redis-sentinel://"+sentinel.Addr+"/askmaster")
		if err != nil {
			t.Fatal(err)
		}
		roundTrip(t, c)
	})
}

func TestStartEmbeddedLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "10.1.2.3:6379", ":0", "nonsense"} {
		if e, err := StartEmbedded(addr); err == nil {
			e.Close()
			t.Errorf("StartEmbedded(%q) listened", addr)
		}
	}
	e, err := StartEmbedded("localhost:0")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if !strings.HasPrefix(e.URL(), "redis://") || e.Addr() == "" {
		t.Fatalf("URL %q", e.URL())
	}
	c, err := Connect(context.Background(), e.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e.Close()
	e.Close() // safe to repeat
}
