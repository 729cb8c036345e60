// The recipient's classifier at the size of issue 24 in headless Chromium: 5,000 labelled
// "synthetic" documents and 2,500 of the recipient's own unlabelled documents (and an optional
// labelled test set), loaded through the page's file inputs in the "Use a synthetic corpus"
// mode, then Train (Deep CORAL, and the plain classifier when DPKPS_BENCH_COMPARE=1). Prints
// what the page says (embedding and training time), the wall time from the click, and memory:
// the worker's wasm memory (its peak) and the renderer processes'. Figures only: nothing
// passes or fails on speed.
//
// The documents come from MTSamples (../shared/data/mtsamples.csv or DPKPS_MTSAMPLES), in file
// order, note k's sentences rotated by ⌊k / 4,999⌋ so that repeats differ:
// - labelled: DPKPS_BENCH_LABELLED (5,000) notes cut at a word to DPKPS_BENCH_SYN_CHARS (600
//   characters, about 100 words: the length of a generated document), labelled by specialty;
// - unlabelled: DPKPS_BENCH_UNLABELLED (2,500) other notes cut to DPKPS_BENCH_OWN_CHARS (1,800:
//   the model reads a document's first 256 tokens, about that many characters);
// - test: DPKPS_BENCH_TEST (0) further notes, labelled.
// DPKPS_BENCH_CLASSES (40): only the notes of that many largest specialties.
// DPKPS_BENCH_WHERE: `page` (the default), `native` (`dpkps train` on the same files, the binary
// DPKPS_BENCH_CLI, named in the output, or target/release/dpkps: its own embedding and training times, peak
// memory from the kernel) or `both`.
// Run by `scripts/bench.sh --recipient` after `trunk build --release` (and `--recipient-native`
// after `cargo build --release`).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { ROOT, serveStatic, launch, assert, chromiumPids, rss, parseCsv, rotate } from './harness.mjs';

const where = process.env.DPKPS_BENCH_WHERE ?? 'page';
assert(['page', 'native', 'both'].includes(where), `DPKPS_BENCH_WHERE is page, native or both, not ${where}`);
const dist = process.env.DPKPS_DIST ?? path.join(ROOT, 'dist');
const cli = process.env.DPKPS_BENCH_CLI ?? path.join(ROOT, 'target', 'release', 'dpkps');
if (where !== 'native') assert(fs.existsSync(path.join(dist, 'index.html')), 'dist/index.html is missing: run `trunk build --release` first');
if (where !== 'page') assert(fs.existsSync(cli), `${cli} is missing: run \`cargo build --release\` first`);
const source = process.env.DPKPS_MTSAMPLES ?? path.join(ROOT, '..', 'shared', 'data', 'mtsamples.csv');
assert(fs.existsSync(source), `MTSamples not found at ${source} (set DPKPS_MTSAMPLES)`);
const env = (k, d) => Number(process.env[k] ?? d);
const N = { syn: env('DPKPS_BENCH_LABELLED', 5000), own: env('DPKPS_BENCH_UNLABELLED', 2500), test: env('DPKPS_BENCH_TEST', 0) };
const CHARS = { syn: env('DPKPS_BENCH_SYN_CHARS', 600), own: env('DPKPS_BENCH_OWN_CHARS', 1800) };
const CLASSES = env('DPKPS_BENCH_CLASSES', 40);
const compare = process.env.DPKPS_BENCH_COMPARE === '1';
const limit = env('DPKPS_BENCH_LIMIT', 7200);
const MB = (b) => (b / 1e6).toFixed(0);

const cutAt = (t, n) => (t.length <= n ? t : t.slice(0, t.lastIndexOf(' ', n) > 0 ? t.lastIndexOf(' ', n) : n));
const quote = (f) => `"${f.replace(/"/g, '""')}"`;

const [header, ...all] = parseCsv(fs.readFileSync(source, 'utf8'));
const [ti, li] = [header.indexOf('transcription'), header.indexOf('medical_specialty')];
const rows = all.filter((r) => r[ti]?.trim() && r[li]?.trim());
const size = new Map();
rows.forEach((r) => size.set(r[li], (size.get(r[li]) ?? 0) + 1));
const kept = new Set([...size].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, CLASSES).map(([c]) => c));
const notes = rows.filter((r) => kept.has(r[li]));
let next = 0;
const take = (n, chars) => Array.from({ length: n }, () => {
  const k = next++;
  const r = notes[k % notes.length];
  return { text: cutAt(rotate(r[ti], Math.floor(k / notes.length)), chars).replace(/\s+/g, ' '), label: r[li] };
});
const syn = take(N.syn, CHARS.syn);
const own = take(N.own, CHARS.own);
const test = take(N.test, CHARS.own);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dpkps-bench-recipient-'));
const write = (name, docs, label) => {
  const p = path.join(tmp, name);
  fs.writeFileSync(p, (label ? 'text,label\n' : 'text\n') + docs.map((d) => (label ? `${quote(d.text)},${quote(d.label)}` : quote(d.text))).join('\n') + '\n');
  return p;
};
const files = { syn: write('synthetic.csv', syn, true), own: write('own.csv', own, false), test: N.test ? write('test.csv', test, true) : null };
const mean = (docs) => (docs.reduce((a, d) => a + d.text.length, 0) / Math.max(docs.length, 1)).toFixed(0);
const sizes = `${N.syn} labelled documents (${kept.size} classes, ${mean(syn)} characters on average), ${N.own} unlabelled (${mean(own)}), ${N.test} test; ${compare ? 'Deep CORAL and the plain classifier' : 'Deep CORAL only'}`;

// The CLI on the same files: what it prints, and the wall time of the whole command.
if (where !== 'page') {
  console.log(`benchmark: the recipient's classifier, native (\`dpkps train\`, ${cli}, ${os.cpus().length} cores): ${sizes}, defaults otherwise`);
  const args = ['train', '--synthetic', files.syn, '--unlabeled', files.own, '--out-dir', path.join(tmp, 'native')];
  if (files.test) args.push('--test', files.test);
  if (compare) args.push('--compare');
  const t0 = Date.now();
  const run = spawnSync(cli, args, { encoding: 'utf8', maxBuffer: 64 << 20 });
  const seconds = (Date.now() - t0) / 1000;
  const said = `${run.stdout}\n${run.stderr}`.split('\n').filter((l) => /^(embedded|time:|trained on|  \S.*accuracy)/.test(l));
  said.forEach((l) => console.log(`  the CLI: ${l.trim()}`));
  console.log(`  command wall time: ${seconds.toFixed(1)} s`);
  if (run.status !== 0) {
    fs.rmSync(tmp, { recursive: true, force: true });
    assert(false, `dpkps train failed (${run.status}): ${run.stderr.slice(-2000)}`);
  }
}
if (where === 'native') {
  fs.rmSync(tmp, { recursive: true, force: true });
  process.exit(0);
}
console.log(`benchmark: the recipient's classifier in the app (release wasm, headless Chromium, ${os.cpus().length} cores): ${sizes}, page defaults otherwise`);

const before = chromiumPids();
const server = await serveStatic(dist);
const browser = await launch();
const renderers = () => [...chromiumPids()].filter(([pid, cmd]) => !before.has(pid) && cmd.includes('dpkps-chromium-') && cmd.includes('--type=renderer')).map(([pid]) => pid);
try {
  const page = await browser.context.newPage();
  await page.goto(server.url);
  await page.waitForSelector('main[data-worker-ready="true"]', { timeout: 60_000 });
  await page.click('#mode-recipient');
  await page.setInputFiles('#syn-input', files.syn);
  await page.waitForSelector('#syn-set table.preview', { timeout: 120_000 });
  await page.setInputFiles('#unl-input', files.own);
  await page.waitForSelector('#unl-set table.preview', { timeout: 120_000 });
  if (files.test) {
    await page.setInputFiles('#test-input', files.test);
    await page.waitForSelector('#test-set table.preview', { timeout: 120_000 });
  }
  if (!compare && await page.isChecked('#compare')) await page.uncheck('#compare');
  const t0 = Date.now();
  await page.click('#train');
  // Progress every minute, so a long run shows it is alive.
  const tick = setInterval(async () => {
    const p = await page.$$eval('li.stage', (lis) => lis.map((li) => `${li.dataset.stage}: ${li.querySelector('.status')?.textContent.trim()}`)).catch(() => []);
    console.log(`  ${((Date.now() - t0) / 1000).toFixed(0)} s: ${p.join('; ')}`);
  }, 60_000);
  await page.waitForSelector('#train-results', { timeout: limit * 1000 }).finally(() => clearInterval(tick));
  const seconds = (Date.now() - t0) / 1000;
  console.log(`  the page: ${(await page.textContent('#trained-line')).trim()}`);
  console.log(`  Train → results: ${seconds.toFixed(1)} s`);
  if (files.test) {
    for (const model of compare ? ['coral', 'plain'] : ['coral']) {
      const row = page.locator(`#scores tr[data-model="${model}"]`);
      console.log(`  ${model}: accuracy ${await row.locator('.accuracy').textContent()}, macro-F1 ${await row.locator('.macro-f1').textContent()}`);
    }
  }
  let wasm = null;
  for (const w of page.workers()) {
    const m = await w.evaluate(() => self.dpkpsMemory ?? null).catch(() => null);
    if (m) wasm = m;
  }
  const procs = renderers().map(rss);
  console.log(`  memory: worker wasm ${MB(wasm?.worker ?? 0)} MB, helpers' wasm [${(wasm?.helpers ?? []).map(MB).join(', ')}] MB, renderer resident ${MB(procs.reduce((a, p) => a + p.now, 0))} MB (peak of one renderer process ${MB(procs.reduce((a, p) => Math.max(a, p.peak), 0))} MB)`);
} finally {
  await browser.close();
  await server.close();
  fs.rmSync(tmp, { recursive: true, force: true });
}
