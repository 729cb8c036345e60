// The single file, dist/dpkps.html (scripts/single_file.py), copied to another folder as onto a
// laptop and opened from disk (file://, origin null) in headless Chromium, with no server but
// the local OpenAI-compatible test server: upload by drag-and-drop and by the file picker, the
// whole DP run, downloads, the LLM step, a reload that resumes it, the ledger kept across the
// reload, the worker's helpers (model check), and the network guard: the page and its worker
// (both started from in-page sources) cannot reach anything but the allowed LLM endpoint.
// Prints the file's size and its time to first interaction. Screenshots: target/screenshots/file-*.png.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT, SHOTS, launch, runTests, assert, startLlmServer, CANARY, cardioPulmonaryRows, sendReloadResume } from './harness.mjs';

const built = process.env.DPKPS_SINGLE_FILE ?? path.join(ROOT, 'dist', 'dpkps.html');
assert(fs.existsSync(built), `${built} is missing: run \`trunk build --release\` first (its post_build hook writes it)`);
fs.mkdirSync(SHOTS, { recursive: true });

// Nothing beside it: the file alone, in a folder of its own.
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dpkps-laptop-'));
const file = path.join(tmp, 'dpkps.html');
fs.copyFileSync(built, file);
const fileUrl = pathToFileURL(file).href;

// The corpus of app.mjs (harness.mjs): a canary name and a unique 5-word span per document.
const rows = cardioPulmonaryRows(40);
const csvText = rows.map((r) => r.join(',')).join('\n') + '\n';
const corpusPath = path.join(tmp, 'notes.csv');
fs.writeFileSync(corpusPath, csvText);
const spans = rows.slice(1).map((r) => r[2].match(/kappa\d+ lambda\d+ mu\d+ nu\d+ xi\d+/)[0]);

function assertClean(text, what) {
  assert(!text.includes(CANARY), `${what} contains the canary name`);
  for (const s of spans) assert(!text.includes(s), `${what} contains a private 5-word span: ${s}`);
}

// A host the policy does not allow, listening: if anything reached it, it would be counted.
let reached = 0;
const outside = http.createServer((q, r) => { reached++; r.writeHead(200, { 'access-control-allow-origin': '*' }); r.end('reached'); });
await new Promise((r) => outside.listen(0, '127.0.0.2', r));
const outsideUrl = `http://127.0.0.2:${outside.address().port}/`;

const llm = await startLlmServer();
const browser = await launch();
let page;
let problems;

/**
 * Fails on console errors, page errors and any request but: this file, the blob: and data: URLs
 * the page makes from its own bytes, and the LLM endpoint. file:// has no origin to allow, so the
 * rule is by URL. Requests of the page's workers are included (context-wide listener).
 */
function guardFile(p, allowConsole) {
  const found = [];
  found.requests = [];
  p.on('console', (m) => {
    if (m.type() === 'error' && !(allowConsole && allowConsole.test(m.text()))) found.push(`console error: ${m.text()}`);
  });
  p.on('pageerror', (e) => found.push(`page error: ${e.message}`));
  p.on('request', (r) => {
    const u = r.url();
    found.requests.push({ url: u, body: r.postData() ?? '' });
    if (u === fileUrl || u.startsWith('blob:null/') || u.startsWith('data:')) return;
    if (u.startsWith(llm.origin + '/')) return;
    found.push(`request to something but this file and the LLM endpoint: ${u}`);
  });
  return found;
}

const shot = (name) => page.screenshot({ path: path.join(SHOTS, `file-${name}.png`), fullPage: true });

async function download(selector) {
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click(selector)]);
  return fs.readFileSync(await dl.path(), 'utf8');
}

/** Opens the file; returns when the upload control is usable and when the worker was ready (ms from navigation). */
async function openFile() {
  page = await browser.context.newPage();
  problems = guardFile(page, /Failed to load resource: the server responded with a status of (429|500)/);
  await page.goto(fileUrl);
  const usable = await page.waitForFunction(() => {
    const input = document.querySelector('#corpus-input');
    return input && !input.disabled && document.querySelector('.drop') ? performance.now() : false;
  }, null, { timeout: 60_000, polling: 'raf' });
  const ready = await page.waitForFunction(() => document.querySelector('main[data-worker-ready="true"]') ? performance.now() : false,
    null, { timeout: 60_000, polling: 'raf' });
  return { usable: await usable.jsonValue(), ready: await ready.jsonValue() };
}

async function settle(timeout = 240_000) {
  await page.waitForFunction(() => !document.querySelector('#cancel'), null, { timeout });
}

async function declareAndSet() {
  await page.waitForSelector('#summary', { timeout: 60_000 });
  assert((await page.textContent('#n-docs')).trim() === '40', 'document count');
  await page.fill('#class-list', 'cardiology\npulmonary');
  for (const [id, v] of [['eps_voc', '20'], ['eps_kde', '5'], ['top_n', '12'], ['len', '4'], ['features', '256'], ['per_class', '6']]) await page.fill(`#${id}`, v);
  await page.fill('#budget', '1000');
  await page.waitForFunction(() => !document.querySelector('#run').disabled);
}

await runTests([
  ['the file: size, time to first interaction from disk, nothing fetched', async () => {
    const mb = fs.statSync(file).size / 1e6;
    const loads = [];
    for (let i = 0; i < 3; i++) {
      const t = await openFile();
      loads.push(t);
      if (i < 2) await page.close();
    }
    console.log(`     dpkps.html: ${mb.toFixed(1)} MB; opened from disk, upload control usable after ${loads.map((t) => Math.round(t.usable)).join(' / ')} ms, ` +
      `worker ready after ${loads.map((t) => Math.round(t.ready)).join(' / ')} ms (3 loads, ms from navigation)`);
    const own = problems.requests.filter((r) => !r.url.startsWith('blob:') && !r.url.startsWith('data:'));
    assert(own.length === 1 && own[0].url === fileUrl, `the page loaded something but itself: ${own.map((r) => r.url)}`);
    const meta = await page.getAttribute('meta[http-equiv="Content-Security-Policy"]', 'content');
    const scriptSrc = meta.split(';').map((d) => d.trim()).find((d) => d.startsWith('script-src '));
    assert(/^script-src 'sha256-[A-Za-z0-9+/]+=*' blob: 'wasm-unsafe-eval'$/.test(scriptSrc), `script-src by hash, no 'unsafe-inline': ${meta}`);
    assert(/connect-src http:\/\/127\.0\.0\.1:\* http:\/\/localhost:\*;/.test(meta), `connect-src is the loopback default: ${meta}`);
    await shot('0-opened');
    assert(problems.length === 0, problems.join('\n'));
  }],
  ['neither the page nor its worker can reach a host outside the allowlist', async () => {
    const seen = problems.length;
    const tryFetch = (u) => fetch(u).then((r) => `reached ${r.status}`, (e) => `blocked: ${e}`);
    const worker = page.workers().find((w) => w.url().startsWith('blob:null/'));
    assert(worker, `the worker (from an in-page source) is not there: ${page.workers().map((w) => w.url())}`);
    for (const u of [outsideUrl, 'http://example.org/']) {
      const fromPage = await page.evaluate(tryFetch, u);
      const fromWorker = await worker.evaluate(tryFetch, u);
      assert(/^blocked/.test(fromPage) && /^blocked/.test(fromWorker), `${u}: page ${fromPage}, worker ${fromWorker}`);
    }
    // Control: the allowed endpoint is reachable from both (the guard is the policy, not a dead network).
    const ok = `${llm.url}/models`;
    assert(/^reached 200/.test(await page.evaluate(tryFetch, ok)) && /^reached 200/.test(await worker.evaluate(tryFetch, ok)), 'the allowed endpoint');
    assert(reached === 0, `the outside host was reached ${reached} time(s)`);
    // Chromium logs each refusal as a policy violation; nothing else may have been logged.
    const during = problems.splice(seen);
    const unexpected = during.filter((p) => !(/127\.0\.0\.2|example\.org/.test(p) && /Content Security Policy|Refused to connect|something but this file/.test(p)));
    assert(unexpected.length === 0, unexpected.join('\n'));
    assert(during.some((p) => /Content Security Policy/.test(p)), 'the refusals were not the policy\'s');
  }],
  ['drag-and-drop a corpus, read and match, run the DP pipeline, download', async () => {
    const dt = await page.evaluateHandle((text) => {
      const d = new DataTransfer();
      d.items.add(new File([text], 'notes.csv', { type: 'text/csv' }));
      return d;
    }, csvText);
    await page.dispatchEvent('.drop', 'dragover', { dataTransfer: dt });
    await page.dispatchEvent('.drop', 'drop', { dataTransfer: dt });
    await page.waitForSelector('table.preview', { timeout: 30_000 });
    assert(await page.locator('#label-col').inputValue() === 'label', 'label column suggested');
    await shot('1-dropped');
    await page.click('#load');
    await declareAndSet();
    assert(/No earlier run/.test(await page.textContent('#ledger-note')), 'ledger note before the first run');
    // Storage works from a file, but every local page shares it: said by the Run button, before ε is spent.
    const note = await page.textContent('#file-storage-note');
    assert(/Opened from a file/.test(note) && /erase it/.test(note) && /Export the ledger/.test(note), `the storage note: ${note}`);
    await page.locator('#file-storage-note').scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(SHOTS, 'file-1b-before-run.png') });
    await page.click('#run');
    await page.waitForSelector('#results', { timeout: 240_000 });
    await settle();
    await shot('2-results');
    assert(/spent ε = 25\.100; total .* ε = 25\.100/.test(await page.textContent('#spent')), await page.textContent('#spent'));
    const jsonl = await download('#dl-jsonl');
    assert(jsonl.trim().split('\n').length === 12, 'sequences');
    assertClean(jsonl, 'sequences JSONL');
    const report = JSON.parse(await download('#dl-report'));
    assert(Math.abs(report.epsilon_run - 25.1) < 1e-9, 'report ε');
    assertClean(JSON.stringify(report), 'report');
  }],
  ['the bundled model matches the reference vectors in the worker and its helpers', async () => {
    await page.click('#model-check');
    await page.waitForSelector('#model-check-result:not(:empty)', { timeout: 120_000 });
    const text = await page.textContent('#model-check-result');
    assert(/^Passed: 20 reference terms/.test(text), text);
    if (await page.evaluate(() => navigator.hardwareConcurrency) >= 2) {
      const m = text.match(/\((\d+) of them by (\d+) helper worker/);
      assert(m && Number(m[1]) > 0 && Number(m[2]) > 0, `no helper worker (started from in-page sources) embedded a term: ${text}`);
    }
  }],
  ['LLM step from origin null, then a reload in the middle resumes it', async () => {
    await llm.reset();
    // "Remember the key" is not offered from a file: every page opened from a file in this
    // browser shares its storage. A key remembered by an earlier version is forgotten at load
    // (the reload below).
    assert(await page.isDisabled('#remember-key'), '"remember the key" is offered on a page opened from a file');
    assert(/opened from a file.*could read a remembered key/.test(await page.textContent('#remember-key-note')), await page.textContent('#remember-key-note'));
    await page.evaluate(() => localStorage.setItem('dpkps.llm.key', 'sk-remembered-0123456789'));
    await page.fill('#llm-model', 'test-model');
    await page.fill('#llm-endpoint', llm.url);
    await page.click('#test-connection');
    await page.waitForFunction(() => /Connected/.test(document.querySelector('#connection')?.textContent ?? ''), null, { timeout: 20_000 });
    await llm.control({ faults: [], delay_ms: 400 });
    await page.fill('#llm-concurrency', '1');
    await page.check('#reviewed');
    await shot('3-review');
    await sendReloadResume(page, () => shot('4-resume'));
    await shot('5-generated');
    assert(await page.evaluate(() => localStorage.getItem('dpkps.llm.key')) === null, 'the remembered key was kept on a file page');
    assert(await page.inputValue('#llm-key') === '', 'a remembered key was filled in on a file page');
    const corpus = (await download('#dl-corpus-jsonl')).trim().split('\n').map((l) => JSON.parse(l));
    assert(corpus.length === 12, `12 documents after resume, got ${corpus.length}`);
    assert(corpus.every((d) => d.keyphrases.every((k) => d.text.includes(k))), 'documents use their keyphrases');
    const reqs = await llm.requests();
    assert(reqs.length >= 12 && reqs.length <= 13, `requests: ${reqs.length}`);
    for (const r of reqs) assertClean(r.body, 'a request body sent to the LLM');
    const csv = await download('#dl-corpus-csv');
    assertClean(csv, 'synthetic corpus CSV');
    await llm.control({ faults: [], delay_ms: 0 });
  }],
  ['after the reload: the file picker, and the ledger kept what the first run spent', async () => {
    await page.setInputFiles('#corpus-input', corpusPath);
    await page.waitForSelector('table.preview', { timeout: 30_000 });
    await page.click('#load');
    await declareAndSet();
    const note = await page.textContent('#ledger-note');
    assert(/already had 1 run\(s\).*ε = 25\.100.*total becomes ε = 50\.200/.test(note), `ledger after reload: ${note}`);
    await shot('6-ledger-kept');
    assert(problems.length === 0, problems.join('\n'));
  }],
]);

await browser.close();
llm.close();
outside.close();
fs.rmSync(tmp, { recursive: true, force: true });
