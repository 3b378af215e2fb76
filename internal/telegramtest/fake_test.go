package telegramtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"github.com/jonboulle/clockwork"

	"github.com/askbridge/askbridge/internal/telegramtest"
	"github.com/askbridge/askbridge/internal/testwait"
)

const chat int64 = -100777

func setup(t *testing.T, o telegramtest.Options) (*telegramtest.Server, *bot.Bot) {
	t.Helper()
	s := telegramtest.New(o)
	t.Cleanup(s.Close)
	s.AddChat(chat, "supergroup", "Test")
	b, err := bot.New(s.Token, bot.WithServerURL(s.URL), bot.WithSkipGetMe())
	if err != nil {
		t.Fatal(err)
	}
	return s, b
}

// raw posts a form to a method and returns the status and decoded body.
func raw(t *testing.T, s *telegramtest.Server, method string, form url.Values) (int, map[string]any) {
	t.Helper()
	resp, err := http.PostForm(s.URL+"/bot"+s.Token+"/"+method, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	data, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(data, &body); err != nil {
		t.Fatalf("%s: %s", err, data)
	}
	return resp.StatusCode, body
}

func TestSendRefusalsLikeTelegram(t *testing.T) {
	s, b := setup(t, telegramtest.Options{})
	long := strings.Repeat("x", telegramtest.MessageChars+1)
	tests := []struct {
		name   string
		params *bot.SendMessageParams
		want   string
	}{
		{"unknown chat", &bot.SendMessageParams{ChatID: 42, Text: "hi"}, telegramtest.ErrChatNotFound},
		{"too long", &bot.SendMessageParams{ChatID: chat, Text: long}, telegramtest.ErrTooLong},
		{"empty", &bot.SendMessageParams{ChatID: chat, Text: "<b> </b>", ParseMode: models.ParseModeHTML}, telegramtest.ErrEmpty},
		{"unknown tag", &bot.SendMessageParams{ChatID: chat, Text: "a <foo>b</foo>", ParseMode: models.ParseModeHTML}, `Bad Request: can't parse entities: Unsupported start tag "foo" at byte offset 2`},
		{"unclosed tag", &bot.SendMessageParams{ChatID: chat, Text: "<b>bold", ParseMode: models.ParseModeHTML}, `Bad Request: can't parse entities: Can't find end tag corresponding to start tag "b"`},
		{"stray end tag", &bot.SendMessageParams{ChatID: chat, Text: "x</i>", ParseMode: models.ParseModeHTML}, "Bad Request: can't parse entities: Unexpected end tag at byte offset 1"},
		{"callback data too long", &bot.SendMessageParams{ChatID: chat, Text: "q", ReplyMarkup: &models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{{{Text: "A", CallbackData: strings.Repeat("d", 65)}}}}}, telegramtest.ErrButtonData},
		{"reply to nothing", &bot.SendMessageParams{ChatID: chat, Text: "q", ReplyParameters: &models.ReplyParameters{MessageID: 999}}, telegramtest.ErrReplyNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := b.SendMessage(context.Background(), tt.params)
			if !errors.Is(err, bot.ErrorBadRequest) || !strings.HasSuffix(err.Error(), ", "+tt.want) {
				t.Errorf("error %v, want 400 %q", err, tt.want)
			}
		})
	}
	// The limit counts characters after entities parsing.
	exact := strings.Repeat("&amp;", telegramtest.MessageChars)
	if _, err := b.SendMessage(context.Background(), &bot.SendMessageParams{ChatID: chat, Text: exact, ParseMode: models.ParseModeHTML}); err != nil {
		t.Errorf("4096 characters after parsing: %v", err)
	}
	// The library's empty copy_text on every button is taken.
	m, err := b.SendMessage(context.Background(), &bot.SendMessageParams{ChatID: chat, Text: "q",
		ReplyMarkup: &models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{{{Text: "A", CallbackData: strings.Repeat("d", 64)}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Messages(chat); len(got) != 2 || got[1].Keyboard[0][0].Data != strings.Repeat("d", 64) {
		t.Errorf("messages %+v", got)
	}
	s.Block(chat, telegramtest.ErrBlocked)
	if _, err := b.SendMessage(context.Background(), &bot.SendMessageParams{ChatID: chat, Text: "q"}); !errors.Is(err, bot.ErrorForbidden) || !strings.Contains(err.Error(), telegramtest.ErrBlocked) {
		t.Errorf("blocked: %v", err)
	}
	s.Block(chat, "")
	// An edit that changes nothing, and one of a deleted message.
	edit := &bot.EditMessageTextParams{ChatID: chat, MessageID: m.ID, Text: "q",
		ReplyMarkup: &models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{{{Text: "A", CallbackData: strings.Repeat("d", 64)}}}}}
	if _, err := b.EditMessageText(context.Background(), edit); err == nil || !strings.HasSuffix(err.Error(), telegramtest.ErrNotModified) {
		t.Errorf("same edit: %v", err)
	}
	edit.ReplyMarkup = nil
	if _, err := b.EditMessageText(context.Background(), edit); err != nil {
		t.Errorf("an edit without reply_markup removes the keyboard: %v", err)
	}
	// Both edit requests count as calls; only the second changed it.
	if got := s.Messages(chat)[1]; len(got.Keyboard) != 0 || got.Edits != 1 || got.EditCalls != 2 {
		t.Errorf("after the edit: %+v", got)
	}
	s.DeleteMessage(chat, m.ID)
	if _, err := b.EditMessageText(context.Background(), edit); err == nil || !strings.HasSuffix(err.Error(), telegramtest.ErrEditNotFound) {
		t.Errorf("deleted: %v", err)
	}
}

func TestRateLimitBody(t *testing.T) {
	clock := clockwork.NewFakeClock()
	s, b := setup(t, telegramtest.Options{ChatRate: 1, ChatBurst: 1, Clock: clock})
	if _, err := b.SendMessage(context.Background(), &bot.SendMessageParams{ChatID: chat, Text: "one"}); err != nil {
		t.Fatal(err)
	}
	_, err := b.SendMessage(context.Background(), &bot.SendMessageParams{ChatID: chat, Text: "two"})
	var tooMany *bot.TooManyRequestsError
	if !errors.As(err, &tooMany) || tooMany.RetryAfter != 1 {
		t.Fatalf("error %v, want a 429 with retry_after 1", err)
	}
	clock.Advance(850 * time.Millisecond) // past the 750 ms grace for requests already on their way
	code, body := raw(t, s, "sendMessage", url.Values{"chat_id": {"-100777"}, "text": {"three"}})
	want := `{"description":"Too Many Requests: retry after 1","error_code":429,"ok":false,"parameters":{"retry_after":1}}`
	if got, _ := json.Marshal(body); code != http.StatusTooManyRequests || string(got) != want {
		t.Errorf("%d %s, want 429 %s", code, got, want)
	}
	if st := s.Stats(); st.RateLimited != 2 || st.Early != 1 {
		t.Errorf("stats %+v: the third send came inside the retry_after", st)
	}
}

func TestOnePollerAtATime(t *testing.T) {
	s, _ := setup(t, telegramtest.Options{})
	first := make(chan int, 1)
	go func() {
		code, _ := raw(t, s, "getUpdates", url.Values{"timeout": {"5"}})
		first <- code
	}()
	waitPolls(t, s, 1)
	// The second poll terminates the first, which gets 409.
	go func() { raw(t, s, "getUpdates", url.Values{"timeout": {"1"}}) }()
	select {
	case code := <-first:
		if code != http.StatusConflict {
			t.Errorf("first poller got %d, want 409", code)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the first poll was not terminated")
	}
	if s.Stats().Conflicts != 1 {
		t.Errorf("stats %+v", s.Stats())
	}
	// Long polling returns as soon as an update arrives, and an offset
	// confirms what came before it.
	got := make(chan map[string]any, 1)
	go func() { _, body := raw(t, s, "getUpdates", url.Values{"timeout": {"5"}}); got <- body }()
	// The long poll waits before the update comes: it is the third,
	// and the second (timeout 1) may still be waiting but is superseded.
	waitPolls(t, s, 3)
	if _, err := s.SendText(chat, telegramtest.User{ID: 7, FirstName: "P"}, "hello"); err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	select {
	case body = <-got:
	case <-time.After(2 * time.Second):
		t.Fatal("getUpdates did not return on a new update")
	}
	result := body["result"].([]any)
	if len(result) != 1 {
		t.Fatalf("result %v", result)
	}
	id := int(result[0].(map[string]any)["update_id"].(float64))
	if s.Pending() != 1 {
		t.Error("an update was dropped before it was confirmed")
	}
	raw(t, s, "getUpdates", url.Values{"offset": {strings.TrimSpace(jsonNumber(id + 1))}})
	if s.Pending() != 0 {
		t.Error("the offset did not confirm the update")
	}
	// A webhook blocks getUpdates.
	if code, _ := raw(t, s, "setWebhook", url.Values{"url": {"http://insecure.example"}}); code != http.StatusBadRequest {
		t.Errorf("http webhook: %d", code)
	}
	raw(t, s, "setWebhook", url.Values{"url": {"https://bridge.example/hook"}, "secret_token": {"abc"}})
	if code, body := raw(t, s, "getUpdates", nil); code != http.StatusConflict || body["description"] != telegramtest.ErrConflictHook {
		t.Errorf("getUpdates with a webhook: %d %v", code, body)
	}
}

// waitPolls waits until the fake took n getUpdates calls: the n-th waits
// for an update from then on, unless one is pending.
func waitPolls(t *testing.T, s *telegramtest.Server, n int) {
	t.Helper()
	testwait.For(t, 5*time.Second, fmt.Sprintf("getUpdates call %d", n), func() bool { return s.Stats().Polls >= n })
}

func jsonNumber(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestBodiesAndToken(t *testing.T) {
	s, _ := setup(t, telegramtest.Options{})
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/bot"+s.Token+"/sendMessage", strings.NewReader(`{"chat_id":-100777,"text":"<b>json</b>","parse_mode":"HTML","reply_markup":{"inline_keyboard":[[{"text":"A","callback_data":"a"}]]}}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("json body: %d", resp.StatusCode)
	}
	if m := s.Messages(chat)[0]; m.Text != "json" || m.Keyboard[0][0].Data != "a" {
		t.Errorf("message %+v", m)
	}
	if code, _ := raw(t, s, "sendMessage", url.Values{"chat_id": {"-100777"}, "text": {"form"}}); code != http.StatusOK {
		t.Errorf("form body: %d", code)
	}
	resp, err = http.Post(s.URL+"/bot1:wrong/getMe", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", resp.StatusCode)
	}
}

// TestLinkPreviews: a message with a link shows a preview unless the send,
// or the last edit of its text, disabled previews.
func TestLinkPreviews(t *testing.T) {
	s, b := setup(t, telegramtest.Options{})
	ctx := context.Background()
	off := &models.LinkPreviewOptions{IsDisabled: bot.True()}
	tests := []struct {
		name    string
		text    string
		html    bool
		options *models.LinkPreviewOptions
		want    bool
	}{
		{"no link", "see the log", false, nil, false},
		{"url", "see https://ci.example.com/4812", false, nil, true},
		{"url, previews off", "see https://ci.example.com/4812", false, off, false},
		{"text link", `see <a href="https://ci.example.com/4812">the log</a>`, true, nil, true},
		{"text link, previews off", `see <a href="https://ci.example.com/4812">the log</a>`, true, off, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			params := &bot.SendMessageParams{ChatID: chat, Text: tt.text, LinkPreviewOptions: tt.options}
			if tt.html {
				params.ParseMode = models.ParseModeHTML
			}
			m, err := b.SendMessage(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			if got := last(s).LinkPreview; got != tt.want {
				t.Errorf("preview %v, want %v", got, tt.want)
			}
			// An edit's own options count.
			_, err = b.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: chat, MessageID: m.ID, Text: tt.text + " (edited)", ParseMode: params.ParseMode})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := last(s).LinkPreview, tt.text != "see the log"; got != want {
				t.Errorf("after an edit without options: preview %v, want %v", got, want)
			}
			_, err = b.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: chat, MessageID: m.ID, Text: tt.text, ParseMode: params.ParseMode, LinkPreviewOptions: off})
			if err != nil {
				t.Fatal(err)
			}
			if last(s).LinkPreview {
				t.Error("an edit that disables previews still shows one")
			}
		})
	}
}

func last(s *telegramtest.Server) telegramtest.Message {
	msgs := s.BotMessages(chat)
	return msgs[len(msgs)-1]
}

// TestDeleteLikeTelegram: a bot deletes its own messages, and the
// people's only in private chats, within 48 hours; a message that is gone
// or too old is refused with Telegram's words, and deletions count against
// the chat's rate like sends.
func TestDeleteLikeTelegram(t *testing.T) {
	s, b := setup(t, telegramtest.Options{})
	ctx := context.Background()
	person := telegramtest.User{ID: 7, FirstName: "P"}
	s.AddChat(person.ID, "private", "P")
	send := func(chatID int64) int {
		t.Helper()
		m, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: chatID, Text: "reminder"})
		if err != nil {
			t.Fatal(err)
		}
		return m.ID
	}
	del := func(chatID int64, id int) error {
		_, err := b.DeleteMessage(ctx, &bot.DeleteMessageParams{ChatID: chatID, MessageID: id})
		return err
	}
	refused := func(err error, want string) bool {
		return errors.Is(err, bot.ErrorBadRequest) && strings.HasSuffix(err.Error(), ", "+want)
	}

	own := send(chat)
	if err := del(chat, own); err != nil {
		t.Fatalf("delete its own message: %v", err)
	}
	if len(s.Messages(chat)) != 0 || s.Stats().Deleted != 1 {
		t.Errorf("after the delete: %d messages, %d deleted", len(s.Messages(chat)), s.Stats().Deleted)
	}
	if err := del(chat, own); !refused(err, telegramtest.ErrDeleteNotFound) {
		t.Errorf("delete again: %v", err)
	}
	if err := del(42, own); !refused(err, telegramtest.ErrChatNotFound) {
		t.Errorf("unknown chat: %v", err)
	}
	if code, body := raw(t, s, "deleteMessage", url.Values{"chat_id": {"-100777"}}); code != http.StatusBadRequest || body["description"] != telegramtest.ErrNoMessageID {
		t.Errorf("no message id: %d %v", code, body)
	}

	old := send(chat)
	s.Age(chat, old, telegramtest.DeleteWindow-time.Minute)
	young := send(chat)
	s.Age(chat, young, time.Hour)
	s.Age(chat, old, time.Minute)
	if err := del(chat, old); !refused(err, telegramtest.ErrCantDelete) {
		t.Errorf("a message 48 hours old: %v", err)
	}
	if err := del(chat, young); err != nil {
		t.Errorf("a message an hour old: %v", err)
	}

	theirs, err := s.SendText(chat, person, "hello")
	if err != nil {
		t.Fatal(err)
	}
	if err := del(chat, theirs); !refused(err, telegramtest.ErrCantDelete) {
		t.Errorf("a person's message in a group: %v", err)
	}
	private, err := s.SendText(person.ID, person, "hello")
	if err != nil {
		t.Fatal(err)
	}
	if err := del(person.ID, private); err != nil {
		t.Errorf("a person's message in a private chat: %v", err)
	}
	mine := send(person.ID)
	s.Block(person.ID, telegramtest.ErrBlocked)
	if err := del(person.ID, mine); !errors.Is(err, bot.ErrorForbidden) {
		t.Errorf("a chat that blocked the bot: %v", err)
	}
	if st := s.Stats(); st.Deleted != 3 {
		t.Errorf("%d deleted, want 3", st.Deleted)
	}
}

func TestDeleteIsRateLimited(t *testing.T) {
	s, b := setup(t, telegramtest.Options{ChatRate: 1, ChatBurst: 1})
	m, err := b.SendMessage(context.Background(), &bot.SendMessageParams{ChatID: chat, Text: "one"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.DeleteMessage(context.Background(), &bot.DeleteMessageParams{ChatID: chat, MessageID: m.ID})
	var tooMany *bot.TooManyRequestsError
	if !errors.As(err, &tooMany) || tooMany.RetryAfter != 1 {
		t.Fatalf("error %v, want a 429 with retry_after 1", err)
	}
	if len(s.Messages(chat)) != 1 || s.Stats().Deleted != 0 {
		t.Error("a rate-limited delete deleted")
	}
}

// TestReplyParameters: a send records the reply it asked for; a reply to
// a message that is gone is refused unless it allows sending without the
// reply, and then it is posted as no reply.
func TestReplyParameters(t *testing.T) {
	s, b := setup(t, telegramtest.Options{})
	ctx := context.Background()
	prompt, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: chat, Text: "prompt"})
	if err != nil {
		t.Fatal(err)
	}
	reply := func(allow bool) (telegramtest.Message, error) {
		_, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: chat, Text: "reminder",
			ReplyParameters: &models.ReplyParameters{MessageID: prompt.ID, AllowSendingWithoutReply: allow}})
		if err != nil {
			return telegramtest.Message{}, err
		}
		return last(s), nil
	}
	m, err := reply(true)
	if err != nil || m.ReplyTo != prompt.ID || m.ReplyAsked != prompt.ID || !m.ReplyOptional {
		t.Errorf("a reply to the prompt: %+v, %v", m, err)
	}
	m, err = reply(false)
	if err != nil || m.ReplyTo != prompt.ID || m.ReplyOptional {
		t.Errorf("a reply that must be one: %+v, %v", m, err)
	}
	s.DeleteMessage(chat, prompt.ID)
	if _, err := reply(false); err == nil || !strings.HasSuffix(err.Error(), telegramtest.ErrReplyNotFound) {
		t.Errorf("a reply to a gone message: %v", err)
	}
	m, err = reply(true)
	if err != nil || m.ReplyTo != 0 || m.ReplyAsked != prompt.ID || !m.ReplyOptional {
		t.Errorf("a reply to a gone message, allowed without: %+v, %v", m, err)
	}
	if m, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: chat, Text: "plain"}); err != nil || last(s).ReplyAsked != 0 || m.ID == 0 {
		t.Errorf("no reply asked: %+v, %v", last(s), err)
	}
}
