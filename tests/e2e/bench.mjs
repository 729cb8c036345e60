// Benchmarks of the built app (dist/) in headless Chromium. They print figures and pass or
// fail nothing. Run by `scripts/bench.sh --wasm` after `trunk build --release`.
//  1. Sentence embeddings in the app's Web Worker (release wasm, +simd128): model load +
//     optimise, terms/s at batch 1 and 32 on the worker alone, then batch 32 shared with its
//     helper workers (worker/pool.rs), the worker's wasm memory.
//  2. Reading a 200 MB CSV: read + match time in the worker, and how responsive the UI thread
//     stays meanwhile (longest gap between 50 ms timer ticks).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, serveStatic, launch, assert } from './harness.mjs';

// DPKPS_DIST: benchmark another build of the app (e.g. with other target features).
const dist = process.env.DPKPS_DIST ?? path.join(ROOT, 'dist');
assert(fs.existsSync(path.join(dist, 'index.html')), 'dist/index.html is missing: run `trunk build --release` first');
const server = await serveStatic(dist);
const browser = await launch();
const page = await browser.context.newPage();
await page.goto(`${server.url}?bench`);
await page.waitForSelector('main[data-worker-ready="true"]', { timeout: 60_000 });

await page.click('#bench');
await page.waitForSelector('#bench-result:not(:empty)', { timeout: 600_000 });
const b = JSON.parse(await page.textContent('#bench-result'));
console.log(`benchmark: sentence embeddings in the app's Web Worker (wasm32 +simd128, release), ${b.terms} MeSH terms, sorted by token count`);
console.log(`  model load + optimise: ${b.model_load_seconds.toFixed(2)} s`);
console.log(`  batch 1:  ${b.batch1_terms_per_second.toFixed(1)} terms/s`);
console.log(`  batch 32: ${b.batch32_terms_per_second.toFixed(1)} terms/s`);
console.log(`  batch 32, one input shape repeated: ${b.batch32_same_shape_terms_per_second.toFixed(1)} terms/s (${b.same_shape_tokens.toFixed(0)} tokens per term there, ${b.mean_tokens.toFixed(1)} on average over all terms)`);
console.log(`  helper workers: ${b.helpers} (started and loaded the model in ${b.helpers_start_seconds.toFixed(2)} s; this machine reports ${await page.evaluate(() => navigator.hardwareConcurrency)} cores)`);
console.log(`  batch 1, this worker + its helpers: ${b.batch1_with_helpers_terms_per_second.toFixed(1)} terms/s`);
console.log(`  term batches of ${b.term_width}, each term at its home row, this worker + its helpers (the app's path): ${b.rows_with_helpers_terms_per_second.toFixed(1)} terms/s`);
console.log(`  worker wasm memory: ${(b.wasm_memory_bytes / 1e6).toFixed(1)} MB`);

// A synthetic 200 MB corpus: sentences of MeSH terms and filler words, two labels.
const mesh = fs.readFileSync(path.join(ROOT, 'www/vocab/medical_mesh2017.txt'), 'utf8').split('\n').filter((t) => t && !t.includes('"'));
const filler = ['the', 'patient', 'presents', 'with', 'history', 'of', 'and', 'denies', 'today', 'no', 'acute', 'distress'];
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dpkps-bench-'));
const big = path.join(tmp, 'big.csv');
const out = fs.openSync(big, 'w');
fs.writeSync(out, 'label,text\n');
let bytes = 0;
let docs = 0;
let seed = 7;
const rnd = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
while (bytes < 200e6) {
  let chunk = '';
  for (let d = 0; d < 1000; d++, docs++) {
    const words = [];
    for (let w = 0; w < 300; w++) words.push(w % 6 === 0 ? mesh[rnd(mesh.length)] : filler[rnd(filler.length)]);
    chunk += `${docs % 2 ? 'a' : 'b'},"${words.join(' ')}."\n`;
  }
  bytes += Buffer.byteLength(chunk);
  fs.writeSync(out, chunk);
}
fs.closeSync(out);
await page.setInputFiles('#corpus-input', big);
await page.waitForSelector('table.preview', { timeout: 60_000 });
await page.evaluate(() => {
  window.gaps = [];
  let last = performance.now();
  window.probe = setInterval(() => { const t = performance.now(); window.gaps.push(t - last); last = t; }, 50);
});
const t0 = Date.now();
await page.click('#load');
await page.waitForSelector('#summary', { timeout: 900_000 });
const secs = (Date.now() - t0) / 1000;
const gaps = await page.evaluate(() => { clearInterval(window.probe); return window.gaps; });
console.log(`benchmark: reading and matching ${(bytes / 1e6).toFixed(0)} MB of CSV (${docs} documents, MeSH) in the worker`);
console.log(`  ${secs.toFixed(1)} s (${(bytes / 1e6 / secs).toFixed(1)} MB/s, ${(docs / secs).toFixed(0)} documents/s)`);
console.log(`  UI thread meanwhile: ${gaps.length} ticks of a 50 ms timer, longest gap ${Math.max(...gaps).toFixed(0)} ms`);
fs.rmSync(tmp, { recursive: true, force: true });
await browser.close();
await server.close();
