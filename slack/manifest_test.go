package slack

import (
	"bytes"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/slack-go/slack"
	"go.yaml.in/yaml/v3"
)

// The Slack app manifests of deploy/slack, one per way events arrive, as
// docs/platforms.md shows them.
var manifests = []struct {
	file   string
	socket bool // settings.socket_mode_enabled
}{
	{"manifest-socket.yaml", true},
	{"manifest-http.yaml", false},
}

// webAPIScopes are the Web API methods the channel calls, by slack-go's
// method name, each with the Web API method and the bot scope it needs
// (none for auth.test). TestManifestScopes fails on a call of the channel
// missing here, so a new call gets its scope into the manifests.
var webAPIScopes = map[string]struct {
	method string
	scopes []string
}{
	// whoami: the bot's own user id
	"AuthTest": {"auth.test", nil},
	// Send, Notify, Remind
	"PostMessage": {"chat.postMessage", []string{"chat:write"}},
	// Finish, Update
	"UpdateMessage": {"chat.update", []string{"chat:write"}},
	// Delete: reminders, once the question ends
	"DeleteMessage": {"chat.delete", []string{"chat:write"}},
	// the private notice to whoever tapped
	"PostEphemeral": {"chat.postEphemeral", []string{"chat:write"}},
	// the DM of a target user id (U…, W…)
	"OpenConversation": {"conversations.open", []string{"im:write"}},
	// Find, in a public channel, a private channel or a DM
	"GetConversationHistory": {"conversations.history", []string{"channels:history", "groups:history", "im:history"}},
}

// messageEvents are the bot events handleEvent handles (a person's message,
// slackevents.MessageEvent) in the conversations the bridge asks in, each
// with the scope Slack requires for it.
var messageEvents = map[string]string{
	"message.channels": "channels:history", // a public channel
	"message.groups":   "groups:history",   // a private channel
	"message.im":       "im:history",       // the bot's DM with a person
}

// readManifest strictly decodes a manifest: YAML without duplicate keys,
// turned into JSON and decoded into slack-go's slack.Manifest with unknown
// fields refused, so a misspelt or misplaced key fails here instead of in
// Slack's app settings.
func readManifest(t *testing.T, name string) (slack.Manifest, []byte) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "deploy", "slack", name))
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	js, err := json.Marshal(doc)
	if err != nil {
		t.Fatalf("%s: not representable as JSON: %v", name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	var m slack.Manifest
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("%s: not a manifest slack-go knows: %v", name, err)
	}
	return m, data
}

func TestManifestFields(t *testing.T) {
	for _, mf := range manifests {
		t.Run(mf.file, func(t *testing.T) {
			m, _ := readManifest(t, mf.file)
			if m.Display.Name == "" || m.Features.BotUser.DisplayName == "" {
				t.Error("display_information.name and features.bot_user.display_name are required")
			}
			s := m.Settings
			if s.SocketModeEnabled != mf.socket {
				t.Errorf("socket_mode_enabled is %v, want %v", s.SocketModeEnabled, mf.socket)
			}
			if s.TokenRotationEnabled {
				t.Error("token_rotation_enabled: the bridge has no refresh token, its bot token must not expire")
			}
			// Buttons: block_actions come only with interactivity on.
			if s.Interactivity == nil || !s.Interactivity.IsEnabled {
				t.Fatal("interactivity is not enabled: button presses would never arrive")
			}
			if s.EventSubscriptions == nil {
				t.Fatal("no event_subscriptions: text answers would never arrive")
			}
			for ev := range messageEvents {
				if !slices.Contains(s.EventSubscriptions.BotEvents, ev) {
					t.Errorf("bot event %s is not subscribed", ev)
				}
			}
			for _, ev := range s.EventSubscriptions.BotEvents {
				if _, ok := messageEvents[ev]; !ok {
					t.Errorf("bot event %s is subscribed but the channel does not handle it", ev)
				}
			}
			if len(s.EventSubscriptions.UserEvents) > 0 {
				t.Errorf("user events %v: the bridge has no user token", s.EventSubscriptions.UserEvents)
			}
			// The bot's DM (a target user id) takes replies only with the
			// Messages tab on and writable.
			if h := m.Features.AppHome; !h.MessagesTabEnabled || h.MessagesTabReadOnlyEnabled {
				t.Errorf("app_home: messages_tab_enabled %v, messages_tab_read_only_enabled %v; people must be able to write to the bot's DM",
					h.MessagesTabEnabled, h.MessagesTabReadOnlyEnabled)
			}

			events, inter := s.EventSubscriptions.RequestUrl, s.Interactivity.RequestUrl
			if mf.socket {
				if events != "" || inter != "" {
					t.Errorf("socket mode with request URLs (%q, %q): Slack would not use them", events, inter)
				}
				return
			}
			for _, u := range []struct{ got, path string }{{events, EventsPath}, {inter, InteractivityPath}} {
				p, err := url.Parse(u.got)
				if err != nil || p.Scheme != "https" || p.Host == "" || p.Path != u.path {
					t.Errorf("request URL %q: want https://<host>%s, where HTTPHandler serves it", u.got, u.path)
				}
			}
		})
	}
}

// TestManifestScopes: every Web API call of the channel (found in its
// source), and every message event, has its scope in both manifests, and
// the manifests ask for nothing more.
func TestManifestScopes(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	call := regexp.MustCompile(`\.api\.([A-Z][A-Za-z]*)Context\(`)
	need := map[string]string{} // scope → what needs it
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range call.FindAllSubmatch(src, -1) {
			name := string(m[1])
			api, ok := webAPIScopes[name]
			if !ok {
				t.Errorf("%s calls %sContext, which is not in webAPIScopes: add its Web API method and scope (and the scope to the manifests)", f, name)
				continue
			}
			for _, s := range api.scopes {
				need[s] = api.method
			}
		}
	}
	if len(need) == 0 {
		t.Fatal("no Web API call found in the channel's source")
	}
	for ev, s := range messageEvents {
		need[s] = ev
	}
	var want []string
	for s := range need {
		want = append(want, s)
	}
	sort.Strings(want)

	for _, mf := range manifests {
		t.Run(mf.file, func(t *testing.T) {
			m, _ := readManifest(t, mf.file)
			got := m.OAuthConfig.Scopes.Bot
			for _, s := range want {
				if !slices.Contains(got, s) {
					t.Errorf("bot scope %s is missing (%s needs it)", s, need[s])
				}
			}
			for _, s := range got {
				if _, ok := need[s]; !ok {
					t.Errorf("bot scope %s is asked for but nothing the channel does needs it", s)
				}
			}
			sc := m.OAuthConfig.Scopes
			if len(sc.User) > 0 || len(sc.UserOptional) > 0 || len(sc.BotOptional) > 0 {
				t.Errorf("user or optional scopes %v %v %v: the bridge uses the bot token only", sc.User, sc.UserOptional, sc.BotOptional)
			}
		})
	}
}

// TestManifestsInDocs: docs/platforms.md shows each manifest as it is in
// deploy/slack, so the copy a reader pastes is the one tested here.
func TestManifestsInDocs(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "platforms.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range manifests {
		_, data := readManifest(t, mf.file)
		if !bytes.Contains(doc, []byte("```yaml\n"+string(data)+"```\n")) {
			t.Errorf("docs/platforms.md does not show deploy/slack/%s as it is (in a ```yaml block)", mf.file)
		}
	}
}
