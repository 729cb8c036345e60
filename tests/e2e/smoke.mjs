// Smoke test of the built app (dist/): it loads its wasm, renders, loads the bundled model,
// tokenizer and vocabularies from its own origin, logs no error, and requests nothing from
// any other host; its Content-Security-Policy (meta and header, page and worker) blocks
// requests to hosts outside the allowlist; and a run at the page's own defaults goes through
// (every other script sets its own N and ε). Screenshots are kept in target/screenshots/ for
// people to look at.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { ROOT, SHOTS, serveStatic, launch, guard, runTests, assert, cardioPulmonaryRows, loadCardioPulmonary } from './harness.mjs';

const dist = path.join(ROOT, 'dist');
assert(fs.existsSync(path.join(dist, 'index.html')), 'dist/index.html is missing: run `trunk build --release` first');
fs.mkdirSync(SHOTS, { recursive: true });

const server = await serveStatic(dist);
const browser = await launch();
const origin = new URL(server.url).origin;

await runTests([
  ['the app renders, loads its bundled assets, and stays on its origin', async () => {
    const page = await browser.context.newPage();
    const problems = guard(page, origin);
    await page.goto(server.url);
    await page.waitForSelector('h1', { timeout: 60_000 });
    assert((await page.textContent('h1')).trim() === 'dpkps', 'product name not shown');
    assert((await page.locator('ol.steps > li').count()) === 6, 'the six pipeline steps are not all shown');
    await page.waitForSelector('#bundled[data-ready="true"]', { timeout: 120_000 });
    const statuses = await page.locator('#bundled .status').allTextContents();
    assert(statuses.length === 4 && statuses.every((s) => s.startsWith('ready')), `assets: ${statuses.join(' | ')}`);
    assert(statuses.some((s) => /27,589 terms/.test(s)), `medical glossary size not shown: ${statuses}`);
    await page.screenshot({ path: path.join(SHOTS, 'smoke.png'), fullPage: true });
    // Keyboard: the first Tab reaches the skip link.
    await page.keyboard.press('Tab');
    assert(await page.evaluate(() => document.activeElement?.className === 'skip'), 'skip link not first in tab order');
    assert(problems.length === 0, problems.join('\n'));
    await page.close();
  }],
  ['a run at the page\'s defaults: the medical list kept whole (no ε_voc), ε_kde and ε_counts spent', async () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dpkps-smoke-'));
    const corpusPath = path.join(tmp, 'notes.csv');
    fs.writeFileSync(corpusPath, cardioPulmonaryRows(40).map((r) => r.join(',')).join('\n') + '\n');
    const page = await browser.context.newPage();
    try {
      const problems = guard(page, origin);
      await loadCardioPulmonary(page, server.url, corpusPath);
      // Only what the page cannot default: the budget (the classes are ticked by the loader).
      await page.fill('#budget', '10');
      await page.waitForFunction(() => !document.querySelector('#run').disabled, null, { timeout: 10_000 });
      const defaults = {};
      for (const id of ['eps_voc', 'eps_kde', 'top_n']) defaults[id] = await page.inputValue(`#${id}`);
      assert(JSON.stringify(defaults) === '{"eps_voc":"2","eps_kde":"4","top_n":"50000"}', `the defaults: ${JSON.stringify(defaults)}`);
      assert(await page.inputValue('#sampler') === 'histogram', 'the default sampler');
      await page.click('#run');
      await page.waitForSelector('#results', { timeout: 240_000 });
      await page.waitForFunction(() => !document.querySelector('#cancel'), null, { timeout: 240_000 });
      const vocab = await page.textContent('li[data-stage="vocabulary"]');
      assert(/the whole public list, 27589 terms \(N = 50000 covers it\): drawn from nothing, no ε_voc spent/.test(vocab), vocab);
      const spent = await page.textContent('#spent');
      assert(/This run spent ε = 4\.100/.test(spent), spent);
      const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#dl-report')]);
      const report = JSON.parse(fs.readFileSync(await dl.path(), 'utf8'));
      assert(Math.abs(report.epsilon_run - 4.1) < 1e-9, `the report's ε: ${report.epsilon_run}`);
      // Every keyphrase of every sequence is a term of the bundled medical list.
      const [sq] = await Promise.all([page.waitForEvent('download'), page.click('#dl-jsonl')]);
      const sequences = fs.readFileSync(await sq.path(), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      const medical = new Set(fs.readFileSync(path.join(ROOT, 'www/vocab/medical_mesh2017.txt'), 'utf8').split('\n').map((l) => l.trim()));
      const phrases = sequences.flatMap((q) => q.keyphrases);
      assert(sequences.length > 0 && phrases.length > 0 && phrases.every((k) => medical.has(k)), `sequences: ${JSON.stringify(sequences).slice(0, 300)}`);
      await page.screenshot({ path: path.join(SHOTS, 'smoke-defaults.png'), fullPage: true });
      assert(problems.length === 0, problems.join('\n'));
    } finally {
      await page.close();
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  }],
  ['the policy blocks requests to other hosts, from the page and from its worker; the guard notices', async () => {
    // Listeners on a loopback address outside the allowlist (127.0.0.2) and on an allowed one
    // (localhost:*, the default allowlist), to see what actually arrives.
    const hits = { blocked: [], allowed: [] };
    const listen = (host, list) => new Promise((resolve) => {
      const s = http.createServer((req, res) => { list.push(req.url); res.writeHead(200, { 'access-control-allow-origin': '*' }).end('ok'); });
      s.listen(0, host, () => resolve(s));
    });
    const blocked = await listen('127.0.0.2', hits.blocked);
    const allowed = await listen('127.0.0.1', hits.allowed);
    const bPort = blocked.address().port;
    const aPort = allowed.address().port;
    try {
      // The listener does answer a request that is not subject to the page's policy.
      assert((await (await fetch(`http://127.0.0.2:${bPort}/probe`)).text()) === 'ok' && hits.blocked.length === 1, 'the 127.0.0.2 listener does not answer');
      hits.blocked.length = 0;
      const page = await browser.context.newPage();
      const problems = guard(page, origin);
      const workerStarted = page.waitForEvent('worker', { timeout: 60_000 });
      const resp = await page.goto(server.url);
      const header = resp.headers()['content-security-policy'] ?? '';
      assert(header === server.policy && /connect-src 'self' http:\/\/127\.0\.0\.1:\* http:\/\/localhost:\*;/.test(header), `CSP header: ${header}`);
      assert(/form-action 'none'/.test(header) && /base-uri 'none'/.test(header) && /object-src 'none'/.test(header) && /frame-ancestors 'none'/.test(header), header);
      await page.waitForSelector('main[data-worker-ready="true"]', { timeout: 60_000 });
      const meta = await page.getAttribute('meta[http-equiv="Content-Security-Policy"]', 'content');
      assert(meta && !/script-src[^;]*unsafe-inline/.test(meta) && header.startsWith(meta), `meta policy: ${meta}`);
      assert(await page.locator('script:not([src])').count() === 0, 'an inline script is left in the page');
      const fromPage = await page.evaluate(async ([b, a]) => {
        const violations = [];
        document.addEventListener('securitypolicyviolation', (e) => violations.push(`${e.effectiveDirective} ${e.blockedURI}`));
        const tryFetch = (u) => fetch(u).then((r) => r.text(), (e) => e.name);
        const out = {
          loopback: await tryFetch(`http://127.0.0.2:${b}/from-page`),
          internet: await tryFetch('https://example.org/'),
          beacon: navigator.sendBeacon(`http://127.0.0.2:${b}/beacon`, 'x') && 'queued',
          allowed: await tryFetch(`http://localhost:${a}/allowed`),
        };
        const img = new Image();
        img.src = `http://127.0.0.2:${b}/img`;
        await new Promise((r) => { img.onerror = r; img.onload = r; });
        await new Promise((r) => setTimeout(r, 200));
        return { ...out, violations };
      }, [bPort, aPort]);
      assert(fromPage.loopback === 'TypeError' && fromPage.internet === 'TypeError', `page: ${JSON.stringify(fromPage)}`);
      for (const want of [`connect-src http://127.0.0.2:${bPort}/from-page`, 'connect-src https://example.org/', `img-src http://127.0.0.2:${bPort}/img`]) {
        assert(fromPage.violations.includes(want), `no CSP violation "${want}": ${JSON.stringify(fromPage.violations)}`);
      }
      // An allowed loopback endpoint is reached (the LLM flow in app.mjs uses one).
      assert(fromPage.allowed === 'ok' && hits.allowed.includes('/allowed'), `allowed endpoint: ${JSON.stringify(fromPage)}`);
      // The worker is under the header policy too (the page's meta tag does not reach it).
      const worker = await workerStarted;
      const fromWorker = await worker.evaluate(async (b) => fetch(`http://127.0.0.2:${b}/from-worker`).then(() => 'sent', (e) => e.name), bPort);
      assert(fromWorker === 'TypeError', `worker: ${fromWorker}`);
      await page.waitForTimeout(200);
      assert(hits.blocked.length === 0, `requests arrived at 127.0.0.2: ${hits.blocked}`);
      // The guard sees the refusals and the one request to an origin it was not told about.
      assert(problems.some((p) => /Content Security Policy/.test(p)), `CSP refusal not caught: ${problems}`);
      assert(problems.some((p) => p.includes(`request to another origin: http://localhost:${aPort}/allowed`)), `off-origin request not caught: ${problems}`);
      await page.evaluate(() => console.error('deliberate'));
      await page.waitForTimeout(100);
      assert(problems.some((p) => p.includes('deliberate')), `console error not caught: ${problems}`);
      await page.close();
    } finally {
      blocked.close();
      allowed.close();
    }
  }],
]);

await browser.close();
await server.close();
