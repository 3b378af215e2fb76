// askbridge web page: the open questions for the "web" target, pinned above
// a timeline of ended ones. Plain JavaScript, no build step, nothing loaded
// from elsewhere. Agent text is only ever inserted as text (textContent /
// Node.append of strings), never as HTML. The one exception is a question's
// context, which the server sends as sanitised HTML in its own field
// (contextHTML, from internal/markup); nothing else goes into innerHTML.
//
// Words: every word the page shows comes from the bridge's catalogs, GET
// words?lang=<navigator.languages>. The page's own text (title, connection,
// empty states, the token dialog) follows the browser's language as the
// server matched it (words.lang, also <html lang>); a question's card and
// its timeline entry follow the question's language (locale), so a Thai
// question reads in Thai on an English page. Decisions never look at words:
// they use codes (outcome, notice) and HTTP statuses.
//
// Data: GET api/questions (open questions), GET api/history (timeline),
// GET api/events (Server-Sent Events; the page reloads what changed on each
// one), POST api/questions/{id}/answer, POST api/questions/{id}/seen. With a
// token, the page reads it from
// the URL fragment (#token=…, never sent to the server in the URL), keeps it
// in sessionStorage and sends it as "Authorization: Bearer"; the event
// stream takes it as ?token= because EventSource cannot set headers.
//
// Order: the open questions are listed in the order the agents asked them
// (the API's order, by its asked field), not the order replicas took them
// up in.
//
// Reachability: while the event stream is down, or the API's last answer
// was a network error or a 502/503/504, a banner (#offline) says the bridge
// cannot be reached and every button that answers is disabled; both go
// once the stream is open again or the API answers (it is tried again
// every few seconds).
//
// Own words: the bridge's timeline keeps only that an answer was in the
// person's own words. This page keeps its own free text in this browser
// (localStorage, by question id, the newest 200 for 30 days), never sends
// it anywhere but with the answer, and shows it on that question's
// timeline entry here.
//
// Background tab: a question that arrives while the tab is hidden prefixes
// the title with "(n) " until the tab is visible again, and, once this
// browser opted in with "Notify me" (#notify, Notification.requestPermission),
// shows a browser notification.
//
// Stable hooks for browser tests:
//   body[data-layout]                      "panel" (wider than 600px) or "cards"
//   body[data-ready]                       "1" once the first lists have loaded
//   body[data-reach]                       "up" | "down" (the bridge cannot be reached)
//   #connection[data-state]                "connecting" | "live" | "reconnecting"
//   #offline [data-testid=offline]         the banner shown while the bridge cannot be reached
//   #notify [data-testid=notify]           "Notify me"; data-state "off" | "on" | "blocked"
//   [data-testid=prompt][data-id]          one open prompt; data-state "pending" | "sending";
//                                          data-step is the question shown (0-based), or the
//                                          number of questions on the review (data-review)
//     [lang]                               the question's language
//     [data-testid=context]                the question's context (sanitised HTML)
//     [data-testid=remaining]              time left ("14:52 left")
//     [data-testid=step-count]             "2 / 3" (prompts with several questions)
//     [data-testid=step]                   one button per question (jump to it)
//     [data-testid=question][data-qid]     the question shown
//     [data-testid=question-text]          its sentence
//     [data-testid=option][data-label]     a single-select option (button, aria-pressed); data-label
//                                          is the label as declared, data-recommended "true" on the
//                                          option the agent recommends, which shows its text without
//                                          the suffix and a [data-testid=recommended] badge
//     [data-testid=option-check][value]    a multi-select checkbox
//     [data-testid=other-input]            the free-text "Other" answer
//     [data-testid=other-submit]           sends the Other text (one single-select question)
//     [data-testid=back|next|submit|skip]  stepper and prompt controls; a prompt with several
//                                          questions submits only from its review:
//     [data-testid=to-review]              opens the review (after the last question)
//     [data-testid=step-review]            the review's step button
//     [data-testid=review] [data-testid=review-item][data-qid][data-answered]
//                                          each question with [data-testid=review-answer] and a
//                                          [data-testid=review-edit] button back to it
//     [data-testid=prompt-error]           why an answer was refused, or that the question
//                                          shown needs one (gone once it has one)
//     [data-testid=reminders][data-count]  how many reminders the page has shown
//     [data-testid=places]                 "Also open in: slack:C0123, telegram:42"
//     [data-testid=notes] [data-testid=note]  lines the question's state adds ("Seen by Alice")
//     [data-testid=seen]                   the Seen button (reminders or escalation, until seen)
//     [data-testid=quorum]                 a quorum question's vote (ask-user.md §6), holding:
//     [data-testid=tally]                  its tally ("Votes: 1 of 2 needed — Approve 1, Reject 1")
//     [data-testid=voters]                 who has voted on it ("Voted: Alice, web page")
//     [data-testid=my-vote]                the page's own vote, once it has voted ("You voted: Approve");
//                                          its answer controls are then aria-disabled
//   [data-testid=prompt][data-seen]        who has seen it, once someone has
//   [data-testid=prompt][data-voted]       "true" once the page has voted on a quorum question
//   [data-testid=activity] [data-testid=activity-item][data-kind]
//                                          on a card and its timeline entry: what happened while it
//                                          was open; kind is reminded | escalated | acknowledged |
//                                          unreachable (a place that could not be reached)
//   [data-testid=open-empty]               shown when nothing is open
//   [data-testid=open-count]               number of open prompts
//   #timeline [data-testid=history-entry][data-id][data-outcome]
//                                          an ended question; outcome is answered | skipped |
//                                          expired | cancelled | undeliverable | no_quorum;
//                                          data-elsewhere when it ended elsewhere while this
//                                          page showed it
//     [data-testid=entry-status]           the status line ("Answered: Production", "Skipped", "ข้ามแล้ว")
//     [data-testid=entry-answer]           the answer to one question; the page's own free text,
//                                          as this browser kept it, is [data-testid=own-words]
//     [data-testid=entry-votes] [data-testid=entry-vote][data-by]
//                                          a quorum question's votes: who, and what
//                                          ([data-testid=entry-vote-answer])
//   #notices [data-testid=notice][data-id][data-outcome]  what just happened; data-notice is
//                                          the notice's code for a Seen ("Seen", "AlreadySeen")
//                                          and a vote that left the question open ("Voted",
//                                          "Abstained")
//   #announcer                             aria-live region announcing new questions and ends
//   #auth                                  shown when the token is missing or wrong
'use strict';

(() => {
  const TOKEN_KEY = 'askbridge.token';
  const NARROW = window.matchMedia('(max-width: 600px)');
  // The catalog's status word of each outcome code, shown until the
  // server's status line for the question arrives.
  const STATUS_WORD = {
    answered: 'StatusAnswered',
    skipped: 'StatusSkipped',
    expired: 'StatusExpired',
    cancelled: 'StatusCancelled',
    undeliverable: 'StatusUndeliverable',
    no_quorum: 'StatusNoQuorum',
  };
  // What a notice says when a question shown here ended elsewhere.
  const ENDED_ELSEWHERE = {
    answered: 'WebAnsweredElsewhere',
    skipped: 'WebSkippedElsewhere',
    expired: 'WebExpiredUnanswered',
    cancelled: 'WebCancelledByAgent',
    undeliverable: 'WebNotDelivered',
    no_quorum: 'WebNoAgreement',
  };
  const ENDS = new Set(Object.keys(STATUS_WORD));
  // The controls of a card that move between its questions and its
  // review: never locked, and usable while the bridge cannot be reached.
  const NAVIGATION = new Set(['back', 'next', 'to-review', 'step', 'step-review', 'review-edit']);
  // The events of reaching people (ask-user.md §5) the page keeps as a
  // question's activity; an undeliverable event that names a place (to)
  // is kept as "unreachable", the question staying open elsewhere.
  const ACTIVITY = new Set(['reminded', 'escalated', 'acknowledged']);
  // How many questions' activity the page keeps at most.
  const MAX_ACTIVITY = 200;
  // The page's own free-text answers, kept in this browser only (never
  // sent anywhere but with the answer itself): localStorage key, how many
  // questions' words it keeps and for how long.
  const OWN_KEY = 'askbridge.own:' + window.location.pathname;
  const MAX_OWN = 200;
  const OWN_DAYS = 30;
  // Whether this browser opted in to notifications (localStorage key).
  const NOTIFY_KEY = 'askbridge.notify:' + window.location.pathname;
  // How long the page waits before it tries the API again after it could
  // not reach the bridge (the event stream retries on its own).
  const PROBE_MS = 3000;

  const $ = (id) => document.getElementById(id);
  const ui = {
    conn: $('connection'),
    open: $('open'),
    prompts: $('prompts'),
    openEmpty: $('open-empty'),
    openCount: $('open-count'),
    notices: $('notices'),
    timeline: $('timeline'),
    historyEmpty: $('history-empty'),
    standing: $('standing-list'),
    standingPanel: $('standing'),
    auth: $('auth'),
    authForm: $('auth-form'),
    authToken: $('auth-token'),
    authError: $('auth-error'),
    announcer: $('announcer'),
    offline: $('offline'),
    notify: $('notify'),
  };

  // closedByList holds, for 15 s, the prompts a list read closed because
  // their question was no longer open, by id.
  const closedByList = new Map();

  const state = {
    token: '',
    offset: 0, // server clock minus this browser's clock, in ms
    prompts: new Map(), // id -> Prompt, in the order shown
    closed: new Set(), // ids this page has taken off the panel
    mine: new Set(), // ids this page answered, skipped or voted on
    shown: new Set(), // ids this page has shown as open
    history: [], // entries from the server, newest first
    standing: [], // standing answers from the server (GET api/standing)
    activity: new Map(), // id -> [{sid, kind, to, by, at}], from the event stream
    seenBy: new Map(), // id -> who has seen it, as the list names them
    provisional: new Map(), // id -> entry shown until the server's arrives
    needToken: false,
    loaded: { questions: false, history: false },
    // The bridge cannot be reached while the event stream is down or the
    // API's last answer was a network error or 502/503/504: the banner
    // shows and answering is disabled (down).
    streamDown: false,
    apiDown: false,
    down: false,
    unseen: new Set(), // ids of questions that arrived while the tab was hidden
  };

  // ---- helpers -------------------------------------------------------------

  // el builds an element. Children that are strings become text nodes.
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === false || v === null || v === undefined) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children) {
      if (c !== null && c !== undefined && c !== false) e.append(c);
    }
    return e;
  }

  const serverNow = () => Date.now() + state.offset;

  // ---- words -----------------------------------------------------------------

  // words are the catalogs' messages the page shows (GET words): lang is
  // the catalog of the page's own text, catalogs every shipped one by tag.
  const words = { lang: 'en', catalogs: {} };

  // say returns message id in catalog tag (English where that catalog
  // lacks it), its {name} placeholders filled from fields. The result is
  // always inserted as text.
  function say(tag, id, fields) {
    const cat = words.catalogs[tag] || words.catalogs.en || {};
    let s = cat[id];
    if (s === undefined) s = (words.catalogs.en || {})[id];
    if (s === undefined) s = id;
    return s.replace(/\{(\w+)\}/g, (m, k) => (fields && Object.hasOwn(fields, k) ? String(fields[k]) : m));
  }

  // page is a word of the page's own text, in the browser's language.
  const page = (id, fields) => say(words.lang, id, fields);

  // localeOf is the catalog a question (or timeline entry) is worded in.
  const localeOf = (q) => (q && q.locale && words.catalogs[q.locale] ? q.locale : 'en');

  // recommended holds the words agents put in parentheses after the
  // option they recommend, from every shipped catalog (WordsRecommended,
  // comma-separated), folded: any of them marks an option on any card,
  // whatever the card's language, as in a chat reply.
  let recommended = new Set();
  const fold = (s) => s.normalize('NFKC').toLowerCase().replace(/\s+/g, ' ').trim();

  function learnRecommended() {
    recommended = new Set();
    for (const cat of Object.values(words.catalogs)) {
      for (const w of (cat.WordsRecommended || '').split(',')) {
        const k = fold(w).replace(/^[(（]\s*/u, '').replace(/\s*[)）]$/u, '');
        if (k) recommended.add(k);
      }
    }
  }

  // optionText is how a card shows an option's label: without a
  // recommended suffix ("Staging (Recommended)", "สเตจจิ้ง (แนะนำ)"), which
  // becomes a badge instead. A label that is nothing but the suffix stays
  // as it is. The label itself is still what the answer sends.
  function optionText(label) {
    const m = /^(.*?\S)\s*[(（]\s*([^()（）]*?)\s*[)）]\s*$/u.exec(label || '');
    if (m && recommended.has(fold(m[2]))) return { text: m[1], recommended: true };
    return { text: label, recommended: false };
  }

  // loadWords fetches the words, trying again until it gets them: the page
  // has nothing to say without them.
  async function loadWords() {
    const langs = (navigator.languages && navigator.languages.length ? navigator.languages : [navigator.language || '']).join(',');
    for (let wait = 500; ; wait = Math.min(wait * 2, 10000)) {
      try {
        const res = await fetch('words?lang=' + encodeURIComponent(langs), { cache: 'no-cache', credentials: 'same-origin' });
        if (res.ok) {
          const data = await res.json();
          if (data && data.catalogs && data.catalogs[data.lang]) {
            words.lang = data.lang;
            words.catalogs = data.catalogs;
            return;
          }
        }
      } catch {
        // The bridge is not reachable yet: try again.
      }
      await new Promise((r) => setTimeout(r, wait));
    }
  }

  // applyPageWords words the page's own text, marked data-w="<id>" in
  // index.html, in the browser's language.
  function applyPageWords() {
    document.documentElement.lang = words.lang;
    for (const e of document.querySelectorAll('[data-w]')) e.textContent = page(e.dataset.w);
    setConnection(ui.conn.dataset.state, connWord);
    updateOpenCount();
    drawNotify();
  }

  function stripColon(s) {
    return (s || '').replace(/:\s*$/, '');
  }

  function formatLeft(ms, tag) {
    if (ms <= 0) return say(tag, 'WebExpiring');
    const s = Math.ceil(ms / 1000);
    const h = Math.floor(s / 3600);
    const m = Math.floor((s % 3600) / 60);
    const ss = String(s % 60).padStart(2, '0');
    const time = h > 0 ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
    return say(tag, 'WebTimeLeft', { time });
  }

  function formatTime(ms) {
    const d = new Date(ms);
    const now = new Date();
    const time = d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
    if (d.toDateString() === now.toDateString()) return time;
    return d.toLocaleDateString([], { month: 'short', day: 'numeric' }) + ', ' + time;
  }

  function announce(text) {
    ui.announcer.textContent = '';
    // A fresh text node in a later task makes screen readers read it again.
    setTimeout(() => { ui.announcer.textContent = text; }, 50);
  }

  // notice shows what just happened to a question, in its language (tag);
  // code is the notice's code when no outcome says it (a Seen).
  function notice(text, outcome, id, tag, code) {
    const n = el('p', {
      class: 'notice ' + (outcome || ''), 'data-testid': 'notice', 'data-outcome': outcome || null,
      'data-notice': code || null, 'data-id': id || null, lang: tag || null,
    }, text);
    ui.notices.prepend(n);
    while (ui.notices.children.length > 4) ui.notices.lastElementChild.remove();
    setTimeout(() => n.remove(), 12000);
  }

  // ---- API -----------------------------------------------------------------

  class Unauthorized extends Error {}

  // api calls the bridge. A network error, or a 502, 503 or 504 (the
  // bridge, or a proxy before it, cannot do its work), marks the bridge
  // unreachable until a later call gets through; any other answer marks
  // it reachable.
  async function api(path, options) {
    const opts = Object.assign({ headers: {} }, options || {});
    opts.headers = Object.assign({ Accept: 'application/json' }, opts.headers);
    if (state.token) opts.headers.Authorization = 'Bearer ' + state.token;
    if (opts.body) opts.headers['Content-Type'] = 'application/json';
    opts.cache = 'no-store';
    opts.credentials = 'same-origin';
    let res;
    try {
      res = await fetch(path, opts);
    } catch (e) {
      setApiDown(true);
      throw e;
    }
    setApiDown(res.status === 502 || res.status === 503 || res.status === 504);
    if (res.status === 401) {
      askToken(state.token ? page('WebTokenRejected') : '');
      throw new Unauthorized('unauthorized');
    }
    return res;
  }

  async function readJSON(res) {
    try {
      return await res.json();
    } catch {
      return {};
    }
  }

  // ---- token ---------------------------------------------------------------

  function takeTokenFromFragment() {
    const hash = window.location.hash.replace(/^#/, '');
    const params = new URLSearchParams(hash);
    const t = params.get('token');
    if (t) {
      sessionStorage.setItem(TOKEN_KEY, t);
      // Keep the token out of the address bar, bookmarks and history.
      history.replaceState(null, '', window.location.pathname + window.location.search);
    }
    state.token = sessionStorage.getItem(TOKEN_KEY) || '';
  }

  function askToken(message) {
    state.needToken = true;
    updateDown();
    ui.auth.hidden = false;
    ui.authError.hidden = !message;
    ui.authError.textContent = message || '';
    setConnection('connecting', 'WebWaitingToken');
    if (events) {
      events.close();
      events = null;
    }
    ui.authToken.focus();
  }

  ui.authForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const t = ui.authToken.value.trim();
    if (!t) return;
    sessionStorage.setItem(TOKEN_KEY, t);
    state.token = t;
    state.needToken = false;
    updateDown();
    ui.auth.hidden = true;
    ui.authToken.value = '';
    refreshQuestions();
    refreshHistory();
    refreshStanding();
    connect();
  });

  // ---- connection (Server-Sent Events) ---------------------------------------

  let events = null;
  let retryMs = 1000;
  let retryTimer = null;

  // connWord is the catalog id of the connection state shown.
  let connWord = 'WebConnecting';

  function setConnection(s, id) {
    connWord = id;
    ui.conn.dataset.state = s;
    ui.conn.textContent = page(id);
  }

  // ---- reachability ----------------------------------------------------------

  let probeTimer = null;

  // setStreamDown notes whether the event stream is down (between an error
  // and the next open).
  function setStreamDown(on) {
    state.streamDown = on;
    updateDown();
  }

  // setApiDown notes whether the API's last answer says the bridge cannot
  // be reached. While it does, the open questions are read again every
  // PROBE_MS, so the page finds out when it is back even when its event
  // stream never went down.
  function setApiDown(on) {
    state.apiDown = on;
    clearTimeout(probeTimer);
    if (on) probeTimer = setTimeout(refreshQuestions, PROBE_MS);
    updateDown();
  }

  // updateDown shows the banner and disables answering while the bridge
  // cannot be reached, and takes both back once it can. A page waiting
  // for its token is not cut off: it asks for the token.
  function updateDown() {
    const down = !state.needToken && (state.streamDown || state.apiDown);
    document.body.dataset.reach = down ? 'down' : 'up';
    if (down === state.down) return;
    state.down = down;
    ui.offline.hidden = !down;
    for (const p of state.prompts.values()) p.applyDisabled();
  }

  function connect() {
    if (state.needToken) return;
    clearTimeout(retryTimer);
    if (events) events.close();
    const url = 'api/events' + (state.token ? '?token=' + encodeURIComponent(state.token) : '');
    const es = new EventSource(url);
    events = es;
    es.onopen = () => {
      retryMs = 1000;
      setConnection('live', 'WebLive');
      setStreamDown(false);
      // Catch up on anything that happened while disconnected.
      refreshQuestions();
      refreshHistory();
      refreshStanding();
    };
    es.onmessage = (m) => {
      let ev;
      try {
        ev = JSON.parse(m.data);
      } catch {
        return;
      }
      if (ev) ev.sid = m.lastEventId;
      onEvent(ev);
    };
    es.onerror = () => {
      if (events !== es) return;
      setConnection('reconnecting', 'WebReconnecting');
      setStreamDown(true);
      if (es.readyState === EventSource.CLOSED) {
        // The browser gave up (an error status): retry ourselves, and
        // find out whether the token is the problem.
        es.close();
        events = null;
        retryTimer = setTimeout(() => {
          refreshQuestions();
          connect();
        }, retryMs);
        retryMs = Math.min(retryMs * 2, 15000);
      }
    };
  }

  function onEvent(ev) {
    if (!ev) return;
    // A standing answer kept, revoked or ended at its time (ask-user.md
    // §9): the list of standing answers is read again, and the timeline
    // after a keep (the offer goes).
    if (ev.key && (ev.event === 'kept' || ev.event === 'revoked' || ev.event === 'expired')) {
      refreshStanding();
      if (ev.event === 'kept') refreshHistory();
      return;
    }
    if (!ev.id) return;
    // A vote on a quorum question (ask-user.md §6), here or elsewhere:
    // the list says the tally and who has voted.
    if (ev.event === 'requested' || ev.event === 'delivered' || ev.event === 'voted') {
      refreshQuestions();
      return;
    }
    // A place that cannot be reached, a reminder, an escalation step or a
    // Seen: noted, and the list read again (where else it is open, how
    // many reminders, who has seen it).
    if (ACTIVITY.has(ev.event) || (ev.event === 'undeliverable' && ev.to)) {
      noteActivity(ev, ev.event === 'undeliverable' ? 'unreachable' : ev.event);
      refreshQuestions();
      return;
    }
    if (ENDS.has(ev.event)) {
      const p = state.prompts.get(ev.id);
      // A list read after the end (a vote's refresh) may have closed the
      // prompt first: the end still gets its notice.
      const listed = p ? null : closedByList.get(ev.id);
      // While this page's own answer is on its way, its reply says how
      // the question ended (the event may arrive first).
      const q = p && !p.sending ? p.q : listed ? listed.q : null;
      if (q) {
        closedByList.delete(ev.id);
        const elsewhere = !state.mine.has(ev.id);
        const tag = localeOf(q);
        if (p) closePrompt(p, ev.event, null, elsewhere);
        if (elsewhere) notice(say(tag, ENDED_ELSEWHERE[ev.event], { question: summary(q) }), ev.event, ev.id, tag);
        // A quorum question the page voted on, decided by another's vote.
        else if (q.quorum) notice(say(tag, 'WebEndedAnnounce', { status: say(tag, STATUS_WORD[ev.event]), question: summary(q) }), ev.event, ev.id, tag);
      }
      awaitHistory(ev.id);
    }
  }

  // noteActivity keeps what ev says happened to its question as kind, once
  // per event, and draws it where the question is shown.
  function noteActivity(ev, kind) {
    const list = state.activity.get(ev.id) || [];
    if (ev.sid && list.some((a) => a.sid === ev.sid)) return;
    list.push({ sid: ev.sid || '', kind, to: ev.to || '', by: ev.by || '', at: ev.at || 0 });
    state.activity.delete(ev.id);
    state.activity.set(ev.id, list);
    while (state.activity.size > MAX_ACTIVITY) state.activity.delete(state.activity.keys().next().value);
    const p = state.prompts.get(ev.id);
    if (p) p.drawReach();
    if (rendered.has(ev.id)) renderTimeline();
  }

  // activityLine words one thing that happened to question id while it was
  // open, in catalog tag.
  function activityLine(id, a, tag) {
    const to = a.to.split(',').filter((s) => s).join(say(tag, 'ListSeparator'));
    switch (a.kind) {
      case 'reminded': return say(tag, 'WebActivityReminded', { to });
      case 'escalated': return say(tag, 'WebActivityEscalated', { to });
      case 'unreachable': return say(tag, 'WebActivityUnreachable', { to });
      default: return say(tag, 'WebActivitySeen', { who: state.seenBy.get(id) || a.by });
    }
  }

  // activityList is what happened to question id while it was open, as far
  // as this page saw it, in catalog tag; null when nothing did.
  function activityList(id, tag) {
    const items = state.activity.get(id) || [];
    if (!items.length) return null;
    return el('ul', { class: 'activity', 'data-testid': 'activity', 'aria-label': say(tag, 'WebActivityTitle') },
      ...items.map((a) => el('li', { 'data-testid': 'activity-item', 'data-kind': a.kind },
        el('span', {}, activityLine(id, a, tag)),
        a.at ? el('time', { datetime: new Date(a.at).toISOString() }, formatTime(a.at)) : null)));
  }

  // placeName names another place of a question, in catalog tag: as the
  // request or route named it, with its platform when the name does not
  // say it (a route).
  function placeName(p, tag) {
    const name = p.name || '';
    if (!p.platform || name === p.platform || name.startsWith(p.platform + ':')) return name;
    return say(tag, 'WebPlaceOn', { name, platform: p.platform });
  }

  // summary names a prompt in a notice, in its language: its first
  // question, and how many more it has.
  function summary(q) {
    const question = q.questions[0].question;
    const more = q.questions.length - 1;
    return more > 0 ? say(localeOf(q), 'WebSummaryMore', { question, n: more }) : say(localeOf(q), 'WebSummaryOne', { question });
  }

  // answerText words one person's answer to a prompt (HistoryAnswer per
  // question: declared labels, ownWords for free text, which is never
  // repeated) into el, in catalog tag: each question's labels joined with
  // the list separator, questions with " / ".
  function answerText(into, answers, tag) {
    const sep = say(tag, 'ListSeparator');
    (answers || []).forEach((a, i) => {
      if (i > 0) into.append(' / ');
      const labels = a.answer || [];
      if (labels.length) into.append(labels.join(sep));
      if (a.ownWords) {
        if (labels.length) into.append(sep);
        into.append(el('span', { class: 'own', title: say(tag, 'WebOwnAnswerHint') }, say(tag, 'WebOwnAnswer')));
      }
    });
    return into;
  }

  // ---- open questions --------------------------------------------------------

  let questionsBusy = false;
  let questionsAgain = false;

  async function refreshQuestions() {
    if (state.needToken) return;
    if (questionsBusy) {
      questionsAgain = true;
      return;
    }
    questionsBusy = true;
    try {
      do {
        questionsAgain = false;
        const res = await api('api/questions');
        if (!res.ok) throw new Error('status ' + res.status);
        const data = await res.json();
        state.offset = data.now - Date.now();
        syncPrompts(data.questions || []);
        state.loaded.questions = true;
        markReady();
      } while (questionsAgain);
    } catch (e) {
      if (!(e instanceof Unauthorized)) setConnection('reconnecting', 'WebUnreachable');
    } finally {
      questionsBusy = false;
    }
  }

  function syncPrompts(list) {
    const open = new Set(list.map((q) => q.id));
    // Questions no longer open ended while we were not listening: the
    // timeline says how.
    for (const [id, p] of state.prompts) {
      if (!open.has(id) && !p.sending) {
        closePrompt(p, null, null, !state.mine.has(id));
        // Its end event may still be on its way (the list was read after
        // the end): kept a while so that event can give the notice.
        closedByList.set(id, p);
        setTimeout(() => closedByList.delete(id), 15000);
        awaitHistory(id);
      }
    }
    let before = null;
    for (const q of list.slice().reverse()) {
      if (state.closed.has(q.id)) continue;
      if (q.seenBy) state.seenBy.set(q.id, q.seenBy);
      let p = state.prompts.get(q.id);
      if (!p) {
        p = new Prompt(q);
        state.prompts.set(q.id, p);
        state.shown.add(q.id);
        ui.prompts.insertBefore(p.root, before);
        if (state.loaded.questions) {
          const fields = { agent: q.agent, question: q.questions[0].question };
          announce(say(localeOf(q), q.agent ? 'WebNewQuestionFrom' : 'WebNewQuestion', fields));
          arrivedUnseen(q);
        }
      } else {
        p.update(q);
        if (p.root.nextSibling !== before) ui.prompts.insertBefore(p.root, before);
      }
      before = p.root;
    }
    updateOpenCount();
  }

  function updateOpenCount() {
    const n = state.prompts.size;
    ui.openCount.textContent = String(n);
    ui.openEmpty.hidden = n > 0;
    ui.open.classList.toggle('has-open', n > 0);
    updateTitle();
  }

  // ---- background tab: title badge and notifications --------------------------

  // updateTitle prefixes the title with "(n) " while n questions that
  // arrived with the tab in the background are open and unseen; once the
  // tab is visible again the title is plain.
  function updateTitle() {
    const n = state.unseen.size;
    document.title = (n > 0 ? `(${n}) ` : '') + page('WebTitle');
  }

  // arrivedUnseen counts a new question that arrived while the tab is in
  // the background, and shows a browser notification of it when this
  // browser opted in and allows them.
  function arrivedUnseen(q) {
    if (!document.hidden) return;
    state.unseen.add(q.id);
    updateTitle();
    const N = window.Notification;
    if (!N || N.permission !== 'granted' || !notifyWanted()) return;
    const tag = localeOf(q);
    try {
      const n = new N(stripColon(q.intro) || page('WebTitle'), { body: summary(q), tag: 'askbridge:' + q.id, lang: tag });
      n.onclick = () => {
        window.focus();
        n.close();
      };
    } catch {
      // Some browsers (Chrome on Android) show notifications only from a
      // service worker: the title badge still says it.
    }
  }

  document.addEventListener('visibilitychange', () => {
    if (document.hidden) return;
    state.unseen.clear();
    updateTitle();
  });

  // notifyOverride is an opt-in kept in memory where storage is off.
  let notifyOverride = false;

  function notifyWanted() {
    if (notifyOverride) return true;
    try {
      return localStorage.getItem(NOTIFY_KEY) === '1';
    } catch {
      return false;
    }
  }

  // drawNotify words the "Notify me" button as the browser's permission
  // and this browser's choice stand: Notify me (not asked yet, or turned
  // off here), Notifications on (pressed: a click turns them off here),
  // Notifications blocked (the browser refuses: nothing to click). Without
  // notifications in the browser there is no button.
  function drawNotify() {
    const N = window.Notification;
    ui.notify.hidden = !N;
    if (!N) return;
    const on = N.permission === 'granted' && notifyWanted();
    const blocked = N.permission === 'denied';
    ui.notify.dataset.state = blocked ? 'blocked' : (on ? 'on' : 'off');
    ui.notify.setAttribute('aria-pressed', on ? 'true' : 'false');
    ui.notify.disabled = blocked;
    ui.notify.textContent = page(blocked ? 'WebNotifyBlocked' : (on ? 'WebNotifyOn' : 'WebNotifyMe'));
    ui.notify.title = page(blocked ? 'WebNotifyBlockedHint' : 'WebNotifyHint');
  }

  ui.notify.addEventListener('click', async () => {
    const N = window.Notification;
    if (!N) return;
    if (N.permission === 'granted' && notifyWanted()) {
      notifyOverride = false;
      try {
        localStorage.removeItem(NOTIFY_KEY);
      } catch {
        // Storage is off: nothing was kept.
      }
      drawNotify();
      return;
    }
    let answer = N.permission;
    if (answer !== 'granted') {
      try {
        // Older browsers take a callback and return nothing.
        answer = await new Promise((resolve) => {
          const p = N.requestPermission(resolve);
          if (p && p.then) p.then(resolve, () => resolve(N.permission));
        });
      } catch {
        answer = N.permission;
      }
    }
    if (answer === 'granted') {
      try {
        localStorage.setItem(NOTIFY_KEY, '1');
      } catch {
        // Storage is off: notifications last as long as the page.
        notifyOverride = true;
      }
    }
    drawNotify();
  });

  // closePrompt takes a prompt off the panel. With an outcome it leaves a
  // provisional timeline entry until the server's entry arrives.
  function closePrompt(p, outcome, status, elsewhere) {
    state.closed.add(p.q.id);
    state.prompts.delete(p.q.id);
    state.unseen.delete(p.q.id);
    p.root.remove();
    updateOpenCount();
    if (outcome) {
      state.provisional.set(p.q.id, p.entry(outcome, status, elsewhere));
      renderTimeline();
      if (elsewhere) {
        const tag = localeOf(p.q);
        announce(say(tag, 'WebEndedAnnounce', { status: status || say(tag, STATUS_WORD[outcome] || 'StatusExpired'), question: p.q.questions[0].question }));
      }
    }
  }

  let promptSeq = 0;

  // Prompt is one open question on the panel, with its answers so far.
  class Prompt {
    constructor(q) {
      this.q = q;
      this.uid = 'p' + (++promptSeq);
      this.step = 0;
      this.answers = q.questions.map(() => ({ picked: [], other: '' }));
      this.sending = false;
      this.lang = localeOf(q);
      this.root = el('article', {
        class: 'prompt fresh', 'data-testid': 'prompt', 'data-id': q.id, 'data-state': 'pending',
        'aria-label': stripColon(q.intro), lang: this.lang,
      });
      this.remaining = el('span', { class: 'remaining', 'data-testid': 'remaining' });
      this.reminders = el('span', { class: 'reminders', 'data-testid': 'reminders', hidden: true });
      this.root.append(el('header', { class: 'prompt-head' },
        el('span', { class: 'intro', 'data-testid': 'prompt-intro' }, stripColon(q.intro)),
        el('span', { class: 'head-side' }, this.reminders, this.remaining)));
      if (q.contextHTML) this.root.append(contextBlock(q.contextHTML));
      this.reach = el('div', { class: 'reach', 'data-testid': 'reach' });
      this.root.append(this.reach);
      this.seeing = false;
      this.stepper = el('div', { class: 'stepper', 'data-testid': 'stepper' });
      this.body = el('div', { class: 'prompt-body' });
      this.error = el('p', { class: 'error', role: 'alert', 'data-testid': 'prompt-error', hidden: true });
      this.foot = el('footer', { class: 'prompt-foot' });
      if (this.several) this.root.append(this.stepper);
      this.root.append(this.body, this.error, this.foot);
      this.tick();
      this.drawReach();
      this.draw();
    }

    // update takes the question as listed again: what reaching people
    // changes (other places, notes, Seen, reminders) is drawn again, and
    // the answers in progress stay.
    update(q) {
      const before = reachKey(this.q);
      const wasLocked = this.locked;
      this.q = q;
      if (reachKey(q) !== before) this.drawReach();
      if (this.locked !== wasLocked && !this.sending) this.draw();
    }

    // locked is true once the page has voted on this quorum question
    // (ask-user.md §6): its first vote stands, so the answer controls are
    // disabled, and an attempt says so.
    get locked() {
      return !!(this.q.quorum && (this.q.voted || this.votedHere));
    }

    // refuseLocked shows why a locked card takes no answer; it reports
    // whether the card is locked.
    refuseLocked() {
      if (!this.locked) return false;
      this.showError(this.say('NoticeAlreadyVoted'));
      return true;
    }

    // drawReach draws what reaching people adds to the card (ask-user.md
    // §5): the reminders badge, the other places it is open in, the notes
    // (why an escalation step brought it here, who has seen it), what
    // happened while it was open, and the Seen button while the question
    // offers Seen and nobody has seen it.
    drawReach() {
      const q = this.q;
      const n = q.reminders || 0;
      this.reminders.hidden = n === 0;
      this.reminders.dataset.count = String(n);
      this.reminders.textContent = n === 1 ? this.say('WebRemindedOnce') : this.say('WebRemindedTimes', { n });
      if (q.seenBy) this.root.dataset.seen = q.seenBy;
      else delete this.root.dataset.seen;
      const places = (q.places || []).map((p) => placeName(p, this.lang));
      const parts = [];
      if (places.length) parts.push(el('p', { class: 'places', 'data-testid': 'places' }, this.say('WebAlsoOpenIn', { places: places.join(this.say('ListSeparator')) })));
      if (q.notes && q.notes.length) parts.push(el('ul', { class: 'notes', 'data-testid': 'notes' }, ...q.notes.map((t) => el('li', { 'data-testid': 'note' }, t))));
      if (q.quorum) parts.push(this.quorumBlock());
      parts.push(activityList(q.id, this.lang));
      if (q.offersSeen && !q.seenBy && q.mayAnswer !== false) {
        parts.push(el('button', {
          type: 'button', class: 'secondary seen', 'data-testid': 'seen', title: this.say('WebSeenHint'),
          disabled: this.seeing || this.sending || state.down, onclick: (e) => this.seen(e.currentTarget),
        }, this.say('ButtonSeen')));
      }
      this.reach.replaceChildren(...parts.filter((c) => c));
    }

    // quorumBlock is what a quorum question's card shows of its vote
    // (ask-user.md §6): the tally line, who has voted (names only), and
    // the page's own vote once it has voted.
    quorumBlock() {
      const q = this.q;
      if (this.locked) this.root.dataset.voted = 'true';
      else delete this.root.dataset.voted;
      const voters = q.voters || [];
      let mine = null;
      if (q.myVote) {
        mine = q.myVote.skipped
          ? el('p', { class: 'my-vote', 'data-testid': 'my-vote' }, this.say('WebYouAbstained'))
          : el('p', { class: 'my-vote', 'data-testid': 'my-vote' }, ...this.splitField('WebYouVoted', 'answer', answerText(el('span', { class: 'vote-answer' }), q.myVote.answers, this.lang)));
      }
      return el('div', { class: 'quorum', 'data-testid': 'quorum' },
        q.tallyLine ? el('p', { class: 'tally', 'data-testid': 'tally' }, q.tallyLine) : null,
        voters.length ? el('p', { class: 'voters', 'data-testid': 'voters' }, this.say('WebVotedBy', { names: voters.join(this.say('ListSeparator')) })) : null,
        mine);
    }

    // splitField is message id of this card's language with its {field}
    // replaced by node: the text around it, and the node, as children.
    splitField(id, field, node) {
      const mark = '\u0000';
      const [before, after] = this.say(id, { [field]: mark }).split(mark);
      return [before, node, after || ''];
    }

    get several() {
      return this.q.questions.length > 1;
    }

    // say is a word of this question's card, in the question's language.
    say(id, fields) {
      return say(this.lang, id, fields);
    }

    tick() {
      const left = this.q.deadline - serverNow();
      this.remaining.textContent = formatLeft(left, this.lang);
      this.remaining.classList.toggle('urgent', left < 60000);
      this.remaining.title = this.say('WebEndsAt', { time: new Date(this.q.deadline - state.offset).toLocaleTimeString() });
    }

    values(i) {
      const q = this.q.questions[i];
      const a = this.answers[i];
      const other = a.other.trim();
      if (q.multiSelect) return other ? a.picked.concat([other]) : a.picked.slice();
      return other ? [other] : a.picked.slice(0, 1);
    }

    // last is the last step: the review of a prompt with several
    // questions (one past its last question), else its one question.
    get last() {
      return this.several ? this.q.questions.length : 0;
    }

    // reviewing is true on the review step.
    get reviewing() {
      return this.several && this.step === this.q.questions.length;
    }

    // label is how this card shows an option's label: the text without a
    // recommended suffix, and a badge when it had one.
    label(text) {
      const o = optionText(text);
      return el('span', { class: 'label' }, o.text,
        o.recommended ? el('span', { class: 'rec', 'data-testid': 'recommended' }, this.say('WebRecommended')) : null);
    }

    // draw renders the current step: stepper, then the question and its
    // controls, or the review of every answer.
    draw() {
      const n = this.q.questions.length;
      this.root.dataset.step = String(this.step);
      if (this.reviewing) this.root.dataset.review = 'true';
      else delete this.root.dataset.review;
      const hadFocus = this.root.contains(document.activeElement);
      if (this.several) this.drawStepper();
      if (this.reviewing) this.drawReview();
      else this.drawQuestion();

      const foot = [];
      if (this.q.mayAnswer !== false) {
        const q = this.q.questions[Math.min(this.step, n - 1)];
        foot.push(el('button', { type: 'button', class: 'quiet', 'data-testid': 'skip', onclick: () => this.skip(), title: this.say('WebSkipHint') }, this.say('ButtonSkip')));
        foot.push(el('span', { class: 'spacer' }));
        if (this.several) {
          foot.push(el('button', { type: 'button', class: 'secondary', 'data-testid': 'back', disabled: this.step === 0, onclick: () => this.go(this.step - 1) }, this.say('WebBack')));
          if (this.reviewing) {
            foot.push(el('button', { type: 'button', class: 'primary', 'data-testid': 'submit', onclick: () => this.submit() }, this.say('WebSubmit')));
          } else if (this.step < n - 1 && !this.editing) {
            foot.push(el('button', { type: 'button', class: 'primary', 'data-testid': 'next', onclick: () => this.next() }, this.say('WebNext')));
          } else {
            foot.push(el('button', { type: 'button', class: 'primary', 'data-testid': 'to-review', onclick: () => this.next() }, this.say('WebReview')));
          }
        } else if (q.multiSelect) {
          foot.push(el('button', { type: 'button', class: 'primary', 'data-testid': 'submit', onclick: () => this.submit() }, this.say('WebSubmit')));
        }
      }
      this.foot.replaceChildren(...foot);
      this.setSending(this.sending);
      this.lock();
      if (hadFocus) {
        const first = this.reviewing ? this.foot.querySelector('[data-testid=submit]') : this.body.querySelector('.option, input');
        if (first && !first.disabled) first.focus();
      }
    }

    // drawStepper draws the steps of a prompt with several questions: one
    // button per question, and the review.
    drawStepper() {
      const n = this.q.questions.length;
      const steps = this.q.questions.map((sq, i) => el('li', {},
        el('button', {
          type: 'button', class: 'step' + (this.values(i).length ? ' done' : ''), 'data-testid': 'step',
          'aria-current': i === this.step ? 'step' : null,
          'aria-label': this.say('WebStepLabel', { n: i + 1, header: sq.header }) + (this.values(i).length ? ' ' + this.say('WebStepDone') : ''),
          onclick: () => this.go(i),
        }, sq.header)));
      if (this.q.mayAnswer !== false) {
        steps.push(el('li', {}, el('button', {
          type: 'button', class: 'step review-step', 'data-testid': 'step-review',
          'aria-current': this.reviewing ? 'step' : null, onclick: () => this.go(n),
        }, this.say('WebReview'))));
      }
      this.stepper.replaceChildren(
        el('span', { class: 'step-count', 'data-testid': 'step-count' }, `${Math.min(this.step + 1, n)} / ${n}`),
        el('ol', { class: 'steps' }, ...steps));
    }

    // drawQuestion draws the question of the current step and its
    // controls.
    drawQuestion() {
      const q = this.q.questions[this.step];
      const a = this.answers[this.step];
      const n = this.q.questions.length;
      const one = !this.several;
      const uid = this.uid + '-' + this.step;

      const textId = uid + '-q';
      const options = el('div', { class: 'options', role: 'group', 'aria-labelledby': textId });
      q.options.forEach((o) => {
        const label = this.label(o.label);
        const desc = o.description ? el('span', { class: 'desc' }, o.description) : null;
        const rec = optionText(o.label).recommended;
        if (q.multiSelect) {
          const box = el('input', { type: 'checkbox', value: o.label, 'data-testid': 'option-check' });
          box.checked = a.picked.includes(o.label);
          const wrap = el('label', {
            class: 'option check' + (box.checked ? ' checked' : '') + (rec ? ' recommended' : ''),
            'data-testid': 'option', 'data-label': o.label, 'data-recommended': rec ? 'true' : null,
          }, box, el('span', { class: 'text' }, label, desc));
          box.addEventListener('click', (e) => {
            if (this.refuseLocked()) e.preventDefault();
          });
          box.addEventListener('change', () => {
            this.toggle(o.label, box.checked);
            wrap.classList.toggle('checked', box.checked);
          });
          options.append(wrap);
        } else {
          options.append(el('button', {
            type: 'button', class: 'option' + (rec ? ' recommended' : ''), 'data-testid': 'option', 'data-label': o.label,
            'data-recommended': rec ? 'true' : null,
            'aria-pressed': a.picked.includes(o.label) && !a.other.trim() ? 'true' : 'false',
            onclick: () => this.pick(o.label),
          }, label, desc));
        }
      });

      const otherId = uid + '-other';
      const input = el('input', {
        id: otherId, type: 'text', class: 'other-input', 'data-testid': 'other-input', maxlength: '2000',
        autocomplete: 'off', placeholder: this.say('WebOtherPlaceholder'),
      });
      input.value = a.other;
      input.addEventListener('input', () => {
        a.other = input.value;
        if (!q.multiSelect && input.value.trim()) {
          for (const b of options.querySelectorAll('[aria-pressed="true"]')) b.setAttribute('aria-pressed', 'false');
        }
        this.markSteps();
        this.filled();
      });
      input.addEventListener('keydown', (e) => {
        if (e.key !== 'Enter' || e.isComposing) return;
        e.preventDefault();
        if (one && !q.multiSelect) this.sendOther();
        else if (this.several) this.next();
        else this.submit();
      });
      const otherRow = el('div', { class: 'other-row' }, input);
      if (one && !q.multiSelect) {
        otherRow.append(el('button', { type: 'button', class: 'secondary', 'data-testid': 'other-submit', onclick: () => this.sendOther() }, this.say('WebSend')));
      }

      const hint = q.multiSelect ? this.say('WebChooseMany') : (n > 1 ? this.say('WebChooseOne') : null);
      this.body.replaceChildren(el('div', { class: 'question', 'data-testid': 'question', 'data-qid': q.id },
        el('div', { class: 'q-head' },
          el('span', { class: 'chip', 'data-testid': 'question-header' }, q.header),
          hint ? el('span', { class: 'hint' }, hint) : null),
        el('p', { class: 'q-text', id: textId, 'data-testid': 'question-text' }, q.question),
        this.q.mayAnswer === false
          ? el('p', { class: 'note' }, this.say('WebNotForPage'))
          : options,
        this.q.mayAnswer === false ? null : el('div', { class: 'other' },
          el('label', { for: otherId }, this.say('WebOtherLabel')),
          otherRow)));
    }

    // drawReview lists every question of the prompt with the answer
    // chosen, each with a button back to it; Submit sends them all.
    drawReview() {
      const sep = this.say('ListSeparator');
      const items = this.q.questions.map((sq, i) => {
        const vals = this.values(i);
        const labels = sq.options.map((o) => o.label);
        const answer = el('span', { class: 'review-a' + (vals.length ? '' : ' none'), 'data-testid': 'review-answer' });
        if (!vals.length) answer.append(this.say('WebNoAnswerYet'));
        vals.forEach((v, k) => {
          if (k > 0) answer.append(sep);
          answer.append(labels.includes(v) ? optionText(v).text : el('span', { class: 'own mine' }, v));
        });
        return el('li', { class: 'review-item', 'data-testid': 'review-item', 'data-qid': sq.id, 'data-answered': vals.length ? 'true' : 'false' },
          el('span', { class: 'chip' }, sq.header),
          el('span', { class: 'review-main' },
            el('span', { class: 'review-q' }, sq.question),
            answer),
          el('button', {
            type: 'button', class: 'secondary review-edit', 'data-testid': 'review-edit',
            'aria-label': this.say('WebChangeLabel', { header: sq.header }), onclick: () => this.edit(i),
          }, this.say('WebChange')));
      });
      this.body.replaceChildren(el('div', { class: 'review', 'data-testid': 'review' },
        el('p', { class: 'q-text', 'data-testid': 'review-title' }, this.say('WebReviewTitle')),
        el('p', { class: 'hint review-hint' }, this.say('WebReviewHint')),
        el('ol', { class: 'review-list' }, ...items)));
    }

    // lock marks the answer controls disabled while the card is locked:
    // aria-disabled, not disabled, so an attempt still reaches the card,
    // which says why nothing happens (refuseLocked).
    lock() {
      const on = this.locked;
      this.root.classList.toggle('locked', on);
      for (const c of [...this.body.querySelectorAll('button, input, label.option'), ...this.foot.querySelectorAll('button')]) {
        if (NAVIGATION.has(c.dataset.testid)) continue;
        if (on) c.setAttribute('aria-disabled', 'true');
        else c.removeAttribute('aria-disabled');
        if (c.tagName === 'INPUT' && c.type === 'text') c.readOnly = on;
      }
    }

    markSteps() {
      this.stepper.querySelectorAll('[data-testid=step]').forEach((b, i) => b.classList.toggle('done', this.values(i).length > 0));
    }

    // go shows step i: a question, or (i = the number of questions) the
    // review.
    go(i) {
      if (i < 0 || i > this.last || this.sending) return;
      this.step = i;
      if (this.reviewing) this.editing = false;
      this.showError('');
      this.draw();
    }

    // edit goes back from the review to question i: once it is answered
    // again, the card returns to the review.
    edit(i) {
      this.editing = true;
      this.go(i);
    }

    // next moves on from an answered question: to the next one, or to the
    // review after the last one (or after one changed from the review).
    next() {
      if (this.reviewing) return;
      if (!this.values(this.step).length && !this.locked) {
        this.showError(this.say('WebNeedAnswer'), true);
        return;
      }
      this.go(this.editing || this.step === this.q.questions.length - 1 ? this.last : this.step + 1);
    }

    pick(label) {
      if (this.sending || this.refuseLocked()) return;
      const a = this.answers[this.step];
      a.picked = [label];
      a.other = '';
      this.showError('');
      if (!this.several) {
        this.submit();
        return;
      }
      this.next();
    }

    toggle(label, on) {
      const a = this.answers[this.step];
      a.picked = a.picked.filter((l) => l !== label);
      if (on) {
        // Keep the declared order of the options.
        const order = this.q.questions[this.step].options.map((o) => o.label);
        a.picked.push(label);
        a.picked.sort((x, y) => order.indexOf(x) - order.indexOf(y));
      }
      this.markSteps();
      this.filled();
    }

    // filled takes back a hint that the question shown needs an answer
    // once it has one (an option chosen, or text typed).
    filled() {
      if (this.needError && !this.reviewing && this.values(this.step).length) this.showError('');
    }

    sendOther() {
      if (this.refuseLocked()) return;
      if (!this.answers[this.step].other.trim()) {
        this.showError(this.say('WebNeedText'), true);
        return;
      }
      this.submit();
    }

    // submit sends the answers: of a prompt with several questions, only
    // from its review (anywhere else it moves on towards it).
    submit() {
      if (this.refuseLocked()) return;
      if (this.several && !this.reviewing) {
        this.next();
        return;
      }
      const missing = this.q.questions.findIndex((_, i) => this.values(i).length === 0);
      if (missing >= 0) {
        if (this.several) this.edit(missing);
        this.showError(this.several
          ? this.say('WebNeedAnswerTo', { header: this.q.questions[missing].header })
          : this.say('WebNeedAnswer'), true);
        return;
      }
      const answers = {};
      this.q.questions.forEach((q, i) => { answers[q.id] = this.values(i); });
      this.send({ answers });
    }

    skip() {
      if (this.refuseLocked()) return;
      this.send({ skip: true });
    }

    async send(body) {
      if (this.sending) return;
      if (state.down) {
        this.showError(this.say('WebSendFailed'));
        return;
      }
      this.setSending(true);
      this.showError('');
      const id = this.q.id;
      let res;
      let data;
      try {
        res = await api('api/questions/' + encodeURIComponent(id) + '/answer', { method: 'POST', body: JSON.stringify(body) });
        data = await readJSON(res);
      } catch (e) {
        this.setSending(false);
        if (!(e instanceof Unauthorized)) this.showError(this.say('WebSendFailed'));
        return;
      }
      // The server words its notice and status line in the question's
      // language; the page decides by status code, outcome and notice
      // codes alone.
      if ((res.ok || res.status === 409) && data.open) {
        // A quorum question (ask-user.md §6) stays open: this vote was
        // counted (Voted, Abstained), or the page had voted before
        // (AlreadyVoted). Either way the page's first vote stands: the
        // card locks, and the list says the tally and the vote.
        state.mine.add(id);
        this.votedHere = true;
        this.setSending(false);
        this.draw();
        this.drawReach();
        if (res.ok) notice(this.say('WebNoticeAbout', { notice: data.message || '', question: summary(this.q) }), null, id, this.lang, data.notice);
        else this.showError(data.message || this.say('NoticeAlreadyVoted'));
        refreshQuestions();
        return;
      }
      if (res.ok) {
        state.mine.add(id);
        this.sent = body;
        // This answer ended the question: its free text is the answer,
        // which this browser keeps to show on the timeline entry.
        if (body.answers && data.outcome === 'answered') keepOwnWords(id, this.q, body.answers);
        if (data.result && data.result.answers) this.final = data.result.answers.answers;
        closePrompt(this, data.outcome, data.status, false);
        notice(this.say('WebNoticeAbout', { notice: data.message || this.say(STATUS_WORD[data.outcome] || 'StatusAnswered'), question: summary(this.q) }), data.outcome, id, this.lang);
        awaitHistory(id);
        return;
      }
      if (res.status === 409) {
        closePrompt(this, data.outcome, data.status, true);
        notice(data.message || this.say('WebNoLongerOpen'), data.outcome, id, this.lang);
        awaitHistory(id);
        return;
      }
      if (res.status === 404) {
        closePrompt(this, null, null, true);
        notice(this.say('WebNoLongerOpen'), 'expired', id, this.lang);
        awaitHistory(id);
        return;
      }
      this.setSending(false);
      if (res.status === 403 && data.notice && data.error) this.showError(data.error);
      else if (res.status === 400) this.showError(this.say('WebAnswerRefused'));
      else this.showError(this.say('WebTryAgain'));
    }

    // seen marks the question as seen by the page (POST …/seen): it stays
    // open; the card shows who has seen it once the list is read again.
    // The server words its notice in the question's language.
    async seen(button) {
      if (this.seeing || this.sending || state.down) return;
      this.seeing = true;
      button.disabled = true;
      this.showError('');
      const id = this.q.id;
      let res;
      let data;
      try {
        res = await api('api/questions/' + encodeURIComponent(id) + '/seen', { method: 'POST', body: '{}' });
        data = await readJSON(res);
      } catch (e) {
        this.seeing = false;
        this.applyDisabled();
        if (!(e instanceof Unauthorized)) this.showError(this.say('WebSendFailed'));
        return;
      }
      this.seeing = false;
      if (res.status === 409 && data.outcome) {
        closePrompt(this, data.outcome, data.status, true);
        notice(data.message || this.say('WebNoLongerOpen'), data.outcome, id, this.lang);
        awaitHistory(id);
        return;
      }
      if (res.status === 404) {
        closePrompt(this, null, null, true);
        notice(this.say('WebNoLongerOpen'), 'expired', id, this.lang);
        awaitHistory(id);
        return;
      }
      if (res.ok || res.status === 409) {
        notice(this.say('WebNoticeAbout', { notice: data.message || '', question: summary(this.q) }), null, id, this.lang, data.notice);
        refreshQuestions();
        return;
      }
      this.applyDisabled();
      if (res.status === 403 && data.notice && data.error) this.showError(data.error);
      else this.showError(this.say('WebTryAgain'));
    }

    setSending(on) {
      this.sending = on;
      this.root.dataset.state = on ? 'sending' : 'pending';
      this.root.setAttribute('aria-busy', on ? 'true' : 'false');
      this.applyDisabled();
    }

    // applyDisabled disables the card's controls: all of them while its
    // answer is on its way; every button and checkbox that answers (not
    // the text box, nor moving between questions) while the bridge cannot
    // be reached; Back on the first question; Seen while it is sent.
    applyDisabled() {
      for (const c of this.root.querySelectorAll('button, input')) {
        const t = c.dataset.testid;
        const text = c.tagName === 'INPUT' && c.type === 'text';
        c.disabled = this.sending || (state.down && !text && !NAVIGATION.has(t)) ||
          (t === 'back' && this.step === 0) || (t === 'seen' && this.seeing);
      }
    }

    // showError shows why nothing was sent, or hides it (msg empty). need
    // marks a hint that the question shown needs an answer: it goes as
    // soon as the question has one.
    showError(msg, need) {
      this.error.textContent = msg;
      this.error.hidden = !msg;
      this.needError = !!(msg && need);
      const input = this.body.querySelector('[data-testid=other-input]');
      if (input) {
        if (this.needError) input.setAttribute('aria-invalid', 'true');
        else input.removeAttribute('aria-invalid');
      }
    }

    // entry is the timeline entry shown until the server's arrives. Like
    // every channel, it names declared labels and never echoes free text.
    // A quorum question's answer is the one agreed, which the page's
    // reply carries when its vote decided it (final); else the server's
    // entry says it.
    entry(outcome, status, elsewhere) {
      const mine = !elsewhere && outcome === 'answered' && (this.q.quorum ? this.final : this.sent && this.sent.answers);
      return {
        id: this.q.id,
        agent: this.q.agent,
        locale: this.lang,
        intro: this.q.intro,
        contextHTML: this.q.contextHTML,
        outcome,
        status: status || this.say(STATUS_WORD[outcome] || 'StatusExpired'),
        at: serverNow(),
        elsewhere,
        provisional: true,
        sections: this.q.questions.map((q, i) => {
          const vals = !mine ? [] : (this.q.quorum ? this.final[q.id] || [] : this.values(i));
          const labels = q.options.map((o) => o.label);
          return {
            header: q.header,
            question: q.question,
            answer: vals.filter((v) => labels.includes(v)),
            ownWords: vals.some((v) => !labels.includes(v)),
          };
        }),
      };
    }
  }

  // ---- the page's own words ----------------------------------------------------

  // The bridge keeps no free text in its timeline (ask-user.md §3, "After
  // the end": "own words" only). The words this page answered with are
  // kept in this browser alone, by question id, and shown on that
  // question's timeline entry here; nothing sends them anywhere. own is
  // id -> {at, words: [[text…] per question of the prompt]}, read once and
  // again when another tab changes it.
  let own = null;

  function ownAll() {
    if (own) return own;
    own = {};
    try {
      const m = JSON.parse(localStorage.getItem(OWN_KEY) || '{}');
      if (m && typeof m === 'object' && !Array.isArray(m)) own = m;
    } catch {
      // Storage is off or holds something else: nothing kept.
    }
    return own;
  }

  // ownWordsOf is the free text this browser answered question id with,
  // per question of the prompt, or null.
  function ownWordsOf(id) {
    const o = ownAll()[id];
    return o && Array.isArray(o.words) ? o.words : null;
  }

  // keepOwnWords keeps the free text of the page's answer to q (answers by
  // question id), when it has any: the newest MAX_OWN questions' words,
  // for OWN_DAYS.
  function keepOwnWords(id, q, answers) {
    const words = q.questions.map((sq) => (answers[sq.id] || []).filter((v) => !sq.options.some((o) => o.label === v)));
    if (!words.some((w) => w.length)) return;
    const all = ownAll();
    const now = Date.now();
    all[id] = { at: now, words };
    const keep = Object.keys(all)
      .filter((k) => all[k] && all[k].at > now - OWN_DAYS * 86400000)
      .sort((a, b) => all[b].at - all[a].at)
      .slice(0, MAX_OWN);
    own = {};
    for (const k of keep) own[k] = all[k];
    try {
      localStorage.setItem(OWN_KEY, JSON.stringify(own));
    } catch {
      // Storage is off or full: the words last as long as the page.
    }
  }

  window.addEventListener('storage', (e) => {
    if (e.key !== OWN_KEY) return;
    own = null;
    renderTimeline();
  });

  // ---- timeline --------------------------------------------------------------

  let historyBusy = false;
  let historyAgain = false;

  async function refreshHistory() {
    if (state.needToken) return;
    if (historyBusy) {
      historyAgain = true;
      return;
    }
    historyBusy = true;
    try {
      do {
        historyAgain = false;
        const res = await api('api/history?limit=100');
        if (!res.ok) throw new Error('status ' + res.status);
        const data = await res.json();
        state.history = data.entries || [];
        for (const e of state.history) state.provisional.delete(e.id);
        state.loaded.history = true;
        renderTimeline();
        markReady();
      } while (historyAgain);
    } catch (e) {
      if (!(e instanceof Unauthorized)) setConnection('reconnecting', 'WebUnreachable');
    } finally {
      historyBusy = false;
    }
  }

  // awaitHistory reloads the timeline until it holds id: the engine writes
  // the entry just after it publishes the end, possibly on another replica.
  function awaitHistory(id) {
    const delays = [0, 250, 600, 1200, 2500, 5000];
    let i = 0;
    const attempt = async () => {
      await refreshHistory();
      if (state.history.some((e) => e.id === id)) return;
      i++;
      if (i < delays.length) setTimeout(attempt, delays[i]);
    };
    setTimeout(attempt, delays[0]);
  }

  // rendered keeps each entry's element with what it was drawn from, so a
  // reload of the timeline touches only what changed.
  const rendered = new Map(); // id -> { key, node }

  function renderTimeline() {
    const known = new Set(state.history.map((e) => e.id));
    const entries = state.history.slice();
    for (const [id, e] of state.provisional) if (!known.has(id)) entries.push(e);
    entries.sort((a, b) => (b.at || 0) - (a.at || 0));
    const keep = new Set();
    entries.forEach((e, i) => {
      const elsewhere = !!(e.elsewhere || (state.shown.has(e.id) && !state.mine.has(e.id) && (e.outcome === 'answered' || e.outcome === 'skipped')));
      const key = JSON.stringify([e, elsewhere, state.activity.get(e.id) || [], state.seenBy.get(e.id) || '', ownWordsOf(e.id), offerOpen(e)]);
      let r = rendered.get(e.id);
      if (!r || r.key !== key) {
        const node = renderEntry(e, elsewhere);
        if (r) r.node.replaceWith(node);
        r = { key, node };
        rendered.set(e.id, r);
      }
      keep.add(e.id);
      const at = ui.timeline.children[i];
      if (at !== r.node) ui.timeline.insertBefore(r.node, at || null);
    });
    for (const [id, r] of rendered) {
      if (!keep.has(id)) {
        r.node.remove();
        rendered.delete(id);
      }
    }
    ui.historyEmpty.hidden = entries.length > 0;
  }

  // renderEntry draws an ended question as it stays on the page: the
  // question (intro, context, questions) with its status line and the
  // answers, in the question's language, and nothing to answer with.
  function renderEntry(e, elsewhere) {
    const outcome = ENDS.has(e.outcome) ? e.outcome : 'expired';
    const tag = localeOf(e);
    const w = (id, fields) => say(tag, id, fields);
    const li = el('li', {
      class: 'entry', 'data-testid': 'history-entry', 'data-id': e.id, 'data-outcome': outcome,
      'data-elsewhere': elsewhere ? 'true' : null, 'data-provisional': e.provisional ? 'true' : null, lang: tag,
    });
    const head = el('div', { class: 'entry-head' },
      el('span', { class: 'badge ' + outcome, 'data-testid': 'entry-status' }, e.status || w(STATUS_WORD[outcome])),
      el('span', { class: 'entry-intro' }, stripColon(e.intro)),
      elsewhere ? el('span', { class: 'entry-where' }, w('WebElsewhere')) : null,
      e.at ? el('time', { class: 'entry-time', datetime: new Date(e.at).toISOString() }, formatTime(e.at)) : null);
    li.append(head);
    if (e.contextHTML) {
      li.append(el('details', { class: 'entry-context' },
        el('summary', {}, w('WebContext')),
        contextBlock(e.contextHTML)));
    }
    const sep = w('ListSeparator');
    const qa = el('ul', { class: 'qa' });
    const mine = ownWordsOf(e.id);
    (e.sections || []).forEach((s, i) => {
      const answer = el('span', { class: 'qa-a', 'data-testid': 'entry-answer' });
      const labels = s.answer || [];
      if (labels.length) answer.append(labels.join(sep));
      if (s.ownWords) {
        if (labels.length) answer.append(sep);
        // The page's own words, as this browser kept them; "own words"
        // for anyone else's, or where this browser kept none.
        const texts = mine && Array.isArray(mine[i]) ? mine[i].filter((t) => typeof t === 'string' && t) : [];
        answer.append(texts.length
          ? el('span', { class: 'own mine', 'data-testid': 'own-words', title: w('WebOwnAnswerLocal') }, texts.join(sep))
          : el('span', { class: 'own', title: w('WebOwnAnswerHint') }, w('WebOwnAnswer')));
      }
      if (!labels.length && !s.ownWords) {
        answer.classList.add('none');
        answer.append(outcome === 'answered' ? w('StatusAnswered') : w('WebNoAnswer'));
      }
      qa.append(el('li', {},
        el('span', { class: 'chip' }, s.header),
        el('span', { class: 'qa-line' },
          el('span', { class: 'qa-q' }, s.question),
          el('span', { class: 'qa-arrow', 'aria-hidden': 'true' }, ' → '),
          el('span', { class: 'visually-hidden' }, w('WebAnswerPrefix')),
          answer)));
    });
    li.append(qa);
    if (e.votes && e.votes.length) {
      li.append(el('div', { class: 'entry-votes', 'data-testid': 'entry-votes' },
        el('span', { class: 'votes-title' }, w('WebVotesTitle')),
        el('ul', { class: 'votes' }, ...e.votes.map((v) => el('li', { 'data-testid': 'entry-vote', 'data-by': v.by },
          el('span', { class: 'vote-by' }, v.by),
          el('span', { class: 'qa-arrow', 'aria-hidden': 'true' }, ' → '),
          v.skipped
            ? el('span', { class: 'vote-answer none', 'data-testid': 'entry-vote-answer' }, w('WebVoteAbstained'))
            : answerText(el('span', { class: 'vote-answer', 'data-testid': 'entry-vote-answer' }), v.answers, tag))))));
    }
    const activity = activityList(e.id, tag);
    if (activity) li.append(activity);
    if (offerOpen(e)) li.append(offerBox(e, tag));
    return li;
  }

  // ---- standing answers (ask-user.md §9) -------------------------------------

  // offerOpen reports whether entry e still offers to keep its answer: the
  // offer closes at its until (on the server's clock), when the timeline
  // is drawn again.
  function offerOpen(e) {
    return !!(e.offer && e.offer.until > serverNow());
  }

  // offerBox holds the keep buttons under an ended question the page
  // answered: one per offered duration, in the question's words.
  function offerBox(e, tag) {
    setTimeout(renderTimeline, Math.max(0, e.offer.until - Date.now() - state.offset) + 50);
    const box = el('div', { class: 'offer', 'data-testid': 'entry-offer' });
    for (const k of e.offer.keep || []) {
      box.append(el('button', {
        type: 'button', class: 'quiet', 'data-testid': 'keep', 'data-index': String(k.index),
        onclick: (ev) => keepAnswer(e.id, k.index, tag, ev.currentTarget),
      }, k.label));
    }
    return box;
  }

  async function keepAnswer(id, index, tag, button) {
    button.disabled = true;
    try {
      const res = await api('api/questions/' + encodeURIComponent(id) + '/keep', { method: 'POST', body: JSON.stringify({ index }) });
      const out = await readJSON(res);
      notice(out.message || out.error || '', null, id, out.locale || tag, out.notice || 'error');
    } catch (e) {
      if (!(e instanceof Unauthorized)) notice(say(tag, 'WebUnreachable'), null, id, tag, 'error');
    } finally {
      button.disabled = false;
      refreshHistory();
      refreshStanding();
    }
  }

  async function refreshStanding() {
    if (state.needToken || !ui.standing) return;
    try {
      const res = await api('api/standing');
      if (!res.ok) throw new Error('status ' + res.status);
      const data = await res.json();
      state.standing = data.standing || [];
      renderStanding();
    } catch (e) {
      if (!(e instanceof Unauthorized)) setConnection('reconnecting', 'WebUnreachable');
    }
  }

  // renderStanding draws the standing answers: each as its message says
  // it, in its question's words, with a Revoke button where the page may
  // revoke it.
  function renderStanding() {
    ui.standing.replaceChildren(...state.standing.map((s) => {
      const tag = localeOf(s);
      return el('li', { class: 'standing', 'data-testid': 'standing-entry', 'data-agent': s.agent, 'data-key': s.key, lang: tag },
        el('span', { class: 'standing-text' }, s.text),
        s.mayRevoke ? el('button', {
          type: 'button', class: 'quiet', 'data-testid': 'revoke',
          onclick: (ev) => revokeStanding(s, tag, ev.currentTarget),
        }, say(tag, 'ButtonRevoke')) : null);
    }));
    // The panel shows only while something stands.
    ui.standingPanel.hidden = state.standing.length === 0;
  }

  async function revokeStanding(s, tag, button) {
    button.disabled = true;
    try {
      const res = await api('api/standing/revoke', { method: 'POST', body: JSON.stringify({ agent: s.agent, key: s.key }) });
      const out = await readJSON(res);
      notice(out.message || out.error || '', null, null, out.locale || tag, out.notice || 'error');
    } catch (e) {
      if (!(e instanceof Unauthorized)) notice(say(tag, 'WebUnreachable'), null, null, tag, 'error');
    } finally {
      button.disabled = false;
      refreshStanding();
    }
  }

  // contextBlock holds a question's context: HTML the server sanitised
  // (internal/markup allows only p, strong, em, code, pre, ul, ol, li, br
  // and http(s)/mailto links), from contextHTML and nothing else. Its
  // links open in a new tab that cannot reach back to this page.
  function contextBlock(html) {
    const box = el('div', { class: 'context', 'data-testid': 'context' });
    box.innerHTML = html;
    for (const a of box.querySelectorAll('a')) {
      a.target = '_blank';
      a.rel = 'noopener noreferrer nofollow';
    }
    return box;
  }

  // reachKey is what a card's reach part is drawn from (Prompt.drawReach),
  // to draw it again only when that changed.
  function reachKey(q) {
    return JSON.stringify([q.places, q.notes, q.seenBy, q.offersSeen, q.reminders, q.mayAnswer, q.tallyLine, q.voters, q.voted, q.myVote]);
  }

  // ---- startup ---------------------------------------------------------------

  function markReady() {
    if (state.loaded.questions && state.loaded.history) document.body.dataset.ready = '1';
  }

  function layout() {
    document.body.dataset.layout = NARROW.matches ? 'cards' : 'panel';
  }

  NARROW.addEventListener('change', layout);
  layout();
  takeTokenFromFragment();
  // Nothing is drawn before the words are here: every word comes from them.
  loadWords().then(() => {
    learnRecommended();
    applyPageWords();
    updateDown();
    renderTimeline();
    setInterval(() => {
      for (const p of state.prompts.values()) p.tick();
    }, 1000);
    refreshQuestions();
    refreshHistory();
    refreshStanding();
    connect();
  });
})();
