package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// tgCall is one Bot API call a bridge made, as the front saw it.
type tgCall struct {
	// Method is lower case: sendmessage, editmessagetext, getupdates, ...
	Method string
	Chat   int64
	// Message is the message sent (from the reply) or edited.
	Message int
	// At is when the call reached the front: when the bridge made it.
	At time.Time
}

// front stands between bridges and the fake Telegram: it passes every call
// through and tells its watchers which call came when. (The fake keeps
// chats, not a log of calls with their times.) A getUpdates is reported as
// it arrives; other calls once the fake has answered, so a sent message can
// be tapped at once.
type front struct {
	srv   *httptest.Server
	proxy *httputil.ReverseProxy

	mu       sync.Mutex
	watchers map[int]func(tgCall)
	next     int
	lastPoll time.Time
}

type arrivalKey struct{}

func newFront(target string) *front {
	u, err := url.Parse(target)
	if err != nil {
		panic(err) // httptest URLs always parse
	}
	f := &front{watchers: map[int]func(tgCall){}}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 256
	f.proxy = httputil.NewSingleHostReverseProxy(u)
	f.proxy.Transport = tr
	// A killed or stopping bridge cancels its calls; that is no news.
	f.proxy.ErrorLog = log.New(io.Discard, "", 0)
	f.proxy.ModifyResponse = f.answered
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	return f
}

// URL is the Bot API root a bridge is given.
func (f *front) URL() string { return f.srv.URL }

// Close stops the front.
func (f *front) Close() {
	f.srv.CloseClientConnections()
	f.srv.Close()
}

// watch calls fn for every call from now on, on the front's goroutines, until
// the returned stop is called. fn must not block.
func (f *front) watch(fn func(tgCall)) (stop func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.next
	f.next++
	f.watchers[id] = fn
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.watchers, id)
	}
}

// LastPoll is when the last getUpdates arrived.
func (f *front) LastPoll() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastPoll
}

func (f *front) tell(c tgCall) {
	f.mu.Lock()
	if c.Method == "getupdates" {
		f.lastPoll = c.At
	}
	fns := make([]func(tgCall), 0, len(f.watchers))
	for _, fn := range f.watchers {
		fns = append(fns, fn)
	}
	f.mu.Unlock()
	for _, fn := range fns {
		fn(c)
	}
}

func (f *front) serve(w http.ResponseWriter, r *http.Request) {
	c := tgCall{Method: method(r.URL.Path), At: time.Now()}
	if c.Method == "getupdates" {
		f.tell(c)
	} else {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		p := callParams(r.Header.Get("Content-Type"), body)
		c.Chat, _ = strconv.ParseInt(p["chat_id"], 10, 64)
		c.Message, _ = strconv.Atoi(p["message_id"])
	}
	f.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), arrivalKey{}, c)))
}

// answered reports a call once the fake answered it, with the message id
// of a sent message.
func (f *front) answered(resp *http.Response) error {
	c, ok := resp.Request.Context().Value(arrivalKey{}).(tgCall)
	if !ok || c.Method == "getupdates" {
		return nil
	}
	if c.Method == "sendmessage" && resp.StatusCode == http.StatusOK {
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		var out struct {
			Result struct {
				MessageID int `json:"message_id"`
			} `json:"result"`
		}
		_ = json.Unmarshal(body, &out)
		c.Message = out.Result.MessageID
	}
	if resp.StatusCode == http.StatusOK {
		f.tell(c)
	}
	return nil
}

// method is the Bot API method of a path /bot<token>/<method>, lower case.
func method(path string) string {
	i := strings.LastIndexByte(path, '/')
	return strings.ToLower(path[i+1:])
}

// callParams reads the flat parameters of a Bot API call: a multipart form (as
// go-telegram/bot sends them), a url-encoded form or a JSON object.
func callParams(contentType string, body []byte) map[string]string {
	p := map[string]string{}
	mt, mp, _ := mime.ParseMediaType(contentType)
	switch mt {
	case "multipart/form-data":
		form, err := multipart.NewReader(bytes.NewReader(body), mp["boundary"]).ReadForm(1 << 20)
		if err != nil {
			return p
		}
		for k, v := range form.Value {
			p[k] = v[0]
		}
	case "application/x-www-form-urlencoded":
		v, _ := url.ParseQuery(string(body))
		for k := range v {
			p[k] = v.Get(k)
		}
	case "application/json":
		var m map[string]json.RawMessage
		_ = json.Unmarshal(body, &m)
		for k, raw := range m {
			p[k] = strings.Trim(string(raw), `"`)
		}
	}
	return p
}
