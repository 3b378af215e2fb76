package deploy

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// instructions are the Dockerfile's instructions, continuation lines
// joined, comments dropped.
func instructions(t *testing.T) [][2]string {
	t.Helper()
	data, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	var cur string
	for _, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if s, ok := strings.CutSuffix(trimmed, "\\"); ok {
			cur += s + " "
			continue
		}
		cur += trimmed
		op, args, _ := strings.Cut(cur, " ")
		out = append(out, [2]string{strings.ToUpper(op), strings.TrimSpace(args)})
		cur = ""
	}
	return out
}

var pinned = regexp.MustCompile(`^\S+:\S+@sha256:[0-9a-f]{64}(\s|$)`)

func TestDockerfile(t *testing.T) {
	ins := instructions(t)
	var froms []string
	final := map[string][]string{} // the last stage's instructions
	for _, in := range ins {
		if in[0] == "FROM" {
			froms = append(froms, in[1])
			final = map[string][]string{}
		}
		final[in[0]] = append(final[in[0]], in[1])
	}
	if len(froms) != 2 {
		t.Fatalf("want a build stage and a runtime stage, got FROM %q", froms)
	}
	for _, f := range froms {
		if !pinned.MatchString(f) {
			t.Errorf("FROM %s: not a tag pinned by digest", f)
		}
	}
	if !strings.HasPrefix(froms[0], "golang:1.27") || !strings.HasPrefix(froms[1], "gcr.io/distroless/static-debian12:nonroot@") {
		t.Errorf("bases %q: want golang:1.27… and distroless static-debian12:nonroot", froms)
	}
	build := strings.Join(func() []string {
		var runs []string
		for _, in := range ins {
			if in[0] == "RUN" {
				runs = append(runs, in[1])
			}
		}
		return runs
	}(), "\n")
	if !strings.Contains(build, "-o /out/askbridge ./cmd/bridge") || !strings.Contains(build, "CGO_ENABLED=0") && !slices.ContainsFunc(ins, func(in [2]string) bool { return in[0] == "ENV" && strings.Contains(in[1], "CGO_ENABLED=0") }) {
		t.Errorf("want a static build of ./cmd/bridge to /out/askbridge: %s", build)
	}
	if got := final["COPY"]; len(got) != 1 || got[0] != "--from=build /out/askbridge /askbridge" {
		t.Errorf("runtime COPY %q, want the binary at /askbridge", got)
	}
	if got := final["ENTRYPOINT"]; len(got) != 1 || got[0] != `["/askbridge"]` {
		t.Errorf("ENTRYPOINT %q", got)
	}
	if got := final["HEALTHCHECK"]; len(got) != 1 || !strings.HasSuffix(got[0], `CMD ["/askbridge", "healthcheck"]`) {
		t.Errorf("HEALTHCHECK %q, want CMD [\"/askbridge\", \"healthcheck\"]", got)
	}
	if got := strings.Join(final["ENV"], " "); !strings.Contains(got, "ASKUSER_HTTP_ADDR=0.0.0.0:8080") {
		t.Errorf("ENV %q: the image should listen on 0.0.0.0:8080", got)
	}
	for _, env := range final["ENV"] {
		for _, kv := range strings.Fields(env) {
			name, _, _ := strings.Cut(kv, "=")
			if s, _ := knownVariable(t, name); strings.HasPrefix(name, "ASKUSER_") && s == nil {
				t.Errorf("ENV %s is no setting of config/table.go", name)
			} else if s != nil && s.secret {
				t.Errorf("ENV %s: a secret in the image", name)
			}
		}
	}
	// Numeric, so that Kubernetes' runAsNonRoot can check it.
	if got := final["USER"]; len(got) != 1 || !regexp.MustCompile(`^[1-9][0-9]*(:[0-9]+)?$`).MatchString(got[0]) {
		t.Errorf("USER %q, want a numeric non-root uid", got)
	}
	if got := final["EXPOSE"]; len(got) != 1 || got[0] != "8080" {
		t.Errorf("EXPOSE %q, want 8080", got)
	}
}

// The build context leaves out what must never reach an image layer and
// what the build does not need.
func TestDockerignore(t *testing.T) {
	data, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, line)
		}
	}
	for _, want := range []string{".git/", "secrets/", ".env", "bin/", "artifacts/", "**/node_modules/", "**/testdata/"} {
		if !slices.Contains(patterns, want) {
			t.Errorf(".dockerignore lacks %s", want)
		}
	}
	// What the build needs stays in.
	for _, keep := range []string{"go.mod", "go.sum", "cmd", "web", "locale", "store", "config"} {
		for _, p := range patterns {
			if strings.TrimSuffix(strings.TrimPrefix(p, "/"), "/") == keep || p == "*" || p == "**" {
				t.Errorf(".dockerignore pattern %q drops %s, which the build needs", p, keep)
			}
		}
	}
}
