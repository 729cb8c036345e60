// The person as the privacy unit, in the built app (dist/), in headless Chromium: a corpus with
// a patient column (several notes per patient, in both classes), the person column chosen in
// step 2, the summary saying the unit is the person, a run, and the privacy report saying so;
// a row without a patient refused with its line. No request leaves the page's origin.
// Screenshots go to target/screenshots/person-*.png.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, SHOTS, serveStatic, launch, guard, runTests, assert, cardioPulmonaryRows, CANARY } from './harness.mjs';

const dist = path.join(ROOT, 'dist');
assert(fs.existsSync(path.join(dist, 'index.html')), 'dist/index.html is missing: run `trunk build --release` first');
fs.mkdirSync(SHOTS, { recursive: true });

// 40 notes of 8 patients (5 each, in both classes).
const rows = cardioPulmonaryRows(40).map((r, i) => [...r, i === 0 ? 'patient' : `P-${(i - 1) % 8}`]);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dpkps-person-'));
const corpusPath = path.join(tmp, 'notes.csv');
fs.writeFileSync(corpusPath, rows.map((r) => r.join(',')).join('\n') + '\n');
const badPath = path.join(tmp, 'no-patient.csv');
fs.writeFileSync(badPath, rows.slice(0, 4).map((r, i) => (i === 3 ? [...r.slice(0, 3), ''] : r).join(',')).join('\n') + '\n');

const server = await serveStatic(dist);
const browser = await launch();
const origin = new URL(server.url).origin;
let page;
let problems;
const shot = (name) => page.screenshot({ path: path.join(SHOTS, `person-${name}.png`), fullPage: true });

async function open(file) {
  page = await browser.context.newPage();
  problems = guard(page, origin);
  await page.goto(server.url);
  await page.waitForSelector('main[data-worker-ready="true"]', { timeout: 60_000 });
  await page.setInputFiles('#corpus-input', file);
  await page.waitForSelector('table.preview', { timeout: 30_000 });
  assert(await page.locator('#person-col').inputValue() === '', 'the person column is never guessed');
  await page.selectOption('#person-col', 'patient');
}

await runTests([
  ['a person column: the summary, the run and the report say the unit is the person', async () => {
    await open(corpusPath);
    await page.click('#load');
    await page.waitForSelector('#summary', { timeout: 60_000 });
    const unit = await page.textContent('#privacy-unit');
    assert(/^the person: 8 named by the person column/.test(unit.trim()), unit);
    await page.check('#observed-labels input[data-label="cardiology"]');
    await page.check('#observed-labels input[data-label="pulmonary"]');
    await page.fill('#eps_voc', '20');
    await page.fill('#top_n', '12');
    await page.fill('#budget', '1000');
    await page.waitForFunction(() => !document.querySelector('#run').disabled);
    await shot('1-loaded');
    await page.click('#run');
    await page.waitForSelector('#results', { timeout: 120_000 });
    await page.waitForFunction(() => !document.querySelector('#cancel'), null, { timeout: 120_000 });
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#dl-report')]);
    const report = JSON.parse(fs.readFileSync(await dl.path(), 'utf8'));
    assert(report.privacy_unit === 'person (column “patient”)', report.privacy_unit);
    assert(/one person's documents/.test(report.neighbouring_relation) && !/k·ε/.test(report.neighbouring_relation), report.neighbouring_relation);
    assert(!JSON.stringify(report).includes('P-3') && !JSON.stringify(report).includes(CANARY), 'no person id or canary in the report');
    const [h] = await Promise.all([page.waitForEvent('download'), page.click('#dl-report-html-run')]);
    assert(/\(per person\)\./.test(fs.readFileSync(await h.path(), 'utf8')), 'the printable report says per person');
    await shot('2-run');
    assert(problems.length === 0, problems.join('\n'));
    await page.close();
  }],
  ['a note without a patient is refused with its line', async () => {
    await open(badPath);
    await page.click('#load');
    await page.waitForSelector('#error', { timeout: 30_000 });
    const err = await page.textContent('#error');
    assert(/no-patient\.csv, line 4: no person in "patient"/.test(err), err);
    await shot('3-refused');
    assert(problems.length === 0, problems.join('\n'));
    await page.close();
  }],
]);

await browser.close();
await server.close();
fs.rmSync(tmp, { recursive: true, force: true });
