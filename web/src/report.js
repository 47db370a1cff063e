/* report.js — the page of a self-contained `jobscope report` (all assets are
 * inlined by src/report/report.c): reads the jobs from the JSON block
 * #jobscope-data and shows each with charts.js.  With several jobs: a
 * comparison table first (click a column to sort), then one section per job
 * whose charts are drawn when it comes into view (a report of 200 jobs
 * draws a screenful, not 1,000 charts).  Works offline (file://). */
(function () {
  'use strict';
  const data = JSON.parse(document.getElementById('jobscope-data').textContent);
  const app = document.getElementById('app');
  const jobs = data.jobs || [];
  const E = JSV.esc;
  const views = [];
  const state = { jobs: jobs.length, drawn: 0, charts: 0 };
  window.jobscopeReport = state;

  /* the notes worth comparing: the bad and the warnings */
  const notesOf = j => ((j.assessment || {}).notes || []).filter(n => n.level !== 'info');
  const eff = s => s.cpu_efficiency == null ? null : 100 * s.cpu_efficiency;
  const memPct = s => s.alloc_mem > 0 && s.peak_mem != null ? 100 * s.peak_mem / s.alloc_mem : null;
  const COLS = [
    ['job', 'job', j => j.summary.job_id, (j, i) => '<a href="#job-' + i + '">' + E(j.summary.job_id) + '</a>'],
    ['exe', 'executable', j => j.summary.exe, j => E((j.summary.exe || '').replace(/.*\//, ''))],
    ['host', 'host', j => j.summary.host, j => E(j.summary.host)],
    ['start', 'start (' + JSV.tzName() + ')', j => j.summary.start, j => '<span class="nowrap">' + JSV.fmtTime(j.summary.start, true) + '</span>'],
    ['duration', 'duration', j => j.summary.duration, j => JSV.fmtDur(j.summary.duration), 1],
    ['cpus', 'CPUs', j => j.summary.cores, j => j.summary.cores == null ? '–' : j.summary.cores, 1],
    ['eff', 'CPU eff.', j => eff(j.summary), j => eff(j.summary) == null ? '–' : eff(j.summary).toFixed(1) + ' %', 1],
    ['mem', 'peak memory', j => j.summary.peak_mem, j => JSV.fmtBytes(j.summary.peak_mem), 1],
    ['memp', 'of alloc.', j => memPct(j.summary), j => memPct(j.summary) == null ? '–' : memPct(j.summary).toFixed(0) + ' %', 1],
    ['io', 'I/O (r+w)', j => (j.summary.rchar || 0) + (j.summary.wchar || 0), j => JSV.fmtBytes((j.summary.rchar || 0) + (j.summary.wchar || 0)), 1],
    ['exit', 'exit', j => j.summary.exit_code, j => JSV.exitText(j.summary)],
    ['warn', 'warnings', j => (j.warnings || []).length, j => (j.warnings || []).length || '', 1],
    ['notes', 'notes', j => notesOf(j).length, j => notesOf(j).map(n => '<span class="lvl-' + E(n.level) + '" title="' + E(n.text) + '">' + E(n.kind.replace(/_/g, ' ')) + '</span>').join(', ')],
  ];
  let sortKey = null, sortAsc = true;

  function table() {
    const idx = jobs.map((j, i) => i);
    if (sortKey) {
      const c = COLS.find(x => x[0] === sortKey);
      idx.sort((a, b) => {
        const x = c[2](jobs[a]), y = c[2](jobs[b]);
        if (x == null && y == null) return a - b;
        if (x == null) return 1;
        if (y == null) return -1;
        const r = typeof x === 'string' ? x.localeCompare(y) : x - y;
        return (sortAsc ? r : -r) || a - b;
      });
    }
    return '<table id="compare"><tr>' + COLS.map(c => '<th data-sort="' + c[0] + '" class="' + (c[0] === sortKey ? 'sorted' + (sortAsc ? ' asc' : '') : '') + '">' + c[1] + '</th>').join('') + '</tr>' +
      idx.map(i => '<tr data-i="' + i + '">' + COLS.map(c => '<td' + (c[4] ? ' class="num"' : '') + '>' + c[3](jobs[i], i) + '</td>').join('') + '</tr>').join('') + '</table>';
  }

  function bindTable() {
    app.querySelectorAll('#compare th[data-sort]').forEach(th => th.addEventListener('click', () => {
      const k = th.dataset.sort;
      sortAsc = sortKey === k ? !sortAsc : true;
      sortKey = k;
      document.getElementById('compare').outerHTML = table();
      bindTable();
    }));
  }

  let html = '<header><h1>jobscope report</h1><span>' + jobs.length + ' job' + (jobs.length === 1 ? '' : 's') +
    '</span><span class="muted" style="color:#cde">generated ' + JSV.fmtTime(data.generated) + '</span></header><main>';
  if (jobs.length > 1) html += '<h2>Jobs compared</h2><div class="muted">Click a column to sort; CPU efficiency and memory are against each job\'s allocation.</div>' + table();
  html += jobs.map((j, i) => '<section class="rjob" id="job-' + i + '"><h2>Job ' + E(j.summary.job_id) + '</h2><div class="job lazy-charts" data-i="' + i + '">' +
    (jobs.length > 1 ? '<button class="drawbtn">show this job</button>' : '') + '</div></section>').join('');
  app.innerHTML = html + '</main>';
  if (jobs.length > 1) app.classList.add('many');
  bindTable();

  function draw(div) {
    if (div.dataset.drawn) return;
    div.dataset.drawn = '1';
    views.push(new JSV.JobView(div, jobs[+div.dataset.i]));
    state.drawn++;
    state.charts = views.reduce((n, v) => n + v.plots.length, 0);
  }
  const lazy = app.querySelectorAll('section .job');
  if (jobs.length === 1) {
    draw(lazy[0]);
  } else {
    lazy.forEach(div => div.querySelector('.drawbtn').addEventListener('click', () => draw(div)));
    if ('IntersectionObserver' in window) {
      const io = new IntersectionObserver(entries => entries.forEach(e => {
        if (e.isIntersecting) { io.unobserve(e.target); draw(e.target); }
      }), { rootMargin: '200px' });
      lazy.forEach(div => io.observe(div));
    }
  }
})();
