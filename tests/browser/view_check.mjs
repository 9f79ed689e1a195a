#!/usr/bin/env node
// view_check.mjs - drive weft's web view in headless Chromium (Debian's /usr/bin/chromium, or
// $CHROMIUM) with puppeteer-core from ui/node_modules, following a plan, and report what it saw.
//
//   node tests/browser/view_check.mjs BASE_URL ARTIFACT_DIR < plan.json > report.json
//
// BASE_URL is where the view is, e.g. http://127.0.0.1:15014/ui/ (paths in the plan are
// relative to it). plan.json is a list of steps, run in order:
//   {"goto": "?namespace=x#graph"}           load BASE_URL + that (waits for "load")
//   {"wait": "JS expression", "timeout": ms}  until it is truthy in the page (default 15000 ms)
//   {"eval": "key", "js": "JS expression"}   report.results[key] = its value (JSON)
//   {"click": "CSS selector"}                 a real mouse click on the element
//   {"click_edge": "edge id"}                 a real mouse click on the graph edge's midpoint
//   {"screenshot": "name.png"}                saved in ARTIFACT_DIR (the whole page)
//   {"sleep": ms}
// report.json: {"results": {...}, "console_errors": [...], "page_errors": [...],
//   "external_requests": [URLs not on BASE_URL's origin], "failed_requests": [...],
//   "screenshots": [paths], "error": "message" (a step failed; exit status 1)}.
// Exit status: 0 plan done, 1 a step failed, 2 usage or no browser.
import {createRequire} from 'node:module';
import {existsSync, mkdirSync, readFileSync} from 'node:fs';
import {dirname, join, resolve} from 'node:path';
import {fileURLToPath} from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const uiDir = resolve(process.env.WEFT_UI_DIR || join(here, '..', '..', 'ui'));
const [base, outDir] = process.argv.slice(2);
if (!base || !outDir) {
  process.stderr.write('usage: view_check.mjs BASE_URL ARTIFACT_DIR < plan.json\n');
  process.exit(2);
}
const chromium = process.env.CHROMIUM || '/usr/bin/chromium';
if (!existsSync(chromium)) {
  process.stderr.write(`view_check: no browser at ${chromium} (Debian package chromium: run scripts/setup)\n`);
  process.exit(2);
}
let puppeteer;
try {
  puppeteer = createRequire(join(uiDir, 'package.json'))('puppeteer-core');
} catch (e) {
  process.stderr.write(`view_check: puppeteer-core is not in ${uiDir}/node_modules: run scripts/setup (${e.message})\n`);
  process.exit(2);
}
const plan = JSON.parse(readFileSync(0, 'utf8'));
mkdirSync(outDir, {recursive: true});

const report = {results: {}, console_errors: [], page_errors: [], external_requests: [], failed_requests: [],
  screenshots: []};
const origin = new URL(base).origin;
const browser = await puppeteer.launch({
  executablePath: chromium, headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--no-default-browser-check',
    '--disable-background-networking', '--disable-component-update', '--disable-sync', '--font-render-hinting=none'],
  defaultViewport: {width: 1440, height: 900}, timeout: 60000});
let status = 0;
try {
  const page = await browser.newPage();
  page.on('console', (m) => { if (m.type() === 'error') report.console_errors.push(m.text()); });
  page.on('pageerror', (e) => report.page_errors.push(String(e && e.message || e)));
  page.on('request', (r) => {
    const u = r.url();
    if (!u.startsWith('data:') && new URL(u).origin !== origin) report.external_requests.push(u);
  });
  page.on('requestfailed', (r) => report.failed_requests.push(`${r.url()}: ${r.failure() && r.failure().errorText}`));
  for (const [i, step] of plan.entries()) {
    try {
      if ('goto' in step) {
        await page.goto(new URL(step.goto, base).href, {waitUntil: 'load', timeout: step.timeout || 30000});
      } else if ('wait' in step) {
        await page.waitForFunction(step.wait, {timeout: step.timeout || 15000, polling: 100});
      } else if ('eval' in step) {
        report.results[step.eval] = await page.evaluate(`(async () => (${step.js}))()`);
      } else if ('click' in step) {
        await page.waitForSelector(step.click, {visible: true, timeout: step.timeout || 15000});
        await page.click(step.click);
      } else if ('click_edge' in step) {
        const p = await page.evaluate((id) => {
          const cy = window.weftView.cy, e = cy.getElementById(id);
          if (e.empty()) return null;
          const m = e.renderedMidpoint(), box = cy.container().getBoundingClientRect();
          return {x: box.left + m.x, y: box.top + m.y};
        }, step.click_edge);
        if (!p) throw new Error(`no edge ${step.click_edge} in the graph`);
        await page.mouse.click(p.x, p.y);
      } else if ('screenshot' in step) {
        const f = join(outDir, step.screenshot);
        await page.screenshot({path: f, fullPage: step.full !== false});
        report.screenshots.push(f);
      } else if ('sleep' in step) {
        await new Promise((r) => setTimeout(r, step.sleep));
      } else {
        throw new Error('unknown step ' + JSON.stringify(step));
      }
    } catch (e) {
      report.error = `step ${i} ${JSON.stringify(step).slice(0, 300)}: ${e.message || e}`;
      try {
        const f = join(outDir, `failed-step-${i}.png`);
        await page.screenshot({path: f, fullPage: true});
        report.screenshots.push(f);
      } catch (e2) { /* the page is gone */ }
      status = 1;
      break;
    }
  }
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(report, null, 1) + '\n');
process.exit(status);
