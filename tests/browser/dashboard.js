// dashboard.js — browser checks of jobscope's dashboard and reports, driven by
// playwright-core (web/node_modules) in Debian's headless Chromium, started
// with the flags of ../shared/reference/test-servers.md.  Called by
// tests/integration/83_dashboard.sh:
//
//   node tests/browser/dashboard.js STEP BASE_URL_OR_FILE SHOTS_DIR [ARG]
//
// STEP: jobs | live | workflow | report | load | big | jobpage | runs | gantt | reports |
// report-escaped.  Prints one JSON line of
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
    viewport: { width: 1300, height: 950 }, offline: step.startsWith('report'),
  });
  const errors = [];
  const page = ctx.pages()[0] || await ctx.newPage();
  page.on('console', m => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', e => errors.push(String(e)));
  // a request the test's own navigation aborted is no failure of the page
  page.on('requestfailed', r => {
    if (!r.url().startsWith('data:') && !/ERR_ABORTED/.test((r.failure() || {}).errorText || ''))
      errors.push('request failed: ' + r.url() + ' ' + ((r.failure() || {}).errorText || ''));
  });
  const out = { step };
  const shot = (name, full = true) => page.screenshot({ path: path.join(shots, name), fullPage: full });
  const loaded = async () => page.waitForFunction(() => document.body.dataset.loaded, null, { timeout: 15000 });
  try {
    if (step === 'jobs') {
      await page.goto(base + '/');
      await loaded();
      await page.waitForSelector('#jobs .vrow[data-job]');
      out.rows = await page.locator('#jobs .vrow[data-job]').count();
      check(out.rows >= 3, 'jobs list has ' + out.rows + ' rows');
      await shot('dashboard-jobs.png');
      // filter by executable: only the gzip job stays
      await page.fill('#f-exe', 'gzip');
      await page.press('#f-exe', 'Enter');
      await page.waitForFunction(() => location.hash.includes('exe=gzip'));
      await page.waitForFunction(() => document.querySelectorAll('#jobs .vrow[data-job]').length === 1, null, { timeout: 5000 });
      out.filtered = await page.locator('#jobs .vrow[data-job]').getAttribute('data-job');
      check(out.filtered === 'gz1', 'filtered list shows ' + out.filtered);
      // sort by peak memory (descending): the largest first
      await page.goto(base + '/#/jobs?sort=peak_mem&order=desc');
      await page.waitForFunction(() => /peak_mem/.test(document.getElementById('count')?.textContent || ''));
      await page.waitForSelector('#jobs .vrow[data-job]');
      const mem = await page.$$eval('#jobs .vrow[data-job]', rows => rows.map(r => r.children[11].textContent));
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
      await page.waitForFunction(() => window.jobscopeGantt);
      out.bars = await page.evaluate(() => window.jobscopeGantt.jobs);
      out.bar_jobs = await page.evaluate(() => window.jobscopeGantt.bars.map(b => b.job));
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
    } else if (step === 'big') {
      // a repository of 100,000 jobs: the list, scrolling to its end, a
      // server-side sort, a search, and an idle tab that only revalidates
      const t0 = Date.now();
      await page.goto(base + '/#/jobs');
      await page.waitForSelector('#jobs .vrow[data-job]');
      out.first_rows_ms = Date.now() - t0;
      out.count = await page.textContent('#count');
      check(/^100,000 jobs/.test(out.count), 'count line: ' + out.count);
      out.rows_in_dom = await page.locator('#jobs .vrow').count();
      check(out.rows_in_dom < 120, 'the scroller renders ' + out.rows_in_dom + ' rows, not the whole list');
      await shot('dashboard-jobs-100k.png', false);
      // to the very end: the last rows arrive (newest first: job0000000 is last)
      await page.evaluate(() => { const l = document.getElementById('jobs'); l.scrollTop = l.scrollHeight; });
      await page.waitForSelector('#jobs .vrow[data-i="99999"]', { timeout: 10000 });
      out.last_job = await page.getAttribute('#jobs .vrow[data-i="99999"]', 'data-job');
      check(out.last_job === 'job0000000', 'last row is ' + out.last_job);
      // idle: the list asks whether anything changed and gets 304, no rows
      await page.waitForTimeout(4500);
      const idle = await page.evaluate(() => window.jobscopeList.fetches.filter(f => Date.now() - f.t < 4200));
      out.idle_fetches = idle.map(f => f.status + ':' + f.bytes);
      check(idle.length >= 1 && idle.every(f => f.status === 304 && f.bytes === 0), 'idle polling fetched ' + out.idle_fetches.join(' '));
      // server-side sort by peak memory (click the column)
      await page.goto(base + '/#/jobs');
      await page.waitForSelector('#jobs .vrow[data-job]');
      await page.click('.vhead [data-sort="peak_mem"]');
      await page.waitForFunction(() => location.hash.includes('sort=peak_mem'));
      await page.waitForSelector('#jobs .vrow[data-job]');
      out.top_by_mem = await page.getAttribute('#jobs .vrow[data-i="0"]', 'data-job');
      const api = await (await page.request.get(base + '/api/jobs?sort=peak_mem&order=desc&limit=1')).json();
      check(out.top_by_mem === api.jobs[0].job_id, 'sorted list starts with ' + out.top_by_mem + ', the API says ' + api.jobs[0].job_id);
      // search: a job id prefix, then a workflow label prefix
      await page.fill('#f-q', 'job00123');
      await page.press('#f-q', 'Enter');
      await page.waitForFunction(() => /^100 jobs/.test(document.getElementById('count')?.textContent || ''), null, { timeout: 10000 });
      out.search_rows = await page.locator('#jobs .vrow[data-job]').count();
      check(out.search_rows >= 20, 'search shows ' + out.search_rows + ' rows');
      const ids = await page.$$eval('#jobs .vrow[data-job]', r => r.map(x => x.dataset.job));
      check(ids.every(x => x.startsWith('job00123')), 'search rows: ' + ids.slice(0, 3));
      await page.goto(base + '/#/jobs?q=blast-42');
      await page.waitForFunction(() => /^1,000 jobs/.test(document.getElementById('count')?.textContent || ''), null, { timeout: 10000 });
      out.label_search = await page.textContent('#count');
      // the overview: groups, four charts
      await page.goto(base + '/#/overview?by=xformation');
      await page.waitForFunction(() => window.jobscopeOverview, null, { timeout: 15000 });
      out.overview = await page.evaluate(() => window.jobscopeOverview);
      check(out.overview.groups === 13 && out.overview.charts >= 4, 'overview: ' + JSON.stringify(out.overview));
      await shot('dashboard-overview.png');
    } else if (step === 'jobpage') {
      // a finished job: bars against its allocation, notes, allocation lines
      await page.goto(base + '/#/job/' + arg);
      await loaded();
      await page.waitForFunction(() => window.jobscopeView && window.jobscopeView.plots.length >= 2);
      const api = await (await page.request.get(base + '/api/jobs/' + arg)).json();
      out.bars = await page.$$eval('.ubar', b => b.map(x => [x.dataset.key, x.querySelector('.upct').textContent]));
      const cpu = out.bars.find(b => b[0] === 'cpu'), mem = out.bars.find(b => b[0] === 'memory');
      check(cpu && cpu[1] === Math.round(100 * api.summary.cpu_efficiency) + '%', 'CPU bar ' + JSON.stringify(cpu) + ' vs efficiency ' + api.summary.cpu_efficiency);
      check(mem && mem[1] === Math.round(100 * api.summary.peak_mem / api.summary.alloc_mem) + '%', 'memory bar ' + JSON.stringify(mem));
      out.notes = await page.$$eval('.note', n => n.map(x => x.dataset.kind));
      check(out.notes.length === api.assessment.notes.length && out.notes.length >= 1, 'notes ' + out.notes);
      out.next = await page.textContent('.nextreq code');
      check(out.next.includes(api.assessment.next.slurm.split(' ')[0]), 'next-time request ' + out.next);
      out.alloc_series = await page.evaluate(() => window.jobscopeView.plots.map(u => u.series.map(s => s.label).filter(l => /^allocated/.test(l || ''))).flat());
      check(out.alloc_series.length >= 2, 'allocation lines: ' + out.alloc_series);
      out.x_label = await page.evaluate(() => window.jobscopeView.plots[0].axes[0].label);
      check(/time \(/.test(out.x_label), 'x axis label ' + out.x_label);
      await shot('dashboard-job.png');
      // elapsed time since the start, then UTC: the axis says so
      await page.selectOption('.jv-x', 'elapsed');
      await page.waitForFunction(() => /since the job started/.test(window.jobscopeView.plots[0].axes[0].label));
      out.x0 = await page.evaluate(() => window.jobscopeView.plots[0].data[0][0]);
      check(out.x0 < 5, 'elapsed axis starts at ' + out.x0);
      await page.selectOption('.jv-tz', 'utc');
      await page.waitForFunction(() => /UTC/.test(document.querySelector('.jv-chars').textContent));
      await page.selectOption('.jv-x', 'clock');
    } else if (step === 'runs') {
      // a job of several runs: the whole job's bars, its nodes, steps and
      // runs; a run's link opens that run's own page
      await page.goto(base + '/#/job/' + arg);
      await loaded();
      await page.waitForSelector('table.jv-runlist');
      const api = await (await page.request.get(base + '/api/jobs/' + arg)).json();
      out.bars = await page.$$eval('.ubar', b => b.map(x => [x.dataset.key, x.querySelector('.upct').textContent]));
      const cpu = out.bars.find(b => b[0] === 'cpu');
      check(cpu && cpu[1] === Math.round(100 * api.summary.cpu_efficiency) + '%', 'CPU bar ' + JSON.stringify(cpu));
      out.nodes = await page.locator('table.jv-nodes tr').count() - 1;
      out.steps = await page.locator('table.jv-steps tr').count() - 1;
      out.runs = await page.locator('table.jv-runlist tr').count() - 1;
      check(out.nodes === api.nodes.length && out.steps === api.steps.length && out.runs === api.runs.length,
        'tables ' + JSON.stringify([out.nodes, out.steps, out.runs]) + ' vs the API');
      await page.screenshot({ path: path.join(shots, 'dashboard-job-runs.png'), fullPage: true, clip: { x: 0, y: 0, width: 1300, height: 1300 } });
      const key = api.runs[api.runs.length - 1].run;
      await page.click('table.jv-runlist a >> text="' + key + '"');
      await page.waitForFunction(k => new URLSearchParams(location.hash.split('?')[1] || '').get('run') === k, key);
      await page.waitForFunction(k => (document.querySelector('h2') || {}).textContent.includes('run ' + k), key);
      await page.waitForFunction(() => window.jobscopeView && window.jobscopeView.plots.length > 0);
      const one = await (await page.request.get(base + '/api/jobs/' + arg + '?run=' + encodeURIComponent(key))).json();
      out.run_cpu = await page.evaluate(() => [...document.querySelectorAll('table.kv td')].find(t => t.textContent === 'CPU time').nextSibling.textContent);
      check(one.summary.cpu_time === api.runs[api.runs.length - 1].cpu_time, 'the run page is the run');
    } else if (step === 'gantt') {
      await page.goto(base + '/#/wf/' + arg);
      await loaded();
      await page.waitForFunction(() => window.jobscopeGantt);
      out.gantt = await page.evaluate(() => { const g = window.jobscopeGantt; return { jobs: g.jobs, lanes: g.lanes, height: g.height, ticks: g.ticks }; });
      check(out.gantt.jobs === 600, 'gantt has ' + out.gantt.jobs + ' jobs');
      check(out.gantt.height <= 700 && out.gantt.lanes < 600 && out.gantt.ticks >= 4, 'gantt ' + JSON.stringify(out.gantt));
      out.scroll_width = await page.evaluate(() => document.documentElement.scrollWidth);
      check(out.scroll_width <= 1300, 'the page is ' + out.scroll_width + ' px wide (raw JSON must wrap or collapse)');
      out.collapsed = await page.locator('#wfevents details.ev:not([open])').count();
      check(out.collapsed >= 1, 'event JSON collapsed');
      await shot('dashboard-workflow-600.png', false);
      const bar = await page.evaluate(() => window.jobscopeGantt.bars[7]);
      const box = await page.locator('.gantt-wrap canvas').boundingBox();
      await page.mouse.click(box.x + bar.x, box.y + bar.y);
      await page.waitForFunction(j => location.hash.startsWith('#/job/' + j), bar.job);
      out.clicked = bar.job;
    } else if (step === 'reports') {
      // a report of many jobs: a comparison table, charts drawn on demand
      await page.goto('file://' + path.resolve(base));
      await page.waitForFunction(() => window.jobscopeReport);
      out.initial = await page.evaluate(() => ({ jobs: window.jobscopeReport.jobs, drawn: window.jobscopeReport.drawn, charts: window.jobscopeReport.charts }));
      check(out.initial.jobs === +arg && out.initial.drawn <= 3, 'drew ' + out.initial.drawn + ' of ' + out.initial.jobs + ' jobs at once');
      out.rows = await page.locator('#compare tr[data-i]').count();
      check(out.rows === +arg, 'comparison table rows ' + out.rows);
      await page.click('#compare th[data-sort="eff"]');
      const effs = await page.$$eval('#compare tr[data-i] td:nth-child(7)', t => t.map(x => parseFloat(x.textContent)));
      check(effs.every((v, i) => i === 0 || v >= effs[i - 1]), 'sorted by efficiency: ' + effs.slice(0, 5));
      await page.evaluate(n => document.getElementById('job-' + (n - 1)).scrollIntoView(), +arg);
      await page.waitForFunction(n => document.querySelector('#job-' + (n - 1) + ' .job').dataset.drawn, +arg, { timeout: 10000 });
      out.after = await page.evaluate(() => window.jobscopeReport.drawn);
      check(out.after < 10, 'scrolling drew ' + out.after + ' jobs');
      await page.evaluate(() => window.scrollTo(0, 0));
      await shot('report-many.png', false);
    } else if (step === 'report-escaped') {
      await page.goto('file://' + path.resolve(base));
      await page.waitForFunction(() => window.jobscopeReport && window.jobscopeReport.drawn === 1);
      out.exe = await page.evaluate(() => [...document.querySelectorAll('table.kv td')].find(t => t.textContent === 'Executable').nextSibling.textContent);
      check(out.exe === '/bin/<!--<script>', 'executable shown as ' + out.exe);
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
