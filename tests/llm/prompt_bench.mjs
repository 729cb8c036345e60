// Sends the app's prompts for DP keyphrase sequences to an OpenAI-compatible endpoint (by
// default the local model of scripts/local-llm.sh) under one or more prompt variants, and says
// what came back (tests/llm/reply.mjs: prose, or a list of the keyphrases, a glossary, a loop,
// a copy of the few-shot example, a refusal, a line or two), how many of the keyphrases each reply uses, tokens, finish
// reasons and seconds per document.
//
//   node tests/llm/prompt_bench.mjs --sequences sequences.jsonl [--n 40] [--variants v.json]
//        [--endpoint http://127.0.0.1:8000/v1] [--model ID] [--temperature 0.8]
//        [--max-tokens 512] [--out replies.jsonl]
//   node tests/llm/prompt_bench.mjs --rescore replies.jsonl    (classify saved replies again)
//
// sequences.jsonl: `dpkps pipeline`'s sequences ({"label", "keyphrases"} per line); the first
// --n, taken round robin over the labels. --variants: a JSON array of {"name", "system",
// "template", "doc_type"} and optionally "few_shot" (public examples, [{"keyphrases", "label",
// "text"}], as the app's few-shot field gives them), "lowercase" (true, an experiment: the
// keyphrases sent in lower case) and "body" (more request fields, an experiment: e.g.
// {"frequency_penalty": 0.5}), or of the strings "app default" and "old default"; without it, the app's defaults
// (crates/core/src/llm/prompt.rs). The messages are built as crates/core/src/llm/prompt.rs builds them: the system message,
// the few-shot pairs, then the template, with {keyphrases} (each keyphrase once, in order, joined by "; "),
// {doc_type} and {label} replaced in one pass. Each request sends the app's body (model,
// messages, temperature, max_tokens, stream false) and a seed (the sequence's index), so
// every variant gets the same seeds.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { classify } from './reply.mjs';

const MODEL_ID = JSON.parse(fs.readFileSync(new URL('./model.json', import.meta.url), 'utf8')).id;

/** crates/core/src/llm/prompt.rs: DEFAULT_SYSTEM, DEFAULT_TEMPLATE, the default document type; and the
 * default frequency_penalty the app sends (crates/core/src/llm/settings.rs). Without the app's one retry
 * of a reply that fails its check (that is `dpkps generate`'s to measure). */
export const APP_DEFAULT = {
  name: 'app default',
  doc_type: 'clinical note',
  system: 'You write realistic, fictional {doc_type}s in flowing prose: full sentences and paragraphs, never lists. Every person and detail is invented.',
  template: 'Keyphrases (separated by semicolons): {keyphrases}.\n\nWrite a realistic {doc_type} ({label}) of about 150 words, in two or three paragraphs of full sentences. Use each keyphrase above naturally in the sentences, in any order; do not list, number or define them. Write only the {doc_type}.',
  body: { frequency_penalty: 0.5 },
};

/** The app's default before it was reworded from these measurements (docs/llm.md). */
export const OLD_DEFAULT = {
  name: 'old default',
  doc_type: 'clinical note',
  system: 'You write realistic, fictional {doc_type}s. Invent every name, date and detail.',
  template: 'Write a realistic {doc_type} ({label}). It must mention each of these keyphrases (separated by semicolons), in any order: {keyphrases}.\nWrite only the document.',
};

/** One pass over `text`, as crates/core/src/llm/prompt.rs `substitute`: what a value brings in is not scanned again. */
export function substitute(text, values) {
  let out = '';
  let rest = text;
  for (;;) {
    const open = rest.indexOf('{');
    if (open < 0) break;
    out += rest.slice(0, open);
    const tail = rest.slice(open);
    const hit = Object.keys(values).find((name) => tail.startsWith(name));
    if (hit) {
      out += values[hit];
      rest = tail.slice(hit.length);
    } else {
      out += '{';
      rest = tail.slice(1);
    }
  }
  return out + rest;
}

/** The messages of one request, as crates/core/src/llm/prompt.rs `PromptSettings::messages`: system, few-shot pairs, the request. */
export function messages(variant, keyphrases, label) {
  // `lowercase`: an experiment (not in the app): the keyphrases in lower case.
  const distinct = [...new Set(variant.lowercase ? keyphrases.map((k) => k.toLowerCase()) : keyphrases)];
  const docType = variant.doc_type.trim();
  const fill = (t, ks) => substitute(t, { '{keyphrases}': ks.join('; '), '{doc_type}': docType, '{label}': label ?? docType });
  const out = [];
  if (variant.system.trim() !== '') out.push({ role: 'system', content: fill(variant.system, []) });
  for (const ex of variant.few_shot ?? []) {
    const fillEx = (t) => substitute(t, { '{keyphrases}': [...new Set(ex.keyphrases)].join('; '), '{doc_type}': docType, '{label}': ex.label ?? docType });
    out.push({ role: 'user', content: fillEx(variant.template) }, { role: 'assistant', content: ex.text });
  }
  out.push({ role: 'user', content: fill(variant.template, distinct) });
  return out;
}

function parseArgs(argv) {
  const o = { endpoint: 'http://127.0.0.1:8000/v1', model: MODEL_ID, n: 40, temperature: 0.8, maxTokens: 512, sequences: null, variants: null, out: null };
  for (let i = 0; i < argv.length; i++) {
    const v = () => argv[++i];
    switch (argv[i]) {
      case '--endpoint': o.endpoint = v().replace(/\/+$/, ''); break;
      case '--model': o.model = v(); break;
      case '--n': o.n = Number(v()); break;
      case '--temperature': o.temperature = Number(v()); break;
      case '--max-tokens': o.maxTokens = Number(v()); break;
      case '--sequences': o.sequences = v(); break;
      case '--variants': o.variants = v(); break;
      case '--out': o.out = v(); break;
      case '--rescore': o.rescore = v(); break;
      default: throw new Error(`unknown option ${argv[i]} (see the head of ${path.basename(fileURLToPath(import.meta.url))})`);
    }
  }
  if (!o.sequences && !o.rescore) throw new Error('--sequences FILE is required');
  return o;
}

/** The first `n` sequences, round robin over their labels. */
function pick(all, n) {
  const by = new Map();
  for (const s of all) by.set(s.label, [...(by.get(s.label) ?? []), s]);
  const out = [];
  for (let i = 0; out.length < n && out.length < all.length; i++) {
    for (const list of by.values()) if (i < list.length && out.length < n) out.push(list[i]);
  }
  return out;
}

const pct = (a, n) => `${((100 * a) / n).toFixed(0)}%`;
const KINDS = ['prose', 'list', 'glossary', 'loop', 'copy', 'short', 'refusal'];

/** One row of the table: the share of each kind, keyphrase use, length, time. */
function summarize(name, results) {
  const n = results.length;
  const mean = (f) => results.reduce((a, r) => a + f(r), 0) / n;
  const row = { variant: name, n };
  for (const k of KINDS) row[k] = pct(results.filter((r) => r.kind === k).length, n);
  Object.assign(row, {
    'keyphrases used': pct(mean((r) => r.used / r.distinct), 1),
    'used, prose only': pct(results.filter((r) => r.kind === 'prose').reduce((a, r) => a + r.used / r.distinct, 0), Math.max(1, results.filter((r) => r.kind === 'prose').length)),
    words: Math.round(mean((r) => r.words)),
    tokens: Math.round(mean((r) => r.completion_tokens)),
    'finish length': pct(results.filter((r) => r.finish === 'length').length, n),
    's/doc': mean((r) => r.seconds).toFixed(1),
  });
  return row;
}

function rescore(file) {
  const by = new Map();
  for (const line of fs.readFileSync(file, 'utf8').trim().split('\n')) {
    const r = JSON.parse(line);
    by.set(r.variant, [...(by.get(r.variant) ?? []), { ...r, ...classify(r.text, r.keyphrases, r.examples ?? []) }]);
  }
  console.table([...by].map(([name, results]) => summarize(name, results)));
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  if (o.rescore) {
    rescore(o.rescore);
    return;
  }
  const seqs = pick(fs.readFileSync(o.sequences, 'utf8').trim().split('\n').map((l) => JSON.parse(l)), o.n);
  const variants = (o.variants ? JSON.parse(fs.readFileSync(o.variants, 'utf8')) : [APP_DEFAULT]).map((v) => (v === 'app default' ? APP_DEFAULT : v === 'old default' ? OLD_DEFAULT : v));
  const out = o.out ? fs.createWriteStream(o.out, { flags: 'a' }) : null;
  const rows = [];
  for (const variant of variants) {
    const results = [];
    for (const [i, s] of seqs.entries()) {
      const body = { model: o.model, messages: messages(variant, s.keyphrases, s.label), temperature: o.temperature, max_tokens: o.maxTokens, stream: false, seed: i, ...variant.body };
      const t0 = performance.now();
      const r = await fetch(`${o.endpoint}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const reply = await r.json();
      if (!r.ok) throw new Error(`HTTP ${r.status}: ${JSON.stringify(reply)}`);
      const secs = (performance.now() - t0) / 1000;
      const text = reply.choices[0].message.content;
      const c = classify(text, s.keyphrases, (variant.few_shot ?? []).map((e) => e.text));
      const rec = { variant: variant.name, index: i, label: s.label, keyphrases: [...new Set(s.keyphrases)], examples: (variant.few_shot ?? []).map((e) => e.text), ...c, finish: reply.choices[0].finish_reason, completion_tokens: reply.usage?.completion_tokens, seconds: Number(secs.toFixed(2)), text };
      results.push(rec);
      out?.write(`${JSON.stringify(rec)}\n`);
      process.stderr.write(`${variant.name} ${i + 1}/${seqs.length}: ${c.kind}, ${c.used}/${c.distinct} keyphrases, ${rec.completion_tokens} tokens, ${rec.finish}, ${secs.toFixed(1)} s\n`);
    }
    rows.push(summarize(variant.name, results));
  }
  out?.end();
  console.table(rows);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((e) => {
    console.error(`prompt_bench.mjs: ${e.message}`);
    process.exit(1);
  });
}
