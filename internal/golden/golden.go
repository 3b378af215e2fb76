// Package golden compares test output with files under testdata/, the one
// golden helper of every package's tests. Run a package's tests with
// -update to rewrite its files from what the code produces now, then read
// the diff: a reviewer sees exactly what a person or an agent would see.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// Updating reports whether the tests run with -update.
func Updating() bool { return *update }

// Check compares got with testdata/<name>, or writes it there under
// -update (creating directories as needed). A missing file fails the test
// with the command that creates it.
func Check(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", filepath.FromSlash(name))
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run go test -update to create it): %v", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
