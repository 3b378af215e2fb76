package main

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

// TestComposeFile loads the top-level docker-compose.yml the way
// `docker compose` does and checks what an operator relies on: Redis with
// append-only persistence on a volume, and two bridge replicas that share it
// under distinct names, with a token because they listen beyond loopback.
func TestComposeFile(t *testing.T) {
	path, err := filepath.Abs("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	opts, err := cli.NewProjectOptions([]string{path},
		cli.WithWorkingDirectory(filepath.Dir(path)),
		cli.WithEnv([]string{"ASKUSER_HTTP_TOKEN=a-token-of-sixteen-chars"}),
		cli.WithName("askbridge"),
	)
	if err != nil {
		t.Fatal(err)
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("docker-compose.yml does not load: %v", err)
	}

	redis, err := project.GetService("redis")
	if err != nil {
		t.Fatal(err)
	}
	cmd := strings.Join(redis.Command, " ")
	if !strings.Contains(cmd, "--appendonly yes") {
		t.Errorf("redis command %q lacks --appendonly yes", cmd)
	}
	if len(redis.Volumes) == 0 || redis.Volumes[0].Target != "/data" {
		t.Errorf("redis keeps no data volume: %+v", redis.Volumes)
	}

	var replicas []string
	for _, name := range []string{"bridge-1", "bridge-2"} {
		svc, err := project.GetService(name)
		if err != nil {
			t.Fatal(err)
		}
		env := svc.Environment
		get := func(k string) string {
			if v := env[k]; v != nil {
				return *v
			}
			return ""
		}
		if got := get("ASKUSER_REDIS_URL"); got != "redis://redis:6379/0" {
			t.Errorf("%s: ASKUSER_REDIS_URL = %q", name, got)
		}
		if get("ASKUSER_HTTP_TOKEN") == "" || !strings.HasPrefix(get("ASKUSER_HTTP_ADDR"), "0.0.0.0:") {
			t.Errorf("%s: listens beyond loopback without a token", name)
		}
		replicas = append(replicas, get("ASKUSER_REPLICA"))
		// A page published on another port than it listens on names it.
		for _, port := range svc.Ports {
			if port.Published != strconv.FormatUint(uint64(port.Target), 10) && !strings.Contains(get("ASKUSER_HTTP_ORIGINS"), "localhost:"+port.Published) {
				t.Errorf("%s is published on %s but ASKUSER_HTTP_ORIGINS = %q: its page could not answer", name, port.Published, get("ASKUSER_HTTP_ORIGINS"))
			}
		}
		if dep, ok := svc.DependsOn["redis"]; !ok || dep.Condition != types.ServiceConditionHealthy {
			t.Errorf("%s does not wait for a healthy redis", name)
		}
		if svc.HealthCheck == nil || !slices.Contains(svc.HealthCheck.Test, "healthcheck") {
			t.Errorf("%s has no health check", name)
		}
	}
	if replicas[0] == "" || replicas[0] == replicas[1] {
		t.Errorf("replicas need distinct names: %q", replicas)
	}
}

func TestComposeFileNeedsToken(t *testing.T) {
	path, _ := filepath.Abs("../../docker-compose.yml")
	opts, err := cli.NewProjectOptions([]string{path}, cli.WithWorkingDirectory(filepath.Dir(path)), cli.WithName("askbridge"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := opts.LoadProject(context.Background()); err == nil || !strings.Contains(err.Error(), "ASKUSER_HTTP_TOKEN") {
		t.Errorf("loading without ASKUSER_HTTP_TOKEN: %v", err)
	}
}
