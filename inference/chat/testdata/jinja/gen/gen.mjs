// Renders every template in ../templates.json with every conversation in
// ../conversations.json using @huggingface/jinja (the version package-lock.json
// pins) and writes the results to out/js.json, in the shape gen.py writes.
//
//     npm ci && node gen.mjs [DATA_DIR]
//
// The inputs are the ones gen.py passes: messages, tools (null without
// tools), documents (null), add_generation_prompt, bos_token, eos_token and
// the conversation's kwargs; raise_exception is the library's own (it throws);
// strftime_now formats the same fixed date gen.py uses (2025-03-14 00:00:00),
// with English names.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Environment, Template } from "@huggingface/jinja";

const here = path.dirname(fileURLToPath(import.meta.url));
const data = process.argv[2] ?? path.dirname(here);
const version = JSON.parse(
  fs.readFileSync(path.join(here, "node_modules", "@huggingface", "jinja", "package.json"), "utf8"),
).version;

const MONTHS = ["January", "February", "March", "April", "May", "June", "July",
  "August", "September", "October", "November", "December"];
const DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
// The fixed date of gen.py's FIXED_NOW, a Friday.
const NOW = { year: 2025, month: 3, day: 14, weekday: 5, hour: 0, minute: 0, second: 0 };
const pad2 = (n) => String(n).padStart(2, "0");

function strftimeNow(format) {
  return format.replace(/%[YymdBbAaHMS%]/g, (t) => {
    switch (t) {
      case "%Y": return String(NOW.year);
      case "%y": return pad2(NOW.year % 100);
      case "%m": return pad2(NOW.month);
      case "%d": return pad2(NOW.day);
      case "%B": return MONTHS[NOW.month - 1];
      case "%b": return MONTHS[NOW.month - 1].slice(0, 3);
      case "%A": return DAYS[NOW.weekday];
      case "%a": return DAYS[NOW.weekday].slice(0, 3);
      case "%H": return pad2(NOW.hour);
      case "%M": return pad2(NOW.minute);
      case "%S": return pad2(NOW.second);
      default: return "%";
    }
  });
}

// @huggingface/jinja declares strftime_now (today's date) and raise_exception
// (throws) as globals before the render's variables, and refuses to declare a
// name twice; let the render's strftime_now replace the global one.
const declareVariable = Environment.prototype.declareVariable;
Environment.prototype.declareVariable = function (name, value) {
  if (name === "strftime_now" && this.variables.has(name)) {
    this.variables.set(name, value);
    return value;
  }
  return declareVariable.call(this, name, value);
};

const templates = JSON.parse(fs.readFileSync(path.join(data, "templates.json"), "utf8"));
const conversations = JSON.parse(fs.readFileSync(path.join(data, "conversations.json"), "utf8"));

const results = {};
for (const tpl of templates) {
  const source = fs.readFileSync(path.join(data, "templates", tpl.file), "utf8");
  const per = (results[tpl.file] = {});
  let compiled = null;
  let compileError = null;
  try {
    compiled = new Template(source);
  } catch (e) {
    compileError = `${e.name}: ${e.message}`;
  }
  for (const [name, conv] of Object.entries(conversations)) {
    if (compileError) {
      per[name] = { error: compileError };
      continue;
    }
    // A fresh copy per render: a template must not see another render's changes.
    const c = JSON.parse(JSON.stringify(conv));
    const ctx = {
      ...(c.kwargs ?? {}),
      messages: c.messages,
      tools: c.tools ?? null,
      documents: null,
      add_generation_prompt: c.add_generation_prompt,
      bos_token: tpl.bos_token,
      eos_token: tpl.eos_token,
      strftime_now: strftimeNow,
    };
    try {
      per[name] = { output: compiled.render(ctx) };
    } catch (e) {
      per[name] = { error: `${e.name}: ${e.message}` };
    }
  }
}

const out = { generator: `Node.js ${process.version}, @huggingface/jinja ${version}`, results };
fs.mkdirSync(path.join(here, "out"), { recursive: true });
fs.writeFileSync(path.join(here, "out", "js.json"), JSON.stringify(out, null, 1) + "\n");
