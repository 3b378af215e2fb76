package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// The environment variables. Their names are a public interface.
const (
	envConfig                = "ASKUSER_CONFIG"
	envRedisURL              = "ASKUSER_REDIS_URL"
	envEmbeddedAddr          = "ASKUSER_EMBEDDED_REDIS_ADDR"
	envPrefix                = "ASKUSER_REDIS_PREFIX"
	envHTTPAddr              = "ASKUSER_HTTP_ADDR"
	envHTTPToken             = "ASKUSER_HTTP_TOKEN"
	envReplica               = "ASKUSER_REPLICA"
	envDefaultTo             = "ASKUSER_DEFAULT_TO"
	envRetention             = "ASKUSER_RESULT_RETENTION"
	envClaimIdle             = "ASKUSER_CLAIM_IDLE"
	envLogLevel              = "ASKUSER_LOG_LEVEL"
	envTelegramToken         = "ASKUSER_TELEGRAM_TOKEN"
	envTelegramAPIURL        = "ASKUSER_TELEGRAM_API_URL"
	envTelegramWebhookURL    = "ASKUSER_TELEGRAM_WEBHOOK_URL"
	envTelegramWebhookSecret = "ASKUSER_TELEGRAM_WEBHOOK_SECRET"
	envDiscordToken          = "ASKUSER_DISCORD_TOKEN"
	envDiscordAPIURL         = "ASKUSER_DISCORD_API_URL"
	envSlackBotToken         = "ASKUSER_SLACK_BOT_TOKEN"
	envSlackAppToken         = "ASKUSER_SLACK_APP_TOKEN"
	envSlackSigningSecret    = "ASKUSER_SLACK_SIGNING_SECRET"
	envSlackAPIURL           = "ASKUSER_SLACK_API_URL"
)

// fileConfig is the YAML file. Every key is optional; an empty value means
// "not set".
type fileConfig struct {
	Redis struct {
		URL          string `yaml:"url"`
		EmbeddedAddr string `yaml:"embeddedAddr"`
		Prefix       string `yaml:"prefix"`
	} `yaml:"redis"`
	HTTP struct {
		Addr  string `yaml:"addr"`
		Token string `yaml:"token"`
	} `yaml:"http"`
	DefaultRoute    string               `yaml:"defaultRoute"`
	ResultRetention string               `yaml:"resultRetention"`
	ClaimIdle       string               `yaml:"claimIdle"`
	Routes          map[string]fileRoute `yaml:"routes"`
	Telegram        struct {
		Token         string `yaml:"token"`
		APIURL        string `yaml:"apiURL"`
		WebhookURL    string `yaml:"webhookURL"`
		WebhookSecret string `yaml:"webhookSecret"`
	} `yaml:"telegram"`
	Discord struct {
		Token  string `yaml:"token"`
		APIURL string `yaml:"apiURL"`
	} `yaml:"discord"`
	Slack struct {
		BotToken      string `yaml:"botToken"`
		AppToken      string `yaml:"appToken"`
		SigningSecret string `yaml:"signingSecret"`
		APIURL        string `yaml:"apiURL"`
	} `yaml:"slack"`
	Log struct {
		Level string `yaml:"level"`
	} `yaml:"log"`
}

type fileRoute struct {
	To        string   `yaml:"to"`
	Answerers []string `yaml:"answerers"`
}

// setting is one scalar setting: its variable, its YAML path (none for the
// replica name, which differs per process), whether it is a secret (and so
// has a _FILE variant and is never printed), and where it goes.
type setting struct {
	env    string
	yaml   string
	secret bool
	file   func(*fileConfig) string
}

var settings = []setting{
	{envRedisURL, "redis.url", true, func(f *fileConfig) string { return f.Redis.URL }},
	{envEmbeddedAddr, "redis.embeddedAddr", false, func(f *fileConfig) string { return f.Redis.EmbeddedAddr }},
	{envPrefix, "redis.prefix", false, func(f *fileConfig) string { return f.Redis.Prefix }},
	{envHTTPAddr, "http.addr", false, func(f *fileConfig) string { return f.HTTP.Addr }},
	{envHTTPToken, "http.token", true, func(f *fileConfig) string { return f.HTTP.Token }},
	{envReplica, "", false, nil},
	{envDefaultTo, "defaultRoute", false, func(f *fileConfig) string { return f.DefaultRoute }},
	{envRetention, "resultRetention", false, func(f *fileConfig) string { return f.ResultRetention }},
	{envClaimIdle, "claimIdle", false, func(f *fileConfig) string { return f.ClaimIdle }},
	{envLogLevel, "log.level", false, func(f *fileConfig) string { return f.Log.Level }},
	{envTelegramToken, "telegram.token", true, func(f *fileConfig) string { return f.Telegram.Token }},
	{envTelegramAPIURL, "telegram.apiURL", false, func(f *fileConfig) string { return f.Telegram.APIURL }},
	{envTelegramWebhookURL, "telegram.webhookURL", false, func(f *fileConfig) string { return f.Telegram.WebhookURL }},
	{envTelegramWebhookSecret, "telegram.webhookSecret", true, func(f *fileConfig) string { return f.Telegram.WebhookSecret }},
	{envDiscordToken, "discord.token", true, func(f *fileConfig) string { return f.Discord.Token }},
	{envDiscordAPIURL, "discord.apiURL", false, func(f *fileConfig) string { return f.Discord.APIURL }},
	{envSlackBotToken, "slack.botToken", true, func(f *fileConfig) string { return f.Slack.BotToken }},
	{envSlackAppToken, "slack.appToken", true, func(f *fileConfig) string { return f.Slack.AppToken }},
	{envSlackSigningSecret, "slack.signingSecret", true, func(f *fileConfig) string { return f.Slack.SigningSecret }},
	{envSlackAPIURL, "slack.apiURL", false, func(f *fileConfig) string { return f.Slack.APIURL }},
}

// Load builds the configuration: the defaults, then the YAML file named by
// ASKUSER_CONFIG (when set), then the environment variables, which override
// the file. A secret's variable X may instead be given as X_FILE, the path of
// a file holding it (surrounding whitespace trimmed); setting both is an
// error. An empty variable counts as unset.
//
// env looks a variable up (os.Getenv) and readFile reads a file
// (os.ReadFile); tests pass their own. Load reports every problem at once in
// a *ValidationError, each naming its key, and validates everything, so a
// Config it returns is ready to use.
func Load(env func(string) string, readFile func(string) ([]byte, error)) (*Config, error) {
	var p problems
	var file fileConfig
	if path := strings.TrimSpace(env(envConfig)); path != "" {
		data, err := readFile(path)
		if err != nil {
			return nil, &ValidationError{Problems: []string{fmt.Sprintf("%s: %v", envConfig, err)}}
		}
		if probs := decodeFile(path, data, &file); len(probs) > 0 {
			return nil, &ValidationError{Problems: probs}
		}
	}

	values := map[string]string{}
	keys := keyNames{}
	for _, s := range settings {
		if s.file == nil {
			continue
		}
		if v := strings.TrimSpace(s.file(&file)); v != "" {
			values[s.env] = v
			keys[s.env] = s.yaml
		}
	}
	for _, s := range settings {
		v, key := strings.TrimSpace(env(s.env)), s.env
		if s.secret {
			var err error
			if v, key, err = secret(env, readFile, s.env); err != nil {
				p = append(p, err.Error())
				continue
			}
		}
		if v != "" {
			values[s.env] = v
			keys[s.env] = key
		}
	}

	c := Default()
	c.keys, c.Redis.keys, c.HTTP.keys = keys, keys, keys
	set := func(env string, dst *string) {
		if v, ok := values[env]; ok {
			*dst = v
		}
	}
	set(envRedisURL, &c.Redis.URL)
	set(envEmbeddedAddr, &c.Redis.EmbeddedAddr)
	set(envPrefix, &c.Redis.Prefix)
	set(envHTTPAddr, &c.HTTP.Addr)
	set(envHTTPToken, &c.HTTP.Token)
	set(envReplica, &c.Replica)
	set(envDefaultTo, &c.DefaultRoute)
	set(envLogLevel, &c.LogLevel)
	c.LogLevel = strings.ToLower(c.LogLevel)
	c.Retention = duration(&p, keys, values, envRetention, c.Retention)
	c.ClaimIdle = duration(&p, keys, values, envClaimIdle, c.ClaimIdle)
	for name, r := range file.Routes {
		c.Routes[name] = Route{To: strings.TrimSpace(r.To), Answerers: trimAll(r.Answerers)}
	}

	// A platform is on when its token is set; its other settings without
	// the token are a mistake, not something to ignore.
	platformOff := func(title, tokenEnv string, others ...string) bool {
		if _, ok := values[tokenEnv]; ok {
			return false
		}
		for _, env := range others {
			if _, ok := values[env]; ok {
				p.addf("%s is set but %s is off: set %s (or %s_FILE) to turn it on, or remove this setting", keys.of(env), title, tokenEnv, tokenEnv)
			}
		}
		return true
	}
	if !platformOff("Telegram", envTelegramToken, envTelegramAPIURL, envTelegramWebhookURL, envTelegramWebhookSecret) {
		t := &Telegram{APIURL: DefaultTelegramAPIURL, keys: keys}
		set(envTelegramToken, &t.Token)
		set(envTelegramAPIURL, &t.APIURL)
		set(envTelegramWebhookURL, &t.WebhookURL)
		set(envTelegramWebhookSecret, &t.WebhookSecret)
		t.APIURL = strings.TrimRight(t.APIURL, "/")
		c.Telegram = t
	}
	if !platformOff("Discord", envDiscordToken, envDiscordAPIURL) {
		d := &Discord{APIURL: DefaultDiscordAPIURL, keys: keys}
		set(envDiscordToken, &d.Token)
		set(envDiscordAPIURL, &d.APIURL)
		// discordgo wants "Bot <token>"; the adapter adds the prefix.
		d.Token = strings.TrimSpace(strings.TrimPrefix(d.Token, "Bot "))
		c.Discord = d
	}
	if !platformOff("Slack", envSlackBotToken, envSlackAppToken, envSlackSigningSecret, envSlackAPIURL) {
		s := &Slack{APIURL: DefaultSlackAPIURL, keys: keys}
		set(envSlackBotToken, &s.BotToken)
		set(envSlackAppToken, &s.AppToken)
		set(envSlackSigningSecret, &s.SigningSecret)
		set(envSlackAPIURL, &s.APIURL)
		if !strings.HasSuffix(s.APIURL, "/") {
			s.APIURL += "/"
		}
		c.Slack = s
	}

	var verr *ValidationError
	if err := c.Validate(); errors.As(err, &verr) {
		p = append(p, verr.Problems...)
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	return c, nil
}

// Secret reads one secret from the environment the way Load does: the
// variable name, or else the file named by name_FILE (its content with
// surrounding whitespace trimmed). Both set, an unreadable or an empty file
// are errors naming the variables; "" with a nil error means neither is set.
// For commands that need one setting without loading the whole
// configuration.
func Secret(env func(string) string, readFile func(string) ([]byte, error), name string) (string, error) {
	v, _, err := secret(env, readFile, name)
	return v, err
}

// secret also returns the variable the value came from.
func secret(env func(string) string, readFile func(string) ([]byte, error), name string) (value, key string, err error) {
	v := strings.TrimSpace(env(name))
	fileKey := name + "_FILE"
	path := strings.TrimSpace(env(fileKey))
	if path == "" {
		return v, name, nil
	}
	if v != "" {
		return "", "", fmt.Errorf("%s and %s are both set; set only one", name, fileKey)
	}
	data, err := readFile(path)
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", fileKey, err)
	}
	if v = strings.TrimSpace(string(data)); v == "" {
		return "", "", fmt.Errorf("%s: %s is empty", fileKey, path)
	}
	return v, fileKey, nil
}

func duration(p *problems, keys keyNames, values map[string]string, env string, def time.Duration) time.Duration {
	v, ok := values[env]
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		p.addf("%s: %q is not a duration such as \"24h\", \"90m\" or \"30s\"", keys.of(env), v)
		return def
	}
	return d
}

func trimAll(list []string) []string {
	if list == nil {
		return nil
	}
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = strings.TrimSpace(s)
	}
	return out
}

// decodeFile decodes the YAML file strictly: an unknown key anywhere is an
// error naming its full path and line, and so is a second document.
func decodeFile(path string, data []byte, out *fileConfig) []string {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // empty, or only comments
		}
		return []string{atLine(path, strings.TrimPrefix(err.Error(), "yaml: "))}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return []string{fmt.Sprintf("%s: holds more than one YAML document", path)}
	}
	var probs []string
	checkShape(&probs, path, "", &root, reflect.TypeFor[fileConfig]())
	if len(probs) > 0 {
		return probs
	}
	// The walk above found no unknown key and no value of the wrong kind;
	// KnownFields still guards the decoding.
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	if err := strict.Decode(out); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			for _, e := range te.Errors {
				probs = append(probs, atLine(path, quotedValue.ReplaceAllString(e, "")))
			}
			return probs
		}
		return []string{atLine(path, strings.TrimPrefix(err.Error(), "yaml: "))}
	}
	return nil
}

// quotedValue is the value yaml quotes in a type error, which could be part
// of a secret.
var quotedValue = regexp.MustCompile(" `[^`]*`")

// atLine turns yaml's "line 3: msg" into "path:3: msg".
func atLine(path, msg string) string {
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, after, ok := strings.Cut(rest, ": "); ok {
			if _, err := strconv.Atoi(n); err == nil {
				return fmt.Sprintf("%s:%s: %s", path, n, after)
			}
		}
	}
	return fmt.Sprintf("%s: %s", path, msg)
}

// checkShape walks node alongside the Go type it decodes into and reports
// every mapping key that type has no field for, and every value of the
// wrong kind (a list where a string belongs), naming its full path and line.
// Values are never quoted: one may be a secret.
func checkShape(probs *[]string, path, name string, node *yaml.Node, t reflect.Type) {
	switch node.Kind {
	case yaml.DocumentNode:
		for _, n := range node.Content {
			checkShape(probs, path, name, n, t)
		}
		return
	case yaml.AliasNode:
		if node.Alias != nil {
			checkShape(probs, path, name, node.Alias, t)
		}
		return
	}
	if node.Kind == yaml.ScalarNode && node.Tag == "!!null" {
		return // an empty value: not set
	}
	want := yaml.ScalarNode
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		want = yaml.MappingNode
	case reflect.Slice:
		want = yaml.SequenceNode
	}
	if node.Kind != want {
		what := name
		if what == "" {
			what = "the file"
		}
		*probs = append(*probs, fmt.Sprintf("%s:%d: %s must be %s, not %s", path, node.Line, what, kindName(want), kindName(node.Kind)))
		return
	}
	switch node.Kind {
	case yaml.SequenceNode:
		for i, item := range node.Content {
			checkShape(probs, path, fmt.Sprintf("%s[%d]", name, i), item, t.Elem())
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(node.Content); i += 2 {
			k, v := node.Content[i], node.Content[i+1]
			if k.Tag == "!!merge" { // "<<: *anchor" merges the anchor's keys here
				if v.Kind == yaml.SequenceNode {
					for _, m := range v.Content {
						checkShape(probs, path, name, m, t)
					}
				} else {
					checkShape(probs, path, name, v, t)
				}
				continue
			}
			key := k.Value
			if name != "" {
				key = name + "." + k.Value
			}
			if t.Kind() == reflect.Map {
				checkShape(probs, path, key, v, t.Elem())
				continue
			}
			field, ok := fieldByTag(t, k.Value)
			if !ok {
				*probs = append(*probs, fmt.Sprintf("%s:%d: unknown key %q", path, k.Line, key))
				continue
			}
			checkShape(probs, path, key, v, field.Type)
		}
	}
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return "a single value"
}

func fieldByTag(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); tag == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}
