package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agnivade/levenshtein"
)

// envPrefix opens every setting's variable. A variable with it that is no
// setting is a misspelt one, refused rather than ignored.
const envPrefix = "ASKUSER_"

// Lookup returns a lookup over environ, "NAME=value" strings as
// os.Environ returns them: the value of a name, "" when it is not there.
// Of a name given twice the first counts, as with os.Getenv.
func Lookup(environ []string) func(string) string {
	vars := make(map[string]string, len(environ))
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if _, seen := vars[name]; !seen {
			vars[name] = value
		}
	}
	return func(name string) string { return vars[name] }
}

// knownVariables are the names Load reads: every setting's variable, and
// the _FILE form of each secret's.
func knownVariables() []string {
	var names []string
	for _, s := range table {
		names = append(names, s.env)
		if s.secret {
			names = append(names, s.env+"_FILE")
		}
	}
	return names
}

// unknownVariables reports each variable of environ that starts with
// ASKUSER_ (in any case) and is not one Load reads, naming the closest
// known one when there is one. An empty one counts as unset, as for
// settings.
func unknownVariables(environ []string) []string {
	known := knownVariables()
	var p []string
	seen := map[string]bool{}
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(strings.ToUpper(name), envPrefix) || strings.TrimSpace(value) == "" ||
			seen[name] || slices.Contains(known, name) {
			continue
		}
		seen[name] = true
		if base, ok := strings.CutSuffix(name, "_FILE"); ok && slices.Contains(known, base) {
			p = append(p, fmt.Sprintf("%s: only a secret may be read from a file, and %s is none; set %s itself", name, base, base))
			continue
		}
		if near := closest(name, known); near != "" {
			p = append(p, fmt.Sprintf("%s is not a setting; did you mean %s?", name, near))
			continue
		}
		p = append(p, fmt.Sprintf("%s is not a setting (the README's configuration table lists them all); remove it or correct its name", name))
	}
	return p
}

// closest is the name of known nearest to name, ignoring case, when it is
// near enough to be what was meant (an edit or two, a few more in a long
// name); "" when none is. Of names equally near, the first counts.
func closest(name string, known []string) string {
	limit := max(2, len([]rune(name))/4)
	best, bestDist := "", limit+1
	lower := strings.ToLower(name)
	for _, k := range known {
		if d := levenshtein.ComputeDistance(lower, strings.ToLower(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}
