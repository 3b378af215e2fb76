// check.mjs drives `askbridge mcp` with the official TypeScript SDK client
// (@modelcontextprotocol/sdk: Client over StdioClientTransport), one
// scenario per run:
//
//   node check.mjs <scenario> -- <askbridge binary> mcp [flags…]
//
// The server is spawned with the ASKUSER_* variables of this process's
// environment (the SDK passes only a few safe ones by default). Every
// JSON-RPC message sent or received is logged on stderr ("jsonrpc -> …",
// "jsonrpc <- …"), with the server's own stderr.
//
// stdout carries JSON lines. A line with "step" says the scenario reached a
// point where the person (the Go test, main_test.go) acts on the web page;
// some steps then wait for one line on stdin before going on. The last line
// has "scenario" and "ok": what the client saw, and on failure "error". The
// exit status is 0 when every expectation held, 1 otherwise.
//
// The person's web answer is, by convention, the first option
// ("Staging (Recommended)"; with "Unit" and "Load" for the multi-select
// question of decline); the form's answer is the second ("Production").
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { isDeepStrictEqual } from 'node:util';
import readline from 'node:readline';

// The questions the scenarios ask.
const deployTarget = {
  id: 'deploy_target',
  header: 'Target',
  question: 'Where should this deploy?',
  options: [{ label: 'Staging (Recommended)', description: 'safe' }, { label: 'Production' }],
};
const checks = {
  id: 'checks',
  header: 'Checks',
  question: 'Which checks?',
  multiSelect: true,
  options: [{ label: 'Unit' }, { label: 'Lint' }, { label: 'Load' }],
};
// The person's own words in the form's free-text field.
const ownWords = 'Only after the release freeze';
// The answer the Go test gives on the web page.
const webAnswer = { deploy_target: ['Staging (Recommended)'], checks: ['Unit', 'Load'] };

// The short request timeout of the budget scenarios (ms): longer than the
// bridge-side budget the Go test sets (--max-wait 2s), far shorter than the
// SDK's default 60 s.
const shortTimeout = 4000;
// The bridge-side budget the Go test gives the budget scenarios (ms).
const budgetMs = 2000;
// The request timeout of a call that shows a form (ms): the form comes at
// once, and the person answers soon after; a server that shows none ends
// the scenario in this time instead of the SDK's 60 s.
const formTimeout = 30000;

// Failure ends a scenario with a failed expectation.
class Failure extends Error {}

function expect(cond, message) {
  if (!cond) throw new Failure(message);
}

function show(v) {
  return JSON.stringify(v);
}

// log writes one line on stderr, cut to a readable length.
function log(line) {
  const max = 3000;
  process.stderr.write((line.length > max ? line.slice(0, max) + ` …(${line.length} chars)` : line) + '\n');
}

// brief shortens a tools/list result to what a reader of the log needs:
// each tool's name and output schema (the descriptions and input schemas
// are long and not what the scenarios check).
function brief(msg) {
  if (!Array.isArray(msg?.result?.tools)) return msg;
  const tools = msg.result.tools.map((t) => ({ name: t.name, outputSchema: t.outputSchema, '…': 'description, inputSchema' }));
  return { ...msg, result: { ...msg.result, tools } };
}

// step prints a step line on stdout.
function step(name, fields = {}) {
  process.stdout.write(JSON.stringify({ step: name, ...fields }) + '\n');
}

// lines hands out stdin's lines one by one.
const stdinLines = (() => {
  const queue = [];
  const waiting = [];
  let closed = false;
  const rl = readline.createInterface({ input: process.stdin });
  rl.on('line', (line) => (waiting.length ? waiting.shift().resolve(line) : queue.push(line)));
  rl.on('close', () => {
    closed = true;
    for (const w of waiting.splice(0)) w.reject(new Failure('stdin closed before the Go side went on'));
  });
  return {
    next() {
      if (queue.length) return Promise.resolve(queue.shift());
      if (closed) return Promise.reject(new Failure('stdin closed before the Go side went on'));
      return new Promise((resolve, reject) => waiting.push({ resolve, reject }));
    },
    close() {
      rl.close();
      process.stdin.destroy();
    },
  };
})();

// LoggedTransport wraps a transport and logs every message both ways; it
// keeps the notifications/cancelled each side sent.
class LoggedTransport {
  constructor(inner) {
    this.inner = inner;
    this.cancelled = [];
    this.sentCancelled = [];
    inner.onmessage = (msg, extra) => {
      log('jsonrpc <- ' + JSON.stringify(brief(msg)));
      if (msg.method === 'notifications/cancelled') this.cancelled.push(msg.params);
      this.onmessage?.(msg, extra);
    };
    inner.onclose = () => this.onclose?.();
    inner.onerror = (err) => this.onerror?.(err);
  }
  start() {
    return this.inner.start();
  }
  send(msg, options) {
    log('jsonrpc -> ' + JSON.stringify(msg));
    if (msg.method === 'notifications/cancelled') this.sentCancelled.push(msg.params);
    return this.inner.send(msg, options);
  }
  close() {
    return this.inner.close();
  }
  setProtocolVersion(v) {
    this.inner.setProtocolVersion?.(v);
  }
}

// serverCommand is what follows "--" on the command line.
function serverCommand() {
  const i = process.argv.indexOf('--');
  const argv = i < 0 ? [] : process.argv.slice(i + 1);
  if (argv.length === 0) throw new Failure('usage: node check.mjs <scenario> -- <askbridge binary> mcp [flags…]');
  return argv;
}

// connect starts the server and a client named name with capabilities.
async function connect(name, capabilities, setup) {
  const [command, ...args] = serverCommand();
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (k.startsWith('ASKUSER_')) env[k] = v;
  const transport = new LoggedTransport(new StdioClientTransport({ command, args, env, stderr: 'inherit' }));
  const client = new Client({ name, version: '1.0.0' }, { capabilities });
  setup?.(client);
  await client.connect(transport);
  // listTools first: the client validates a tool's structured content
  // against its outputSchema only once it has seen the tool listed.
  const { tools } = await client.listTools();
  return { client, transport, tools: tools.map((t) => t.name) };
}

// callRaw calls a tool and returns the SDK's result, its text blocks
// joined, and how long it took; a thrown error (a timeout, a JSON-RPC
// error) is a failed expectation.
async function callRaw(client, name, args, options = {}) {
  const started = Date.now();
  try {
    const res = await client.callTool({ name, arguments: args }, undefined, options);
    const texts = (res.content ?? []).filter((c) => c.type === 'text').map((c) => c.text);
    return { res, texts, ms: Date.now() - started };
  } catch (err) {
    throw new Failure(`${name} threw after ${Date.now() - started} ms: ${err?.message ?? err}`);
  }
}

// call calls a tool and returns its structured content and first text;
// a tool error (isError) is a failed expectation.
async function call(client, name, args, options = {}) {
  const started = Date.now();
  const { res, texts } = await callRaw(client, name, args, options);
  expect(!res.isError, `${name} returned a tool error: ${texts.join('\n')}`);
  expect(res.structuredContent && typeof res.structuredContent === 'object', `${name} returned no structured content: ${show(res)}`);
  // text is the first text block: the one-line summary (the second, when
  // there is one, repeats the structured content as JSON).
  return { result: res.structuredContent, text: texts[0] ?? '', texts: texts.join('\n'), ms: Date.now() - started };
}

function expectTools(tools, want) {
  for (const name of want) expect(tools.includes(name), `tools/list has ${show(tools)}, not ${name}`);
}

// expectWebAnswer checks a result answered on the web page with
// webAnswer's values for the questions asked.
function expectWebAnswer(result, questions) {
  expect(result.status === 'answered', `status ${show(result.status)}, want answered: ${show(result)}`);
  expect(result.via === 'web', `via ${show(result.via)}, want web: ${show(result)}`);
  expect(result.answeredBy?.platform === 'web', `answeredBy ${show(result.answeredBy)}, want platform web`);
  for (const q of questions) {
    const got = result.answers?.answers?.[q.id];
    expect(isDeepStrictEqual(got, webAnswer[q.id]), `answers.${q.id} is ${show(got)}, want ${show(webAnswer[q.id])}`);
  }
}

// checkForm checks an elicitation request's form against the questions:
// per question a property <id> (an enum of the labels; an array of them
// for multi-select) and a free-text <id>-other, none required.
function checkForm(params, questions) {
  expect(params.mode === undefined || params.mode === 'form', `elicitation mode ${show(params.mode)}, want form`);
  expect(typeof params.message === 'string' && params.message !== '', `elicitation without a message: ${show(params)}`);
  const schema = params.requestedSchema;
  expect(schema?.type === 'object', `requestedSchema is not an object schema: ${show(schema)}`);
  const props = schema.properties ?? {};
  for (const q of questions) {
    const labels = q.options.map((o) => o.label);
    const p = props[q.id];
    if (q.multiSelect) {
      expect(p?.type === 'array' && p.items?.type === 'string' && isDeepStrictEqual(p.items.enum, labels),
        `property ${q.id} is ${show(p)}, want {"type":"array","items":{"type":"string","enum":${show(labels)}}}`);
    } else {
      expect(p?.type === 'string' && isDeepStrictEqual(p.enum, labels),
        `property ${q.id} is ${show(p)}, want {"type":"string","enum":${show(labels)}}`);
    }
    const other = props[q.id + '-other'];
    expect(other?.type === 'string', `property ${q.id}-other is ${show(other)}, want {"type":"string"}`);
  }
  expect(!schema.required || schema.required.length === 0, `requestedSchema requires ${show(schema.required)}, want none`);
}

// askArgs is an ask_user call to the web page.
function askArgs(questions) {
  return { questions, to: 'web', timeoutSeconds: 300 };
}

const scenarios = {
  // plain: no elicitation, an ask_user answered on the web page.
  async plain(name) {
    const { client, tools } = await connect(name, {});
    expectTools(tools, ['ask_user']);
    step('asking');
    const { result, text } = await call(client, 'ask_user', askArgs([deployTarget]), { timeout: 60000 });
    expectWebAnswer(result, [deployTarget]);
    await client.close();
    return { result, text };
  },

  // elicit: the form shows while the question is on the web page; the form
  // answers with the second option.
  async elicit(name) {
    const forms = [];
    const { client, tools } = await connect(name, { elicitation: { form: {} } }, (c) =>
      c.setRequestHandler(ElicitRequestSchema, guard(async (req) => {
        forms.push(req.params);
        checkForm(req.params, [deployTarget]);
        const label = req.params.requestedSchema.properties.deploy_target.enum[1];
        step('form');
        await stdinLines.next();
        return { action: 'accept', content: { deploy_target: label } };
      })));
    expectTools(tools, ['ask_user']);
    const { result, text } = await call(client, 'ask_user', askArgs([deployTarget]), { timeout: formTimeout });
    expect(forms.length === 1, `${forms.length} elicitation requests, want 1`);
    expect(result.status === 'answered', `status ${show(result.status)}, want answered: ${show(result)}`);
    expect(result.via === 'mcp', `via ${show(result.via)}, want mcp: ${show(result)}`);
    expect(result.answeredBy?.platform === 'mcp' && result.answeredBy?.id === name,
      `answeredBy ${show(result.answeredBy)}, want platform mcp and id ${show(name)}`);
    expect(isDeepStrictEqual(result.answers?.answers?.deploy_target, ['Production']),
      `answers ${show(result.answers)}, want deploy_target ["Production"]`);
    await client.close();
    return { result, text, form: forms[0] };
  },

  // elicitother: the form answers in the person's own words (<qid>-other):
  // they come back as the answer, via mcp.
  async elicitother(name) {
    const { client, tools } = await connect(name, { elicitation: { form: {} } }, (c) =>
      c.setRequestHandler(ElicitRequestSchema, guard(async (req) => {
        checkForm(req.params, [deployTarget]);
        return { action: 'accept', content: { 'deploy_target-other': ownWords } };
      })));
    expectTools(tools, ['ask_user']);
    const { result, text } = await call(client, 'ask_user', askArgs([deployTarget]), { timeout: formTimeout });
    expect(result.status === 'answered' && result.via === 'mcp', `result ${show(result)}, want answered via mcp`);
    expect(isDeepStrictEqual(result.answers?.answers?.deploy_target, [ownWords]),
      `answers ${show(result.answers)}, want deploy_target ${show([ownWords])}`);
    await client.close();
    return { result, text };
  },

  // decline: the form (with the empty-object spelling of the capability,
  // form mode by default) is declined; the question stays open and the
  // web page answers it.
  async decline(name) {
    const forms = [];
    const { client, tools } = await connect(name, { elicitation: {} }, (c) =>
      c.setRequestHandler(ElicitRequestSchema, guard(async (req) => {
        forms.push(req.params);
        checkForm(req.params, [deployTarget, checks]);
        setImmediate(() => step('declined'));
        return { action: 'decline' };
      })));
    expectTools(tools, ['ask_user']);
    const { result, text } = await call(client, 'ask_user', askArgs([deployTarget, checks]), { timeout: formTimeout });
    expect(forms.length === 1, `${forms.length} elicitation requests, want 1`);
    expectWebAnswer(result, [deployTarget, checks]);
    await client.close();
    return { result, text, form: forms[0] };
  },

  // chatfirst: the web page answers while the form is open; the call
  // returns the web answer and the server cancels the elicitation request
  // (notifications/cancelled with its id).
  async chatfirst(name) {
    let formID;
    let aborted;
    const abortedNow = new Promise((resolve) => (aborted = resolve));
    const { client, transport, tools } = await connect(name, { elicitation: { form: {} } }, (c) =>
      c.setRequestHandler(ElicitRequestSchema, guard((req, extra) => {
        formID = extra.requestId;
        checkForm(req.params, [deployTarget]);
        step('form');
        return new Promise((resolve) => {
          extra.signal.addEventListener('abort', () => {
            aborted(extra.signal.reason ?? true);
            resolve({ action: 'cancel' });
          });
        });
      })));
    expectTools(tools, ['ask_user']);
    const { result, text } = await call(client, 'ask_user', askArgs([deployTarget]), { timeout: formTimeout });
    expectWebAnswer(result, [deployTarget]);
    expect(formID !== undefined, 'no elicitation request came');
    const reason = await Promise.race([abortedNow, new Promise((r) => setTimeout(() => r(undefined), 5000))]);
    expect(reason !== undefined,
      `the elicitation request (id ${show(formID)}) was not cancelled within 5 s of the result; notifications/cancelled seen: ${show(transport.cancelled)}`);
    await client.close();
    return { result, text, formID, cancelled: transport.cancelled };
  },

  // elicitoff: the client can show forms, but the operator switched the
  // relay off (ASKUSER_MCP_ELICIT=off): no form comes, the web page answers.
  async elicitoff(name) {
    const { client, tools } = await connect(name, { elicitation: { form: {} } }, (c) =>
      c.setRequestHandler(ElicitRequestSchema, guard(async (req) => {
        throw new Failure(`an elicitation request came with ASKUSER_MCP_ELICIT=off: ${show(req.params)}`);
      })));
    expectTools(tools, ['ask_user']);
    step('asking');
    const { result, text } = await call(client, 'ask_user', askArgs([deployTarget]), { timeout: 60000 });
    expectWebAnswer(result, [deployTarget]);
    await client.close();
    return { result, text };
  },

  // budget: the bridge-side budget (--max-wait 2s) ends ask_user with
  // pending before the client's short request timeout; wait_for_answer
  // waits again, waitSeconds shortening it and capped at the budget, until
  // the web page's answer comes while it waits.
  async budget(name) {
    const { client, transport, tools } = await connect(name, {});
    expectTools(tools, ['ask_user', 'wait_for_answer']);
    const first = await call(client, 'ask_user', askArgs([deployTarget]), { timeout: shortTimeout });
    const id = first.result.id;
    expect(first.result.status === 'pending' && typeof id === 'string' && id !== '',
      `ask_user returned ${show(first.result)}, want {"status":"pending","id":…}`);
    expect(first.texts.includes('wait_for_answer') && first.texts.includes(id),
      `the pending text does not name wait_for_answer and the id: ${show(first.texts)}`);
    expect(first.ms >= budgetMs - 100, `ask_user returned pending after ${first.ms} ms, want the ${budgetMs} ms budget`);
    step('pending', { id });
    await stdinLines.next();
    const pendingAgain = async (args, what) => {
      const r = await call(client, 'wait_for_answer', args, { timeout: shortTimeout });
      expect(r.result.status === 'pending' && r.result.id === id,
        `wait_for_answer ${show(args)} ${what} returned ${show(r.result)}, want pending with id ${id}`);
      return r;
    };
    // waitSeconds 1: pending after about a second, not the whole budget.
    const short = await pendingAgain({ id, waitSeconds: 1 }, 'before any answer');
    expect(short.ms >= 900 && short.ms < budgetMs - 100, `wait_for_answer with waitSeconds 1 took ${short.ms} ms, want about 1000`);
    // waitSeconds 30: capped at the budget, so pending before the client's
    // 4 s timeout.
    const capped = await pendingAgain({ id, waitSeconds: 30 }, 'before any answer');
    expect(capped.ms >= budgetMs - 100, `wait_for_answer with waitSeconds 30 took ${capped.ms} ms, want the ${budgetMs} ms budget`);
    // The page answers while this call waits (the Go side answers 0.3 s
    // second after the step line): it returns the answer at once.
    const waits = [];
    let last = capped;
    for (let i = 0; i < 10 && last.result.status === 'pending'; i++) {
      if (i === 0) step('waiting', { id });
      last = await call(client, 'wait_for_answer', { id }, { timeout: shortTimeout });
      waits.push({ status: last.result.status, ms: last.ms });
    }
    expectWebAnswer(last.result, [deployTarget]);
    expect(last.result.id === id, `the final result's id is ${show(last.result.id)}, want ${id}`);
    expect(last.ms < budgetMs - 100, `the answering wait_for_answer took ${last.ms} ms: not woken by the answer`);
    expect(transport.sentCancelled.length === 0, `the client cancelled requests: ${show(transport.sentCancelled)}`);
    // Asked again after the end: the same result.
    const again = await call(client, 'wait_for_answer', { id }, { timeout: shortTimeout });
    expect(isDeepStrictEqual(again.result, last.result), `wait_for_answer after the end returned ${show(again.result)}, want the same result ${show(last.result)}`);
    // An id of the right form that no question has: a tool error.
    const unknownID = id.replace(/[0-9a-f]{32}$/, '0'.repeat(32));
    const unknown = await callRaw(client, 'wait_for_answer', { id: unknownID }, { timeout: shortTimeout });
    expect(unknown.res.isError === true, `wait_for_answer of an unknown id ${unknownID} returned ${show(unknown.res)}, want a tool error`);
    await client.close();
    return {
      unknownError: unknown.texts.join('\n'),
      id, pending: first.result, pendingText: first.text, firstMs: first.ms,
      shortMs: short.ms, cappedMs: capped.ms, waits, result: last.result, text: last.text,
    };
  },

  // formbudget: the budget ends the call while the form is open: the
  // server withdraws the form (notifications/cancelled) and returns
  // pending; wait_for_answer shows the form again, which answers.
  async formbudget(name) {
    const forms = [];
    const { client, transport, tools } = await connect(name, { elicitation: { form: {} } }, (c) =>
      c.setRequestHandler(ElicitRequestSchema, guard((req, extra) => {
        forms.push({ id: extra.requestId, params: req.params });
        checkForm(req.params, [deployTarget]);
        if (forms.length === 1) {
          // The first form stays open until the server withdraws it.
          return new Promise((resolve) => extra.signal.addEventListener('abort', () => resolve({ action: 'cancel' })));
        }
        return { action: 'accept', content: { deploy_target: req.params.requestedSchema.properties.deploy_target.enum[1] } };
      })));
    expectTools(tools, ['ask_user', 'wait_for_answer']);
    const first = await call(client, 'ask_user', askArgs([deployTarget]), { timeout: shortTimeout });
    const id = first.result.id;
    expect(first.result.status === 'pending' && id, `ask_user returned ${show(first.result)}, want pending`);
    expect(forms.length === 1, `${forms.length} forms during ask_user, want 1`);
    const withdrawn = () => transport.cancelled.some((c) => c.requestId === forms[0].id);
    for (let i = 0; i < 50 && !withdrawn(); i++) await new Promise((r) => setTimeout(r, 100));
    expect(withdrawn(), `the form (request ${show(forms[0].id)}) was not withdrawn when ask_user returned pending; notifications/cancelled seen: ${show(transport.cancelled)}`);
    let last = await call(client, 'wait_for_answer', { id }, { timeout: shortTimeout });
    expect(forms.length === 2, `${forms.length} forms after wait_for_answer, want the form shown again`);
    expect(last.result.status === 'answered' && last.result.via === 'mcp' && last.result.answeredBy?.id === name,
      `wait_for_answer returned ${show(last.result)}, want answered via mcp by ${name}`);
    expect(isDeepStrictEqual(last.result.answers?.answers?.deploy_target, ['Production']),
      `answers ${show(last.result.answers)}, want deploy_target ["Production"]`);
    await client.close();
    return { id, result: last.result, text: last.text, cancelled: transport.cancelled };
  },

  // declinebudget: a declined form is not shown again by wait_for_answer;
  // the page answers.
  async declinebudget(name) {
    let forms = 0;
    const { client, tools } = await connect(name, { elicitation: { form: {} } }, (c) =>
      c.setRequestHandler(ElicitRequestSchema, guard(async (req) => {
        forms++;
        checkForm(req.params, [deployTarget]);
        return { action: 'decline' };
      })));
    expectTools(tools, ['ask_user', 'wait_for_answer']);
    const first = await call(client, 'ask_user', askArgs([deployTarget]), { timeout: shortTimeout });
    const id = first.result.id;
    expect(first.result.status === 'pending' && id, `ask_user returned ${show(first.result)}, want pending`);
    const again = await call(client, 'wait_for_answer', { id, waitSeconds: 1 }, { timeout: shortTimeout });
    expect(again.result.status === 'pending', `wait_for_answer returned ${show(again.result)}, want pending`);
    expect(forms === 1, `${forms} forms, want 1: a declined form is not shown again`);
    step('pending', { id });
    let last = again;
    for (let i = 0; i < 10 && last.result.status === 'pending'; i++) {
      last = await call(client, 'wait_for_answer', { id }, { timeout: shortTimeout });
    }
    expectWebAnswer(last.result, [deployTarget]);
    expect(forms === 1, `${forms} forms, want 1: a declined form is not shown again`);
    await client.close();
    return { id, result: last.result, text: last.text };
  },

  // partial: two questions; the form answers one; it comes back once more
  // (saying which is missing), and the complete form answers, via mcp.
  async partial(name) {
    const forms = [];
    const { client, tools } = await connect(name, { elicitation: { form: {} } }, (c) =>
      c.setRequestHandler(ElicitRequestSchema, guard(async (req) => {
        forms.push(req.params);
        checkForm(req.params, [deployTarget, checks]);
        if (forms.length === 1) return { action: 'accept', content: { deploy_target: 'Production' } };
        return { action: 'accept', content: { deploy_target: 'Production', checks: ['Lint'] } };
      })));
    expectTools(tools, ['ask_user']);
    const { result, text } = await call(client, 'ask_user', askArgs([deployTarget, checks]), { timeout: formTimeout });
    expect(forms.length === 2, `${forms.length} forms, want 2 (the incomplete one back once)`);
    expect(forms[1].message !== forms[0].message && /check/i.test(forms[1].message),
      `the second form's message does not say which question is missing: ${show(forms[1].message)}`);
    expect(result.status === 'answered' && result.via === 'mcp', `result ${show(result)}, want answered via mcp`);
    expect(isDeepStrictEqual(result.answers?.answers, { deploy_target: ['Production'], checks: ['Lint'] }),
      `answers ${show(result.answers)}, want deploy_target Production and checks Lint`);
    await client.close();
    return { result, text, second: forms[1].message };
  },

  // tomcp: to "mcp" asks only in the client; a declined form skips it. A
  // client that cannot show forms gets a tool error.
  async tomcp(name) {
    const { client, tools } = await connect(name, { elicitation: { form: {} } }, (c) =>
      c.setRequestHandler(ElicitRequestSchema, guard(async (req) => {
        checkForm(req.params, [deployTarget]);
        return { action: 'decline' };
      })));
    expectTools(tools, ['ask_user']);
    const { result, text } = await call(client, 'ask_user', { questions: [deployTarget], to: 'mcp', timeoutSeconds: 300 }, { timeout: formTimeout });
    expect(result.status === 'no_answer' && result.reason === 'skipped', `result ${show(result)}, want no_answer, reason skipped`);
    await client.close();
    const plain = await connect(name + '-noforms', {});
    const refused = await callRaw(plain.client, 'ask_user', { questions: [deployTarget], to: 'mcp', timeoutSeconds: 300 }, { timeout: formTimeout });
    expect(refused.res.isError === true, `to mcp from a client without forms returned ${show(refused.res)}, want a tool error`);
    await plain.client.close();
    return { result, text, refused: refused.texts.join('\n') };
  },

  // resource: askbridge://questions/{id} is a resource template; reading
  // it gives the question as JSON while it is open and once answered.
  async resource(name) {
    const { client, tools } = await connect(name, {});
    expectTools(tools, ['ask_user', 'wait_for_answer']);
    const { resourceTemplates } = await client.listResourceTemplates();
    const templates = resourceTemplates.map((r) => r.uriTemplate);
    expect(templates.includes('askbridge://questions/{id}'), `resource templates ${show(templates)}, want askbridge://questions/{id}`);
    const first = await call(client, 'ask_user', askArgs([deployTarget]), { timeout: shortTimeout });
    const id = first.result.id;
    expect(first.result.status === 'pending' && id, `ask_user returned ${show(first.result)}, want pending`);
    const read = async () => {
      const uri = `askbridge://questions/${id}`;
      const { contents } = await client.readResource({ uri });
      expect(contents?.length === 1 && contents[0].uri === uri && typeof contents[0].text === 'string',
        `resources/read ${uri} gave ${show(contents)}`);
      let doc;
      try {
        doc = JSON.parse(contents[0].text);
      } catch (err) {
        throw new Failure(`resources/read ${uri}: the text is not JSON (${err.message}): ${contents[0].text}`);
      }
      expect(contents[0].text.includes(id), `resources/read ${uri} does not name the question: ${contents[0].text}`);
      return { mimeType: contents[0].mimeType, doc, text: contents[0].text };
    };
    const open = await read();
    step('pending', { id });
    await stdinLines.next();
    let last = first;
    for (let i = 0; i < 10 && last.result.status === 'pending'; i++) {
      last = await call(client, 'wait_for_answer', { id }, { timeout: shortTimeout });
    }
    expectWebAnswer(last.result, [deployTarget]);
    const ended = await read();
    expect(ended.text.includes('answered'), `the answered question's resource does not say answered: ${ended.text}`);
    expect(ended.text !== open.text, 'the resource reads the same before and after the answer');
    await client.close();
    return { id, templates, open: open.doc, openMime: open.mimeType, ended: ended.doc, result: last.result };
  },
};

// finish prints the last line and exits: 0 when the scenario held.
function finish(out) {
  process.stdout.write(JSON.stringify(out) + '\n');
  // The server is the client's child: once this process has gone, its
  // stdin closes and it stops.
  process.exit(out.ok ? 0 : 1);
}

// failed ends the scenario with err: a failed expectation or an SDK error
// by its message, anything else (a mistake in this script) with its stack.
function failed(err) {
  const scenario = process.argv[2];
  const error = err instanceof Failure ? err.message : err instanceof McpError ? `${err.name}: ${err.message}` : String(err?.stack ?? err);
  finish({ scenario, ok: false, client: `tscheck-${scenario}`, error });
}

// guard wraps a request handler: a failed expectation in it (the form's
// checks) ends the scenario at once, where the SDK would only answer the
// server with an error and the call would wait for nothing.
function guard(handler) {
  return async (...args) => {
    try {
      return await handler(...args);
    } catch (err) {
      failed(err);
    }
  };
}

async function main() {
  const scenario = process.argv[2];
  const run = scenarios[scenario];
  if (!run) {
    process.stderr.write(`usage: node check.mjs <${Object.keys(scenarios).join('|')}> -- <askbridge binary> mcp [flags…]\n`);
    process.exit(2);
  }
  const name = `tscheck-${scenario}`;
  try {
    finish({ scenario, ok: true, client: name, ...(await run(name)) });
  } catch (err) {
    failed(err);
  }
}

await main();
