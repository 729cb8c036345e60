// The curator's flow in the built app (dist/), in headless Chromium: pick a corpus through the
// real file input, choose columns, read and match, set privacy parameters (with a refused bad
// value), run the whole DP pipeline in the Web Worker, download the outputs, run again (the
// ledger adds up, cached embeddings are reused), cancel a run, check the bundled model against
// sentence-transformers' reference vectors, and refuse a wrong model. Throughout: no request to
// any other origin, no console error, and no private canary in anything downloaded.
// Screenshots of each step go to target/screenshots/app-*.png.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, SHOTS, serveStatic, launch, guard, runTests, assert, startLlmServer, CANARY, cardioPulmonaryRows, sendReloadResume } from './harness.mjs';

const dist = path.join(ROOT, 'dist');
assert(fs.existsSync(path.join(dist, 'index.html')), 'dist/index.html is missing: run `trunk build --release` first');
fs.mkdirSync(SHOTS, { recursive: true });

// A small labelled corpus. Every document carries a fake patient name (a canary that is in no
// vocabulary) and a unique five-word span; neither may appear in any output.
const rows = cardioPulmonaryRows(40);
// One document with a rare label the curator does not declare: it is left out, and its label
// must appear in no output (a new label adding a class would reveal the document).
const RARE = 'Zebra-Clinic-17';
rows.push(['40', RARE, `"Patient ${CANARY} record 40 seen today, unique span kappa40 lambda40 mu40 nu40 xi40. History of asthma; now Cough with Fever."`]);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dpkps-e2e-'));
const corpusPath = path.join(tmp, 'notes.csv');
fs.writeFileSync(corpusPath, rows.map((r) => r.join(',')).join('\n') + '\n');
const badPath = path.join(tmp, 'broken.jsonl');
const ownVocabPath = path.join(tmp, 'my-words.txt');
fs.copyFileSync(path.join(ROOT, 'www/vocab/english_glove6b.txt'), ownVocabPath);
fs.writeFileSync(badPath, '{"text": "fine", "label": "a"}\n{"text": "also fine", "label": "b"}\n{"text": "cut off\n');
const spans = rows.slice(1).map((r) => r[2].match(/kappa\d+ lambda\d+ mu\d+ nu\d+ xi\d+/)[0]);

// Served under a nested path, as an intranet server would host it (issue 14): every asset, the
// worker, its helpers, the model and the vocabularies must load by relative URLs below it
// (the guards flag any request to this origin outside the prefix).
const server = await serveStatic(dist, { prefix: '/intranet/tools/dpkps/' });
const llm = await startLlmServer();
const browser = await launch();
const origin = new URL(server.url).origin;
let page;
let problems;
/** The DP utility check's ledger id and the sampler it chose (set by its test, read by run 1's). */
let checkId;
let checkChosen;

const shot = (name) => page.screenshot({ path: path.join(SHOTS, `app-${name}.png`), fullPage: true });

async function download(selector) {
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click(selector)]);
  return fs.readFileSync(await dl.path(), 'utf8');
}

function assertClean(text, what) {
  assert(!text.includes(CANARY), `${what} contains the canary name`);
  assert(!text.includes(RARE), `${what} contains the undeclared rare label`);
  for (const s of spans) assert(!text.includes(s), `${what} contains a private 5-word span: ${s}`);
}

/** A fresh tab on the app, guarded, once its worker is ready. */
async function openApp() {
  page = await browser.context.newPage();
  // The LLM endpoint the curator configures is the one other origin allowed; the HTTP 429
  // and 500 replies injected below make Chromium log "Failed to load resource".
  problems = guard(page, origin, { prefix: server.prefix, origins: [llm.origin], console: /Failed to load resource: the server responded with a status of (429|500)/ });
  await page.goto(server.url);
  await page.waitForSelector('main[data-worker-ready="true"]', { timeout: 60_000 });
}

async function settle(timeout = 240_000) {
  await page.waitForFunction(() => !document.querySelector('#cancel'), null, { timeout });
}

await runTests([
  ['a broken file gets a plain-words error that names the line', async () => {
    await openApp();
    await page.setInputFiles('#corpus-input', badPath);
    await page.waitForSelector('#error', { timeout: 30_000 });
    const err = await page.textContent('#error');
    assert(/broken\.jsonl, line 3: not a valid JSON object \(EOF while parsing a string, at character \d+\)/.test(err), err);
    await shot('0-bad-file');
    assert(problems.length === 0, problems.join('\n'));
    await page.close();
  }],
  ['upload, columns, read and match', async () => {
    await openApp();
    await page.setInputFiles('#corpus-input', corpusPath);
    await page.waitForSelector('table.preview', { timeout: 30_000 });
    assert(await page.locator('#text-col').inputValue() === 'text', 'text column not suggested');
    assert(await page.locator('#label-col').inputValue() === 'label', 'label column not suggested');
    await shot('1-preview');
    await page.click('#load');
    await page.waitForSelector('#summary', { timeout: 60_000 });
    assert((await page.textContent('#n-docs')).trim() === '41', 'document count');
    // Labels without their counts, alphabetically (issue 25, item 4): a class set picked by
    // counts would depend on the private data.
    assert(/^3 label\(s\)/.test((await page.textContent('#classes')).trim()) && !/20/.test(await page.textContent('#classes')), await page.textContent('#classes'));
    const listed = await page.$$eval('#observed-labels input', (xs) => xs.map((x) => x.dataset.label));
    assert(JSON.stringify(listed) === JSON.stringify([...listed].sort()) && listed.length === 3, `labels: ${listed}`);
    const shown = (await page.textContent('#observed-labels')).replace(/\s/g, '');
    assert(shown === listed.join('').replace(/\s/g, ''), `nothing but the labels (no counts): ${shown}`);
    // Nothing is declared from the data (a default chosen by the counts would leak them): the
    // list starts empty and the curator ticks the public names; the rare one stays unticked.
    assert(await page.inputValue('#class-list') === '', `classes declared without the curator: ${await page.inputValue('#class-list')}`);
    assert(!(await page.isChecked(`#observed-labels input[data-label="${RARE}"]`)), 'a rare label is not pre-selected');
    await page.check('#observed-labels input[data-label="cardiology"]');
    await page.check('#observed-labels input[data-label="pulmonary"]');
    assert(await page.inputValue('#class-list') === 'cardiology\npulmonary', `declared classes: ${await page.inputValue('#class-list')}`);
    assert(/must not be private/.test(await page.textContent('#classes-field')), 'the warning on class names');
    assert(/No earlier run/.test(await page.textContent('#ledger-note')), 'ledger note before the first run');
  }],
  ['N covering the medical list: the private vocabulary is that list, and ε_voc is not planned', async () => {
    // The defaults: N = 50,000 and the medical list (27,589 terms): nothing is drawn for Ṽ.
    const note = await page.textContent('#whole-list-note');
    assert(/N = 50000 covers the whole public list \(\d+ terms\)/.test(note) && /ε_voc is not spent/.test(note), note);
    assert(/spends ε = 4\.1/.test(await page.textContent('#ledger-note')), `ε_kde + ε_counts planned: ${await page.textContent('#ledger-note')}`);
    await page.locator('section:has(#priv-h)').screenshot({ path: path.join(SHOTS, 'app-2a-whole-list.png') });
  }],
  ['a bad value is refused at its field', async () => {
    await page.fill('#eps_voc', '0');
    await page.waitForSelector('#eps_voc-err:not(:empty)');
    assert(/greater than 0/.test(await page.textContent('#eps_voc-err')), 'ε error text');
    assert(await page.isDisabled('#run'), 'run must be disabled with a bad value');
    await page.fill('#top_n', 'ten');
    assert(/not a whole number/.test(await page.textContent('#top_n-err')), 'N error text');
    await shot('2-invalid');
    // ε_voc = 20: noise of scale S/ε = 0.5, so the 14 terms that really occur win over the
    // 28k others, and a second run selects (mostly) the same terms: the cache is exercised.
    await page.fill('#eps_voc', '20');
    await page.fill('#eps_kde', '5');
    await page.fill('#top_n', '12');
    await page.fill('#len', '4');
    await page.fill('#features', '256');
    await page.fill('#per_class', '6');
    // The account has no budget yet: one is required before its first run (issue 25).
    await page.waitForFunction(() => /set a budget/.test(document.querySelector('#budget-err')?.textContent ?? ''), null, { timeout: 10_000 });
    assert(await page.isDisabled('#run'), 'run must be disabled before the account has a budget');
    assert(/no budget yet/.test(await page.textContent('#account-status')), await page.textContent('#account-status'));
    await page.fill('#budget', '500');
    assert(!(await page.isDisabled('#run')), 'run enabled once the values are valid');
    assert(/spends ε = 25\.1/.test(await page.textContent('#ledger-note')), 'planned ε shown');
    assert(await page.locator('#whole-list-note').count() === 0, 'N = 12 draws a noisy top N');
  }],
  ['the curator declares the classes; an empty or repeated list is refused at its field', async () => {
    await page.fill('#class-list', '');
    await page.waitForSelector('#classes-err:not(:empty)');
    assert(/at least one class/.test(await page.textContent('#classes-err')), 'empty class list message');
    assert(await page.isDisabled('#run'), 'run must be disabled without classes');
    await page.fill('#class-list', 'cardiology\ncardiology');
    await page.waitForFunction(() => /named twice/.test(document.querySelector('#classes-err')?.textContent ?? ''));
    assert(await page.isDisabled('#run'), 'run must be disabled with a repeated class');
    await page.fill('#class-list', 'cardiology');
    await page.check('#observed-labels input[data-label="pulmonary"]');
    assert(await page.inputValue('#class-list') === 'cardiology\npulmonary', 'ticking a label declares it');
    assert(await page.isChecked('#other-drop'), 'other labels are left out by default');
    assert(!(await page.isChecked('#vocab_per_class')), 'one global vocabulary by default');
    assert(await page.isChecked('#proportional'), 'DP class proportions by default');
    assert(await page.inputValue('#sampler') === 'histogram', 'histogram sampler by default');
    assert((await page.textContent('#sampler-help')).length > 20, 'the sampler is described');
    // The runs below use a DP-KDE sampler: the histogram samplers embed nothing (unless they
    // smooth), and the cache and Cancel during "Embed terms" are exercised only when terms are embedded.
    await page.selectOption('#sampler', 'independent');
    assert(/DP-KDE/.test(await page.textContent('#sampler-help')), 'the description follows the choice');
    assert((await page.textContent('#classes-err')).trim() === '', 'no class error once declared');
    assert(!(await page.isDisabled('#run')), 'run enabled with the declared classes');
    await page.locator('section:has(#priv-h)').screenshot({ path: path.join(SHOTS, 'app-2c-classes.png') });
  }],
  ['the DP utility check compares the samplers, is charged to the ledger, and its choice is used', async () => {
    // ε_voc + 5 samplers × ε_kde = 20 + 5 × 5 (the class counts are not part of it), said before the click.
    assert(/This check costs ε = 45\.000, charged to the ledger/.test(await page.textContent('#dp-check-cost')), await page.textContent('#dp-check-cost'));
    assert(!(await page.isDisabled('#evaluate')), 'the check is enabled within the budget');
    await page.click('#evaluate');
    await page.waitForSelector('#dp-check-arms li', { timeout: 240_000 });
    await settle();
    const arms = await page.locator('#dp-check-arms .term').allTextContents();
    const samplers = ['histogram', 'markov', 'independent', 'iterative-linear', 'iterative-log'];
    assert(arms.length === samplers.length && samplers.every((a) => arms.includes(a)), `every sampler whose release fits is an arm: ${arms}`);
    const accuracies = await page.locator('#dp-check-arms .count').allTextContents();
    assert(accuracies.every((x) => /^[01]\.\d{3}$/.test(x.trim())), `a noisy accuracy per arm: ${accuracies}`);
    // An arm noise-dominated in every class has nothing to train on: it scores 0 (up to noise of
    // scale 0.133 on its count, which is almost never nonzero).
    if (await page.locator('#dp-check-flags').count() > 0) {
      const every = (await page.textContent('#dp-check-flags')).match(/every class, so nothing would be generated \(scored 0\): ([^.]+)\./)?.[1]?.split(', ') ?? [];
      for (const a of every) assert(accuracies[arms.indexOf(a)].trim() === '0.000', `${a} is noise-dominated in every class but scored ${accuracies[arms.indexOf(a)]}`);
    }
    const chosen = (await page.textContent('#dp-check-chosen')).match(/Chosen: (\S+) /)?.[1];
    checkChosen = chosen;
    assert(samplers.includes(chosen), `the chosen sampler: ${await page.textContent('#dp-check-chosen')}`);
    checkId = (await page.textContent('#dp-check-id')).match(/Check ([0-9a-f]{16})/)?.[1];
    assert(checkId, `the check's id: ${await page.textContent('#dp-check-id')}`);
    const note = await page.textContent('#dp-check-note');
    assert(/^Differentially private/.test(note) && new RegExp(`run ${checkId} with ε = 45\\.000`).test(note), note);
    assert(!/not (differentially private|DP)/i.test(await page.textContent('#dp-check')), 'the DP check is not called non-DP');
    assert(await page.locator('#utility-warning').count() === 0, 'no non-DP figures on the page');
    // Charged to the ledger like a run; not a non-DP check.
    await page.waitForFunction(() => /ε = 45\.000 spent.*This corpus: ε = 45\.000 over 1 run\(s\)/.test(document.querySelector('#account-status')?.textContent ?? ''), null, { timeout: 10_000 });
    assert(/already had 1 run\(s\) in this browser, spending ε = 45\.000\. Running again adds ε = 25\.100: the total becomes ε = 70\.100\./.test(await page.textContent('#ledger-note')), await page.textContent('#ledger-note'));
    assert(/No non-DP utility check/.test(await page.textContent('#checks-note')), await page.textContent('#checks-note'));
    await shot('2b-utility');
    await page.locator('#dp-check').screenshot({ path: path.join(SHOTS, 'app-2b-utility-card.png') });
    // "Use": the sampler and the check go with the next run; a manual choice clears the check.
    if (await page.inputValue('#sampler') === chosen) await page.selectOption('#sampler', chosen === 'independent' ? 'histogram' : 'independent');
    assert(await page.locator('#chosen-by').count() === 0, 'no check named before "Use"');
    await page.click('#use-chosen');
    await page.waitForSelector('#chosen-by');
    assert(await page.inputValue('#sampler') === chosen, `the sampler select follows the check: ${await page.inputValue('#sampler')} / ${chosen}`);
    assert((await page.textContent('#chosen-by')).includes(checkId), await page.textContent('#chosen-by'));
    await page.selectOption('#sampler', chosen === 'independent' ? 'histogram' : 'independent');
    await page.waitForSelector('#chosen-by', { state: 'detached', timeout: 5_000 });
    await page.click('#use-chosen');
    await page.waitForSelector('#chosen-by');
    assert(await page.inputValue('#sampler') === chosen, 'used again');
  }],
  ['run the DP pipeline in the worker and download DP outputs only', async () => {
    await page.click('#run');
    await page.waitForSelector('#results', { timeout: 240_000 });
    await settle();
    await shot('3-results');
    const spent = await page.textContent('#spent');
    assert(/spent ε = 25\.100; total .* ε = 70\.100/.test(spent), `ledger after run 1 (and the check's 45): ${spent}`);
    assert((await page.locator('#top-terms li').count()) === 12, 'N = 12 terms shown');
    const jsonl = await download('#dl-jsonl');
    const seqs = jsonl.trim().split('\n').map((l) => JSON.parse(l));
    assert(seqs.length === 12, `6 sequences per class × 2 classes, got ${seqs.length}`);
    // L = 4; a sequence is shorter only where its class's release gives fewer than 4 terms any
    // weight (a random event of the noise), and the report counts those.
    assert(seqs.every((s) => s.keyphrases.length >= 1 && s.keyphrases.length <= 4 && ['cardiology', 'pulmonary'].includes(s.label)), 'sequence shape');
    assertClean(jsonl, 'sequences JSONL');
    // The signal per class: one row per declared class, and the report names the flagged ones.
    assert((await page.locator('#signals table.signals tr').count()) === 3, 'a header and 2 classes in the signal table');
    const csv = await download('#dl-csv');
    assert(csv.startsWith('label,keyphrases,noise_dominated'), 'CSV header');
    assertClean(csv, 'sequences CSV');
    const report = JSON.parse(await download('#dl-report'));
    assert(report.format === 'dpkps-privacy-report-v1' && Math.abs(report.epsilon_run - 25.1) < 1e-9, 'report ε');
    assert(/one document/.test(report.neighbouring_relation), 'neighbouring relation stated');
    assert(report.non_dp_checks_on_this_corpus === 0, `no non-DP check: ${report.non_dp_checks}`);
    // The run used the sampler the DP check chose, on its word: the report says so.
    const by = report.settings_chosen_by;
    assert(by && by.check === checkId && by.sampler === checkChosen && Math.abs(by.epsilon - 45) < 1e-9, `settings_chosen_by: ${JSON.stringify(by)}`);
    const onPage = await page.textContent('#results-chosen');
    assert(onPage.includes(`chosen by the DP utility check ${checkId}`) && /ε = 70\.1000/.test(onPage), `the results say the check chose the sampler: ${onPage}`);
    assert(report.model.sha256.length === 64 && report.vocabulary.sha256.length === 64, 'checksums');
    assert(report.class_signals.length === 2 && Array.isArray(report.noise_dominated), 'the signal per class in the report');
    assert(seqs.every((s) => (s.noise_dominated === true) === report.noise_dominated.includes(s.label)), 'flagged sequences are the flagged classes\'');
    const short = report.class_signals.reduce((n, c) => n + c.shorter_than_l, 0);
    assert(short === seqs.filter((s) => s.keyphrases.length < 4).length, `the report counts the sequences shorter than L: ${short}`);
    assertClean(JSON.stringify(report), 'privacy report');
    const html = await download('#dl-report-html-run');
    assert(/Privacy report/.test(html) && /ε = 25\.1000/.test(html) && !/<script/i.test(html), 'printable report without an LLM');
    assertClean(html, 'printable report');
    // Nor is the rare label anywhere on the page but the curator's own corpus facts and class picker.
    const shown = await page.evaluate(() => {
      const b = document.body.cloneNode(true);
      b.querySelectorAll('#summary, #classes-field, table.preview').forEach((e) => e.remove());
      return b.textContent;
    });
    assert(!shown.includes(RARE), 'the undeclared label is shown outside the curator\'s corpus facts');
  }],
  ['a second run reuses the private vocabulary (no new ε_voc) and reads the vectors it has', async () => {
    // Back to a DP-KDE sampler (run 1 used the check's choice): a manual choice, which clears
    // the check from the settings; the private vocabulary does not depend on the sampler.
    if (await page.inputValue('#sampler') !== 'independent') await page.selectOption('#sampler', 'independent');
    await page.waitForSelector('#chosen-by', { state: 'detached', timeout: 5_000 });
    const note = await page.textContent('#ledger-note');
    assert(/already had 2 run\(s\) in this browser, spending ε = 70\.100\. Running again reuses the last run's private vocabulary \(already paid for, no new ε_voc\) and adds ε = 5\.100: the total becomes ε = 75\.200\./.test(note), `ledger note before run 2: ${note}`);
    const terms1 = await page.locator('#top-terms li').allTextContents();
    await page.click('#run');
    // ε_kde + ε_counts only: 45 (the check) + 25.1 + 5.1.
    await page.waitForFunction(() => /total on this corpus in this browser: ε = 75\.200/.test(document.querySelector('#spent')?.textContent ?? ''), null, { timeout: 240_000 });
    await settle();
    const spent = await page.textContent('#spent');
    assert(/This run spent ε = 5\.100 \(its private vocabulary is the one run [0-9a-f]{16} released and paid for: reused, no new ε_voc; these outputs are ε = 25\.100\)/.test(spent), spent);
    assert(/reused from run [0-9a-f]{16} of this page \(ε_voc = 20 was spent then, not again\)/.test(await page.textContent('li[data-stage="vocabulary"]')), 'the stage says so');
    const terms2 = await page.locator('#top-terms li').allTextContents();
    assert(JSON.stringify(terms1) === JSON.stringify(terms2), `the same Ṽ with the same noisy counts: ${terms1} / ${terms2}`);
    const report = JSON.parse(await download('#dl-report'));
    assert(JSON.stringify(report.classes_ticked_from_observed) === '["cardiology","pulmonary"]', `ticked: ${report.classes_ticked_from_observed}`);
    assert(Math.abs(report.epsilon_run - 5.1) < 1e-9 && Math.abs(report.epsilon_outputs - 25.1) < 1e-9, `this run's own spend and its outputs' ε: ${report.epsilon_run}, ${report.epsilon_outputs}`);
    assert(/\(25\.1000\)-differentially private/.test(report.guarantee) && /released by the earlier run [0-9a-f]{16}/.test(report.guarantee), report.guarantee);
    const m = spent.match(/(\d+) terms embedded by the model, (\d+) read \(bundled vectors/);
    assert(m && Number(m[1]) === 0 && Number(m[2]) > 0, `a second run computes nothing: ${m}`);
    // Those two counts are exact figures about the corpus, not DP: shown, never stored.
    const stored = await page.evaluate(() => new Promise((resolve, reject) => {
      const open = indexedDB.open('dpkps-generate');
      open.onerror = () => reject(open.error);
      open.onsuccess = () => {
        const get = open.result.transaction('job').objectStore('job').get('last_run');
        get.onsuccess = () => { resolve(String(get.result)); open.result.close(); };
        get.onerror = () => reject(get.error);
      };
    }));
    assert(/"sequences"/.test(stored) && !/embedded_(fresh|from_cache)/.test(stored), `the stored run: ${stored.slice(0, 200)}`);
    // Unticked: a new private vocabulary, paid for in full.
    await page.uncheck('#reuse_vocabulary');
    await page.waitForFunction(() => /Running again adds ε = 25\.100: the total becomes ε = 100\.300\./.test(document.querySelector('#ledger-note')?.textContent ?? ''), null, { timeout: 5_000 });
    await page.click('#run');
    await page.waitForFunction(() => /total on this corpus in this browser: ε = 100\.300/.test(document.querySelector('#spent')?.textContent ?? ''), null, { timeout: 240_000 });
    await settle();
    assert(/This run spent ε = 25\.100;/.test(await page.textContent('#spent')), await page.textContent('#spent'));
    assert(/12 terms selected/.test(await page.textContent('li[data-stage="vocabulary"]')), 'a new Ṽ');
    await page.check('#reuse_vocabulary');
  }],
  ['LLM: test connection, review what leaves, generate through injected faults', async () => {
    await llm.reset();
    // Refused at the field, before anything is sent: an endpoint outside the page's policy
    // (the message names the file to edit), credentials in the URL, a key over plain http://
    // to another machine.
    const fieldError = async (id, re) => {
      await page.waitForFunction(([i, r]) => new RegExp(r).test(document.getElementById(i)?.textContent ?? ''), [id, re.source], { timeout: 5_000 });
    };
    await page.fill('#llm-model', 'test-model');
    await page.fill('#llm-endpoint', 'http://127.0.0.2:9/v1');
    await fieldError('llm-endpoint-error', /may not contact http:\/\/127\.0\.0\.2:9.*allowed-endpoints\.txt/);
    assert(/allowed-endpoints\.txt/.test(await page.textContent('#llm-error')), 'Send is not offered for a refused endpoint');
    await page.fill('#llm-endpoint', `${llm.url}?api_key=abc`);
    await fieldError('llm-endpoint-error', /credential in its query \(api_key=/);
    await page.fill('#llm-endpoint', llm.url.replace('http://', 'http://user:pw@'));
    await fieldError('llm-endpoint-error', /user name or password/);
    await page.fill('#llm-key', 'sk-e2e-0123456789');
    await page.fill('#llm-endpoint', 'http://10.0.0.5:8000/v1');
    await fieldError('llm-key-error', /API key would be sent unencrypted: http:\/\/10\.0\.0\.5:8000/);
    await page.fill('#llm-endpoint', `${llm.url}/sk-e2e-0123456789`);
    await fieldError('llm-key-error', /API key appears in the endpoint URL/);
    await page.fill('#llm-key', '');
    await page.fill('#llm-endpoint', llm.url);
    assert(await page.locator('#llm-endpoint-error, #llm-key-error').count() === 0, 'no field error for the test server');
    await page.fill('#llm-timeout', '2');
    await page.fill('#llm-attempts', '6');
    await page.fill('#llm-concurrency', '2');
    await page.click('#test-connection');
    await page.waitForFunction(() => /Connected/.test(document.querySelector('#connection')?.textContent ?? ''), null, { timeout: 20_000 });
    assert(/test-model/.test(await page.textContent('#connection')), 'models listed');
    // A server that does not allow this page's origin (as Ollama without OLLAMA_ORIGINS): the
    // browser says only "Failed to fetch"; the page must name the setting that is missing.
    const seen = problems.length;
    await llm.control({ faults: [], allow_origins: ['http://example.invalid'] });
    await page.click('#test-connection');
    await page.waitForFunction(() => /CORS/.test(document.querySelector('#connection')?.textContent ?? ''), null, { timeout: 20_000 });
    const cors = await page.textContent('#connection');
    assert(cors.includes(`OLLAMA_ORIGINS=${origin}`) && cors.includes(llm.origin) && cors.includes('--allowed-origins'),
      `the CORS refusal names the server settings: ${cors}`);
    await llm.control({ faults: [] });
    await page.click('#test-connection');
    await page.waitForFunction(() => /Connected/.test(document.querySelector('#connection')?.textContent ?? ''), null, { timeout: 20_000 });
    const unexpected = problems.splice(seen).filter((p) => !/blocked by CORS policy|net::ERR_FAILED|status of 403/.test(p));
    assert(unexpected.length === 0, `problems during the CORS check: ${unexpected.join('; ')}`);
    // At ε_kde = 5, I = 256 and 20 documents a class, the DP-KDE release usually stands no
    // higher than noise alone: such classes are left out of the job unless included, and the
    // page says so, with the prompts they would add.
    if (await page.locator('#include-noise').count()) {
      const offer = await page.textContent('#include-noise-label');
      assert(/noise-dominated class\(es\) \((cardiology|pulmonary)/.test(offer) && /more prompts/.test(offer) && /costs a new run: ε = \d/.test(offer), offer);
      await page.check('#include-noise');
    }
    // What is sent, said exactly: the page's promise and the summary above the prompts.
    const assurance = await page.textContent('#assurance');
    assert(/declared class names, the document type, your template, system message and public examples\), the model settings, and your API key/.test(assurance), assurance);
    const summary = await page.textContent('#leaves-summary');
    assert(/^12 requests to http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions/.test(summary), summary);
    assert(/Each holds your system message, your template filled with one sequence's DP keyphrases, its class name \(declared by you\) and the document type, and the model settings \(model, temperature, max tokens, frequency penalty\); nothing else\.$/.test(summary), summary);
    const sample = await page.textContent('#prompt-sample');
    assertClean(sample, 'prompt preview');
    assert(/\[user\] Keyphrases \(separated by semicolons\): [^\n]+\.\n+Write a realistic clinical note \((cardiology|pulmonary)\)/.test(sample), sample);
    assert(await page.isDisabled('#send'), 'sending needs the review box ticked');
    // Whatever would be sent changes, the tick is cleared and Send disabled: reviewed again.
    for (const [id, value] of [['#llm-template', null], ['#llm-system', 'You write notes.'], ['#llm-doctype', 'discharge letter'],
      ['#llm-endpoint', `${llm.url}/`], ['#llm-model', 'other-model'], ['#llm-max-tokens', '300'], ['#llm-temperature', '0.5']]) {
      const before = await page.inputValue(id);
      await page.check('#reviewed');
      assert(!(await page.isDisabled('#send')), 'Send is enabled once reviewed');
      await page.fill(id, value ?? `${before} Be brief.`);
      await page.waitForFunction(() => !document.querySelector('#reviewed')?.checked, null, { timeout: 5_000 })
        .catch(() => { throw new Error(`the review tick stayed after ${id} changed`); });
      assert(await page.isDisabled('#send'), `Send stayed enabled after ${id} changed`);
      await page.fill(id, before);
    }
    // Examples too (and they must be confirmed public again).
    await page.check('#reviewed');
    await page.click('#llm summary:has-text("Few-shot examples")');
    await page.fill('#llm-examples', 'keyphrases: a, b\nA public example.');
    await page.check('#examples-public');
    await page.fill('#llm-examples', 'keyphrases: a, c\nAnother public example.');
    assert(!(await page.isChecked('#examples-public')), 'other examples must be confirmed public again');
    await page.fill('#llm-examples', '');
    await page.waitForSelector('#reviewed', { timeout: 5_000 });
    assert(!(await page.isChecked('#reviewed')), 'the review tick stayed after the examples changed');
    await page.check('#reviewed');
    await shot('6-review');
    await llm.control({ faults: ['429', '500', 'garbage', 'timeout', 'empty', 'formula'], hold_ms: 10_000 });
    await page.click('#send');
    await page.waitForSelector('#gen-progress[data-done="12"][data-running="false"]', { timeout: 120_000 });
    await shot('7-generated');
    const corpus = (await download('#dl-corpus-jsonl')).trim().split('\n').map((l) => JSON.parse(l));
    assert(corpus.length === 12, `12 documents, got ${corpus.length}`);
    for (const d of corpus) {
      // A sequence may be shorter than L = 4 (see the first run's check); every term is used.
      assert(d.keyphrases.length >= 1 && d.keyphrases.length <= 4 && d.keyphrases.every((k) => d.text.includes(k)), `document does not use its keyphrases: ${JSON.stringify(d)}`);
    }
    // Every reply was prose that used its keyphrases: none was asked for again.
    assert((await page.textContent('#gen-forms')).trim() === 'Forms: 12 prose.', await page.textContent('#gen-forms'));
    assert(corpus.every((d) => d.form === 'prose' && d.keyphrases_used === d.keyphrases.length), JSON.stringify(corpus[0]));
    const reqs = await llm.requests();
    assert(reqs.length === 17, `12 documents + 5 injected faults = 17 requests, got ${reqs.length}`);
    for (const r of reqs) assertClean(r.body, 'a request body sent to the LLM');
    for (const r of problems.requests.filter((q) => q.url.startsWith(llm.origin))) assertClean(r.body, 'a request seen by the browser');
    const audit = (await download('#dl-audit')).trim().split('\n').map((l) => JSON.parse(l));
    assert(audit.length >= 17 && audit.some((a) => a.status === 429) && audit.some((a) => /no reply within/.test(a.error ?? '')), 'audit log records faults');
    const html = await download('#dl-report-html');
    assert(/Privacy report/.test(html) && /one document/.test(html) && !/<script/i.test(html), 'printable report');
    assertClean(html, 'HTML report');
    // One reply starts with a spreadsheet formula: the CSV download neutralises it.
    assert(corpus.some((d) => d.text.startsWith('=HYPERLINK(')), 'the formula reply is in the corpus');
    const csv = await download('#dl-corpus-csv');
    assert(/(^|\n|,)"?'=HYPERLINK\(/.test(csv), 'the formula cell is prefixed with a quote');
    assert(!/(^|\n|,)"?=/.test(csv), 'no CSV cell starts with =');
    assertClean(csv, 'synthetic corpus CSV');
    // Everything the browser keeps, read back: every IndexedDB store and localStorage hold no
    // canary, no undeclared label and no private 5-word span.
    const stored = await page.evaluate(async () => {
      const out = [];
      const req = (r) => new Promise((res, rej) => { r.onsuccess = () => res(r.result); r.onerror = () => rej(r.error); });
      for (const { name } of await indexedDB.databases()) {
        const db = await req(indexedDB.open(name));
        for (const store of db.objectStoreNames) {
          const all = await req(db.transaction(store).objectStore(store).getAll());
          out.push(`${name}/${store}: ${JSON.stringify(all)}`);
        }
        db.close();
      }
      for (let i = 0; i < localStorage.length; i++) out.push(`localStorage ${localStorage.key(i)}: ${localStorage.getItem(localStorage.key(i))}`);
      return out;
    });
    assert(stored.some((s) => s.startsWith('dpkps-generate/')) && stored.some((s) => s.startsWith('dpkps/')), `stores read: ${stored.map((s) => s.slice(0, 30))}`);
    for (const s of stored) assertClean(s, `stored ${s.slice(0, 40)}`);
  }],
  ['LLM: an over-long reply and a redirect fail their documents at once, in plain words; the redirect is not followed', async () => {
    await llm.reset();
    // A 2 MiB reply declared by its Content-Length, the same streamed without one, and a 307
    // to the same server (which the page's policy allows): followed, it would be a 13th request.
    await llm.control({ faults: ['huge', 'huge-stream', 'redirect'], delay_ms: 0 });
    await page.fill('#llm-endpoint', llm.url);
    await page.fill('#llm-model', 'test-model');
    await page.fill('#llm-concurrency', '1');
    await page.fill('#llm-attempts', '3');
    await includeNoise();
    await page.check('#reviewed');
    const earlier = new Set((await auditEntries()).map((a) => a.job));
    await page.click('#send');
    await page.waitForSelector('#gen-progress[data-done="9"][data-running="false"]', { timeout: 60_000 });
    assert(/9 of 12 documents generated, 3 failed\./.test(await page.textContent('#gen-progress')), await page.textContent('#gen-progress'));
    const reqs = await llm.requests();
    assert(reqs.length === 12, `none of the three is asked for again, nor the redirect followed: ${reqs.length} requests`);
    assert(!reqs.some((r) => /redirected/.test(r.path)), 'the redirect was followed');
    const errors = (await auditEntries()).filter((a) => !earlier.has(a.job) && a.phase === 'response' && a.error).map((a) => a.error);
    assert(errors.filter((e) => /^the reply is longer than 1 MiB, the most read of one reply here/.test(e)).length === 2, errors.join('\n'));
    assert(errors.some((e) => /^the endpoint answered with a redirect, which is not followed/.test(e)), errors.join('\n'));
    const stored = await page.evaluate(() => new Promise((resolve, reject) => {
      const open = indexedDB.open('dpkps-generate');
      open.onerror = () => reject(open.error);
      open.onsuccess = () => {
        const all = open.result.transaction('outcomes').objectStore('outcomes').getAll();
        all.onsuccess = () => { resolve(all.result.reduce((n, s) => n + s.length, 0)); open.result.close(); };
        all.onerror = () => reject(all.error);
      };
    }));
    assert(stored < 64 << 10, `outcomes stored: ${stored} characters`);
  }],
  ['LLM: a reply that repeats a private note is flagged by the replay check and left out of every download', async () => {
    await llm.reset();
    // The model repeats the opening of private note 7: the patient's name and the note's own span.
    const replayed = rows[8][2].replace(/^"/, '').split('. ')[0];
    assert(replayed.includes(CANARY) && replayed.includes(spans[7]), replayed);
    // One request at a time: the third is document #3's.
    await llm.control({ faults: ['ok', 'ok', 'replay'], replay: replayed });
    await page.fill('#llm-concurrency', '1');
    await includeNoise();
    await page.check('#reviewed');
    await page.click('#send');
    await page.waitForSelector('#gen-progress[data-done="12"][data-running="false"]', { timeout: 120_000 });
    // With the corpus loaded in this page, the check runs by itself once the job has ended.
    await page.waitForSelector('#replay[data-state="checked"]', { timeout: 60_000 });
    await shot('7b-replay');
    const flagged = Number(await page.getAttribute('#replay', 'data-flagged'));
    assert(flagged >= 1, 'the replayed note is flagged');
    // The curator sees the flagged document with the words it shares (shown in the page only).
    const row = await page.textContent('#replay-table tr[data-index="#3"]');
    assert(row.includes(spans[7]), `the flagged row: ${row}`);
    const status = await page.textContent('#replay-status');
    assert(new RegExp(`Checked for replay: ${flagged} of 12 generated documents flagged; they are left out of the corpus downloads`).test(status), status);
    // Left out of every download (on by default), and counted in the report, which says it is not DP.
    const jsonl = await download('#dl-corpus-jsonl');
    assert(jsonl.trim().split('\n').length === 12 - flagged, `${12 - flagged} documents in the download`);
    assertClean(jsonl, 'synthetic corpus JSONL after the replay check');
    assertClean(await download('#dl-corpus-csv'), 'synthetic corpus CSV after the replay check');
    const audit = await download('#dl-audit');
    assert(/withheld from this download: the replay check flagged/.test(audit), 'the flagged answer is withheld from the audit log');
    assertClean(audit, 'audit log after the replay check');
    const html = await download('#dl-report-html');
    assert(/Replay check \(not differentially private\)/.test(html) && /NOT differentially private/.test(html), 'the report states the check');
    assert(html.includes(`<th scope="row">Flagged</th><td>${flagged}</td>`) && html.includes(`Left out of the synthetic corpus</th><td>${flagged}</td>`), 'the report counts them');
    assertClean(html, 'privacy report after the replay check');
    // The curator may keep them: unticked, the download holds all 12, and the report says so.
    await page.uncheck('#replay-drop');
    const kept = await download('#dl-corpus-jsonl');
    assert(kept.trim().split('\n').length === 12 && kept.includes(spans[7]), 'kept when the curator chooses to');
    assert((await download('#dl-report-html')).includes('Left out of the synthetic corpus</th><td>0</td>'), 'the report says none was left out');
    await page.check('#replay-drop');
    // Checked again on request: the same result.
    await page.click('#replay-check');
    await page.waitForSelector('#replay[data-state="checked"]', { timeout: 60_000 });
    assert(Number(await page.getAttribute('#replay', 'data-flagged')) === flagged, 'the same flags again');
  }],
  ['LLM: a reload in the middle resumes and finishes with every document exactly once', async () => {
    await llm.reset();
    await llm.control({ faults: [], delay_ms: 400 });
    await page.fill('#llm-concurrency', '1');
    await includeNoise();
    await page.check('#reviewed');
    await sendReloadResume(page, () => shot('8-resume'));
    const corpus = (await download('#dl-corpus-jsonl')).trim().split('\n');
    assert(corpus.length === 12, `12 documents after resume, got ${corpus.length}`);
    const reqs = await llm.requests();
    // Finished documents are not sent again; at most the one in flight at the reload is.
    assert(reqs.length >= 12 && reqs.length <= 13, `requests: ${reqs.length}`);
    await llm.control({ faults: [], delay_ms: 0 });
  }],
  ['LLM: Stop ends a retry wait at once; the document stays pending and Resume sends it', async () => {
    await llm.reset();
    // The first request is answered 429 with Retry-After: 30: the page waits before retrying.
    await llm.control({ faults: ['429-wait'], delay_ms: 0 });
    await page.fill('#llm-endpoint', llm.url);
    await page.fill('#llm-model', 'test-model');
    await page.fill('#llm-concurrency', '1');
    await includeNoise();
    await page.check('#reviewed');
    const earlier = new Set((await auditEntries()).map((a) => a.job));
    const refused = async () => (await auditEntries()).some((a) => !earlier.has(a.job) && a.phase === 'response' && a.status === 429);
    await page.click('#send');
    // The 429 is on record, so the page is in (or about to enter) its 30 s wait.
    const t0 = Date.now();
    while (!(await refused())) {
      assert(Date.now() - t0 < 30_000, 'the 429 never reached the audit log');
      await page.waitForTimeout(100);
    }
    await page.waitForTimeout(500);
    const stopped = Date.now();
    await page.click('#stop');
    await page.waitForSelector('#gen-progress[data-running="false"]', { timeout: 3_000 });
    const waited = Date.now() - stopped;
    const status = await page.textContent('#gen-progress');
    assert(/0 of 12 documents generated, 0 failed\./.test(status), `after Stop: ${status}`);
    assert((await llm.requests()).length === 1, 'no retry is sent after Stop');
    console.log(`     Stop during a 30 s retry wait: not running after ${waited} ms`);
    // Resume is offered at once, without a reload.
    await page.waitForSelector('#resume-btn', { timeout: 3_000 });
    assert(/0 of 12 documents are saved/.test(await page.textContent('#resume')), await page.textContent('#resume'));
    // The document in backoff was not marked failed: after a reload it is missing, and Resume sends it.
    await page.reload();
    await page.waitForSelector('#resume', { timeout: 60_000 });
    assert(/0 of 12 documents are saved/.test(await page.textContent('#resume')), await page.textContent('#resume'));
    await page.click('#resume-btn');
    await page.waitForSelector('#gen-progress[data-done="12"][data-running="false"]', { timeout: 60_000 });
    assert(/12 of 12 documents generated, 0 failed\./.test(await page.textContent('#gen-progress')), await page.textContent('#gen-progress'));
    const reqs = await llm.requests();
    assert(reqs.length === 13 && reqs[0].fault === '429-wait', `1 refused + 12 documents = 13 requests, got ${reqs.length}`);
  }],
  ['LLM: a double click sends once; a second tab on the running job sends nothing', async () => {
    await llm.reset();
    await llm.control({ faults: [], delay_ms: 1000 });
    await page.fill('#llm-endpoint', llm.url);
    await page.fill('#llm-model', 'test-model');
    await page.fill('#llm-concurrency', '2');
    await includeNoise();
    await page.check('#reviewed');
    await page.dblclick('#send');
    await page.waitForSelector('#gen-progress[data-running="true"]', { timeout: 10_000 });
    // Another tab of the same browser opens on the saved job while it runs (Web Lock dpkps-job-<id>).
    const b = await browser.context.newPage();
    const bProblems = guard(b, origin, { prefix: server.prefix, origins: [llm.origin] });
    await b.goto(server.url);
    await b.waitForSelector('#resume[data-elsewhere="true"]', { timeout: 30_000 });
    await b.click('#resume-btn');
    await b.waitForFunction(() => /being generated in another tab/.test(document.querySelector('#llm')?.textContent ?? ''), null, { timeout: 10_000 });
    await page.waitForSelector('#gen-progress[data-done="12"][data-running="false"]', { timeout: 60_000 });
    // Once it has finished there, Resume here reads what was saved and sends nothing.
    await b.click('#resume-btn');
    await b.waitForSelector('#gen-progress[data-done="12"][data-running="false"]', { timeout: 30_000 });
    const reqs = await llm.requests();
    assert(reqs.length === 12, `each document sent exactly once: ${reqs.length} requests for 12 documents`);
    // Every request is on record before it is sent, and its answer after.
    const audit = (await download('#dl-audit')).trim().split('\n').map((l) => JSON.parse(l));
    const job = audit[audit.length - 1].job;
    const mine = audit.filter((a) => a.job === job);
    assert(mine.filter((a) => a.phase === 'sending').length === 12 && mine.filter((a) => a.phase === 'response').length === 12, `audit phases: ${mine.map((a) => a.phase)}`);
    assert(bProblems.length === 0, bProblems.join('\n'));
    await b.close();
    await llm.control({ faults: [], delay_ms: 0 });
  }],
  ['a crashed worker is restarted; the page says so and works again', async () => {
    const p = await browser.context.newPage();
    const pProblems = guard(p, origin, { prefix: server.prefix, console: /dpkps-e2e-crash/ });
    await p.goto(server.url);
    await p.waitForSelector('main[data-worker-ready="true"]', { timeout: 60_000 });
    // An uncaught error in the worker: what a Rust panic or running out of memory gives.
    const w = p.workers().find((x) => /dpkps-worker/.test(x.url()));
    assert(w, `no worker: ${p.workers().map((x) => x.url())}`);
    await w.evaluate(() => { setTimeout(() => { throw new Error('dpkps-e2e-crash'); }, 0); });
    await p.waitForFunction(() => /background worker stopped .*restarted.*load the corpus again/.test(document.querySelector('#error')?.textContent ?? ''), null, { timeout: 30_000 });
    await p.setInputFiles('#corpus-input', corpusPath);
    await p.waitForSelector('table.preview', { timeout: 30_000 });
    await p.click('#load');
    await p.waitForSelector('#summary', { timeout: 60_000 });
    assert(pProblems.length === 0, pProblems.join('\n'));
    await p.close();
  }],
  ['cancel stops a run; the page stays usable', async () => {
    // The reload above emptied the page's memory: the corpus must be given again.
    await page.setInputFiles('#corpus-input', corpusPath);
    await page.waitForSelector('table.preview', { timeout: 30_000 });
    // An own list (the English words under another name): its terms are embedded live, so the
    // embedding stage runs long enough to be cancelled (a bundled list's vectors are at hand).
    await page.selectOption('#vocab', 'custom');
    await page.setInputFiles('#vocab-file', ownVocabPath);
    await page.click('#load');
    await page.waitForSelector('#summary', { timeout: 120_000 });
    await page.fill('#class-list', 'cardiology\npulmonary');
    await page.selectOption('#sampler', 'independent');
    await page.click('#run');
    await page.waitForSelector('li[data-stage="embed"][data-state="running"]', { timeout: 240_000 });
    await page.click('#cancel');
    await page.waitForSelector('#error', { timeout: 60_000 });
    assert(/Cancelled/.test(await page.textContent('#error')), 'cancel message');
    await shot('4-cancelled');
    assert(!(await page.isDisabled('#run')), 'run is possible again after cancel');
  }],
  ['the bundled model matches sentence-transformers in the worker and its helpers', async () => {
    await page.click('#model-check');
    await page.waitForSelector('#model-check-result:not(:empty)', { timeout: 120_000 });
    const text = await page.textContent('#model-check-result');
    assert(/^Passed: 20 reference terms/.test(text), text);
    // The shipped bundled vectors (dist/vectors/) against the live model, on random terms of
    // both lists, in the worker and its helpers.
    const v = text.match(/Bundled vectors: (\d+) random terms, lowest cosine similarity ([\d.]+)/);
    assert(v && Number(v[1]) >= 64 && Number(v[2]) >= 0.995, `bundled vectors: ${text}`);
    // The load-time probe of term batches (crates/core/src/embed/rows.rs) passes in this browser's wasm:
    // short terms go 8 to a model call.
    assert(/Short terms are embedded 8 a model call/.test(text), `term batches: ${text}`);
    // The products by the weights run on integers (crates/embed/src/int_products), and the
    // worker's WebAssembly kernels give the plain product's exact sums and the plain rounding of
    // the activations, bit for bit.
    assert(/ 36 products by the weights run on integers \(this browser's kernels round the activations, give the exact sums and scale them as the plain code does, and compute GELU as tract does\)/.test(text), `integer products: ${text}`);
    // Each layer's attention is one operation (crates/embed/src/attention), and the worker's
    // WebAssembly kernel stays within 10⁻⁵ of the plain attention, with the same bits as the
    // plain-Rust lanes.
    assert(/ 6 attentions run as one operation each \(this browser's kernel agrees with the plain one\)/.test(text), `attention: ${text}`);
    // With a spare core the worker starts helper workers (worker/pool.rs); the check sends the
    // terms through them too, so they must have embedded some, correctly.
    if (await page.evaluate(() => navigator.hardwareConcurrency) >= 2) {
      const m = text.match(/\((\d+) of them by (\d+) helper worker/);
      assert(m && Number(m[1]) > 0 && Number(m[2]) > 0, `no helper worker embedded a term: ${text}`);
    }
  }],
  ['a model with the wrong inputs is refused with a clear error', async () => {
    await page.click('#own-model summary');
    await page.setInputFiles('#model-file', path.join(ROOT, 'tests/fixtures/wrong_inputs.onnx'));
    await page.setInputFiles('#tokenizer-file', path.join(ROOT, 'models/tokenizer.json'));
    await page.click('#use-model');
    await page.waitForFunction(() => /expected/.test(document.querySelector('#error')?.textContent ?? ''), null, { timeout: 60_000 });
    const err = await page.textContent('#error');
    assert(/wrong_inputs\.onnx/.test(err) && /input_ids/.test(err), err);
    await shot('5-wrong-model');
    assert(problems.length === 0, problems.join('\n'));
  }],
  // The privacy ledger (crates/worker/src/store.rs): budget, export/import, two tabs.
  ['ledger: a run over the account budget is refused at the Run button', async () => {
    const p = await ledgerPage(browser);
    await p.fill('#budget', '0.5');
    await p.waitForSelector('#budget-err:not(:empty)');
    assert(/above its budget of 0\.5/.test(await p.textContent('#budget-err')), await p.textContent('#budget-err'));
    assert(await p.isDisabled('#run'), 'run must be disabled over budget');
    await p.fill('#budget', '');
    await p.waitForFunction(() => !document.querySelector('#run').disabled);
    // The stored budget (500, set by the first run) is only raised when the curator confirms.
    await p.fill('#budget', '600');
    await p.waitForFunction(() => /stored budget of 500:/.test(document.querySelector('#budget-err')?.textContent ?? ''), null, { timeout: 5_000 });
    assert(await p.isDisabled('#run'), 'an unconfirmed raise must disable the run');
    await p.check('#budget-raise');
    await p.waitForFunction(() => !document.querySelector('#run').disabled, null, { timeout: 5_000 });
    await p.fill('#budget', '');
    await p.close();
  }],
  ['ledger: two tabs recording spends at once lose none', async () => {
    const [a, b] = [await ledgerPage(browser), await ledgerPage(browser)];
    const before = await spentOnCorpus(a);
    await Promise.all([a.click('#run'), b.click('#run')]);
    for (const p of [a, b]) await p.waitForSelector('#results', { timeout: 240_000 });
    await Promise.all([a, b].map((p) => p.waitForFunction(() => !document.querySelector('#cancel'), null, { timeout: 240_000 })));
    const c = await ledgerPage(browser);
    const after = await spentOnCorpus(c);
    assert(Math.abs(after - (before + 2 * 25.1)) < 0.002, `ledger total ${after}, expected ${before} + 2 × 25.1`);
    for (const p of [a, b, c]) await p.close();
  }],
  ['ledger: export, then import in a fresh browser restores the account totals', async () => {
    const p = await ledgerPage(browser);
    const total = await spentOnAccount(p);
    // The corpus key is keyed with this browser's non-extractable secret (issue 25, item 5):
    // not the unkeyed key another browser would compute for the same corpus.
    const [dl] = await Promise.all([p.waitForEvent('download'), p.click('#ledger-export')]);
    const json = fs.readFileSync(await dl.path(), 'utf8');
    const book = JSON.parse(json);
    assert(book.version === 3 && Object.keys(book.ledgers).length >= 1, 'exported ledger');
    assertClean(json, 'the exported ledger');
    // Without the sketches by default; with them when asked (and no key beside them).
    const corpora = (b) => Object.values(b.accounts).flatMap((a) => a.corpora);
    assert(corpora(book).length >= 1 && corpora(book).every((c) => c.sketch.values.length === 0 && c.key === ''), `sketches in a default export: ${JSON.stringify(book.accounts)}`);
    assert(/without the overlap sketches/.test(await p.textContent('#ledger-message')), await p.textContent('#ledger-message'));
    await p.check('#ledger-export-sketches');
    const [dl2] = await Promise.all([p.waitForEvent('download'), p.click('#ledger-export')]);
    const full = JSON.parse(fs.readFileSync(await dl2.path(), 'utf8'));
    assert(corpora(full).every((c) => c.sketch.values.length > 0 && c.key === ''), 'sketches when asked, keyed by the local secret only');
    assert(!/local-key|CryptoKey/.test(JSON.stringify(full)), 'the secret is not exported');
    const file = path.join(tmp, 'ledger.json');
    fs.writeFileSync(file, json);
    await p.close();
    const fresh = await launch();
    try {
      const q = await fresh.context.newPage();
      await q.goto(server.url);
      await q.waitForSelector('main[data-worker-ready="true"]', { timeout: 60_000 });
      await q.setInputFiles('#ledger-import', file);
      await q.waitForFunction(() => /Ledger imported: \d+ run/.test(document.querySelector('#ledger-message')?.textContent ?? ''), null, { timeout: 30_000 });
      // Twice: nothing is counted twice.
      await q.setInputFiles('#ledger-import', file);
      await q.waitForFunction(() => /Ledger imported: 0 run\(s\) added, 0 completed/.test(document.querySelector('#ledger-message')?.textContent ?? ''), null, { timeout: 30_000 });
      await loadCorpus(q);
      // Another browser, another secret: the corpus is named differently there, but every run
      // and its ε came across, and the account adds them up.
      const restored = await spentOnAccount(q);
      assert(Math.abs(restored - total) < 0.002, `restored ${restored}, exported ${total}`);
      assert(await spentOnCorpus(q) === 0, 'the corpus keys differ between browsers');
    } finally {
      await fresh.close();
    }
  }],
]);

/** Every entry of the page's audit log (IndexedDB `dpkps-generate`, store `audit`), oldest first. */
/**
 * Ticks "Also generate for the noise-dominated classes" when the page offers it: at this
 * corpus's size and ε the DP-KDE release of both classes usually stands no higher than noise
 * (the LLM test asserts the offer), and the choice is not kept across a reload.
 */
async function includeNoise(p = page) {
  if (await p.locator('#include-noise').count()) await p.check('#include-noise');
}

async function auditEntries() {
  return page.evaluate(() => new Promise((resolve, reject) => {
    const open = indexedDB.open('dpkps-generate');
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const all = open.result.transaction('audit').objectStore('audit').getAll();
      all.onsuccess = () => { resolve(all.result.map((s) => JSON.parse(s))); open.result.close(); };
      all.onerror = () => reject(all.error);
    };
  }));
}

/** A tab with the test corpus loaded and the first test's privacy settings. */
async function ledgerPage(b) {
  const p = await b.context.newPage();
  await p.goto(server.url);
  await p.waitForSelector('main[data-worker-ready="true"]', { timeout: 60_000 });
  await loadCorpus(p);
  for (const [id, v] of [['eps_voc', '20'], ['eps_kde', '5'], ['top_n', '12'], ['len', '4'], ['features', '256'], ['per_class', '6']]) await p.fill(`#${id}`, v);
  await p.waitForFunction(() => !document.querySelector('#run').disabled);
  return p;
}

async function loadCorpus(p) {
  await p.setInputFiles('#corpus-input', corpusPath);
  await p.waitForSelector('table.preview', { timeout: 30_000 });
  await p.click('#load');
  await p.waitForSelector('#summary', { timeout: 120_000 });
  await p.fill('#class-list', 'cardiology\npulmonary');
  await p.waitForFunction(() => /Account/.test(document.querySelector('#account-status')?.textContent ?? ''), null, { timeout: 30_000 });
}

/** ε counted against the account, as the account panel shows it. */
async function spentOnAccount(p) {
  const m = (await p.textContent('#account-status')).match(/ε = ([\d.]+) spent/);
  assert(m, await p.textContent('#account-status'));
  return Number(m[1]);
}

/** ε spent on the loaded corpus, as the account panel shows it. */
async function spentOnCorpus(p) {
  const m = (await p.textContent('#account-status')).match(/This corpus: ε = ([\d.]+)/);
  assert(m, await p.textContent('#account-status'));
  return Number(m[1]);
}

await browser.close();
await server.close();
llm.close();
fs.rmSync(tmp, { recursive: true, force: true });
