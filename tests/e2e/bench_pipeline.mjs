// The curator's pipeline at corpus scale in headless Chromium (issue 15): MTSamples repeated
// 12 times (≈ 60,000 notes), read + match, then Run → results with the page's defaults, for
// every sampler the page offers and every vocabulary (medical, English, and a user's own list
// of 50,000 terms uploaded as the page takes it); prints the time of every stage as the page
// reports it, the wall time from the Run click to the results, and memory after every run: the
// worker's and its helpers' wasm memory (linear memory never shrinks: it is the peak), the
// browser's renderer processes (resident now and peak), and the page's JS heap. At the end the
// same settings run again (3 times in all, same page) to show whether memory grows across runs.
// Figures only: nothing passes or fails on speed.
// Run by `scripts/bench.sh --pipeline` after `trunk build --release`.
//   DPKPS_BENCH_SAMPLERS=histogram,markov,independent,iterative-linear,iterative-log
//   DPKPS_BENCH_VOCABS=medical,english,custom   DPKPS_BENCH_REPEAT=12   DPKPS_BENCH_AGAIN=2
//   DPKPS_BENCH_AGAIN_SETTING=custom/independent (the setting re-run DPKPS_BENCH_AGAIN times)
//   DPKPS_BENCH_MARKOV_N=400 (N for the Markov sampler: the page refuses N = 1000 at 40 classes)
//   DPKPS_BENCH_VARY=1 (copy r of a note: its first r sentences moved to its end)
//   DPKPS_BENCH_LIMIT=900 (seconds: a run still going then is cancelled and shown as "> limit")
//   DPKPS_BENCH_WAIT_BACKGROUND=1 (before the repeated runs on an own list: wait until the
//   worker's idle-time pass has embedded the list, as a curator who ran once and came back)
//   DPKPS_BENCH_AGAIN_REUSE=1 (the repeated runs reuse the private vocabulary, the page's
//   default; 0: each draws a new one). The first run of every sampler always draws its own, so
//   that its figures are a whole run's.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, serveStatic, launch, assert, chromiumPids, rss, parseCsv, rotate } from './harness.mjs';

const dist = process.env.DPKPS_DIST ?? path.join(ROOT, 'dist');
assert(fs.existsSync(path.join(dist, 'index.html')), 'dist/index.html is missing: run `trunk build --release` first');
const shared = path.join(ROOT, '..', 'shared', 'data');
const source = process.env.DPKPS_MTSAMPLES ?? path.join(shared, 'mtsamples.csv');
assert(fs.existsSync(source), `MTSamples not found at ${source} (set DPKPS_MTSAMPLES)`);
const repeat = Number(process.env.DPKPS_BENCH_REPEAT ?? 12);
const samplers = (process.env.DPKPS_BENCH_SAMPLERS ?? 'histogram,markov,independent,iterative-linear,iterative-log').split(',');
const vocabs = (process.env.DPKPS_BENCH_VOCABS ?? 'medical,english,custom').split(',');
const again = Number(process.env.DPKPS_BENCH_AGAIN ?? 2);
const [againVocab, againSampler] = (process.env.DPKPS_BENCH_AGAIN_SETTING ?? `${vocabs.at(-1)}/independent`).split('/');
// The Markov sampler keeps (N+1)·N noisy counts per class; at 40 classes the page refuses it
// with N = 1000 (8,000,000 counts at most), so it runs with N = MARKOV_N.
const MARKOV_N = Number(process.env.DPKPS_BENCH_MARKOV_N ?? 400);
const limit = Number(process.env.DPKPS_BENCH_LIMIT ?? 900);
const againReuse = process.env.DPKPS_BENCH_AGAIN_REUSE !== '0';
const MB = (b) => (b / 1e6).toFixed(0);

// The corpus: the header once, the rows `repeat` times. With DPKPS_BENCH_VARY=1, copy r of a
// note has its first r sentences moved to its end, so that copies do not repeat their notes'
// keyphrase sequences (work done once per distinct term or prefix is not flattered by exact
// repetition).
// Hospital scale (issue 26): DPKPS_BENCH_NOTES=2000000 writes that many notes instead, note k
// being MTSamples note k mod 4,999 with its sentences rotated by ⌊k / 4,999⌋ (so copies differ)
// and cut at a word to at most DPKPS_BENCH_NOTE_CHARS characters (default 2,400: with its label
// and id about 2 kB a row, so 2 million notes make about 4 GB, MIMIC-III NOTEEVENTS' count and
// size). Columns note_id, medical_specialty, transcription. DPKPS_BENCH_KEEP=FILE keeps the
// written corpus there (for the CLI's half of `scripts/bench.sh --hospital`).
const vary = process.env.DPKPS_BENCH_VARY === '1';
const notes = Number(process.env.DPKPS_BENCH_NOTES ?? 0);
const noteChars = Number(process.env.DPKPS_BENCH_NOTE_CHARS ?? 2400);
const text = fs.readFileSync(source, 'utf8');
const cut = text.indexOf('\n') + 1;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dpkps-bench-pipeline-'));
const corpus = process.env.DPKPS_BENCH_KEEP ?? path.join(tmp, notes ? `notes-${notes}.csv` : `mtsamples-x${repeat}${vary ? '-varied' : ''}.csv`);
const out = fs.openSync(corpus, 'w');
const body = text.slice(cut).endsWith('\n') ? text.slice(cut) : `${text.slice(cut)}\n`;
const rows = vary || notes ? parseCsv(body) : [];
const header = parseCsv(text.slice(0, cut))[0];
const textCol = header.indexOf('transcription');
const quote = (f) => `"${f.replaceAll('"', '""')}"`;
if (notes) {
  const labelCol = header.indexOf('medical_specialty');
  fs.writeSync(out, 'note_id,medical_specialty,transcription\n');
  let chunk = [];
  let bytes = 0;
  for (let k = 0; k < notes; k++) {
    const row = rows[k % rows.length];
    let note = rotate(row[textCol], Math.floor(k / rows.length));
    if (note.length > noteChars) note = note.slice(0, note.lastIndexOf(' ', noteChars) > 0 ? note.lastIndexOf(' ', noteChars) : noteChars);
    const line = `${k + 1},${quote(row[labelCol])},${quote(note)}\n`;
    chunk.push(line);
    bytes += line.length;
    if (bytes > 16e6) {
      fs.writeSync(out, chunk.join(''));
      chunk = [];
      bytes = 0;
    }
  }
  fs.writeSync(out, chunk.join(''));
} else {
  fs.writeSync(out, text.slice(0, cut));
  for (let r = 0; r < repeat; r++) {
    if (!vary || r === 0) {
      fs.writeSync(out, body);
      continue;
    }
    const lines = rows.map((row) => row.map((f, i) => (i === textCol ? quote(rotate(f, r)) : quote(f))).join(','));
    fs.writeSync(out, `${lines.join('\n')}\n`);
  }
}
fs.closeSync(out);
const corpusName = notes ? `${notes.toLocaleString('en')} notes (MTSamples cut to ${noteChars} characters, sentences rotated per copy)` : `MTSamples × ${repeat}${vary ? ' (copies varied: sentences rotated)' : ''}`;

// A user's own vocabulary of 50,000 terms, from public lists only (never from the corpus):
// every MeSH 2017 descriptor name, then the GloVe English words in frequency order, skipping
// case-insensitive duplicates.
const customVocab = path.join(tmp, 'own-vocabulary-50k.txt');
{
  const seen = new Set();
  const terms = [];
  for (const f of ['mesh2017_descriptor_names.txt', 'english_words_glove6b.txt']) {
    for (const line of fs.readFileSync(path.join(shared, f), 'utf8').split('\n')) {
      const t = line.trim();
      if (terms.length === 50_000) break;
      if (t && !seen.has(t.toLowerCase())) {
        seen.add(t.toLowerCase());
        terms.push(t);
      }
    }
  }
  fs.writeFileSync(customVocab, `${terms.join('\n')}\n`);
}
console.log(`benchmark: the pipeline in the app (release wasm, headless Chromium, ${os.cpus().length} cores), ${corpusName} (${MB(fs.statSync(corpus).size)} MB), page defaults; own vocabulary: 50,000 terms (MeSH 2017 names, then GloVe words by frequency)`);

const before = chromiumPids();
const server = await serveStatic(dist);
const browser = await launch();
const ours = [...chromiumPids()].filter(([pid, cmd]) => !before.has(pid) && cmd.includes('dpkps-chromium-'));
const renderers = () => [...chromiumPids()].filter(([pid, cmd]) => !before.has(pid) && cmd.includes('dpkps-chromium-') && cmd.includes('--type=renderer')).map(([pid]) => pid);
assert(ours.length > 0, 'cannot find the browser processes');
const page = await browser.context.newPage();
const cdp = await page.context().newCDPSession(page);
await cdp.send('Performance.enable');
await page.goto(server.url);
await page.waitForSelector('main[data-worker-ready="true"]', { timeout: 60_000 });

async function memory() {
  let wasm = null;
  for (const w of page.workers()) {
    const m = await w.evaluate(() => self.dpkpsMemory ?? null).catch(() => null);
    if (m) wasm = m;
  }
  const procs = renderers().map(rss);
  const { metrics } = await cdp.send('Performance.getMetrics');
  const heap = metrics.find((m) => m.name === 'JSHeapUsedSize')?.value ?? 0;
  return {
    worker: wasm?.worker ?? 0,
    helpers: wasm?.helpers ?? [],
    rendererNow: procs.reduce((a, p) => a + p.now, 0),
    rendererPeak: procs.reduce((a, p) => Math.max(a, p.peak), 0),
    pageHeap: heap,
  };
}
const memText = (m) => `worker wasm ${MB(m.worker)} MB, helpers' wasm [${m.helpers.map(MB).join(', ')}] MB, renderer resident ${MB(m.rendererNow)} MB (peak of one renderer process ${MB(m.rendererPeak)} MB), page JS heap ${MB(m.pageHeap)} MB`;

const STAGES = ['vocabulary', 'model', 'embed', 'kde', 'sample'];
const stageSeconds = () => page.$$eval('li.stage', (lis) => Object.fromEntries(lis.map((li) => {
  const m = li.querySelector('.status')?.textContent.match(/done in ([\d.]+) s/);
  return [li.dataset.stage, m ? Number(m[1]) : null];
})));
const stageNotes = () => page.$$eval('li.stage', (lis) => lis.map((li) => `${li.dataset.stage}: ${li.querySelector('.status')?.textContent.trim()}`));

async function loadCorpus(vocab) {
  await page.setInputFiles('#corpus-input', corpus);
  await page.waitForSelector('table.preview', { timeout: 60_000 });
  await page.selectOption('#text-col', 'transcription');
  await page.selectOption('#label-col', 'medical_specialty');
  await page.selectOption('#vocab', vocab);
  if (vocab === 'custom') await page.setInputFiles('#vocab-file', customVocab);
  const t0 = Date.now();
  await page.click('#load');
  await page.waitForSelector('#summary', { timeout: 600_000 });
  const docs = (await page.textContent('#n-docs')).trim();
  console.log(`  ${vocab} vocabulary: read + match ${docs} documents in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  // Every observed label declared (the benchmark's corpus is public).
  const labels = await page.$$eval('#observed-labels input', (xs) => xs.map((x) => x.dataset.label));
  await page.fill('#class-list', labels.join('\n'));
  return labels.length;
}

const results = [];
async function runOnce(vocab, sampler, classes, n, reuse) {
  await page.selectOption('#sampler', sampler);
  await page.setChecked('#reuse_vocabulary', reuse);
  await page.fill('#top_n', sampler === 'markov' ? String(MARKOV_N) : '1000');
  // The benchmark's own ledger (a fresh profile): a budget that every run of it fits in. (A
  // build from before budgets, for an A/B with DPKPS_DIST, has no such field.)
  if ((await page.$('#budget')) && !(await page.inputValue('#budget')).trim()) await page.fill('#budget', '1000');
  await page.waitForFunction(() => !document.querySelector('#run')?.disabled, null, { timeout: 30_000 });
  const t1 = Date.now();
  await page.click('#run');
  const finished = () => page.waitForFunction(() => !document.querySelector('#cancel') && (document.querySelector('#results') || document.querySelector('#error')), null, { timeout: limit * 1000 });
  let overLimit = false;
  await finished().catch(async () => {
    overLimit = true;
    await page.click('#cancel');
    await page.waitForFunction(() => !document.querySelector('#cancel'), null, { timeout: 1_800_000 });
  });
  const wall = (Date.now() - t1) / 1000;
  const failed = overLimit ? null : await page.$('#error');
  const mem = await memory();
  const what = overLimit ? `over the limit of ${limit} s (cancelled)` : failed ? `FAILED: ${(await failed.textContent()).trim()}` : null;
  console.log(`    ${sampler}${sampler === 'markov' ? ` (N = ${MARKOV_N})` : ''}, ${classes} classes, run ${n}${reuse ? ' (reuse Ṽ if it may)' : ''}: Run → results ${wall.toFixed(1)} s${what ? ` (${what})` : ''}`);
  for (const s of await stageNotes()) console.log(`      ${s}`);
  console.log(`      memory: ${memText(mem)}`);
  results.push({ vocab, sampler, n, reuse, wall, failed: failed ? 'FAILED' : overLimit ? `> ${limit}` : null, stages: await stageSeconds(), mem });
}

let loaded = { vocab: null, classes: 0 };
for (const vocab of vocabs) {
  loaded = { vocab, classes: await loadCorpus(vocab) };
  for (const sampler of samplers) await runOnce(vocab, sampler, loaded.classes, 1, false);
}
/** Waits (at most `limit` s) for the worker's idle-time pass over an own list (self.dpkpsBackground). */
async function waitBackground() {
  const t0 = Date.now();
  let st = null;
  while (Date.now() - t0 < limit * 1000) {
    for (const w of page.workers()) {
      const b = await w.evaluate(() => self.dpkpsBackground ?? null).catch(() => null);
      if (b) st = b;
    }
    // No pass published within 10 s: there is none.
    if (st?.over || (!st && Date.now() - t0 > 10_000)) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  const shown = await page.$eval('#own-list-vectors', (e) => e.textContent.trim()).catch(() => 'not shown');
  console.log(`  background pass over the own list: ${st ? `${st.done} of ${st.total} terms${st.over ? '' : ' (not over)'}` : 'none'}, waited ${((Date.now() - t0) / 1000).toFixed(1)} s after the run; the page says: ${shown}`);
}

if (again > 0) {
  console.log(`  the same settings again in the same page (${againVocab}, ${againSampler}): memory must not grow`);
  const classes = loaded.vocab === againVocab ? loaded.classes : await loadCorpus(againVocab);
  if (againVocab === 'custom' && process.env.DPKPS_BENCH_WAIT_BACKGROUND !== '0') await waitBackground();
  for (let n = 2; n <= again + 1; n++) await runOnce(againVocab, againSampler, classes, n, againReuse);
}

console.log('\n| vocabulary | sampler | run | Run → results (s) | ' + STAGES.join(' | ') + ' | worker wasm (MB) | helpers wasm (MB) | renderer peak (MB) |');
console.log('|---|---|---|---|' + STAGES.map(() => '---|').join('') + '---|---|---|');
for (const r of results) {
  const st = STAGES.map((s) => (r.stages[s] == null ? '–' : r.stages[s].toFixed(1)));
  console.log(`| ${r.vocab} | ${r.sampler} | ${r.n}${r.reuse ? ' (reuse)' : ''} | ${r.failed ?? r.wall.toFixed(1)} | ${st.join(' | ')} | ${MB(r.mem.worker)} | ${r.mem.helpers.map(MB).join('+') || '–'} | ${MB(r.mem.rendererPeak)} |`);
}
await browser.close();
await server.close();
fs.rmSync(tmp, { recursive: true, force: true });
if (process.env.DPKPS_BENCH_KEEP) console.log(`the corpus is kept at ${corpus}`);
