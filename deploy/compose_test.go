package deploy

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/askbridge/askbridge/config"
)

const composeFile = "../docker-compose.yml"

var replicas = []string{"bridge-1", "bridge-2"}

// loadCompose loads docker-compose.yml the way `docker compose` does, with
// env as the environment (.env is not read).
func loadCompose(t *testing.T, env ...string) *types.Project {
	t.Helper()
	path, err := filepath.Abs(composeFile)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := cli.NewProjectOptions([]string{path},
		cli.WithWorkingDirectory(filepath.Dir(path)),
		cli.WithEnv(env),
		cli.WithName("askbridge"),
	)
	if err != nil {
		t.Fatal(err)
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("docker-compose.yml does not load: %v", err)
	}
	return project
}

func service(t *testing.T, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	svc, err := p.GetService(name)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func envOf(svc types.ServiceConfig, k string) (string, bool) {
	v, ok := svc.Environment[k]
	if !ok || v == nil {
		return "", ok
	}
	return *v, true
}

// secretName is the Compose secret that carries a secret setting.
func secretName(env string) string { return strings.ToLower(env) }

// Redis: a pinned image, append-only persistence on a volume, a password
// from a secret file, reachable only on the Compose network.
func TestComposeRedis(t *testing.T) {
	p := loadCompose(t)
	redis := service(t, p, "redis")
	if !strings.HasPrefix(redis.Image, "redis:7.") || !strings.Contains(redis.Image, "@sha256:") {
		t.Errorf("redis image %q is not a redis 7 tag pinned by digest", redis.Image)
	}
	cmd := strings.Join(append(slices.Clone(redis.Entrypoint), redis.Command...), " ")
	for _, want := range []string{"--appendonly yes", "requirepass", "/run/secrets/redis_password", "docker-entrypoint.sh redis-server -"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("redis command %q lacks %q", cmd, want)
		}
	}
	// The password must not be an argument (ps would show it): it reaches
	// redis-server on stdin.
	if strings.Contains(cmd, "--requirepass") {
		t.Errorf("redis command passes the password as an argument: %q", cmd)
	}
	if len(redis.Volumes) == 0 || redis.Volumes[0].Target != "/data" {
		t.Errorf("redis keeps no data volume: %+v", redis.Volumes)
	}
	for _, port := range redis.Ports {
		t.Errorf("redis is published on the host (%s:%s->%d): the bridges reach it on the Compose network", port.HostIP, port.Published, port.Target)
	}
	if !slices.ContainsFunc(redis.Secrets, func(s types.ServiceSecretConfig) bool { return s.Source == "redis_password" }) {
		t.Errorf("redis does not mount the redis_password secret")
	}
	if hc := redis.HealthCheck; hc == nil || !strings.Contains(strings.Join(hc.Test, " "), "REDISCLI_AUTH") || !strings.Contains(strings.Join(hc.Test, " "), "PONG") {
		t.Errorf("redis health check does not authenticate and look for PONG: %+v", redis.HealthCheck)
	}
}

// Both replicas get every setting of config/table.go: the plain ones from
// the environment of `docker compose`, the secret ones as X_FILE naming a
// secret file Compose mounts.
func TestComposeReplicasHaveEverySetting(t *testing.T) {
	// Unset, the pass-through settings are empty (the bridge's defaults)
	// and the optional secrets are not given.
	bare := loadCompose(t)
	// Set, each reaches both replicas.
	var env []string
	for _, s := range settings(t) {
		if s.secret {
			env = append(env, s.env+"_FILE=./secrets/"+strings.ToLower(strings.TrimPrefix(s.env, "ASKUSER_")))
		} else {
			env = append(env, s.env+"=value-of-"+s.env)
		}
	}
	set := loadCompose(t, env...)

	// Set in the file whatever .env says: what the containers need.
	fixed := map[string]string{
		"ASKUSER_HTTP_ADDR": "0.0.0.0:8080",
		"ASKUSER_REPLICA":   "", // each its own, below
		"ASKUSER_CONFIG":    "/etc/askbridge/config.yaml",
	}
	required := map[string]bool{"ASKUSER_REDIS_URL": true, "ASKUSER_HTTP_TOKEN": true}

	for _, name := range replicas {
		b, s := service(t, bare, name), service(t, set, name)
		for _, row := range settings(t) {
			if row.secret {
				if _, ok := envOf(s, row.env); ok {
					t.Errorf("%s: secret %s is an environment variable; give it as %s_FILE", name, row.env, row.env)
				}
				target := "/run/secrets/" + secretName(row.env)
				if got, ok := envOf(s, row.env+"_FILE"); !ok || got != target {
					t.Errorf("%s: %s_FILE = %q (present %v) with the file given, want %q", name, row.env, got, ok, target)
				}
				got, _ := envOf(b, row.env+"_FILE")
				switch {
				case required[row.env] && got != target:
					t.Errorf("%s: %s_FILE = %q without .env, want %q: it is required", name, row.env, got, target)
				case !required[row.env] && got != "":
					t.Errorf("%s: %s_FILE = %q without .env, want it unset: the bridge would read the placeholder", name, row.env, got)
				}
				if !slices.ContainsFunc(s.Secrets, func(m types.ServiceSecretConfig) bool {
					return m.Source == secretName(row.env) && (m.Target == "" || m.Target == target)
				}) {
					t.Errorf("%s does not mount secret %s at %s", name, secretName(row.env), target)
				}
				continue
			}
			want, isFixed := fixed[row.env]
			if row.env == "ASKUSER_REPLICA" {
				if got, _ := envOf(s, row.env); got != name {
					t.Errorf("%s: ASKUSER_REPLICA = %q, want %q", name, got, name)
				}
				continue
			}
			got, ok := envOf(s, row.env)
			switch {
			case !ok:
				t.Errorf("%s does not pass %s through", name, row.env)
			case isFixed && got != want:
				t.Errorf("%s: %s = %q, want %q", name, row.env, got, want)
			case !isFixed && !strings.Contains(got, "value-of-"+row.env):
				t.Errorf("%s: %s = %q with %s set in the environment: it does not reach the replica", name, row.env, got, row.env)
			}
		}
		if got, _ := envOf(b, "ASKUSER_CONFIG"); got != "" {
			t.Errorf("%s: ASKUSER_CONFIG = %q without .env, want it unset", name, got)
		}
		if !slices.ContainsFunc(s.Configs, func(c types.ServiceConfigObjConfig) bool {
			return c.Source == "askuser_config" && c.Target == fixed["ASKUSER_CONFIG"]
		}) {
			t.Errorf("%s does not mount config askuser_config at %s", name, fixed["ASKUSER_CONFIG"])
		}
	}

	// Every secret is a file: given, the path from .env; not given, the
	// placeholder for the optional ones and ./secrets/ for the required.
	for _, row := range settings(t) {
		if !row.secret {
			continue
		}
		for _, c := range []struct {
			p    *types.Project
			want string
		}{
			{set, "secrets/" + strings.ToLower(strings.TrimPrefix(row.env, "ASKUSER_"))},
			{bare, map[bool]string{true: "secrets/", false: "deploy/compose/unset"}[required[row.env]]},
		} {
			sec, ok := c.p.Secrets[secretName(row.env)]
			if !ok {
				t.Errorf("no secret %s for %s", secretName(row.env), row.env)
				continue
			}
			if !strings.Contains(filepath.ToSlash(sec.File), c.want) {
				t.Errorf("secret %s: file %q, want one under %q", secretName(row.env), sec.File, c.want)
			}
		}
	}
}

// Secrets are files, never environment variables or inline content, and the
// placeholder exists.
func TestComposeSecretsAreFiles(t *testing.T) {
	p := loadCompose(t)
	if len(p.Secrets) == 0 {
		t.Fatal("no secrets")
	}
	for name, s := range p.Secrets {
		if s.File == "" || s.Environment != "" || s.Content != "" || s.External {
			t.Errorf("secret %s is not a file: %+v", name, s)
		}
	}
	for name, c := range p.Configs {
		if c.File == "" {
			t.Errorf("config %s is not a file", name)
		}
	}
	for _, svc := range p.Services {
		for _, m := range svc.Secrets {
			if _, ok := p.Secrets[m.Source]; !ok {
				t.Errorf("%s mounts undefined secret %s", svc.Name, m.Source)
			}
		}
		for k, v := range svc.Environment {
			if s, file := knownVariable(t, k); s != nil && s.secret && !file && v != nil && *v != "" {
				t.Errorf("%s: secret %s is given in the environment", svc.Name, k)
			}
		}
	}
	if _, err := os.Stat("compose/unset"); err != nil {
		t.Errorf("the placeholder for files not given: %v", err)
	}
}

// The replicas share Redis under distinct names, wait for it, check their
// own health with the binary, listen beyond loopback with a token, and get
// time to hand their work over on stop.
func TestComposeReplicas(t *testing.T) {
	p := loadCompose(t, "ASKUSER_HTTP_ORIGINS=https://ask.example.com")
	var names []string
	for _, name := range replicas {
		svc := service(t, p, name)
		get := func(k string) string { v, _ := envOf(svc, k); return v }
		if !strings.HasPrefix(get("ASKUSER_HTTP_ADDR"), "0.0.0.0:") || get("ASKUSER_HTTP_TOKEN_FILE") == "" {
			t.Errorf("%s: listens beyond loopback without a token", name)
		}
		names = append(names, get("ASKUSER_REPLICA"))
		_, port, _ := strings.Cut(get("ASKUSER_HTTP_ADDR"), ":")
		origins := get("ASKUSER_HTTP_ORIGINS")
		if !strings.Contains(origins, "https://ask.example.com") {
			t.Errorf("%s: ASKUSER_HTTP_ORIGINS = %q drops the one from the environment", name, origins)
		}
		for _, cfg := range svc.Ports {
			if strconv.FormatUint(uint64(cfg.Target), 10) != port {
				t.Errorf("%s publishes port %d, but listens on %s", name, cfg.Target, port)
			}
			// A page published on another port than it listens on names it.
			if cfg.Published != port && !strings.Contains(origins, "localhost:"+cfg.Published) {
				t.Errorf("%s is published on %s but ASKUSER_HTTP_ORIGINS = %q: its page could not answer", name, cfg.Published, origins)
			}
		}
		if dep, ok := svc.DependsOn["redis"]; !ok || dep.Condition != types.ServiceConditionHealthy {
			t.Errorf("%s does not wait for a healthy redis", name)
		}
		if hc := svc.HealthCheck; hc == nil || !slices.Equal(hc.Test, []string{"CMD", "/askbridge", "healthcheck"}) {
			t.Errorf("%s: health check %+v, want [CMD /askbridge healthcheck]", name, svc.HealthCheck)
		}
		if svc.StopGracePeriod == nil || time.Duration(*svc.StopGracePeriod) < config.DefaultStopGrace+10*time.Second {
			t.Errorf("%s: stop_grace_period %v leaves no margin over ASKUSER_STOP_GRACE's default %s", name, svc.StopGracePeriod, config.DefaultStopGrace)
		}
		if !svc.ReadOnly || !slices.Contains(svc.CapDrop, "ALL") {
			t.Errorf("%s: want read_only and cap_drop ALL (the bridge writes no file)", name)
		}
	}
	if names[0] == "" || names[0] == names[1] {
		t.Errorf("replicas need distinct names: %q", names)
	}
	// Without other origins, bridge-2's is its published port alone.
	if got, _ := envOf(service(t, loadCompose(t), "bridge-2"), "ASKUSER_HTTP_ORIGINS"); got != "http://localhost:8081" {
		t.Errorf("bridge-2: ASKUSER_HTTP_ORIGINS = %q without .env, want http://localhost:8081", got)
	}
}
