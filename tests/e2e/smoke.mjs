// Smoke test of the built app (dist/): it loads its wasm, renders, loads the bundled model,
// tokenizer and vocabularies from its own origin, logs no error, and requests nothing from
// any other host. A screenshot is kept in target/screenshots/ for people to look at.
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, SHOTS, serveStatic, launch, guard, runTests, assert } from './harness.mjs';

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
    assert(statuses.some((s) => /28,469 terms/.test(s)), `medical glossary size not shown: ${statuses}`);
    await page.screenshot({ path: path.join(SHOTS, 'smoke.png'), fullPage: true });
    // Keyboard: the first Tab reaches the skip link.
    await page.keyboard.press('Tab');
    assert(await page.evaluate(() => document.activeElement?.className === 'skip'), 'skip link not first in tab order');
    assert(problems.length === 0, problems.join('\n'));
    await page.close();
  }],
  ['the guard itself catches an off-origin request and a console error', async () => {
    // The checks above could pass vacuously if the guard were broken; prove that it fires.
    const page = await browser.context.newPage();
    const problems = guard(page, origin);
    await page.goto(server.url);
    await page.waitForSelector('h1', { timeout: 60_000 });
    await page.evaluate(() => { console.error('deliberate'); return fetch('http://192.0.2.1:9/x').catch(() => null); });
    await page.waitForTimeout(200);
    assert(problems.some((p) => p.includes('another origin')), `off-origin request not caught: ${problems}`);
    assert(problems.some((p) => p.includes('deliberate')), `console error not caught: ${problems}`);
    await page.close();
  }],
]);

await browser.close();
await server.close();
