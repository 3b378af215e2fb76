package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/askbridge/askbridge/config"
)

// manifests are the objects of deploy/kubernetes, each strictly decoded
// into its API type: a misspelt or misplaced field is an error, as kubectl's
// server-side field validation would make it.
type manifests struct {
	deployments     []*appsv1.Deployment
	services        []*corev1.Service
	pdbs            []*policyv1.PodDisruptionBudget
	serviceMonitors []*monitoringv1.ServiceMonitor
	// secrets are the examples (kubernetes/example), with their files' text.
	secrets    []*corev1.Secret
	secretText map[string]string
}

func loadManifests(t *testing.T) *manifests {
	t.Helper()
	m := &manifests{secretText: map[string]string{}}
	main, _ := filepath.Glob("kubernetes/*.yaml")
	examples, _ := filepath.Glob("kubernetes/example/*.yaml")
	if len(main) == 0 || len(examples) == 0 {
		t.Fatalf("no manifests: %q, examples %q", main, examples)
	}
	for _, path := range append(main, examples...) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for n := 0; ; n++ {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if len(bytes.TrimSpace(stripComments(doc))) == 0 {
				continue
			}
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal(doc, &tm); err != nil {
				t.Fatalf("%s #%d: %v", path, n, err)
			}
			where := path + " #" + strconv.Itoa(n) + " (" + tm.Kind + ")"
			strict := func(into any) {
				if err := yaml.UnmarshalStrict(doc, into); err != nil {
					t.Fatalf("%s: %v", where, err)
				}
			}
			example := strings.Contains(path, "/example/")
			switch gvk := tm.APIVersion + " " + tm.Kind; {
			case gvk == "apps/v1 Deployment" && !example:
				var o appsv1.Deployment
				strict(&o)
				m.deployments = append(m.deployments, &o)
			case gvk == "v1 Service" && !example:
				var o corev1.Service
				strict(&o)
				m.services = append(m.services, &o)
			case gvk == "policy/v1 PodDisruptionBudget" && !example:
				var o policyv1.PodDisruptionBudget
				strict(&o)
				m.pdbs = append(m.pdbs, &o)
			case gvk == "monitoring.coreos.com/v1 ServiceMonitor" && !example:
				var o monitoringv1.ServiceMonitor
				strict(&o)
				m.serviceMonitors = append(m.serviceMonitors, &o)
			case gvk == "v1 Secret":
				if !example {
					t.Errorf("%s: a Secret beside the manifests would be applied with them, over the real one: keep examples in kubernetes/example/", where)
				}
				var o corev1.Secret
				strict(&o)
				m.secrets = append(m.secrets, &o)
				m.secretText[o.Name] = string(doc)
			default:
				t.Fatalf("%s: unexpected %s here", where, gvk)
			}
		}
	}
	if len(m.deployments) != 1 || len(m.services) != 1 || len(m.pdbs) != 1 || len(m.serviceMonitors) != 1 || len(m.secrets) != 1 {
		t.Fatalf("want one each of Deployment, Service, PodDisruptionBudget, ServiceMonitor and example Secret; got %d, %d, %d, %d, %d",
			len(m.deployments), len(m.services), len(m.pdbs), len(m.serviceMonitors), len(m.secrets))
	}
	return m
}

var commentLine = regexp.MustCompile(`(?m)^\s*#.*$`)

func stripComments(doc []byte) []byte { return commentLine.ReplaceAll(doc, nil) }

// selects reports whether a selector's matchLabels pick labels (the
// manifests use matchLabels only).
func selects(t *testing.T, what string, sel *metav1.LabelSelector, labels map[string]string) {
	t.Helper()
	if sel == nil || len(sel.MatchLabels) == 0 || len(sel.MatchExpressions) > 0 {
		t.Errorf("%s: want a selector of matchLabels only, got %+v", what, sel)
		return
	}
	for k, v := range sel.MatchLabels {
		if labels[k] != v {
			t.Errorf("%s: selects %s=%s, but the labels are %v", what, k, v, labels)
		}
	}
}

// container is the Deployment's bridge container.
func container(t *testing.T, d *appsv1.Deployment) *corev1.Container {
	t.Helper()
	cs := d.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("want one container, got %d", len(cs))
	}
	return &cs[0]
}

// portOf resolves a probe's or Service's port against the container's.
func portOf(c *corev1.Container, p intstr.IntOrString) (corev1.ContainerPort, bool) {
	i := slices.IndexFunc(c.Ports, func(cp corev1.ContainerPort) bool {
		if p.Type == intstr.String {
			return cp.Name == p.StrVal
		}
		return cp.ContainerPort == p.IntVal
	})
	if i < 0 {
		return corev1.ContainerPort{}, false
	}
	return c.Ports[i], true
}

func envValue(c *corev1.Container, name string) (corev1.EnvVar, bool) {
	i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
	if i < 0 {
		return corev1.EnvVar{}, false
	}
	return c.Env[i], true
}

// listenPort is the port of a host:port setting, which must listen beyond
// loopback for the kubelet and the Service to reach it.
func listenPort(t *testing.T, c *corev1.Container, name string) int32 {
	t.Helper()
	e, ok := envValue(c, name)
	if !ok {
		t.Fatalf("%s is not set", name)
	}
	host, port, err := net.SplitHostPort(e.Value)
	if err != nil {
		t.Fatalf("%s = %q: %v", name, e.Value, err)
	}
	if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
		t.Errorf("%s = %q listens on loopback: nothing outside the pod reaches it", name, e.Value)
	}
	n, err := strconv.ParseInt(port, 10, 32)
	if err != nil {
		t.Fatalf("%s = %q: %v", name, e.Value, err)
	}
	return int32(n)
}

func TestKubernetesDeployment(t *testing.T) {
	m := loadManifests(t)
	d := m.deployments[0]
	spec := d.Spec.Template.Spec
	c := container(t, d)
	podLabels := d.Spec.Template.Labels

	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas = %v, want 2", d.Spec.Replicas)
	}
	selects(t, "Deployment selector", d.Spec.Selector, podLabels)

	// The ports the bridge listens on are the container's.
	httpPort := listenPort(t, c, "ASKUSER_HTTP_ADDR")
	metricsPort := listenPort(t, c, "ASKUSER_METRICS_ADDR")
	for _, want := range []struct {
		name string
		port int32
	}{{"http", httpPort}, {"metrics", metricsPort}} {
		if p, ok := portOf(c, intstr.FromString(want.name)); !ok || p.ContainerPort != want.port {
			t.Errorf("container port %q = %+v, want %d", want.name, p, want.port)
		}
	}

	// Probes: /healthz answers on both listeners without the token; /readyz
	// only on the metrics one (on the main one it is behind the token,
	// which the kubelet does not have).
	for _, pr := range []struct {
		name  string
		probe *corev1.Probe
		path  string
		ports []int32
	}{
		{"startupProbe", c.StartupProbe, "/healthz", []int32{httpPort, metricsPort}},
		{"livenessProbe", c.LivenessProbe, "/healthz", []int32{httpPort, metricsPort}},
		{"readinessProbe", c.ReadinessProbe, "/readyz", []int32{metricsPort}},
	} {
		if pr.probe == nil || pr.probe.HTTPGet == nil {
			t.Errorf("%s: want an httpGet probe", pr.name)
			continue
		}
		g := pr.probe.HTTPGet
		if g.Path != pr.path {
			t.Errorf("%s: path %q, want %q", pr.name, g.Path, pr.path)
		}
		p, ok := portOf(c, g.Port)
		if !ok {
			t.Errorf("%s: port %s is none of the container's", pr.name, g.Port.String())
		} else if !slices.Contains(pr.ports, p.ContainerPort) {
			t.Errorf("%s: port %d serves no unauthenticated %s (want one of %v)", pr.name, p.ContainerPort, pr.path, pr.ports)
		}
	}

	// Every variable is a setting of config/table.go; secrets come from the
	// Secret, never inline; the required ones are there.
	secretName := m.secrets[0].Name
	required := map[string]bool{"ASKUSER_REDIS_URL": true, "ASKUSER_HTTP_TOKEN": true}
	seen := map[string]bool{}
	for _, e := range c.Env {
		if seen[e.Name] {
			t.Errorf("env %s is given twice", e.Name)
		}
		seen[e.Name] = true
		s, file := knownVariable(t, e.Name)
		if s == nil {
			t.Errorf("env %s is no setting of config/table.go", e.Name)
			continue
		}
		if file {
			t.Errorf("env %s: give the secret with a secretKeyRef, not a file path", e.Name)
			continue
		}
		if !s.secret {
			continue
		}
		ref := (*corev1.SecretKeySelector)(nil)
		if e.ValueFrom != nil {
			ref = e.ValueFrom.SecretKeyRef
		}
		switch {
		case e.Value != "" || ref == nil:
			t.Errorf("env %s is a secret: it must come from a secretKeyRef, not be inlined", e.Name)
		case ref.Name != secretName:
			t.Errorf("env %s: from Secret %q, want %q", e.Name, ref.Name, secretName)
		case required[e.Name] && ref.Optional != nil && *ref.Optional:
			t.Errorf("env %s is required, but its key is optional", e.Name)
		case !required[e.Name] && (ref.Optional == nil || !*ref.Optional):
			t.Errorf("env %s: a platform's secret should be optional (its key absent turns the platform off)", e.Name)
		}
	}
	for name := range required {
		if !seen[name] {
			t.Errorf("env %s is missing", name)
		}
	}
	if e, _ := envValue(c, "ASKUSER_REPLICA"); e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("ASKUSER_REPLICA should be the pod's name (fieldRef metadata.name): %+v", e)
	}
	if len(c.EnvFrom) > 0 {
		t.Errorf("envFrom hides which variables are set; list them: %+v", c.EnvFrom)
	}

	// A stop: the preStop pause, then ASKUSER_STOP_GRACE, within the grace
	// period.
	grace := config.DefaultStopGrace
	if e, ok := envValue(c, "ASKUSER_STOP_GRACE"); ok {
		var err error
		if grace, err = time.ParseDuration(e.Value); err != nil {
			t.Fatalf("ASKUSER_STOP_GRACE = %q: %v", e.Value, err)
		}
	}
	var pause time.Duration
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil {
		t.Errorf("want a preStop sleep, so the pod leaves the Service's endpoints before the server stops")
	} else {
		pause = time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	}
	if tg := spec.TerminationGracePeriodSeconds; tg == nil || time.Duration(*tg)*time.Second <= pause+grace+5*time.Second {
		got := "unset (30)"
		if tg != nil {
			got = strconv.FormatInt(*tg, 10)
		}
		t.Errorf("terminationGracePeriodSeconds = %s, want above preStop (%s) + ASKUSER_STOP_GRACE (%s) + a margin", got, pause, grace)
	}

	// Resources and a locked-down container.
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("want cpu and memory requests and a memory limit: %+v", c.Resources)
	}
	psc, sc := spec.SecurityContext, c.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("pod securityContext: want runAsNonRoot and a non-zero runAsUser: %+v", psc)
	}
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("container securityContext: want a read-only root, no privilege escalation, all capabilities dropped: %+v", sc)
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("the bridge does not talk to the Kubernetes API: want automountServiceAccountToken: false")
	}
}

func TestKubernetesServiceAndMonitor(t *testing.T) {
	m := loadManifests(t)
	d, svc, sm := m.deployments[0], m.services[0], m.serviceMonitors[0]
	c := container(t, d)
	selects(t, "Service selector", &metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, d.Spec.Template.Labels)
	names := map[string]bool{}
	for _, p := range svc.Spec.Ports {
		names[p.Name] = true
		if _, ok := portOf(c, p.TargetPort); !ok {
			t.Errorf("Service port %s: targetPort %s is none of the container's", p.Name, p.TargetPort.String())
		}
	}
	if !names["http"] || !names["metrics"] {
		t.Errorf("Service ports %v, want http and metrics", slices.Sorted(maps.Keys(names)))
	}
	// A ServiceMonitor picks Services by their labels, then their ports by
	// name.
	selects(t, "ServiceMonitor selector", &sm.Spec.Selector, svc.Labels)
	if len(sm.Spec.Endpoints) == 0 {
		t.Fatal("ServiceMonitor has no endpoints")
	}
	for _, ep := range sm.Spec.Endpoints {
		if !names[ep.Port] {
			t.Errorf("ServiceMonitor endpoint port %q is none of the Service's", ep.Port)
		}
		if ep.Path != "/metrics" {
			t.Errorf("ServiceMonitor endpoint path %q, want /metrics", ep.Path)
		}
		// Its Service port must reach the metrics listener, which needs no
		// token (the ServiceMonitor sends none).
		for _, p := range svc.Spec.Ports {
			if p.Name != ep.Port {
				continue
			}
			cp, _ := portOf(c, p.TargetPort)
			if cp.ContainerPort != listenPort(t, c, "ASKUSER_METRICS_ADDR") {
				t.Errorf("ServiceMonitor scrapes container port %d, not ASKUSER_METRICS_ADDR's", cp.ContainerPort)
			}
		}
	}
}

func TestKubernetesPodDisruptionBudget(t *testing.T) {
	m := loadManifests(t)
	d, pdb := m.deployments[0], m.pdbs[0]
	selects(t, "PodDisruptionBudget selector", pdb.Spec.Selector, d.Spec.Template.Labels)
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.Type != intstr.Int || pdb.Spec.MinAvailable.IntVal != 1 {
		t.Errorf("minAvailable = %v, want 1", pdb.Spec.MinAvailable)
	}
	if pdb.Spec.MinAvailable != nil && d.Spec.Replicas != nil && pdb.Spec.MinAvailable.IntVal >= *d.Spec.Replicas {
		t.Errorf("minAvailable %d with %d replicas: no node could ever be drained", pdb.Spec.MinAvailable.IntVal, *d.Spec.Replicas)
	}
}

// The example Secret holds placeholders only, under every key the
// Deployment references (the optional ones may be commented out).
func TestKubernetesSecretExample(t *testing.T) {
	m := loadManifests(t)
	s := m.secrets[0]
	text := m.secretText[s.Name]
	if len(s.Data) > 0 {
		t.Errorf("the example holds base64 data; use stringData with visible placeholders")
	}
	for k, v := range s.StringData {
		if !strings.Contains(v, "REPLACE") {
			t.Errorf("example key %s = %q is not an obvious placeholder (want REPLACE in it)", k, v)
		}
	}
	// A token copied as it is must not start a bridge.
	if tok, ok := s.StringData["http-token"]; ok && len(tok) >= config.MinHTTPTokenChars {
		t.Errorf("the placeholder http-token %q is long enough for the bridge to accept it; keep it under %d characters", tok, config.MinHTTPTokenChars)
	}
	for _, e := range container(t, m.deployments[0]).Env {
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		if _, ok := s.StringData[ref.Key]; ok {
			continue
		}
		if ref.Optional != nil && *ref.Optional && regexp.MustCompile(`(?m)^\s*#\s*`+regexp.QuoteMeta(ref.Key)+`:`).MatchString(text) {
			continue
		}
		t.Errorf("env %s references key %q, which the example Secret does not show", e.Name, ref.Key)
	}
}
