// ha_replay.mjs: sends the Home Assistant replays of ../ha/*.json to a server
// and checks each answer as Home Assistant would read it (see ../ha/README.md).
// Plain fetch, no npm client: HA's own clients are Python.
//
//   node ha_replay.mjs OPENAI_URL|- OLLAMA_URL|- [API_KEY]
//   node ha_replay.mjs --self-test      (no server: the fixtures' sample answers
//                                        must reassemble to their sample_reassembled)
//
// OPENAI_URL is the server root (the fixtures' paths start with /v1); "-" skips
// the llama_cpp files, likewise OLLAMA_URL and the ollama files.
// Environment: EDGELLM_API_KEY, EDGELLM_MODEL, EDGELLM_TIMEOUT_MS (default 300000),
// EDGELLM_SCENARIOS (subset of fixture scenarios), EDGELLM_UNKNOWN_MODEL (the
// name sent in ollama_setup's pull instead of HA's llama3.2:latest, default
// edgellm-no-such-model:latest; the pull must then fail with an error status).
//
// One JSON line per request: {"scenario":"<fixture>/<request>","ok","detail","ms"};
// exit 1 when any failed, 2 on a usage error.

import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { must, runScenarios, short, Check } from './lib.mjs';

const HA_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'ha');
const DEFAULT_API_KEY = 'sk-0000000000000000000'; // llama_cpp const.DEFAULT_API_KEY
const RECOMMENDED = ['gpt-3.5-turbo', 'gpt-4', 'local-model']; // llama_cpp const.RECOMMENDED_CHAT_MODELS

function loadFixtures() {
  return readdirSync(HA_DIR)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => JSON.parse(readFileSync(path.join(HA_DIR, f), 'utf8')));
}

// ---- Home Assistant's folding of answers ---------------------------------

function decodeArgs(s, where) {
  try {
    return JSON.parse(s);
  } catch {
    throw new Check(`${where}: tool arguments are not JSON (HA: json_parse_error): ${short(s)}`);
  }
}

// parseSSE splits an event stream into the JSON of its data lines; checks framing.
function parseSSE(text) {
  const events = [];
  let done = false;
  for (const block of text.split(/\r?\n\r?\n/)) {
    if (block.trim() === '') continue;
    const data = block.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, '')).join('\n');
    if (data === '') continue;
    must(!done, 'SSE: an event after data: [DONE]');
    if (data.startsWith('[DONE]')) {
      done = true;
      continue;
    }
    let obj;
    try {
      obj = JSON.parse(data);
    } catch {
      throw new Check(`SSE: data is not JSON: ${short(data)}`);
    }
    events.push(obj);
  }
  return { events, done };
}

// foldOpenAIStream follows llama_cpp entity.py _transform_stream and reports
// where a server's stream would lose data with it (strict checks).
function foldOpenAIStream(chunks) {
  const out = { role: null, content: null, tool_calls: [] };
  let cur = null;
  let first = true;
  let finished = false;
  const seenIndexes = new Set();
  for (const ch of chunks) {
    must(!('error' in ch), `stream carries an error: ${short(JSON.stringify(ch.error))}`);
    if (finished) {
      must(!ch.choices || ch.choices.length === 0, 'a chunk with choices after the finish_reason chunk (HA stops reading there)');
      continue;
    }
    if (!ch.choices || ch.choices.length === 0) continue;
    const c = ch.choices[0];
    const d = c.delta || {};
    if (first) {
      must(d.role === 'assistant', 'the first delta does not carry role "assistant" (no chat-log message start, no TTS streaming)');
      must(!d.tool_calls || d.tool_calls.length === 0, 'the first delta carries tool_calls: HA would not see its role');
      first = false;
    }
    if (c.finish_reason) {
      must((d.content ?? '') === '' && (!d.tool_calls || d.tool_calls.length === 0), 'the finish_reason chunk carries content or tool calls: HA ignores its delta');
      if (cur) out.tool_calls.push({ id: cur.id, tool_name: cur.name, tool_args: cur.args ? decodeArgs(cur.args, 'stream') : {} });
      finished = true;
      continue;
    }
    if (!cur && (!d.tool_calls || d.tool_calls.length === 0)) {
      if (out.role === null && d.role === 'assistant') out.role = 'assistant';
      if (d.content != null) out.content = (out.content ?? '') + d.content;
      continue;
    }
    if (!d.tool_calls || d.tool_calls.length === 0) {
      must(d.content == null || d.content === '', 'content after a tool call: HA drops it');
      continue;
    }
    must(d.tool_calls.length === 1, `${d.tool_calls.length} tool-call fragments in one chunk: HA reads only the first`);
    const f = d.tool_calls[0];
    if (!f.function) continue;
    if (cur && f.index === cur.index) {
      cur.args += f.function.arguments || '';
      continue;
    }
    must(!seenIndexes.has(f.index), `tool call index ${f.index} comes back after another index: HA starts a new call without id`);
    seenIndexes.add(f.index);
    if (cur) out.tool_calls.push({ id: cur.id, tool_name: cur.name, tool_args: decodeArgs(cur.args, 'stream') });
    must(typeof f.id === 'string' && f.id !== '', `first fragment of tool call ${f.index} has no id`);
    must(typeof f.function.name === 'string' && f.function.name !== '', `first fragment of tool call ${f.index} has no function.name`);
    cur = { index: f.index, id: f.id, name: f.function.name, args: f.function.arguments || '' };
  }
  must(finished, 'no chunk with finish_reason');
  const ids = out.tool_calls.map((t) => t.id);
  must(new Set(ids).size === ids.length, `duplicate tool call ids ${ids}`);
  return out;
}

// foldOpenAIMessage follows entity.py _transform_response.
function foldOpenAIMessage(body) {
  must(Array.isArray(body.choices) && body.choices.length >= 1, 'no choices');
  const m = body.choices[0].message;
  must(m && m.role === 'assistant', `message.role = ${JSON.stringify(m?.role)}`);
  must(m.content === null || m.content === undefined || typeof m.content === 'string', 'content neither string nor null');
  const calls = [];
  for (const tc of m.tool_calls || []) {
    must(tc.type === 'function', `tool call type ${JSON.stringify(tc.type)}: HA drops calls that are not "function"`);
    must(typeof tc.id === 'string' && tc.id !== '', 'tool call without id');
    must(typeof tc.function?.arguments === 'string', 'arguments must be a JSON string');
    const args = decodeArgs(tc.function.arguments, 'message');
    must(args && typeof args === 'object' && !Array.isArray(args), 'arguments are not a JSON object');
    calls.push({ id: tc.id, tool_name: tc.function.name, tool_args: args });
  }
  const ids = calls.map((t) => t.id);
  must(new Set(ids).size === ids.length, `duplicate tool call ids ${ids}`);
  return { role: 'assistant', content: m.content ?? null, tool_calls: calls };
}

// foldOllamaStream follows ollama entity.py _transform_stream and _parse_tool_args.
function foldOllamaStream(text) {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  must(lines.length > 0, 'empty NDJSON body');
  const out = { role: 'assistant', content: null, tool_calls: [] };
  let last = null;
  for (const [i, l] of lines.entries()) {
    let o;
    try {
      o = JSON.parse(l);
    } catch {
      throw new Check(`NDJSON line ${i + 1} is not JSON: ${short(l)}`);
    }
    must(!('error' in o), `NDJSON line ${i + 1} carries an error: ${short(o.error)}`);
    must(!(last && last.done), 'a line after done: true');
    const m = o.message || {};
    for (const tc of m.tool_calls || []) {
      const a = tc.function?.arguments;
      must(a && typeof a === 'object' && !Array.isArray(a), `tool call arguments must be an object, got ${short(JSON.stringify(a))}`);
      const args = {};
      for (const [k, v] of Object.entries(a)) {
        if (v === null || v === '') continue;
        args[k] = typeof v === 'string' && /^(\[.*\]|\{.*\})$/s.test(v) ? (() => { try { return JSON.parse(v); } catch { return v; } })() : v;
      }
      out.tool_calls.push({ tool_name: tc.function.name, tool_args: args });
    }
    if (typeof m.content === 'string') out.content = (out.content ?? '') + m.content;
    last = o;
  }
  must(last.done === true, 'the last line is not done: true');
  must(typeof last.done_reason === 'string', 'the last line has no done_reason');
  return out;
}

function sameJSON(a, b) {
  const norm = (v) => JSON.stringify(v, (k, x) => (x && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort()) : x));
  return norm(a) === norm(b);
}

// ---- self-test -------------------------------------------------------------

function selfTest(fixtures) {
  return fixtures
    .filter((fx) => fx.sample_response)
    .map((fx) => ({
      name: `${fx.scenario}/sample`,
      async run() {
        const body = fx.sample_response.body;
        const got = fx.integration === 'llama_cpp' ? foldOpenAIStream(parseSSE(body).events) : foldOllamaStream(body);
        must(sameJSON(got, fx.sample_reassembled), `reassembled ${JSON.stringify(got)} != ${JSON.stringify(fx.sample_reassembled)}`);
        return `${got.tool_calls.length} tool calls, content ${JSON.stringify(short(got.content ?? '', 30))}`;
      },
    }));
}

// ---- replay ----------------------------------------------------------------

function substitute(v, subs) {
  if (typeof v === 'string') {
    for (const [k, x] of Object.entries(subs)) v = v.split(k).join(x);
    return v;
  }
  if (Array.isArray(v)) return v.map((x) => substitute(x, subs));
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, substitute(x, subs)]));
  return v;
}

function replay(fixtures, { openaiURL, ollamaURL, apiKey, timeout, unknownModel }) {
  const state = { llamaModel: process.env.EDGELLM_MODEL || '', ollamaModel: process.env.EDGELLM_MODEL || '' };
  const out = [];
  for (const fx of fixtures) {
    const base = fx.integration === 'llama_cpp' ? openaiURL : ollamaURL;
    if (!base) continue;
    for (const rq of fx.requests) {
      out.push({
        name: `${fx.scenario}/${rq.name}`,
        async run() {
          const model = fx.integration === 'llama_cpp' ? state.llamaModel : state.ollamaModel;
          const key = apiKey || (fx.integration === 'llama_cpp' ? DEFAULT_API_KEY : '');
          const headers = {};
          for (const [k, v] of Object.entries(rq.headers || {})) {
            if (v.includes('{{API_KEY}}') && !key) continue; // ollama sends no Authorization without a key
            headers[k] = v.replace('{{API_KEY}}', key);
          }
          let body = rq.body == null ? undefined : substitute(rq.body, { '{{MODEL}}': model || 'edgellm' });
          const isPull = rq.path === '/api/pull';
          if (isPull) body = { ...body, model: unknownModel };
          const ctl = new AbortController();
          const timer = setTimeout(() => ctl.abort(), timeout);
          let res, text;
          try {
            res = await fetch(base.replace(/\/+$/, '') + rq.path, { method: rq.method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: ctl.signal });
            text = await res.text();
          } finally {
            clearTimeout(timer);
          }
          const ctype = res.headers.get('content-type') || '';
          if (isPull) {
            must(res.status >= 400, `pull of unknown ${unknownModel}: status ${res.status}, want an error status (HA's client takes any 2xx as success)`);
            let e;
            try {
              e = JSON.parse(text);
            } catch {
              throw new Check(`pull error body is not JSON: ${short(text)}`);
            }
            must(typeof e.error === 'string' && e.error !== '', 'pull error body has no "error" string');
            return `status ${res.status}: ${short(e.error, 60)}`;
          }
          must(res.status === 200, `status ${res.status}: ${short(text, 120)}`);
          const want = rq.expect?.content_type;
          if (want) must(ctype.startsWith(want), `content-type ${ctype}, want ${want}`);
          if (rq.path === '/v1/models') {
            const ids = JSON.parse(text).data.map((m) => m.id);
            must(ids.length > 0 && ids.every((x) => typeof x === 'string' && x), 'no model ids');
            if (!state.llamaModel) state.llamaModel = RECOMMENDED.find((m) => ids.includes(m)) || ids[0];
            return `ids=${ids.join(',')} HA picks ${state.llamaModel}`;
          }
          if (rq.path === '/api/tags') {
            const models = JSON.parse(text).models;
            must(Array.isArray(models), 'no models array');
            const names = models.map((m) => m.model);
            must(names.every((x) => typeof x === 'string' && x), 'an entry without "model"');
            if (!state.ollamaModel) state.ollamaModel = names[0];
            must(names.includes(state.ollamaModel), `${state.ollamaModel} not listed: HA would pull it`);
            return `models=${names.join(',')}`;
          }
          if (rq.path === '/v1/chat/completions') {
            const folded = body.stream ? foldOpenAIStream(((p) => (must(p.done, 'no data: [DONE]'), p.events))(parseSSE(text))) : foldOpenAIMessage(JSON.parse(text));
            if (body.max_tokens === 3) return `probe ok, content ${JSON.stringify(short(folded.content ?? '', 30))}`;
            must((folded.content ?? '') !== '' || folded.tool_calls.length > 0, 'neither content nor tool calls');
            const names = new Set(body.tools.map((t) => t.function.name));
            for (const tc of folded.tool_calls) must(names.has(tc.tool_name), `called unknown tool ${tc.tool_name}`);
            return `content=${JSON.stringify(short(folded.content ?? '', 40))} calls=${JSON.stringify(folded.tool_calls).slice(0, 120)}`;
          }
          if (rq.path === '/api/chat') {
            const folded = foldOllamaStream(text);
            must((folded.content ?? '') !== '' || folded.tool_calls.length > 0, 'neither content nor tool calls');
            const names = new Set(body.tools.map((t) => t.function.name));
            for (const tc of folded.tool_calls) must(names.has(tc.tool_name), `called unknown tool ${tc.tool_name}`);
            return `content=${JSON.stringify(short(folded.content ?? '', 40))} calls=${JSON.stringify(folded.tool_calls).slice(0, 120)}`;
          }
          return `status ${res.status}`;
        },
      });
    }
  }
  return out;
}

const fixtures = loadFixtures();
let scenarios;
if (process.argv[2] === '--self-test') {
  scenarios = selfTest(fixtures);
} else {
  const [openaiArg, ollamaArg, keyArg] = process.argv.slice(2);
  if (!openaiArg || !ollamaArg) {
    process.stderr.write('usage: node ha_replay.mjs OPENAI_URL|- OLLAMA_URL|- [API_KEY]\n       node ha_replay.mjs --self-test\n');
    process.exit(2);
  }
  const wanted = process.env.EDGELLM_SCENARIOS ? new Set(process.env.EDGELLM_SCENARIOS.split(',')) : null;
  scenarios = replay(wanted ? fixtures.filter((f) => wanted.has(f.scenario)) : fixtures, {
    openaiURL: openaiArg === '-' ? '' : openaiArg.replace(/\/+$/, '').replace(/\/v1$/, ''),
    ollamaURL: ollamaArg === '-' ? '' : ollamaArg,
    apiKey: keyArg || process.env.EDGELLM_API_KEY || '',
    timeout: Number(process.env.EDGELLM_TIMEOUT_MS || 300000),
    unknownModel: process.env.EDGELLM_UNKNOWN_MODEL || 'edgellm-no-such-model:latest',
  });
}
const failed = await runScenarios(scenarios);
process.exit(failed ? 1 : 0);
