// ollama_check.mjs: drives an Ollama-compatible server (edgellm's
// http.ollama_listen) with the official `ollama` npm client and checks every
// answer.
//
//   node ollama_check.mjs HOST_URL [API_KEY]
//
// HOST_URL is the server root, e.g. http://127.0.0.1:11434 (no /api).
// Environment (all optional):
//   EDGELLM_API_KEY     bearer token when the server requires one (argv[3] wins)
//   EDGELLM_MODEL       model name to use (default: the first of /api/tags)
//   EDGELLM_UNKNOWN_MODEL  a name pull must refuse (default edgellm-no-such-model:latest)
//   EDGELLM_TIMEOUT_MS  per-request timeout (default 120000)
//   EDGELLM_SCENARIOS   comma-separated subset of scenario names to run
//
// Prints one JSON line per scenario: {"scenario","ok","detail","ms"}; exits 1
// when any scenario failed, 2 on a usage error.

import { Ollama } from 'ollama';
import { must, runScenarios, validate, short, timed, Check } from './lib.mjs';

const host = process.argv[2] || process.env.EDGELLM_OLLAMA_URL;
if (!host) {
  process.stderr.write('usage: node ollama_check.mjs HOST_URL [API_KEY]\n');
  process.exit(2);
}
const apiKey = process.argv[3] || process.env.EDGELLM_API_KEY || '';
const timeout = Number(process.env.EDGELLM_TIMEOUT_MS || 120000);
const unknownModel = process.env.EDGELLM_UNKNOWN_MODEL || 'edgellm-no-such-model:latest';

// Home Assistant's config flow sends "Authorization: Bearer <key>" when a key is set.
const client = new Ollama({ host, headers: apiKey ? { Authorization: `Bearer ${apiKey}` } : undefined });

let model = process.env.EDGELLM_MODEL || '';
const modelOr = () => model || 'edgellm';
const T = (p, what) => timed(p, timeout, what);

const SYSTEM = 'You are a helpful assistant. Answer briefly.';

// The shape Home Assistant's ollama integration sends (tools in OpenAI shape).
const TURN_ON_TOOL = {
  type: 'function',
  function: {
    name: 'HassTurnOn',
    description: "Turns on/opens/presses a device or entity. For locks, this performs a 'lock' action. Use for requests like 'turn on', 'activate', 'enable', or 'lock'.",
    parameters: {
      type: 'object',
      properties: {
        name: { type: 'string' },
        area: { type: 'string' },
        floor: { type: 'string' },
        domain: { type: 'array', items: { type: 'string' } },
      },
    },
  },
};

const LIGHT_SCHEMA = {
  type: 'object',
  properties: {
    room: { type: 'string' },
    on: { type: 'boolean' },
    brightness: { type: 'integer', minimum: 0, maximum: 100 },
  },
  required: ['room', 'on', 'brightness'],
  additionalProperties: false,
};

function checkFinal(r, where) {
  must(typeof r.model === 'string' && r.model !== '', `${where}: no model`);
  must(typeof r.created_at === 'string' && !Number.isNaN(Date.parse(r.created_at)), `${where}: created_at not a timestamp`);
  must(r.done === true, `${where}: done = ${JSON.stringify(r.done)}`);
  must(['stop', 'length'].includes(r.done_reason), `${where}: done_reason = ${JSON.stringify(r.done_reason)}`);
  for (const k of ['total_duration', 'prompt_eval_count', 'eval_count']) {
    must(Number.isInteger(r[k]) && r[k] >= 0, `${where}: ${k} = ${JSON.stringify(r[k])}`);
  }
}

function checkMessage(m, where) {
  must(m && m.role === 'assistant', `${where}: message.role = ${JSON.stringify(m?.role)}`);
  must(typeof m.content === 'string', `${where}: message.content not a string`);
}

// foldChat reassembles streamed chat chunks as Home Assistant does: content
// concatenated, tool calls collected from any chunk (each a whole call with
// arguments as an object), the last chunk done: true.
async function foldChat(it, where) {
  let content = '';
  let thinking = '';
  const calls = [];
  let last = null;
  let n = 0;
  for await (const ch of it) {
    n++;
    must(ch.message && ch.message.role === 'assistant', `${where}: chunk ${n} message.role = ${JSON.stringify(ch.message?.role)}`);
    if (typeof ch.message.content === 'string') content += ch.message.content;
    if (typeof ch.message.thinking === 'string') thinking += ch.message.thinking;
    for (const tc of ch.message.tool_calls || []) calls.push(tc);
    must(!(last && last.done), `${where}: a chunk after done: true`);
    last = ch;
  }
  must(last && last.done === true, `${where}: stream did not end with done: true`);
  checkFinal(last, where);
  return { content, thinking, calls, last, n };
}

function checkToolCall(tc, where) {
  must(tc.function && typeof tc.function.name === 'string', `${where}: tool call without function.name`);
  must(tc.function.arguments && typeof tc.function.arguments === 'object' && !Array.isArray(tc.function.arguments),
    `${where}: arguments must be a JSON object (Home Assistant calls .items() on it), got ${JSON.stringify(tc.function.arguments)}`);
}

const scenarios = [
  {
    name: 'version',
    async run() {
      const v = await T(client.version(), 'version');
      must(typeof v.version === 'string' && v.version !== '', `version = ${JSON.stringify(v.version)}`);
      return `version=${v.version}`;
    },
  },
  {
    name: 'tags',
    async run() {
      const r = await T(client.list(), 'tags');
      must(Array.isArray(r.models) && r.models.length > 0, 'no models in /api/tags');
      for (const m of r.models) {
        must(typeof m.name === 'string' && m.name !== '', 'a model without name');
        // Home Assistant reads model_info["model"] to decide whether to pull.
        must(typeof m.model === 'string' && m.model !== '', `${m.name}: no "model" field`);
        must(typeof m.modified_at === 'string', `${m.name}: modified_at not a string`);
        must(Number.isInteger(m.size), `${m.name}: size not an integer`);
        must(typeof m.digest === 'string', `${m.name}: digest not a string`);
        must(m.details && typeof m.details === 'object', `${m.name}: no details`);
      }
      const names = r.models.map((m) => m.model);
      if (!model) model = names[0];
      must(names.includes(model), `EDGELLM_MODEL ${model} not among ${names.join(',')}`);
      return `models=${names.join(',')} using=${model}`;
    },
  },
  {
    name: 'ps',
    async run() {
      const r = await T(client.ps(), 'ps');
      must(Array.isArray(r.models), '/api/ps has no models array');
      for (const m of r.models) {
        must(typeof m.name === 'string' && typeof m.model === 'string', 'a running model without name/model');
        must(Number.isInteger(m.size), `${m.name}: size not an integer`);
        must(m.expires_at === undefined || typeof m.expires_at === 'string', `${m.name}: expires_at not a string`);
      }
      return `running=${r.models.map((m) => m.name).join(',') || '(none)'}`;
    },
  },
  {
    name: 'show',
    async run() {
      const r = await T(client.show({ model: modelOr() }), 'show');
      must(r.details && typeof r.details === 'object', 'no details');
      for (const k of ['format', 'family', 'parameter_size', 'quantization_level']) {
        must(typeof r.details[k] === 'string', `details.${k} not a string`);
      }
      must(r.capabilities === undefined || Array.isArray(r.capabilities), 'capabilities not an array');
      must(r.model_info === undefined || typeof r.model_info === 'object', 'model_info not an object');
      // Unknown names are an error, as Ollama answers them (404).
      const err = await T(client.show({ model: unknownModel }), 'show unknown').then(() => null, (e) => e);
      must(err && err.name === 'ResponseError' && err.status_code >= 400 && err.status_code < 500,
        `show of an unknown model: want a 4xx ResponseError, got ${err ? `${err.name} ${err.status_code ?? err.message}` : 'success'}`);
      return `family=${r.details.family} quant=${r.details.quantization_level} capabilities=${(r.capabilities || []).join(',')} unknown=${err.status_code}`;
    },
  },
  {
    name: 'chat',
    async run() {
      const r = await T(client.chat({
        model: modelOr(),
        messages: [
          { role: 'system', content: SYSTEM },
          { role: 'user', content: 'What is the capital of France?' },
        ],
        stream: false,
        options: { num_predict: 32, temperature: 0 },
      }), 'chat');
      checkFinal(r, 'chat');
      checkMessage(r.message, 'chat');
      must(r.message.content.length > 0, 'empty content');
      must(r.eval_count <= 32, `eval_count ${r.eval_count} > num_predict 32`);
      return `done_reason=${r.done_reason} content=${JSON.stringify(short(r.message.content, 60))}`;
    },
  },
  {
    name: 'chat_stream',
    async run() {
      const it = await T(client.chat({
        model: modelOr(),
        messages: [
          { role: 'system', content: SYSTEM },
          { role: 'user', content: 'Count from one to five.' },
        ],
        stream: true,
        options: { num_predict: 48, temperature: 0 },
      }), 'chat stream');
      const r = await T(foldChat(it, 'chat stream'), 'chat stream body');
      must(r.n >= 2, `only ${r.n} chunks`);
      must(r.content.length > 0, 'no content streamed');
      return `chunks=${r.n} done_reason=${r.last.done_reason} content=${JSON.stringify(short(r.content, 50))}`;
    },
  },
  {
    name: 'chat_tools',
    async run() {
      const messages = [
        { role: 'system', content: 'You control a smart home. Always call a tool to control devices.' },
        { role: 'user', content: 'Turn on the kitchen light.' },
      ];
      // As Home Assistant sends it: stream, tools, keep_alive -1, options.num_ctx.
      const it = await T(client.chat({
        model: modelOr(),
        messages,
        tools: [TURN_ON_TOOL],
        stream: true,
        keep_alive: -1,
        options: { num_ctx: 2048, num_predict: 128, temperature: 0 },
      }), 'chat tools');
      const r = await T(foldChat(it, 'chat tools'), 'chat tools body');
      must(r.calls.length >= 1, `no tool_calls (content=${JSON.stringify(short(r.content))})`);
      for (const tc of r.calls) checkToolCall(tc, 'chat tools');
      must(r.calls[0].function.name === 'HassTurnOn', `called ${r.calls[0].function.name}`);
      const errs = validate(TURN_ON_TOOL.function.parameters, r.calls[0].function.arguments);
      must(errs.length === 0, `arguments do not fit the schema: ${errs.join('; ')}`);
      // The tool result goes back as Home Assistant sends it (role tool, JSON text, no id).
      messages.push({ role: 'assistant', content: r.content, tool_calls: r.calls });
      messages.push({ role: 'tool', content: JSON.stringify({ data: { speech: {}, response_type: 'action_done', data: { targets: [], success: [{ name: 'Kitchen Light', type: 'entity', id: 'light.kitchen' }], failed: [] } }, error: false }) });
      const r2 = await T(client.chat({ model: modelOr(), messages, stream: false, options: { num_predict: 64, temperature: 0 } }), 'chat tool result');
      checkFinal(r2, 'chat tool result');
      checkMessage(r2.message, 'chat tool result');
      must(r2.message.content.length > 0, 'no answer after the tool result');
      return `call=${r.calls[0].function.name}(${short(JSON.stringify(r.calls[0].function.arguments), 40)}) answer=${JSON.stringify(short(r2.message.content, 40))}`;
    },
  },
  {
    name: 'chat_format_schema',
    async run() {
      const r = await T(client.chat({
        model: modelOr(),
        messages: [
          { role: 'system', content: 'You describe the state of a light as JSON.' },
          { role: 'user', content: 'The kitchen light is on at 40 percent.' },
        ],
        format: LIGHT_SCHEMA,
        stream: false,
        options: { num_predict: 96, temperature: 0 },
      }), 'chat schema');
      checkFinal(r, 'chat schema');
      must(r.done_reason === 'stop', `done_reason ${r.done_reason} (the object must be complete)`);
      let v;
      try {
        v = JSON.parse(r.message.content);
      } catch {
        throw new Check(`content is not JSON: ${short(r.message.content)}`);
      }
      const errs = validate(LIGHT_SCHEMA, v);
      must(errs.length === 0, `does not validate: ${errs.join('; ')}`);
      return `content=${short(r.message.content, 70)}`;
    },
  },
  {
    name: 'chat_format_json',
    async run() {
      const r = await T(client.chat({
        model: modelOr(),
        messages: [{ role: 'user', content: 'Give the capital of France as JSON {"capital": ...}.' }],
        format: 'json',
        stream: false,
        options: { num_predict: 64, temperature: 0 },
      }), 'chat json');
      checkFinal(r, 'chat json');
      let v;
      try {
        v = JSON.parse(r.message.content);
      } catch {
        throw new Check(`content is not JSON: ${short(r.message.content)}`);
      }
      must(v !== null && typeof v === 'object', 'content is not a JSON object or array');
      return `content=${short(r.message.content, 60)}`;
    },
  },
  {
    name: 'chat_options',
    async run() {
      const req = {
        model: modelOr(),
        messages: [{ role: 'user', content: 'Write a long story about a lighthouse.' }],
        stream: false,
        keep_alive: '5m',
        options: { num_ctx: 2048, num_predict: 8, temperature: 0.7, top_p: 0.9, top_k: 40, min_p: 0.05, seed: 42, stop: ['THE END'], repeat_penalty: 1.1 },
      };
      const r = await T(client.chat(req), 'chat options');
      checkFinal(r, 'chat options');
      must(r.eval_count <= 8, `eval_count ${r.eval_count} > num_predict 8`);
      must(r.done_reason === 'length', `done_reason ${r.done_reason}, want length (num_predict 8 on a long story)`);
      // Same seed, same options: the same text.
      const r2 = await T(client.chat(req), 'chat options again');
      must(r2.message.content === r.message.content, `seed 42 gave different texts: ${JSON.stringify(short(r.message.content, 30))} vs ${JSON.stringify(short(r2.message.content, 30))}`);
      return `eval_count=${r.eval_count} content=${JSON.stringify(short(r.message.content, 40))}`;
    },
  },
  {
    name: 'generate',
    async run() {
      const r = await T(client.generate({ model: modelOr(), prompt: 'The capital of France is', stream: false, options: { num_predict: 16, temperature: 0 } }), 'generate');
      checkFinal(r, 'generate');
      must(typeof r.response === 'string' && r.response.length > 0, 'empty response');
      const it = await T(client.generate({ model: modelOr(), prompt: 'One, two, three,', stream: true, options: { num_predict: 16, temperature: 0 } }), 'generate stream');
      let text = '';
      let last = null;
      let n = 0;
      for await (const ch of it) {
        n++;
        must(typeof ch.response === 'string', `generate stream: chunk ${n} without response`);
        text += ch.response;
        last = ch;
      }
      must(last && last.done === true, 'generate stream: no done: true');
      checkFinal(last, 'generate stream');
      must(text.length > 0, 'generate stream: no text');
      return `response=${JSON.stringify(short(r.response, 40))} stream_chunks=${n}`;
    },
  },
  {
    name: 'pull_unknown_model',
    async run() {
      // Home Assistant's config flow calls pull (stream false) when the chosen
      // model is not in /api/tags; an unknown name must fail with an error status.
      const err = await T(client.pull({ model: unknownModel, stream: false }), 'pull').then((r) => r, (e) => e);
      must(err instanceof Error, `pull of ${unknownModel} succeeded: ${short(JSON.stringify(err))}`);
      must(err.name === 'ResponseError' && err.status_code >= 400, `want a ResponseError with an error status, got ${err.name}: ${err.message}`);
      must(typeof err.error === 'string' && err.error !== '', 'the error has no message');
      // Streamed, the error may come as a status or as an {"error"} line: the client throws either way.
      const serr = await T((async () => {
        const it = await client.pull({ model: unknownModel, stream: true });
        for await (const _ of it) { /* progress lines */ }
      })(), 'pull stream').then(() => null, (e) => e);
      must(serr instanceof Error, `streamed pull of ${unknownModel} ended with success`);
      return `status=${err.status_code} error=${JSON.stringify(short(err.error, 60))} stream_error=${JSON.stringify(short(serr.message, 40))}`;
    },
  },
];

const failed = await runScenarios(scenarios, { only: process.env.EDGELLM_SCENARIOS });
process.exit(failed ? 1 : 0);
