package dendritetest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/template"
	"time"
)

// ServerName is the server name of every test homeserver: user IDs are
// @localpart:localhost and room IDs !opaque:localhost.
const ServerName = "localhost"

// Options change how a homeserver is configured. The zero value is what
// most tests want: rate limiting off.
type Options struct {
	// RateLimit, when set, turns Dendrite's own rate limiting on. Dendrite
	// limits only some endpoints (joins, invites, leaves, typing, profile,
	// login, registration), never sends: see the package comment, and
	// Proxy for a 429 on a send.
	RateLimit *RateLimit
}

// RateLimit is Dendrite's client_api.rate_limiting: each device (or, for
// requests without an access token, each remote address) holds at most
// Threshold requests in the last Cooloff; the next one is answered 429
// M_LIMIT_EXCEEDED with retry_after_ms = Cooloff.
type RateLimit struct {
	Threshold int
	Cooloff   time.Duration
}

// configTemplate is a Dendrite v0.13.8 configuration (setup/config): every
// component on its own SQLite file in dir, NATS JetStream in memory,
// federation, presence, metrics, stats reporting and full-text search off,
// and registration only with the shared secret. Dendrite fills in every
// key left out with its defaults (config.Load runs Defaults first).
var configTemplate = template.Must(template.New("dendrite.yaml").Parse(`version: 2
global:
  server_name: {{.ServerName}}
  private_key: {{.Dir}}/matrix_key.pem
  disable_federation: true
  trusted_third_party_id_servers: []
  presence: {enable_inbound: false, enable_outbound: false}
  report_stats: {enabled: false}
  metrics: {enabled: false}
  cache: {max_size_estimated: 64mb, max_age: 1h}
  jetstream: {in_memory: true, storage_path: {{.Dir}}, topic_prefix: Dendrite}
client_api:
  registration_disabled: true
  guests_disabled: true
  registration_shared_secret: {{.Secret}}
  rate_limiting: {enabled: {{.RateLimited}}, threshold: {{.Threshold}}, cooloff_ms: {{.CooloffMS}}}
federation_api:
  key_perspectives: []
  database: {connection_string: "file:{{.Dir}}/federationapi.db"}
key_server:
  database: {connection_string: "file:{{.Dir}}/keyserver.db"}
media_api:
  base_path: {{.Dir}}/media
  database: {connection_string: "file:{{.Dir}}/mediaapi.db"}
mscs:
  mscs: []
  database: {connection_string: "file:{{.Dir}}/mscs.db"}
relay_api:
  database: {connection_string: "file:{{.Dir}}/relayapi.db"}
room_server:
  database: {connection_string: "file:{{.Dir}}/roomserver.db"}
sync_api:
  search: {enabled: false}
  database: {connection_string: "file:{{.Dir}}/syncapi.db"}
user_api:
  bcrypt_cost: 4
  account_database: {connection_string: "file:{{.Dir}}/userapi.db"}
logging:
  - {type: std, level: warn}
`))

// configData fills configTemplate.
type configData struct {
	ServerName, Dir, Secret string
	RateLimited             bool
	Threshold, CooloffMS    int64
}

// writeConfig writes the signing key and dendrite.yaml into dir and
// returns the configuration's path and the registration shared secret.
func writeConfig(dir string, opts Options) (path, secret string, err error) {
	if strings.ContainsAny(dir, " :\"'#\n") {
		return "", "", fmt.Errorf("dendritetest: the directory %q cannot be written into a YAML value; set TMPDIR to a plain path", dir)
	}
	if err := writeKey(filepath.Join(dir, "matrix_key.pem")); err != nil {
		return "", "", err
	}
	if err := writeDatabases(dir); err != nil {
		return "", "", err
	}
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	data := configData{ServerName: ServerName, Dir: dir, Secret: hex.EncodeToString(raw[:]), Threshold: 5, CooloffMS: 500}
	if rl := opts.RateLimit; rl != nil {
		if rl.Threshold < 1 || rl.Cooloff < time.Millisecond {
			return "", "", fmt.Errorf("dendritetest: RateLimit needs Threshold >= 1 and Cooloff >= 1ms, got %+v", *rl)
		}
		data.RateLimited, data.Threshold, data.CooloffMS = true, int64(rl.Threshold), rl.Cooloff.Milliseconds()
	}
	var b strings.Builder
	if err := configTemplate.Execute(&b, data); err != nil {
		return "", "", fmt.Errorf("dendritetest: render the configuration: %w", err)
	}
	path = filepath.Join(dir, "dendrite.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return "", "", fmt.Errorf("dendritetest: %w", err)
	}
	return path, data.Secret, nil
}

// writeKey writes a new ed25519 signing key in the PEM form Dendrite's
// generate-keys writes (test/keys.go SaveMatrixKey: the 32-byte seed in a
// "MATRIX PRIVATE KEY" block with a Key-ID header), so the generate-keys
// command need not be built.
func writeKey(path string) error {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return fmt.Errorf("dendritetest: signing key: %w", err)
	}
	block := &pem.Block{
		Type:    "MATRIX PRIVATE KEY",
		Headers: map[string]string{"Key-ID": "ed25519:test"},
		Bytes:   key.Seed(),
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		return fmt.Errorf("dendritetest: write the signing key: %w", err)
	}
	return nil
}
