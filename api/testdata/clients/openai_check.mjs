// openai_check.mjs: drives an OpenAI-compatible server (edgellm's http.listen)
// with the official `openai` npm package and checks every answer.
//
//   node openai_check.mjs BASE_URL [API_KEY]
//
// BASE_URL is the server root (http://127.0.0.1:8080) or its /v1 URL.
// Environment (all optional):
//   EDGELLM_API_KEY     bearer token when the server requires one (argv[3] wins)
//   EDGELLM_MODEL       model id to use (default: the first id of GET /v1/models)
//   EDGELLM_TIMEOUT_MS  per-request timeout (default 120000)
//   EDGELLM_SCENARIOS   comma-separated subset of scenario names to run
//
// Prints one JSON line per scenario: {"scenario","ok","detail","ms"}; exits 1
// when any scenario failed, 2 on a usage error.

import OpenAI from 'openai';
import { must, runScenarios, validate, short, Check } from './lib.mjs';

const rawURL = process.argv[2] || process.env.EDGELLM_OPENAI_URL;
if (!rawURL) {
  process.stderr.write('usage: node openai_check.mjs BASE_URL [API_KEY]\n');
  process.exit(2);
}
const baseURL = rawURL.replace(/\/+$/, '').replace(/(\/v1)?$/, '/v1');
const apiKey = process.argv[3] || process.env.EDGELLM_API_KEY || 'sk-no-key';
const timeout = Number(process.env.EDGELLM_TIMEOUT_MS || 120000);

// No retries: a refused connection or a 5xx must show up as a failed
// scenario at once, not after the SDK's backoff.
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout });

let model = process.env.EDGELLM_MODEL || '';
const modelOr = () => model || 'edgellm';

const SYSTEM = 'You are a helpful assistant. Answer briefly.';

const WEATHER_TOOL = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Get the current weather for a city.',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string', description: 'City name, e.g. Paris' } },
      required: ['city'],
      additionalProperties: false,
    },
  },
};
const FORCE_WEATHER = { type: 'function', function: { name: 'get_weather' } };

const LIGHT_SCHEMA = {
  type: 'object',
  properties: {
    room: { type: 'string' },
    on: { type: 'boolean' },
    brightness: { type: 'integer', minimum: 0, maximum: 100 },
    colors: { type: 'array', items: { type: 'string', enum: ['red', 'green', 'blue', 'white'] } },
  },
  required: ['room', 'on', 'brightness', 'colors'],
  additionalProperties: false,
};

function checkUsage(usage, where) {
  must(usage && typeof usage === 'object', `${where}: no usage`);
  for (const k of ['prompt_tokens', 'completion_tokens', 'total_tokens']) {
    must(Number.isInteger(usage[k]) && usage[k] >= 0, `${where}: usage.${k} = ${JSON.stringify(usage[k])}`);
  }
  must(usage.total_tokens === usage.prompt_tokens + usage.completion_tokens, `${where}: total_tokens is not prompt+completion`);
}

function checkCompletion(c, where) {
  must(c && c.object === 'chat.completion', `${where}: object = ${JSON.stringify(c?.object)}`);
  must(typeof c.id === 'string' && c.id !== '', `${where}: no id`);
  must(Number.isInteger(c.created), `${where}: created not an integer`);
  must(typeof c.model === 'string' && c.model !== '', `${where}: no model`);
  must(Array.isArray(c.choices) && c.choices.length === 1, `${where}: want 1 choice, got ${c.choices?.length}`);
  const ch = c.choices[0];
  must(ch.index === 0, `${where}: choice index ${ch.index}`);
  must(ch.message?.role === 'assistant', `${where}: message.role = ${JSON.stringify(ch.message?.role)}`);
  must(['stop', 'length', 'tool_calls'].includes(ch.finish_reason), `${where}: finish_reason = ${JSON.stringify(ch.finish_reason)}`);
  return ch;
}

// reassemble folds raw chunks the way the OpenAI SDK's stream helper and
// Home Assistant do: content concatenated; tool calls keyed by
// delta.tool_calls[].index, id and name from the first fragment of an index,
// arguments concatenated. It also checks the framing rules.
function reassemble(chunks, where) {
  let role = null;
  let content = '';
  let finish = null;
  let usage = null;
  let sawRoleFirst = false;
  let firstChoiceChunk = true;
  const calls = new Map();
  for (const ch of chunks) {
    must(ch.object === 'chat.completion.chunk', `${where}: chunk object = ${JSON.stringify(ch.object)}`);
    if (ch.usage) usage = ch.usage;
    if (!ch.choices || ch.choices.length === 0) continue;
    const c = ch.choices[0];
    const d = c.delta || {};
    if (firstChoiceChunk) {
      sawRoleFirst = d.role === 'assistant';
      firstChoiceChunk = false;
    }
    if (d.role) role = d.role;
    if (typeof d.content === 'string') content += d.content;
    for (const tc of d.tool_calls || []) {
      must(Number.isInteger(tc.index), `${where}: tool_calls fragment without integer index`);
      let cur = calls.get(tc.index);
      if (!cur) {
        must(typeof tc.id === 'string' && tc.id !== '', `${where}: first fragment of tool call ${tc.index} has no id`);
        must(typeof tc.function?.name === 'string' && tc.function.name !== '', `${where}: first fragment of tool call ${tc.index} has no name`);
        cur = { id: tc.id, name: tc.function.name, arguments: '' };
        calls.set(tc.index, cur);
      } else {
        must(!tc.id || tc.id === cur.id, `${where}: tool call ${tc.index} changes id`);
      }
      cur.arguments += tc.function?.arguments || '';
    }
    if (c.finish_reason) {
      must(finish === null, `${where}: more than one finish_reason`);
      finish = c.finish_reason;
    }
  }
  must(sawRoleFirst, `${where}: the first delta does not carry role "assistant" (Home Assistant streams to TTS only after it)`);
  must(finish !== null, `${where}: no chunk with finish_reason`);
  const indexes = [...calls.keys()].sort((a, b) => a - b);
  indexes.forEach((ix, i) => must(ix === i, `${where}: tool call indexes not 0..n-1: ${indexes}`));
  return { role, content, finish, usage, toolCalls: indexes.map((i) => calls.get(i)) };
}

async function collect(stream) {
  const chunks = [];
  for await (const ch of stream) chunks.push(ch);
  return chunks;
}

function parseArgs(s, where) {
  let v;
  try {
    v = JSON.parse(s);
  } catch (e) {
    throw new Check(`${where}: arguments are not JSON: ${short(s)}`);
  }
  must(v && typeof v === 'object' && !Array.isArray(v), `${where}: arguments are not a JSON object`);
  return v;
}

const scenarios = [
  {
    name: 'models_list',
    async run() {
      const ids = [];
      for await (const m of client.models.list()) {
        must(typeof m.id === 'string' && m.id !== '', 'a model without id');
        must(m.object === 'model', `model ${m.id}: object = ${JSON.stringify(m.object)}`);
        must(Number.isInteger(m.created), `model ${m.id}: created not an integer`);
        must(typeof m.owned_by === 'string', `model ${m.id}: owned_by not a string`);
        ids.push(m.id);
      }
      must(ids.length > 0, 'no models listed');
      if (!model) model = ids[0];
      must(ids.includes(model), `EDGELLM_MODEL ${model} not among ${ids.join(',')}`);
      const one = await client.models.retrieve(model).catch((e) => e);
      const retrieve = one instanceof Error ? `retrieve: ${one.status ?? one.message}` : `retrieve ok`;
      return `models=${ids.join(',')} using=${model} (${retrieve})`;
    },
  },
  {
    name: 'chat',
    async run() {
      const c = await client.chat.completions.create({
        model: modelOr(),
        messages: [
          { role: 'system', content: SYSTEM },
          { role: 'user', content: 'What is the capital of France?' },
        ],
        max_tokens: 32,
        temperature: 0,
      });
      const ch = checkCompletion(c, 'chat');
      must(typeof ch.message.content === 'string' && ch.message.content.length > 0, 'empty content');
      must(!ch.message.tool_calls || ch.message.tool_calls.length === 0, 'tool_calls without tools');
      checkUsage(c.usage, 'chat');
      must(c.usage.completion_tokens <= 32, `completion_tokens ${c.usage.completion_tokens} > max_tokens 32`);
      return `finish=${ch.finish_reason} content=${JSON.stringify(short(ch.message.content, 60))}`;
    },
  },
  {
    name: 'completion',
    async run() {
      // A raw completion: the prompt reaches the model without a chat
      // template, so its token count is the prompt's own (a template adds
      // role markers around it).
      const prompt = 'Once upon a time';
      const c = await client.completions.create({ model: modelOr(), prompt, max_tokens: 16, temperature: 0, echo: true });
      must(c.object === 'text_completion', `object = ${JSON.stringify(c.object)}`);
      must(typeof c.id === 'string' && c.id !== '', 'no id');
      must(Array.isArray(c.choices) && c.choices.length === 1, `want 1 choice, got ${c.choices?.length}`);
      const ch = c.choices[0];
      must(typeof ch.text === 'string' && ch.text.startsWith(prompt) && ch.text.length > prompt.length, `echo: text ${JSON.stringify(short(ch.text, 60))}`);
      must(['stop', 'length'].includes(ch.finish_reason), `finish_reason ${ch.finish_reason}`);
      checkUsage(c.usage, 'completion');
      must(c.usage.completion_tokens <= 16, `completion_tokens ${c.usage.completion_tokens} > 16`);
      const asChat = await client.chat.completions.create({ model: modelOr(), messages: [{ role: 'user', content: prompt }], max_tokens: 1 });
      must(c.usage.prompt_tokens < asChat.usage.prompt_tokens,
        `prompt_tokens ${c.usage.prompt_tokens}, as a chat turn ${asChat.usage.prompt_tokens}: the prompt was wrapped in the chat template`);
      const stream = await client.completions.create({ model: modelOr(), prompt, max_tokens: 16, temperature: 0, stream: true, stream_options: { include_usage: true } });
      let text = '';
      let finish = null;
      let streamUsage = null;
      for await (const chunk of stream) {
        must(chunk.object === 'text_completion', `stream: object ${JSON.stringify(chunk.object)}`);
        if (chunk.usage) streamUsage = chunk.usage;
        for (const x of chunk.choices) {
          text += x.text;
          if (x.finish_reason) finish = x.finish_reason;
        }
      }
      must(text.length > 0, 'stream: no text');
      must(['stop', 'length'].includes(finish), `stream: finish_reason ${finish}`);
      checkUsage(streamUsage, 'completion stream');
      return `text=${JSON.stringify(short(ch.text, 50))} stream=${JSON.stringify(short(text, 30))}`;
    },
  },
  {
    name: 'chat_text_parts_and_max_completion_tokens',
    async run() {
      const c = await client.chat.completions.create({
        model: modelOr(),
        messages: [
          { role: 'system', content: [{ type: 'text', text: SYSTEM }] },
          { role: 'user', content: [{ type: 'text', text: 'Say hello.' }, { type: 'text', text: 'One word.' }] },
        ],
        max_completion_tokens: 8,
        seed: 42,
        top_p: 0.9,
        stop: ['\n\n'],
        user: 'openai-check',
      });
      const ch = checkCompletion(c, 'chat');
      must(typeof ch.message.content === 'string', 'content not a string');
      checkUsage(c.usage, 'chat');
      must(c.usage.completion_tokens <= 8, `completion_tokens ${c.usage.completion_tokens} > max_completion_tokens 8`);
      return `finish=${ch.finish_reason} completion_tokens=${c.usage.completion_tokens}`;
    },
  },
  {
    name: 'stream',
    async run() {
      const stream = await client.chat.completions.create({
        model: modelOr(),
        messages: [
          { role: 'system', content: SYSTEM },
          { role: 'user', content: 'Count from one to five.' },
        ],
        max_tokens: 48,
        temperature: 0,
        stream: true,
        stream_options: { include_usage: true },
      });
      const chunks = await collect(stream);
      must(chunks.length >= 2, `only ${chunks.length} chunks`);
      const ids = new Set(chunks.map((c) => c.id));
      must(ids.size === 1, `chunks carry ${ids.size} different ids`);
      const r = reassemble(chunks, 'stream');
      must(r.content.length > 0, 'no content streamed');
      must(['stop', 'length'].includes(r.finish), `finish_reason ${r.finish}`);
      // include_usage: a last chunk with empty choices and the usage.
      const last = chunks[chunks.length - 1];
      must(Array.isArray(last.choices) && last.choices.length === 0 && last.usage, 'include_usage: last chunk is not {choices: [], usage}');
      checkUsage(last.usage, 'stream');
      // The SDK's own stream helper must assemble the same message.
      const helper = client.chat.completions.stream({
        model: modelOr(),
        messages: [
          { role: 'system', content: SYSTEM },
          { role: 'user', content: 'Count from one to five.' },
        ],
        max_tokens: 48,
        temperature: 0,
      });
      const final = await helper.finalChatCompletion();
      const fm = final.choices[0].message;
      must(fm.role === 'assistant' && typeof fm.content === 'string' && fm.content.length > 0, 'stream helper: no assembled content');
      return `chunks=${chunks.length} finish=${r.finish} content=${JSON.stringify(short(r.content, 50))} helper=${JSON.stringify(short(fm.content, 30))}`;
    },
  },
  {
    name: 'tool_round_trip',
    async run() {
      const messages = [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: 'What is the weather in Paris right now?' },
      ];
      const c1 = await client.chat.completions.create({
        model: modelOr(),
        messages,
        tools: [WEATHER_TOOL],
        tool_choice: FORCE_WEATHER,
        max_tokens: 128,
        temperature: 0,
      });
      const ch1 = checkCompletion(c1, 'call');
      const calls = ch1.message.tool_calls || [];
      must(calls.length >= 1, `no tool_calls (finish=${ch1.finish_reason}, content=${JSON.stringify(short(ch1.message.content))})`);
      must(ch1.finish_reason === 'tool_calls', `finish_reason ${ch1.finish_reason}, want tool_calls`);
      const ids = new Set();
      for (const tc of calls) {
        must(tc.type === 'function', `tool call type ${tc.type}`);
        must(typeof tc.id === 'string' && tc.id !== '', 'tool call without id');
        must(!ids.has(tc.id), `duplicate tool call id ${tc.id}`);
        ids.add(tc.id);
        must(tc.function.name === 'get_weather', `called ${tc.function.name}`);
        must(typeof tc.function.arguments === 'string', 'arguments must be a JSON string');
        const args = parseArgs(tc.function.arguments, 'call');
        const errs = validate(WEATHER_TOOL.function.parameters, args);
        must(errs.length === 0, `arguments do not fit the schema: ${errs.join('; ')}`);
      }
      // Send the results back, one tool message per call id.
      messages.push({ role: 'assistant', content: ch1.message.content ?? null, tool_calls: calls.map((tc) => ({ id: tc.id, type: 'function', function: { name: tc.function.name, arguments: tc.function.arguments } })) });
      for (const tc of calls) {
        messages.push({ role: 'tool', tool_call_id: tc.id, content: JSON.stringify({ city: 'Paris', temperature_c: 18, condition: 'sunny' }) });
      }
      const c2 = await client.chat.completions.create({
        model: modelOr(),
        messages,
        tools: [WEATHER_TOOL],
        tool_choice: 'none',
        max_tokens: 64,
        temperature: 0,
      });
      const ch2 = checkCompletion(c2, 'answer');
      must(typeof ch2.message.content === 'string' && ch2.message.content.length > 0, 'no answer after the tool result');
      must(!ch2.message.tool_calls || ch2.message.tool_calls.length === 0, 'tool_choice none still called a tool');
      return `ids=${[...ids].join(',')} args=${short(calls[0].function.arguments, 40)} answer=${JSON.stringify(short(ch2.message.content, 40))}`;
    },
  },
  {
    name: 'tool_stream_deltas',
    async run() {
      const req = {
        model: modelOr(),
        messages: [
          { role: 'system', content: SYSTEM },
          { role: 'user', content: 'What is the weather in Berlin?' },
        ],
        tools: [WEATHER_TOOL],
        tool_choice: FORCE_WEATHER,
        max_tokens: 128,
        temperature: 0,
      };
      const chunks = await collect(await client.chat.completions.create({ ...req, stream: true }));
      const r = reassemble(chunks, 'tool stream');
      must(r.toolCalls.length >= 1, `no tool call deltas (finish=${r.finish})`);
      must(r.finish === 'tool_calls', `finish_reason ${r.finish}, want tool_calls`);
      for (const tc of r.toolCalls) {
        must(tc.name === 'get_weather', `called ${tc.name}`);
        const errs = validate(WEATHER_TOOL.function.parameters, parseArgs(tc.arguments, 'tool stream'));
        must(errs.length === 0, `arguments do not fit the schema: ${errs.join('; ')}`);
      }
      // The SDK's helper reassembles the same calls.
      const final = await client.chat.completions.stream(req).finalChatCompletion();
      const hc = final.choices[0].message.tool_calls || [];
      must(hc.length === r.toolCalls.length, `stream helper assembled ${hc.length} calls, raw ${r.toolCalls.length}`);
      must(hc.every((tc) => tc.id && tc.function.name === 'get_weather'), 'stream helper: calls lack id or name');
      return `calls=${r.toolCalls.length} id=${r.toolCalls[0].id} args=${short(r.toolCalls[0].arguments, 40)}`;
    },
  },
  {
    name: 'json_schema_strict',
    async run() {
      const c = await client.chat.completions.parse({
        model: modelOr(),
        messages: [
          { role: 'system', content: 'You describe the state of a light as JSON.' },
          { role: 'user', content: 'The kitchen light is on at 40 percent, white.' },
        ],
        response_format: { type: 'json_schema', json_schema: { name: 'light_state', strict: true, schema: LIGHT_SCHEMA } },
        max_tokens: 128,
        temperature: 0,
      });
      const ch = checkCompletion(c, 'json_schema');
      must(['stop'].includes(ch.finish_reason), `finish_reason ${ch.finish_reason} (the object must be complete)`);
      let v;
      try {
        v = JSON.parse(ch.message.content);
      } catch {
        throw new Check(`content is not JSON: ${short(ch.message.content)}`);
      }
      const errs = validate(LIGHT_SCHEMA, v);
      must(errs.length === 0, `does not validate: ${errs.join('; ')}`);
      must(JSON.stringify(ch.message.parsed) === JSON.stringify(v), 'SDK parsed value differs from content');
      return `content=${short(ch.message.content, 70)}`;
    },
  },
  {
    name: 'json_object',
    async run() {
      const c = await client.chat.completions.create({
        model: modelOr(),
        messages: [
          { role: 'system', content: 'Answer in JSON.' },
          { role: 'user', content: 'Give the capital of France as {"capital": ...}.' },
        ],
        response_format: { type: 'json_object' },
        max_tokens: 64,
        temperature: 0,
      });
      const ch = checkCompletion(c, 'json_object');
      let v;
      try {
        v = JSON.parse(ch.message.content);
      } catch {
        throw new Check(`content is not JSON: ${short(ch.message.content)}`);
      }
      must(v && typeof v === 'object' && !Array.isArray(v), 'content is not a JSON object');
      return `content=${short(ch.message.content, 60)}`;
    },
  },
  {
    name: 'bad_request_is_openai_error',
    async run() {
      const err = await client.chat.completions
        .create({ model: modelOr(), messages: [{ role: 'user', content: 'hi' }], max_tokens: -1 })
        .then(() => null, (e) => e);
      must(err, 'max_tokens -1 was accepted');
      must(err instanceof OpenAI.APIError && err.status >= 400 && err.status < 500, `want a 4xx APIError, got ${err?.constructor?.name} ${err?.status ?? err?.message}`);
      must(err.error && typeof err.error.message === 'string' && err.error.message !== '', 'error body lacks error.message');
      return `status=${err.status} type=${err.type ?? ''} message=${JSON.stringify(short(err.error.message, 60))}`;
    },
  },
  {
    name: 'wrong_api_key_is_401',
    async run() {
      if (!process.argv[3] && !process.env.EDGELLM_API_KEY) return 'skipped: no API key configured';
      const bad = new OpenAI({ baseURL, apiKey: 'sk-wrong-key', maxRetries: 0, timeout });
      const err = await bad.models.list().then(() => null, (e) => e);
      must(err instanceof OpenAI.AuthenticationError, `want AuthenticationError (401), got ${err?.constructor?.name ?? 'success'} ${err?.status ?? ''}`);
      return `status=${err.status}`;
    },
  },
];

const failed = await runScenarios(scenarios, { only: process.env.EDGELLM_SCENARIOS });
process.exit(failed ? 1 : 0);
