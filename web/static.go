package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"time"
)

// static holds the page: plain HTML, CSS and JavaScript, no build step and
// nothing loaded from elsewhere.
//
//go:embed static
var static embed.FS

// contentTypes of the page's files, fixed here rather than taken from the
// system's MIME tables, which vary between machines.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}

// asset is one embedded file, served with a strong ETag so a browser
// revalidates cheaply and picks up a new version after an upgrade.
type asset struct {
	name  string
	body  []byte
	ctype string
	etag  string
}

func loadAssets() (map[string]asset, error) {
	files, err := fs.ReadDir(static, "static")
	if err != nil {
		return nil, fmt.Errorf("web: embedded page: %w", err)
	}
	out := map[string]asset{}
	for _, f := range files {
		name := f.Name()
		ctype, ok := contentTypes[path.Ext(name)]
		if f.IsDir() || !ok {
			continue
		}
		body, err := static.ReadFile("static/" + name)
		if err != nil {
			return nil, fmt.Errorf("web: embedded page: %w", err)
		}
		sum := sha256.Sum256(body)
		out[name] = asset{name: name, body: body, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
	}
	return out, nil
}

func (a asset) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", a.ctype)
	w.Header().Set("ETag", a.etag)
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, a.name, time.Time{}, bytes.NewReader(a.body))
}
