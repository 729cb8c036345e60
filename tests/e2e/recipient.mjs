// The recipient's mode ("Use a synthetic corpus") in the built app (dist/), in headless
// Chromium: switch mode, load a labelled synthetic corpus (JSONL), unlabelled documents (CSV,
// another text column) and a labelled test set (TSV, other column names) through the real file
// inputs, train in the worker with the plain classifier to compare, check the loss curve, the
// scores and the confusion matrices, download the predictions and the model, load the model
// with the native `dpkps predict` and compare its predictions with the page's, and cancel a
// second training between epochs. Throughout: no request to any other origin, no console error.
// The documents come from tests/fixtures/mtsamples_shift.csv (4 specialties), cut short so
// that the test stays quick. Screenshots: target/screenshots/recipient-*.png.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { ROOT, SHOTS, serveStatic, launch, guard, runTests, assert } from './harness.mjs';

const dist = path.join(ROOT, 'dist');
assert(fs.existsSync(path.join(dist, 'index.html')), 'dist/index.html is missing: run `trunk build --release` first');
fs.mkdirSync(SHOTS, { recursive: true });

/** RFC 4180 CSV (quoted fields with commas, quotes and newlines) into rows of strings. */
function parseCsv(text, sep = ',') {
  const rows = [];
  let row = [], field = '', quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { field += '"'; i++; }
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === sep) { row.push(field); field = ''; }
    else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(field); rows.push(row); row = []; field = '';
    } else field += c;
  }
  if (field !== '' || row.length) { row.push(field); rows.push(row); }
  return rows;
}

const csvCell = (s) => `"${s.replace(/"/g, '""')}"`;
// Documents cut to their first 700 characters (about 150 tokens): the page embeds each
// document's first 256 tokens, and shorter ones embed faster.
const cut = (t) => t.slice(0, 700).replace(/[\t\n\r]+/g, ' ');

const [header, ...notes] = parseCsv(fs.readFileSync(path.join(ROOT, 'tests/fixtures/mtsamples_shift.csv'), 'utf8'));
assert(header[0] === 'text' && header[1] === 'label', `fixture columns: ${header}`);
const byClass = new Map();
for (const [text, label] of notes) {
  if (!byClass.has(label)) byClass.set(label, []);
  byClass.get(label).push(cut(text));
}
const classes = [...byClass.keys()].sort();
assert(classes.length === 4, `4 classes in the fixture, not ${classes.length}`);
// Per class: 10 synthetic (labelled) notes, 5 unlabelled, 5 for the test, all different notes.
const PER = { syn: 10, unl: 5, test: 5 };
const synthetic = [], unlabelled = [], test = [];
for (const c of classes) {
  const n = byClass.get(c);
  n.slice(0, PER.syn).forEach((text) => synthetic.push({ text, label: c }));
  n.slice(PER.syn, PER.syn + PER.unl).forEach((text) => unlabelled.push({ text, label: c }));
  n.slice(PER.syn + PER.unl, PER.syn + PER.unl + PER.test).forEach((text) => test.push({ text, label: c }));
}
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dpkps-recipient-'));
const synPath = path.join(tmp, 'synthetic.jsonl');
fs.writeFileSync(synPath, synthetic.map((d) => JSON.stringify(d)).join('\n') + '\n');
const unlPath = path.join(tmp, 'our_notes.csv');
fs.writeFileSync(unlPath, 'id,note\n' + unlabelled.map((d, i) => `${i},${csvCell(d.text)}`).join('\n') + '\n');
const testPath = path.join(tmp, 'our_sample.tsv');
fs.writeFileSync(testPath, 'note\tspecialty\n' + test.map((d) => `${d.text}\t${d.label}`).join('\n') + '\n');

// The native CLI, from the shared target directory when there is one (release if built).
const targetDir = process.env.CARGO_TARGET_DIR ?? path.join(ROOT, 'target');
const cli = ['release', 'debug'].map((p) => path.join(targetDir, p, 'dpkps')).find((p) => fs.existsSync(p));

const server = await serveStatic(dist);
const browser = await launch();
const origin = new URL(server.url).origin;
const page = await browser.context.newPage();
const problems = guard(page, origin);
const shot = (name) => page.screenshot({ path: path.join(SHOTS, `recipient-${name}.png`), fullPage: true });

async function download(selector) {
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click(selector)]);
  const file = path.join(tmp, dl.suggestedFilename());
  await dl.saveAs(file);
  return file;
}

await runTests([
  ['switch to the recipient mode and choose the three sets with their columns', async () => {
    await page.goto(server.url);
    await page.waitForSelector('main[data-worker-ready="true"]', { timeout: 60_000 });
    assert(await page.locator('#upload-h').count() === 1, 'the curator mode is shown first');
    assert(await page.getAttribute('#mode-curator', 'aria-pressed') === 'true', 'the curator button is pressed');
    await page.click('#mode-recipient');
    await page.waitForSelector('#syn-set');
    assert(await page.getAttribute('#mode-recipient', 'aria-pressed') === 'true', 'the recipient button is pressed');
    assert(await page.locator('#upload-h').count() === 0, 'the curator steps are hidden in the recipient mode');
    assert(await page.isDisabled('#train'), 'Train waits for the synthetic corpus');
    await page.setInputFiles('#syn-input', synPath);
    await page.waitForSelector('#syn-set table.preview', { timeout: 30_000 });
    assert(await page.inputValue('#syn-text-col') === 'text', 'synthetic text column');
    assert(await page.inputValue('#syn-label-col') === 'label', 'synthetic label column');
    await page.setInputFiles('#unl-input', unlPath);
    await page.waitForSelector('#unl-set table.preview', { timeout: 30_000 });
    await page.selectOption('#unl-text-col', 'note');
    assert(await page.locator('#unl-label-col').count() === 0, 'no label column for the unlabelled documents');
    await page.setInputFiles('#test-input', testPath);
    await page.waitForSelector('#test-set table.preview', { timeout: 30_000 });
    await page.selectOption('#test-text-col', 'note');
    await page.selectOption('#test-label-col', 'specialty');
    assert(await page.isChecked('#compare'), 'compare is on by default');
    // A bad setting is refused in plain words before anything runs.
    await page.fill('#epochs', 'many');
    assert(/not a whole number/.test(await page.textContent('#train-blocker')), await page.textContent('#train-blocker'));
    assert(await page.isDisabled('#train'), 'Train is off with a bad setting');
    await page.fill('#epochs', '30');
    assert(!(await page.isDisabled('#train')), 'Train is on');
    await shot('1-sets');
  }],
  ['train with and without the CORAL term in the worker: scores, confusion matrix, loss curve', async () => {
    const t0 = Date.now();
    await page.click('#train');
    await page.waitForSelector('#train-results', { timeout: 300_000 });
    const seconds = (Date.now() - t0) / 1000;
    const line = await page.textContent('#trained-line');
    console.log(`     page: ${line} (${seconds.toFixed(1)} s from the click)`);
    const n = synthetic.length, u = unlabelled.length, t = test.length;
    assert(new RegExp(`Trained on ${n} synthetic documents in 4 classes; ${u} of your unlabelled documents; ${t} test documents scored`).test(line), line);
    assert(new RegExp(`Embedding ${n + u + t} documents took`).test(line), line);
    for (const model of ['coral', 'plain']) {
      const row = page.locator(`#scores tr[data-model="${model}"]`);
      const acc = Number(await row.locator('.accuracy').textContent());
      const f1 = Number(await row.locator('.macro-f1').textContent());
      console.log(`     ${model}: accuracy ${acc}, macro-F1 ${f1}`);
      // Four classes: chance is 0.25. These notes are easy to tell apart (0.8 or more natively).
      assert(acc >= 0.5 && acc <= 1, `${model} accuracy ${acc}`);
      assert(f1 > 0.4 && f1 <= 1, `${model} macro-F1 ${f1}`);
      const cells = await page.locator(`#confusion-${model} tbody td:not(.f1)`).allTextContents();
      assert(cells.length === 16, `${model}: a 4 × 4 confusion matrix, not ${cells.length} cells`);
      const total = cells.reduce((a, c) => a + Number(c), 0);
      assert(total === t, `${model}: the confusion matrix counts ${total} test documents, not ${t}`);
      const diag = (await page.locator(`#confusion-${model} tbody td.diag`).allTextContents()).reduce((a, c) => a + Number(c), 0);
      assert(Math.abs(diag / t - acc) < 1e-3, `${model}: the diagonal (${diag}) is the accuracy`);
      assert((await page.locator(`#confusion-${model} tbody td.f1`).count()) === 4, `${model}: F1 per class`);
    }
    const curve = page.locator('#loss-curve');
    assert(await curve.getAttribute('data-points') === '60', `30 epochs of each model: ${await curve.getAttribute('data-points')}`);
    assert(await page.locator('#loss-curve path.line-coral').count() === 1 && await page.locator('#loss-curve path.line-plain').count() === 1, 'two loss lines');
    await page.locator('#train-results').scrollIntoViewIfNeeded();
    await shot('2-results');
    await page.locator('#loss-curve').screenshot({ path: path.join(SHOTS, 'recipient-2b-loss-curve.png') });
    await page.locator('#train-results').screenshot({ path: path.join(SHOTS, 'recipient-2c-scores.png') });
  }],
  ['download the predictions and the model; the native CLI loads the model and agrees', async () => {
    const csv = parseCsv(fs.readFileSync(await download('#dl-pred-csv'), 'utf8').trim());
    assert(csv[0].join(',') === 'text,label,probability', `CSV header: ${csv[0]}`);
    assert(csv.length === unlabelled.length + 1, `${unlabelled.length} predictions in the CSV, not ${csv.length - 1}`);
    const jsonl = fs.readFileSync(await download('#dl-pred-jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert(jsonl.length === unlabelled.length, 'JSONL predictions');
    jsonl.forEach((p, i) => {
      assert(p.text === unlabelled[i].text, `prediction ${i} is for document ${i}, in order`);
      assert(classes.includes(p.label) && p.probability > 0 && p.probability <= 1, `prediction ${i}: ${JSON.stringify(p)}`);
      assert(csv[i + 1][1] === p.label, `CSV and JSONL agree on document ${i}`);
    });
    const right = jsonl.filter((p, i) => p.label === unlabelled[i].label).length;
    console.log(`     predictions right on ${right} of ${jsonl.length} unlabelled documents`);
    const modelPath = await download('#dl-model');
    const bytes = fs.readFileSync(modelPath);
    const headerLen = Number(bytes.readBigUInt64LE(0));
    const meta = JSON.parse(bytes.subarray(8, 8 + headerLen).toString('utf8')).__metadata__;
    assert(meta.format === 'dpkps-classifier/1', `model format: ${meta.format}`);
    assert(JSON.stringify(JSON.parse(meta.labels)) === JSON.stringify(classes), `model classes: ${meta.labels}`);
    assert(/^[0-9a-f]{64}$/.test(meta.embedding_model ?? ''), 'the model names its embedding model');
    if (!cli) {
      console.log('     (no native dpkps binary built: the model was not loaded natively)');
      return;
    }
    const out = path.join(tmp, 'native.jsonl');
    execFileSync(cli, ['predict', '--classifier', modelPath, '--corpus', unlPath, '--text-col', 'note', '--out', out], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
    const native = fs.readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert(native.length === jsonl.length, 'native predictions');
    // Same model, same documents; the browser's and the native matrix kernels may round
    // differently, so a near tie could go the other way: nearly all must agree.
    const same = native.filter((p, i) => p.label === jsonl[i].label).length;
    const closest = Math.max(...native.map((p, i) => Math.abs(p.probability - jsonl[i].probability)));
    console.log(`     ${cli}: ${same} of ${native.length} predictions as in the page; largest probability difference ${closest.toFixed(4)}`);
    assert(same >= native.length - 1, `native and page predictions differ on ${native.length - same} documents`);
  }],
  ['a second training is cancelled between epochs', async () => {
    // Many epochs, so that training is still running when Cancel is clicked.
    await page.fill('#epochs', '5000');
    await page.click('#train');
    assert(await page.locator('#train-results').count() === 0, 'the old results are cleared');
    await page.waitForSelector('li.stage[data-stage="train"][data-state="running"]', { timeout: 300_000 });
    await page.waitForFunction(() => Number(document.querySelector('#loss-curve')?.dataset.points) >= 3, null, { timeout: 60_000 });
    await page.click('#train-cancel');
    await page.waitForSelector('#rec-error', { timeout: 30_000 });
    assert(/Training cancelled/.test(await page.textContent('#rec-error')), await page.textContent('#rec-error'));
    assert(await page.getAttribute('li.stage[data-stage="train"]', 'data-state') === 'failed', 'the training stage shows it stopped');
    assert(await page.locator('#train-results').count() === 0, 'no results from a cancelled training');
    const points = Number(await page.getAttribute('#loss-curve', 'data-points'));
    assert(points < 5000, `stopped early: ${points} epochs`);
    await page.fill('#epochs', '30');
    assert(!(await page.isDisabled('#train')), 'Train is on again');
    await shot('3-cancelled');
    // Back to the curator's mode: its steps are there again.
    await page.click('#mode-curator');
    await page.waitForSelector('#upload-h');
  }],
  ['no request left the page\'s origin, no console error', async () => {
    const other = problems.requests.filter((r) => new URL(r.url).origin !== origin);
    assert(other.length === 0, `requests elsewhere: ${other.map((r) => r.url).join(', ')}`);
    assert(problems.length === 0, problems.join('\n'));
  }],
]);

await browser.close();
await server.close();
fs.rmSync(tmp, { recursive: true, force: true });
