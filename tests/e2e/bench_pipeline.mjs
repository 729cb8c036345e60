// The curator's pipeline at corpus scale in headless Chromium (issue 15): MTSamples repeated
// 12 times (≈ 60,000 notes), read + match, then Run → results with the page's defaults, per
// sampler and vocabulary; prints the time of every stage as the page reports it, and the wall
// time from the Run click to the results. Figures only: nothing passes or fails on speed.
// Run by `scripts/bench.sh --pipeline` after `trunk build --release`.
//   DPKPS_BENCH_SAMPLERS=histogram,independent  DPKPS_BENCH_VOCABS=medical,english  DPKPS_BENCH_REPEAT=12
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, serveStatic, launch, assert } from './harness.mjs';

const dist = process.env.DPKPS_DIST ?? path.join(ROOT, 'dist');
assert(fs.existsSync(path.join(dist, 'index.html')), 'dist/index.html is missing: run `trunk build --release` first');
const source = process.env.DPKPS_MTSAMPLES ?? path.join(ROOT, '..', 'shared', 'data', 'mtsamples.csv');
assert(fs.existsSync(source), `MTSamples not found at ${source} (set DPKPS_MTSAMPLES)`);
const repeat = Number(process.env.DPKPS_BENCH_REPEAT ?? 12);
const samplers = (process.env.DPKPS_BENCH_SAMPLERS ?? 'histogram,independent').split(',');
const vocabs = (process.env.DPKPS_BENCH_VOCABS ?? 'medical,english').split(',');

// The corpus: the header once, the rows `repeat` times.
const text = fs.readFileSync(source, 'utf8');
const cut = text.indexOf('\n') + 1;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dpkps-bench-pipeline-'));
const corpus = path.join(tmp, `mtsamples-x${repeat}.csv`);
const out = fs.openSync(corpus, 'w');
fs.writeSync(out, text.slice(0, cut));
for (let r = 0; r < repeat; r++) fs.writeSync(out, text.slice(cut).endsWith('\n') ? text.slice(cut) : `${text.slice(cut)}\n`);
fs.closeSync(out);
console.log(`benchmark: the pipeline in the app (release wasm, headless Chromium), MTSamples × ${repeat} (${(fs.statSync(corpus).size / 1e6).toFixed(0)} MB), page defaults`);

const server = await serveStatic(dist);
const browser = await launch();
const page = await browser.context.newPage();
await page.goto(server.url);
await page.waitForSelector('main[data-worker-ready="true"]', { timeout: 60_000 });

const stageTimes = () => page.$$eval('li.stage', (lis) => lis.map((li) => `${li.dataset.stage}: ${li.textContent.replace(/\s+/g, ' ').trim()}`));
for (const vocab of vocabs) {
  await page.setInputFiles('#corpus-input', corpus);
  await page.waitForSelector('table.preview', { timeout: 60_000 });
  await page.selectOption('#text-col', 'transcription');
  await page.selectOption('#label-col', 'medical_specialty');
  await page.selectOption('#vocab', vocab);
  const t0 = Date.now();
  await page.click('#load');
  await page.waitForSelector('#summary', { timeout: 600_000 });
  const docs = (await page.textContent('#n-docs')).trim();
  console.log(`  ${vocab} vocabulary: read + match ${docs} documents in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  // Every observed label declared (the benchmark's corpus is public).
  const labels = await page.$$eval('#observed-labels input', (xs) => xs.map((x) => x.dataset.label));
  await page.fill('#class-list', labels.join('\n'));
  for (const sampler of samplers) {
    await page.selectOption('#sampler', sampler);
    await page.waitForFunction(() => !document.querySelector('#run')?.disabled, null, { timeout: 30_000 });
    const t1 = Date.now();
    await page.click('#run');
    await page.waitForFunction(() => !document.querySelector('#cancel') && (document.querySelector('#results') || document.querySelector('#error')), null, { timeout: 1_800_000 });
    const wall = (Date.now() - t1) / 1000;
    const failed = await page.$('#error');
    console.log(`    ${sampler}, ${labels.length} classes: Run → results ${wall.toFixed(1)} s${failed ? ` (FAILED: ${(await failed.textContent()).trim()})` : ''}`);
    for (const s of await stageTimes()) console.log(`      ${s}`);
  }
}
const mem = await page.evaluate(() => (performance.memory ? performance.memory.usedJSHeapSize : 0));
console.log(`  UI thread JS heap after the runs: ${(mem / 1e6).toFixed(1)} MB`);
await browser.close();
await server.close();
fs.rmSync(tmp, { recursive: true, force: true });
