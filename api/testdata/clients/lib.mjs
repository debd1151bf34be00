// Shared helpers for the client harnesses: the scenario runner (one JSON line
// per scenario on stdout, exit status 1 when any failed) and a small JSON
// Schema checker for the subset the harnesses use (type, properties, required,
// additionalProperties, enum, minimum, maximum, items, minItems, maxItems).

// Clients may log diagnostics with console.log (the ollama client does on some
// error paths); stdout is reserved for the result lines, so send those to stderr.
console.log = (...args) => process.stderr.write(args.map(String).join(' ') + '\n');
console.info = console.log;
console.warn = (...args) => process.stderr.write(args.map(String).join(' ') + '\n');

// A reader that stops early (| head) must not turn into a crash.
process.stdout.on('error', (err) => {
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw err;
});

export class Check extends Error {}

// must throws a Check (a failed expectation) when cond is false.
export function must(cond, msg) {
  if (!cond) throw new Check(msg);
}

// timed rejects when p takes longer than ms.
export function timed(p, ms, what) {
  let t;
  return Promise.race([
    p,
    new Promise((_, rej) => {
      t = setTimeout(() => rej(new Check(`${what}: no answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(t));
}

function describeError(err) {
  if (err instanceof Check) return err.message;
  const parts = [err?.constructor?.name || 'Error'];
  if (err?.status !== undefined) parts.push(`status ${err.status}`);
  if (err?.status_code !== undefined) parts.push(`status ${err.status_code}`);
  let msg = err?.message || String(err);
  // Name the root cause (e.g. ECONNREFUSED) from the error's cause chain.
  let cause = err?.cause;
  for (let i = 0; cause && i < 5; i++) {
    if (cause.code) {
      msg += ` (${cause.code})`;
      break;
    }
    if (!cause.cause) {
      msg += ` (${cause.message})`;
      break;
    }
    cause = cause.cause;
  }
  parts.push(msg);
  return parts.join(': ');
}

// runScenarios runs each {name, run} in order. run returns a detail string
// (or object) on success and throws on failure. Prints one JSON line each.
export async function runScenarios(scenarios, { only } = {}) {
  const wanted = only ? new Set(only.split(',').map((s) => s.trim()).filter(Boolean)) : null;
  let failed = 0;
  for (const sc of scenarios) {
    if (wanted && !wanted.has(sc.name)) continue;
    const started = Date.now();
    let line;
    try {
      const detail = await sc.run();
      line = { scenario: sc.name, ok: true, detail: detail ?? '' };
    } catch (err) {
      failed++;
      line = { scenario: sc.name, ok: false, detail: describeError(err) };
    }
    line.ms = Date.now() - started;
    process.stdout.write(JSON.stringify(line) + '\n');
  }
  return failed;
}

// validate returns a list of problems of value against schema (empty = valid).
export function validate(schema, value, path = '$') {
  const errs = [];
  const type = schema.type;
  const isType = (t, v) => {
    switch (t) {
      case 'object': return v !== null && typeof v === 'object' && !Array.isArray(v);
      case 'array': return Array.isArray(v);
      case 'string': return typeof v === 'string';
      case 'integer': return Number.isInteger(v);
      case 'number': return typeof v === 'number' && Number.isFinite(v);
      case 'boolean': return typeof v === 'boolean';
      case 'null': return v === null;
      default: return true;
    }
  };
  if (type !== undefined) {
    const types = Array.isArray(type) ? type : [type];
    if (!types.some((t) => isType(t, value))) {
      errs.push(`${path}: want ${types.join('|')}, got ${JSON.stringify(value)}`);
      return errs;
    }
  }
  if (schema.enum && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) {
    errs.push(`${path}: ${JSON.stringify(value)} not in enum`);
  }
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum) errs.push(`${path}: below minimum ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) errs.push(`${path}: above maximum ${schema.maximum}`);
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) errs.push(`${path}: fewer than ${schema.minItems} items`);
    if (schema.maxItems !== undefined && value.length > schema.maxItems) errs.push(`${path}: more than ${schema.maxItems} items`);
    if (schema.items) value.forEach((v, i) => errs.push(...validate(schema.items, v, `${path}[${i}]`)));
  }
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const props = schema.properties || {};
    for (const req of schema.required || []) {
      if (!(req in value)) errs.push(`${path}: missing required ${req}`);
    }
    for (const [k, v] of Object.entries(value)) {
      if (k in props) errs.push(...validate(props[k], v, `${path}.${k}`));
      else if (schema.additionalProperties === false) errs.push(`${path}: unexpected property ${k}`);
    }
  }
  return errs;
}

// short trims a string for a detail line.
export function short(s, n = 80) {
  s = String(s ?? '');
  return s.length > n ? s.slice(0, n) + '…' : s;
}
