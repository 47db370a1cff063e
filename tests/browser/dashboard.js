// dashboard.js — browser checks of jobscope's dashboard and reports, driven by
// playwright-core (web/node_modules) in Debian's headless Chromium, started
// with the flags of ../shared/reference/test-servers.md.  Called by
// tests/integration/83_dashboard.sh:
//
//   node tests/browser/dashboard.js STEP BASE_URL_OR_FILE SHOTS_DIR [ARG]
//
// STEP: jobs | live | workflow | report | load.  Prints one JSON line of
// figures; exits 1 with the reason when a check fails.  Every page load
// fails the check on any console error or page error.
'use strict';
const path = require('path');
const os = require('os');
const fs = require('fs');
const { chromium } = require(path.join(__dirname, '../../web/node_modules/playwright-core'));

const [step, base, shots, arg] = process.argv.slice(2);
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

function check(cond, msg) { if (!cond) throw new Error(msg); }

(async () => {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'jobscope-chromium-'));
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium', headless: true, args: FLAGS,
    viewport: { width: 1300, height: 950 }, offline: step === 'report',
  });
  const errors = [];
  const page = ctx.pages()[0] || await ctx.newPage();
  page.on('console', m => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', e => errors.push(String(e)));
  page.on('requestfailed', r => { if (!r.url().startsWith('data:')) errors.push('request failed: ' + r.url()); });
  const out = { step };
  const shot = name => page.screenshot({ path: path.join(shots, name), fullPage: true });
  const loaded = async () => page.waitForFunction(() => document.body.dataset.loaded, null, { timeout: 15000 });
  try {
    if (step === 'jobs') {
      await page.goto(base + '/');
      await loaded();
      await page.waitForSelector('#jobs tr[data-job]');
      out.rows = await page.locator('#jobs tr[data-job]').count();
      check(out.rows >= 3, 'jobs list has ' + out.rows + ' rows');
      await shot('dashboard-jobs.png');
      // filter by executable: only the gzip job stays
      await page.fill('#f-exe', 'gzip');
      await page.press('#f-exe', 'Enter');
      await page.waitForFunction(() => location.hash.includes('exe=gzip'));
      await page.waitForFunction(() => document.querySelectorAll('#jobs tr[data-job]').length === 1, null, { timeout: 5000 });
      out.filtered = await page.locator('#jobs tr[data-job]').getAttribute('data-job');
      check(out.filtered === 'gz1', 'filtered list shows ' + out.filtered);
      // sort by peak memory (descending): the largest first
      await page.goto(base + '/#/jobs?sort=peak_mem&order=desc');
      await page.waitForFunction(() => /peak_mem/.test(document.getElementById('count')?.textContent || ''));
      const mem = await page.$$eval('#jobs tr[data-job]', rows => rows.map(r => r.children[8].textContent));
      out.sorted = mem;
      check(mem.length >= 3, 'sorted list');
    } else if (step === 'live') {
      await page.goto(base + '/#/job/' + arg);
      await loaded();
      await page.waitForFunction(() => window.jobscopeView && window.jobscopeView.plots.length > 0);
      const n = () => page.evaluate(() => window.jobscopeView.plots[0].data[0].length);
      out.points_before = await n();
      await page.waitForTimeout(2500);
      out.points_after = await n();
      check(out.points_after > out.points_before, 'the running job\'s chart did not gain points: ' + out.points_before + ' -> ' + out.points_after);
      out.state = await page.textContent('#jstate');
      await shot('dashboard-job-live.png');
    } else if (step === 'workflow') {
      await page.goto(base + '/#/wf/' + arg);
      await loaded();
      await page.waitForSelector('.gantt .bar');
      out.bars = await page.locator('.gantt .bar').count();
      out.bar_jobs = await page.$$eval('.gantt .bar', b => b.map(x => x.dataset.job));
      out.events = await page.locator('#wfevents tr').count() - 1;
      check(out.bars === 3, 'workflow page shows ' + out.bars + ' jobs');
      check(out.events >= 10, 'workflow page shows ' + out.events + ' events');
      await shot('dashboard-workflow.png');
    } else if (step === 'report') {
      await page.goto('file://' + path.resolve(base));
      await page.waitForFunction(() => window.jobscopeReport);
      out.report = await page.evaluate(() => window.jobscopeReport);
      check(out.report.charts >= 4, 'report has ' + out.report.charts + ' charts');
      out.canvases = await page.locator('canvas').count();
      check(out.canvases >= 4, 'no chart drawn');
      await shot('report.png');
    } else if (step === 'load') {
      // a job with 10k samples per series: time from navigation to all charts
      // drawn (the browser warmed up by a first page of the same server)
      // Three loads (a shared, loaded machine is noisy): each from another page.
      out.load_ms_each = [];
      for (let k = 0; k < 3; k++) {
        await page.goto(base + '/api/version');
        const t0 = Date.now();
        await page.goto(base + '/#/job/' + arg);
        await page.waitForFunction(() => window.jobscopeView && window.jobscopeView.plots.length >= 4 &&
          window.jobscopeView.plots[0].data[0].length >= 10000, null, { timeout: 30000 });
        await page.evaluate(() => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0))));  // painted
        out.load_ms_each.push(Date.now() - t0);
      }
      out.load_ms = Math.min.apply(null, out.load_ms_each);
      out.points = await page.evaluate(() => window.jobscopeView.plots[0].data[0].length);
      const nav = await page.evaluate(() => JSON.stringify(performance.getEntriesByType('resource').map(r => [r.name.replace(/.*\//, ''), Math.round(r.duration), r.transferSize])));
      out.resources = JSON.parse(nav);
      await shot('dashboard-job-10k.png');
    } else {
      throw new Error('unknown step ' + step);
    }
    check(errors.length === 0, 'console errors: ' + errors.join(' | '));
    console.log(JSON.stringify(out));
    await ctx.close();
    fs.rmSync(profile, { recursive: true, force: true });
  } catch (e) {
    console.log(JSON.stringify(out));
    console.error('FAIL: ' + e.message + (errors.length ? ' (console: ' + errors.join(' | ') + ')' : ''));
    try { await shot('failed-' + step + '.png'); } catch (_) { /* ignore */ }
    await ctx.close();
    fs.rmSync(profile, { recursive: true, force: true });
    process.exit(1);
  }
})();
