package golden

import (
	"os"
	"path/filepath"
	"testing"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }
func (r *recorder) Helper()               {}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "testdata", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "testdata", "sub", "a.txt"), []byte("same"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)

	for _, tc := range []struct {
		name, file, got string
		fail            bool
	}{
		{"equal", "sub/a.txt", "same", false},
		{"different", "sub/a.txt", "other", true},
		{"missing", "sub/none.txt", "x", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			Check(r, tc.file, []byte(tc.got))
			if r.failed != tc.fail {
				t.Fatalf("failed = %v, want %v", r.failed, tc.fail)
			}
		})
	}
}

func TestCheckUpdateWrites(t *testing.T) {
	t.Chdir(t.TempDir())
	*update = true
	defer func() { *update = false }()
	Check(t, "new/b.txt", []byte("written"))
	b, err := os.ReadFile(filepath.Join("testdata", "new", "b.txt"))
	if err != nil || string(b) != "written" {
		t.Fatalf("read back %q, %v", b, err)
	}
}
