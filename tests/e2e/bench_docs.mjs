// Documents embedded per second in the page and natively, on the same documents and machine,
// one core each (issue 38). Figures only: nothing passes or fails on speed.
//  1. natively: `dpkps bench docs` (the release binary DPKPS_BENCH_CLI or target/release/dpkps)
//     picks two sets from MTSamples (DPKPS_MTSAMPLES, file order): DPKPS_BENCH_DOCS (100) notes
//     of at least 256 tokens (the model reads the first 256) and as many notes cut to their first
//     100 words (about a generated document), embeds them on one thread, profiles a few, and
//     writes the sets to a file;
//  2. the page (dist/, headless Chromium, `?bench`): the same file through the benchmark's
//     "Embed these documents" (`Request::BenchDocs`): the worker alone (one core), then the
//     worker and its helpers, and the same profile measured in the worker.
// DPKPS_BENCH_PLANS=1: also time plans of fixed shapes (batch, padded length) on both sides.
// Run by `scripts/bench.sh --docs` after `trunk build --release` and `cargo build --release`.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { ROOT, serveStatic, launch, assert } from './harness.mjs';

const dist = process.env.DPKPS_DIST ?? path.join(ROOT, 'dist');
const cli = process.env.DPKPS_BENCH_CLI ?? path.join(ROOT, 'target', 'release', 'dpkps');
const source = process.env.DPKPS_MTSAMPLES ?? path.join(ROOT, '..', 'shared', 'data', 'mtsamples.csv');
const docs = process.env.DPKPS_BENCH_DOCS ?? '100';
const plans = process.env.DPKPS_BENCH_PLANS === '1';
assert(fs.existsSync(path.join(dist, 'index.html')), 'dist/index.html is missing: run `trunk build --release` first');
assert(fs.existsSync(cli), `${cli} is missing: run \`cargo build --release\` first`);
assert(fs.existsSync(source), `MTSamples not found at ${source} (set DPKPS_MTSAMPLES)`);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dpkps-docs-'));
const file = path.join(tmp, 'docs.json');
const load = () => os.loadavg().map((x) => x.toFixed(2)).join(', ');
console.log(`load average before: ${load()}`);
const args = ['bench', 'docs', '--corpus', source, '--text-col', 'transcription', '--docs', docs, '--profile', '20', '--write', file];
if (plans) args.push('--plans');
const native = spawnSync(cli, args, { encoding: 'utf8' });
assert(native.status === 0, `dpkps bench docs failed: ${native.stderr}`);
process.stdout.write(native.stdout);
console.log(`load average: ${load()}`);

const server = await serveStatic(dist);
const browser = await launch();
const page = await browser.context.newPage();
await page.goto(`${server.url}?bench`);
await page.waitForSelector('main[data-worker-ready="true"]', { timeout: 60_000 });
await page.fill('#bench-docs-input', fs.readFileSync(file, 'utf8'));
if (plans) await page.check('#bench-docs-plans');
await page.click('#bench-docs');
await page.waitForSelector('#bench-docs-result:not(:empty)', { timeout: 1_800_000 });
const text = await page.textContent('#bench-docs-result');
let b;
try { b = JSON.parse(text); } catch { throw new Error(`the page said: ${text}`); }
console.log(`benchmark: the same documents in the page's worker (wasm32, release), one document per model call; ${b.helpers} helper worker(s), ${b.cores} cores reported`);
const names = { notes: '256-token notes', short: '100-word documents' };
for (const s of b.sets) {
  console.log(`  ${names[s.name] ?? s.name}: ${s.documents} documents, ${s.tokens_per_document.toFixed(0)} tokens each: worker alone ${s.alone_per_second.toFixed(2)} documents/s (${(1000 / s.alone_per_second).toFixed(1)} ms a document); worker + helpers ${s.with_helpers_per_second.toFixed(2)} documents/s`);
  process.stdout.write(s.profile);
  for (const [what, ms, same, build] of s.plans) console.log(`    plan ${what}: ${ms.toFixed(1)} ms a document; same bits as alone: ${same}; built in ${build.toFixed(0)} ms`);
}
console.log(`  worker wasm memory: ${(b.wasm_memory_bytes / 1e6).toFixed(1)} MB`);
console.log(`load average after: ${load()}`);
fs.rmSync(tmp, { recursive: true, force: true });
await browser.close();
await server.close();
