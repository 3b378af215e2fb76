package config

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/config/settings"
	"github.com/askbridge/askbridge/internal/lazyre"
	"github.com/askbridge/askbridge/matrix"
)

// Errors of Resolve, for errors.Is. The messages of the errors Resolve
// returns are written for the agent that sent the request.
var (
	// ErrUnknownRoute: `to` is neither a target nor a configured route.
	ErrUnknownRoute = errors.New("unknown route")
	// ErrBadTarget: `to` looks like a target but does not parse.
	ErrBadTarget = errors.New("invalid target")
	// ErrPlatformOff: the target's platform has no token configured.
	ErrPlatformOff = errors.New("platform is off")
	// ErrNotAllowed: `to` is a direct target the policy refuses
	// (Config.Targets, or the platform's list in Config.Chats).
	ErrNotAllowed = errors.New("target not allowed")
)

// resolveError carries an exact message and the sentinel it is about.
type resolveError struct {
	kind error
	msg  string
}

func (e *resolveError) Error() string { return e.msg }
func (e *resolveError) Unwrap() error { return e.kind }

// isPlatform reports whether a target or an answerer may name s: web,
// mcp, or a platform with a section.
func isPlatform(s string) bool { return chatless(s) || platformNamed(s) != nil }

// chatless reports whether s is a target that takes no chat: the web page
// ("web"), and the agent's own client ("mcp").
func chatless(s string) bool { return s == "web" || s == askbridge.PlatformMCP }

// notForTheBridge refuses "mcp" where the bridge, not the agent, shows a
// question (a route's to, the default route, an escalation step): field
// names where it was found, if the caller does not.
func notForTheBridge(field string) error {
	msg := "\"mcp\" is the agent's own client, which only the agent shows a question in: " +
		"a request's to may name it, a route, the default route or an escalation step may not"
	if field != "" {
		msg = field + ": " + msg
	}
	return &resolveError{ErrBadTarget, msg}
}

func offError(target, platform string) error {
	ps := platformNamed(platform)
	return &resolveError{ErrPlatformOff, fmt.Sprintf("%s is off (no %s), so %q cannot be used", ps.title, ps.token(), target)}
}

var (
	// Telegram: chat ids are signed 64-bit integers (groups and channels
	// are negative, -100… for supergroups); a private chat's id is the
	// user's id.
	telegramChatPattern = regexp.MustCompile(`^-?[1-9][0-9]{0,18}$`)
	// Discord: ids are snowflakes, unsigned 64-bit integers in decimal.
	snowflakePattern = regexp.MustCompile(`^[1-9][0-9]{0,19}$`)
	// Slack: conversation ids start with C (public), G (private) or D
	// (DM); user ids with U or W. Upper-case letters and digits.
	slackChatPattern = regexp.MustCompile(`^[CDGUW][A-Z0-9]{1,31}$`)
	slackUserPattern = regexp.MustCompile(`^[UW][A-Z0-9]{1,31}$`)
	// The web page names a person by a free-form identifier.
	webUserPattern = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9_.@+-]{0,127}$`)
)

// ParseTarget checks a target, the `to` of a request or a route, and splits
// it into its platform and chat:
//
//	telegram:<chat id>       a chat, group or channel (a person's private chat id is their user id)
//	discord:<channel id>     a channel
//	discord:@<user id>       a DM with that user (chat is "@<user id>")
//	slack:<channel id>       C…, G… or D…
//	slack:<user id>          U… or W…: a DM with that user
//	matrix:<room id>         a room, !abc:example.org (not an alias)
//	email:<address>          one email to that address, carrying the
//	                         person's answer link (chat is the address,
//	                         lower case)
//	web                      the bridge's web page (chat is "")
//	mcp                      the agent's own client (chat is ""): the
//	                         MCP server shows the question there, the
//	                         bridge posts nothing
//
// A route name is not a target; see Resolve.
func ParseTarget(s string) (platform, chat string, err error) {
	if chatless(s) {
		return s, "", nil
	}
	if s == "" {
		return "", "", errors.New("empty target")
	}
	if len(s) > maxTargetChars {
		return "", "", fmt.Errorf("target is longer than %d bytes", maxTargetChars)
	}
	platform, chat, found := strings.Cut(s, ":")
	if !found {
		return "", "", fmt.Errorf("%q is not a target (want telegram:<chat id>, discord:<channel id>, discord:@<user id>, slack:<channel or user id>, matrix:<room id>, email:<address>, web or mcp)", s)
	}
	if !isPlatform(platform) {
		return "", "", fmt.Errorf("unknown platform %q", platform)
	}
	switch platform {
	case "web", askbridge.PlatformMCP:
		return "", "", fmt.Errorf("%q: the %s target takes no chat, write %q", s, platform, platform)
	case "telegram":
		if !telegramChatPattern.MatchString(chat) || !fitsInt64(chat) {
			return "", "", fmt.Errorf("%q: a Telegram chat id is an integer such as 123456789 or -1001234567890", s)
		}
	case "discord":
		if !snowflakePattern.MatchString(strings.TrimPrefix(chat, "@")) || !fitsUint64(strings.TrimPrefix(chat, "@")) {
			return "", "", fmt.Errorf("%q: a Discord target is discord:<channel id> or discord:@<user id>, with a numeric id", s)
		}
	case "slack":
		if !slackChatPattern.MatchString(chat) {
			return "", "", fmt.Errorf("%q: a Slack target is a channel id (C…, G…, D…) or a user id (U…, W…), not a name", s)
		}
	case matrix.Platform:
		if !matrix.ValidRoomID(chat) {
			return "", "", fmt.Errorf("%q: a Matrix target is matrix:<room id>, such as matrix:!abc123:example.org (a room's id, not its #alias: Element shows it under Settings → Advanced)", s)
		}
	case askbridge.PlatformEmail:
		addr, err := askbridge.ParseEmailAddress(chat)
		if err != nil {
			return "", "", fmt.Errorf("%q: %v", s, err)
		}
		chat = addr
	}
	return platform, chat, nil
}

// ParseAnswerer checks an answerer, "<platform>:<user id>", and splits it.
// User ids follow each platform's form: a positive integer on Telegram, a
// snowflake on Discord, U… or W… on Slack, and on the web page and in the
// agent's own client (mcp) 1 to 128 letters, digits and '_', '.', '@',
// '+', '-', and an email address on email (user is then in lower case).
func ParseAnswerer(s string) (platform, user string, err error) {
	platform, user, found := strings.Cut(s, ":")
	if !found || !isPlatform(platform) {
		return "", "", fmt.Errorf("%q must be <platform>:<user id> with platform telegram, discord, slack, matrix, email, web or mcp", s)
	}
	if platform == askbridge.PlatformEmail {
		addr, err := askbridge.ParseEmailAddress(user)
		if err != nil {
			return "", "", fmt.Errorf("%q: %v", s, err)
		}
		return platform, addr, nil
	}
	var ok bool
	switch platform {
	case "telegram":
		ok = telegramChatPattern.MatchString(user) && user[0] != '-' && fitsInt64(user)
	case "discord":
		ok = snowflakePattern.MatchString(user) && fitsUint64(user)
	case "slack":
		ok = slackUserPattern.MatchString(user)
	case matrix.Platform:
		ok = matrix.ValidUserID(user)
	case "web":
		ok = webUserPattern().MatchString(user)
	case askbridge.PlatformMCP:
		ok = askbridge.ValidMCPUser(user)
	}
	if !ok {
		return "", "", fmt.Errorf("%q: %q is not a %s user id", s, user, platformName(platform))
	}
	return platform, user, nil
}

func platformName(platform string) string {
	if ps := platformNamed(platform); ps != nil {
		return ps.title
	}
	if platform == askbridge.PlatformMCP {
		return "MCP client"
	}
	return platform
}

func fitsInt64(s string) bool {
	_, err := strconv.ParseInt(s, 10, 64)
	return err == nil
}

func fitsUint64(s string) bool {
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}

// Resolve says where a request's `to` goes:
//
//   - "" goes to the default route;
//   - a configured route name gives that route;
//   - a target ("web", or anything with a ':') gives Route{To: target},
//     which anyone who sees it may answer, when the policy lets a request
//     name it: Targets is not TargetsRoutesOnly, and the chat is in its
//     platform's list in Chats when that list is set;
//   - "mcp", the agent's own client, gives Route{To: "mcp"} whatever the
//     policy: the bridge posts nothing for it, so it reaches no chat of
//     the operator's.
//
// An unknown name gives an error `unknown route "x"` (ErrUnknownRoute); a
// target that does not parse, ErrBadTarget; a target on a platform that is
// off, ErrPlatformOff; a target the policy refuses, ErrNotAllowed, with a
// message naming the setting. The default route and the routes are the
// operator's: the policy does not apply to them, nor to the steps of
// their ladders (see ResolveLadder); none of them may be "mcp"
// (ErrBadTarget). The returned route's
// Answerers is a copy. Resolve does not modify c and may be called
// concurrently.
func (c *Config) Resolve(to string) (Route, error) {
	if to == "" {
		to = c.DefaultRoute
		if to == "" {
			to = DefaultTarget
		}
		return c.resolve(to, false)
	}
	return c.resolve(to, true)
}

// ResolveLadder is Resolve of a name in a route's escalation ladder
// (Route.Escalate): a route, or a target. The ladder is the operator's, as
// the route is, so the policy on direct targets (Targets, Chats) does not
// apply to it; a target must still parse and its platform be on. It does
// not modify c and may be called concurrently. "mcp" is refused
// (ErrBadTarget): the agent alone shows a question there.
func (c *Config) ResolveLadder(to string) (Route, error) {
	return c.resolve(to, false)
}

// resolve is Resolve of a `to` that is not empty; direct says a request
// named it, so a target there is held to the policy.
func (c *Config) resolve(to string, direct bool) (Route, error) {
	if r, ok := c.Routes[to]; ok && !chatless(to) && !strings.Contains(to, ":") {
		platform, _, err := ParseTarget(r.To)
		if err != nil {
			return Route{}, &resolveError{ErrBadTarget, fmt.Sprintf("route %q: %v", to, err)}
		}
		if platform == askbridge.PlatformMCP {
			return Route{}, notForTheBridge(fmt.Sprintf("route %q", to))
		}
		if !c.Enabled(platform) {
			return Route{}, offError(r.To, platform)
		}
		return Route{To: r.To, Answerers: slices.Clone(r.Answerers), Locale: r.Locale, Escalate: slices.Clone(r.Escalate)}, nil
	}
	if to == askbridge.PlatformMCP {
		if !direct {
			return Route{}, notForTheBridge("")
		}
		return Route{To: to}, nil
	}
	if to != "web" && !strings.Contains(to, ":") {
		if isPlatform(to) {
			return Route{}, &resolveError{ErrUnknownRoute, fmt.Sprintf("unknown route %q (a %s target names a chat: %s:<id>)", to, platformName(to), to)}
		}
		return Route{}, &resolveError{ErrUnknownRoute, fmt.Sprintf("unknown route %q", to)}
	}
	if direct && c.Targets != "" && c.Targets != TargetsAny {
		// Anything but "any" refuses: a Config built by hand with a
		// misspelt policy fails closed.
		return Route{}, c.routesOnlyError()
	}
	platform, chat, err := ParseTarget(to)
	if err != nil {
		return Route{}, &resolveError{ErrBadTarget, err.Error()}
	}
	if !c.Enabled(platform) {
		return Route{}, offError(to, platform)
	}
	if ps := platformNamed(platform); direct && ps != nil {
		if allowed := ps.allowed(c); allowed != nil && !allows(platform, allowed, chat) {
			return Route{}, &resolveError{ErrNotAllowed, fmt.Sprintf("%s %s %s is not in %s", platform, ps.chatNoun(chat), chat, c.keys.name(ps.chatsKey()))}
		}
	}
	return Route{To: to}, nil
}

// routesOnlyError refuses a direct target and says what a request may name
// instead.
func (c *Config) routesOnlyError() error {
	instead := "leave out to for the default route"
	if len(c.Routes) > 0 {
		instead = "use a route: " + strings.Join(slices.Sorted(maps.Keys(c.Routes)), ", ")
	}
	return &resolveError{ErrNotAllowed, fmt.Sprintf("direct targets are not allowed (%s=%s); %s", c.keys.name("targets"), c.Targets, instead)}
}

// chatsKey is the YAML key of the platform's list of chats.
func (ps platform) chatsKey() string { return ps.name + "." + ps.chats }

// allowed is the platform's list of chats a request may name, nil when
// the list is not set.
func (ps platform) allowed(c *Config) []string {
	return splitList(*settingAt(ps.chatsKey()).str(c))
}

// allows reports whether list, a platform's chats a request may name,
// names chat: an entry is a chat id, or on email an address or
// "@<domain>" for every address of the domain (compared in lower case).
func allows(platform string, list []string, chat string) bool {
	if platform != askbridge.PlatformEmail {
		return slices.Contains(list, chat)
	}
	_, domain, _ := strings.Cut(chat, "@")
	for _, a := range list {
		a = strings.ToLower(a)
		if a == chat || a == "@"+domain {
			return true
		}
	}
	return false
}

// chatNoun says what chat is: a DM with a user, or the platform's chat.
func (ps platform) chatNoun(chat string) string {
	switch {
	case ps.name == "discord" && strings.HasPrefix(chat, "@"),
		ps.name == "slack" && slackUserPattern.MatchString(chat):
		return "DM"
	}
	return ps.chat
}

// checkChats checks the platform's list of chats: each must be a chat a
// target can name.
func (ps platform) checkChats(c *Config, p *settings.Problems) {
	raw := *settingAt(ps.chatsKey()).str(c)
	list := ps.allowed(c)
	if raw != "" && list == nil {
		p.Addf("%s: lists no %s id", p.Name(ps.chats), ps.chat)
	}
	for _, chat := range list {
		if ps.name == askbridge.PlatformEmail && strings.HasPrefix(chat, "@") {
			if _, err := askbridge.ParseEmailAddress("x" + chat); err != nil {
				p.Addf("%s: %q is not an address or @<domain>", p.Name(ps.chats), chat)
			}
			continue
		}
		if _, _, err := ParseTarget(ps.name + ":" + chat); err != nil {
			p.Addf("%s: %v", p.Name(ps.chats), err)
		}
	}
}
