// Embedding benchmark in the built app's Web Worker (release wasm, +simd128), headless
// Chromium: model load + optimise time, terms/s at batch 1 and 32, wasm memory. Prints figures;
// passes or fails nothing. Run by `scripts/bench.sh --wasm` after `trunk build --release`.
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, serveStatic, launch, assert } from './harness.mjs';

const dist = path.join(ROOT, 'dist');
assert(fs.existsSync(path.join(dist, 'index.html')), 'dist/index.html is missing: run `trunk build --release` first');
const server = await serveStatic(dist);
const browser = await launch();
const page = await browser.context.newPage();
await page.goto(`${server.url}?bench`);
await page.waitForSelector('main[data-worker-ready="true"]', { timeout: 60_000 });
await page.click('#bench');
await page.waitForSelector('#bench-result:not(:empty)', { timeout: 600_000 });
const b = JSON.parse(await page.textContent('#bench-result'));
console.log(`benchmark: sentence embeddings in the app's Web Worker (wasm32 +simd128, release), ${b.terms} MeSH terms, sorted by length`);
console.log(`  model load + optimise: ${b.model_load_seconds.toFixed(2)} s`);
console.log(`  batch 1:  ${b.batch1_terms_per_second.toFixed(1)} terms/s`);
console.log(`  batch 32: ${b.batch32_terms_per_second.toFixed(1)} terms/s`);
console.log(`  worker wasm memory: ${(b.wasm_memory_bytes / 1e6).toFixed(1)} MB`);
await browser.close();
await server.close();
