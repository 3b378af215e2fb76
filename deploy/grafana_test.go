package deploy

import (
	"encoding/json"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const dashboardFile = "grafana/askbridge.json"

// The bridge's metric names the dashboard may use (cmd/bridge), and which
// are histograms (whose _bucket, _sum and _count series it may use too).
var bridgeMetrics = map[string]bool{
	"askbridge_build_info":                     false,
	"askbridge_redis_call_duration_seconds":    true,
	"askbridge_platform_call_duration_seconds": true,
	"askbridge_channel_state":                  false,
	"askbridge_questions_ended_total":          false,
	"askbridge_time_to_answer_seconds":         true,
	"askbridge_messages_sent_total":            false,
	"askbridge_platform_errors_total":          false,
	"askbridge_panics_total":                   false,
	"askbridge_retry_after_total":              false,
	"askbridge_retry_after_seconds_total":      false,
	"askbridge_reach_total":                    false,
	"askbridge_email_total":                    false,
	"askbridge_questions_pending":              false,
}

// The subset of Grafana's classic dashboard JSON model the checks need.
type dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []variable `json:"list"`
	} `json:"templating"`
}

type variable struct {
	Type       string          `json:"type"`
	Name       string          `json:"name"`
	Query      json.RawMessage `json:"query"` // a string, or {"query": ...}
	Datasource *datasource     `json:"datasource"`
}

type panel struct {
	ID         int         `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Datasource *datasource `json:"datasource"`
	GridPos    struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		Expr       string      `json:"expr"`
		RefID      string      `json:"refId"`
		Datasource *datasource `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

func loadDashboard(t *testing.T) (*dashboard, []panel) {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(strings.NewReader(string(data)))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s is not JSON of a dashboard: %v", dashboardFile, err)
	}
	var all []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			all = append(all, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return &d, all
}

var metricName = regexp.MustCompile(`askbridge_[a-z_]+`)

// metricsIn returns the askbridge_ series an expression names, each checked
// against bridgeMetrics: unknown ones are reported.
func metricsIn(t *testing.T, where, expr string) []string {
	t.Helper()
	var out []string
	for _, name := range metricName.FindAllString(expr, -1) {
		base := name
		if _, ok := bridgeMetrics[name]; !ok {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(name, suffix); ok && bridgeMetrics[b] {
					base = b
					break
				}
			}
		}
		if _, ok := bridgeMetrics[base]; !ok {
			t.Errorf("%s: %s is none of the bridge's metrics: %s", where, name, expr)
			continue
		}
		if base != name || !bridgeMetrics[base] {
			out = append(out, base)
			continue
		}
		t.Errorf("%s: histogram %s used without _bucket, _sum or _count: %s", where, name, expr)
	}
	return out
}

func TestGrafanaDashboard(t *testing.T) {
	d, panels := loadDashboard(t)
	if d.UID == "" || d.Title == "" || d.SchemaVersion == 0 {
		t.Errorf("want uid, title and schemaVersion: %q %q %d", d.UID, d.Title, d.SchemaVersion)
	}

	// A Prometheus data source variable, used by every query.
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		if v.Type == "datasource" {
			var q string
			if err := json.Unmarshal(v.Query, &q); err != nil || q != "prometheus" {
				t.Errorf("variable %s: query %s, want \"prometheus\"", v.Name, v.Query)
			}
		}
	}
	const dsVar = "${datasource}"
	if !slices.ContainsFunc(d.Templating.List, func(v variable) bool { return v.Type == "datasource" && v.Name == "datasource" }) {
		t.Fatal("no datasource variable named datasource")
	}

	used := map[string]bool{}
	ids := map[int]string{}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct{ Query string }
		if err := json.Unmarshal(v.Query, &q); err != nil {
			_ = json.Unmarshal(v.Query, &q.Query)
		}
		if v.Datasource == nil || v.Datasource.UID != dsVar {
			t.Errorf("variable %s does not query %s", v.Name, dsVar)
		}
		for _, m := range metricsIn(t, "variable "+v.Name, q.Query) {
			used[m] = true
		}
	}
	for _, p := range panels {
		if prev, ok := ids[p.ID]; ok || p.ID == 0 {
			t.Errorf("panel %q: id %d (also %q)", p.Title, p.ID, prev)
		}
		ids[p.ID] = p.Title
		if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: gridPos %+v does not fit the 24 columns", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		if p.Datasource == nil || p.Datasource.UID != dsVar {
			t.Errorf("panel %q: datasource %+v, want uid %s", p.Title, p.Datasource, dsVar)
		}
		for _, tg := range p.Targets {
			where := "panel " + p.Title + " " + tg.RefID
			if tg.Datasource != nil && tg.Datasource.UID != dsVar {
				t.Errorf("%s: datasource %+v, want uid %s", where, tg.Datasource, dsVar)
			}
			ms := metricsIn(t, where, tg.Expr)
			if len(ms) == 0 {
				t.Errorf("%s: no askbridge metric in %q", where, tg.Expr)
			}
			for _, m := range ms {
				used[m] = true
			}
			// Only variables the dashboard defines (and Grafana's own).
			for _, ref := range regexp.MustCompile(`\$(?:\{)?([A-Za-z_]+)`).FindAllStringSubmatch(tg.Expr, -1) {
				if !vars[ref[1]] && !strings.HasPrefix(ref[1], "__") {
					t.Errorf("%s: $%s is no variable of the dashboard", where, ref[1])
				}
			}
		}
	}
	// Every metric is shown somewhere.
	for _, m := range slices.Sorted(maps.Keys(bridgeMetrics)) {
		if !used[m] {
			t.Errorf("no panel shows %s", m)
		}
	}
}
