// Shared pieces of the end-to-end tests: the static server for dist/ (scripts/serve.py), headless Debian Chromium
// driven by playwright-core, and guards that fail a test on any console error, page error, or
// request to a host other than the page's own origin.
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const SHOTS = path.join(ROOT, 'target', 'screenshots');

/**
 * Serves `dir` on 127.0.0.1 at a free port with scripts/serve.py, the server scripts/serve.sh
 * uses: it writes the page's policy from dir/allowed-endpoints.txt and sends it as the
 * Content-Security-Policy header. `opts.prefix` serves it under a path (e.g. `/a/b/`), as an
 * intranet server would. Resolves to { url, prefix, policy, close }; `url` ends with the prefix.
 */
export async function serveStatic(dir, opts = {}) {
  const { spawn } = await import('node:child_process');
  const prefix = opts.prefix ?? '/';
  const child = spawn('python3', [path.join(ROOT, 'scripts', 'serve.py'), '--dir', dir, '--host', '127.0.0.1', '--port', '0', '--prefix', prefix],
    { stdio: ['ignore', 'pipe', 'inherit'] });
  const started = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening (http:\/\/[0-9.:]+\/\S*)\nContent-Security-Policy: (.*)\n/);
      if (m) resolve({ url: m[1], prefix: new URL(m[1]).pathname, policy: m[2] });
    });
    child.on('exit', (code) => reject(new Error(`scripts/serve.py exited (${code})`)));
  });
  return {
    ...started,
    close: () => new Promise((r) => { if (child.exitCode !== null) { r(); return; } child.once('exit', () => r()); child.kill(); }),
  };
}

/** Headless Chromium as root, with a fresh profile. */
export async function launch() {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dpkps-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  return { context, close: async () => { await context.close(); fs.rmSync(userDataDir, { recursive: true, force: true }); } };
}

/**
 * Records console errors, page errors and requests to other origins on `page`.
 * `allow.origins`: extra origins the page may call (the test LLM endpoint the user configured);
 * `allow.console`: a RegExp of console errors expected in this test (e.g. injected HTTP 500s);
 * `allow.prefix`: the path the app is served under: a request to the page's origin outside it
 * (an absolute URL in the bundle) is a problem.
 * Requests are also kept in `problems.requests`, so tests can inspect what was sent where.
 */
export function guard(page, origin, allow = {}) {
  const problems = [];
  problems.requests = [];
  const origins = new Set([origin, ...(allow.origins ?? [])]);
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    if (allow.console && allow.console.test(m.text())) return;
    problems.push(`console error: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('request', (r) => {
    const u = r.url();
    if (u.startsWith('data:') || u.startsWith('blob:')) return;
    problems.requests.push({ url: u, method: r.method(), body: r.postData() ?? '' });
    const url = new URL(u);
    if (!origins.has(url.origin)) problems.push(`request to another origin: ${u}`);
    else if (allow.prefix && url.origin === origin && !url.pathname.startsWith(allow.prefix)) {
      problems.push(`request outside the path the app is served under (${allow.prefix}): ${u}`);
    }
  });
  page.on('requestfailed', (r) => {
    if (new URL(r.url()).origin === origin) problems.push(`request failed: ${r.url()} (${r.failure()?.errorText})`);
  });
  return problems;
}

/** Runs named checks, prints a line each, exits non-zero if any failed. */
export async function runTests(tests) {
  let failed = 0;
  for (const [name, fn] of tests) {
    const t0 = Date.now();
    try {
      await fn();
      console.log(`ok   ${name} (${Date.now() - t0} ms)`);
    } catch (e) {
      failed++;
      console.log(`FAIL ${name}: ${e.stack ?? e}`);
    }
  }
  console.log(`${tests.length - failed} passed, ${failed} failed`);
  process.exitCode = failed ? 1 : 0;
}

export function assert(cond, msg) { if (!cond) throw new Error(msg); }

/**
 * Sends the reviewed job of 12 documents, reloads the page once at least 4 are saved, checks
 * that the page offers to resume with some but not all saved, calls `shot()` there, resumes,
 * and waits until all 12 are done.
 */
export async function sendReloadResume(page, shot) {
  await page.click('#send');
  await page.waitForFunction(() => Number(document.querySelector('#gen-progress')?.dataset.done) >= 4, null, { timeout: 60_000 });
  await page.reload();
  await page.waitForSelector('#resume', { timeout: 60_000 });
  const saved = Number((await page.textContent('#resume')).match(/(\d+) of 12 documents are saved/)[1]);
  assert(saved >= 4 && saved < 12, `saved before reload: ${saved}`);
  await shot();
  await page.click('#resume-btn');
  await page.waitForSelector('#gen-progress[data-done="12"][data-running="false"]', { timeout: 120_000 });
}

/** The fake patient name in every test document: in no vocabulary, and in no output. */
export const CANARY = 'Zorbelina Quathmore';

/**
 * A small labelled corpus, `[['id', 'label', 'text'], ...]` with `n` documents alternating
 * cardiology / pulmonary: each carries the canary name and a unique five-word span
 * (`kappaI lambdaI muI nuI xiI`), neither of which may appear in any output.
 */
export function cardioPulmonaryRows(n) {
  const cardio = ['Heart Failure', 'Hypertension', 'Chest Pain', 'Atrial Fibrillation', 'Tachycardia', 'Angina Pectoris', 'Edema'];
  const pulmo = ['Asthma', 'Cough', 'Pneumonia', 'Dyspnea', 'Bronchitis', 'Emphysema', 'Fever'];
  const rows = [['id', 'label', 'text']];
  for (let i = 0; i < n; i++) {
    const terms = i % 2 ? pulmo : cardio;
    const pick = [0, 1, 2, 3].map((k) => terms[(i + k * 3) % terms.length]);
    const text = `Patient ${CANARY} record ${i} seen today, unique span kappa${i} lambda${i} mu${i} nu${i} xi${i}. ` +
      `History of ${pick[0].toLowerCase()} and ${pick[1].toLowerCase()}; now ${pick[2]} with ${pick[3]}.`;
    rows.push([String(i), i % 2 ? 'pulmonary' : 'cardiology', `"${text}"`]);
  }
  return rows;
}

/**
 * Opens the app at `url` in `page`, loads the corpus at `corpusPath` (read with the person
 * column `person`, when given) and ticks the classes of `cardioPulmonaryRows`.
 */
export async function loadCardioPulmonary(page, url, corpusPath, { person } = {}) {
  await page.goto(url);
  await page.waitForSelector('main[data-worker-ready="true"]', { timeout: 60_000 });
  await page.setInputFiles('#corpus-input', corpusPath);
  await page.waitForSelector('table.preview', { timeout: 30_000 });
  if (person) await page.selectOption('#person-col', person);
  await page.click('#load');
  await page.waitForSelector('#summary', { timeout: 60_000 });
  for (const label of ['cardiology', 'pulmonary']) await page.check(`#observed-labels input[data-label="${label}"]`);
}

/**
 * Starts the local OpenAI-compatible test server (crates/llm-test-server, built by `cargo
 * test` for its integration test as target/debug/dpkps-llm-test-server, or under $CARGO_TARGET_DIR);
 * resolves to { url, origin, control, requests, close }.
 */
export async function startLlmServer() {
  const { spawn } = await import('node:child_process');
  const bin = path.join(process.env.CARGO_TARGET_DIR ?? path.join(ROOT, 'target'), 'debug', 'dpkps-llm-test-server');
  assert(fs.existsSync(bin), `${bin} is missing: run \`cargo build -p dpkps-llm-test-server\` first`);
  const child = spawn(bin, ['--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const base = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening (http:\/\/[0-9.:]+)/);
      if (m) resolve(m[1]);
    });
    child.on('exit', (code) => reject(new Error(`test server exited (${code})`)));
  });
  const call = async (p, body) => {
    const r = await fetch(base + p, body === undefined ? {} : { method: 'POST', body: JSON.stringify(body) });
    return r.json();
  };
  return {
    url: `${base}/v1`,
    origin: new URL(base).origin,
    control: (c) => call('/_control', c),
    reset: () => call('/_reset', {}),
    requests: () => call('/_requests'),
    close: () => { child.kill(); },
  };
}

// For the benchmarks: the browser's processes and their memory.
/** Chromium processes now running (pid → command line). */
export function chromiumPids() {
  const pids = new Map();
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${d}/cmdline`, 'utf8');
      if (cmd.includes('chrom')) pids.set(Number(d), cmd);
    } catch { /* gone */ }
  }
  return pids;
}
/** Resident and peak resident memory (kB → bytes) of a process, from /proc/PID/status. */
export function rss(pid) {
  try {
    const s = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k) => Number((s.match(new RegExp(`${k}:\\s+(\\d+) kB`)) ?? [0, 0])[1]) * 1024;
    return { now: kb('VmRSS'), peak: kb('VmHWM') };
  } catch { return { now: 0, peak: 0 }; }
}

// For the benchmarks' generated corpora.
/** RFC 4180 rows (quoted fields may hold commas, quotes and newlines). */
export function parseCsv(t) {
  const rows = [];
  let row = [], field = '', quoted = false;
  for (let i = 0; i < t.length; i++) {
    const c = t[i];
    if (quoted) {
      if (c === '"' && t[i + 1] === '"') { field += '"'; i++; } else if (c === '"') quoted = false; else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') { row.push(field); field = ''; } else if (c === '\n') { row.push(field.replace(/\r$/, '')); rows.push(row); row = []; field = ''; } else field += c;
  }
  if (field || row.length) { row.push(field); rows.push(row); }
  return rows;
}
/** A note with its first r sentences moved to its end (copies of a note that differ). */
export const rotate = (f, r) => {
  const sentences = f.split(/(?<=\.)\s+/);
  const k = r % Math.max(sentences.length, 1);
  return [...sentences.slice(k), ...sentences.slice(0, k)].join(' ');
};
