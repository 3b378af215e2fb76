package deploy

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/config"
)

const deploymentDoc = "../docs/deployment.md"

// Every Redis address docs/deployment.md shows is one the bridge's
// configuration accepts, and every ASKUSER_ variable it names is a setting
// (or a secret setting's _FILE).
func TestDeploymentDoc(t *testing.T) {
	data, err := os.ReadFile(deploymentDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	urls := regexp.MustCompile(`redis[a-z-]*://[^\s'"`+"`"+`|]+`).FindAllString(doc, -1)
	if len(urls) < 5 {
		t.Fatalf("found only %d Redis addresses in %s", len(urls), deploymentDoc)
	}
	for _, u := range urls {
		// printf's %s stands for the generated password.
		u = strings.ReplaceAll(strings.TrimSuffix(u, `\n`), "%s", "0123456789abcdef")
		if _, err := config.Load([]string{"ASKUSER_REDIS_URL=" + u}, os.ReadFile); err != nil {
			t.Errorf("%s shows %s, which the bridge refuses: %v", deploymentDoc, u, err)
		}
	}
	for _, name := range regexp.MustCompile(`ASKUSER_[A-Z_]*[A-Z]`).FindAllString(doc, -1) {
		if s, _ := knownVariable(t, name); s == nil {
			t.Errorf("%s names %s, which is no setting of config/table.go", deploymentDoc, name)
		}
	}
	for _, file := range []string{"docker-compose.yml", "deploy/kubernetes/deployment.yaml", "deploy/kubernetes/example/secret.yaml", "deploy/grafana/askbridge.json"} {
		base := file[strings.LastIndex(file, "/")+1:]
		if !strings.Contains(doc, base) {
			t.Errorf("%s does not mention %s", deploymentDoc, file)
		}
		if _, err := os.Stat("../" + file); err != nil {
			t.Error(err)
		}
	}
}
