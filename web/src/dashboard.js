/* dashboard.js — the pages of `jobscope serve`'s dashboard (index.html),
 * drawn from the repository's API (docs/views.md): the jobs list (search,
 * filters, server-side sort, a virtual scroller over the whole result that
 * fetches the pages in view and, while idle, only asks whether anything
 * changed), a job (charts.js, polled every second with ?since= while it
 * runs), workflows (a Gantt of packed lanes on a time axis, readable at
 * thousands of jobs), the overview (aggregates per workflow, transformation,
 * host, executable or user over time), nodes.  Routing is by the URL's hash:
 * #/jobs?…, #/job/ID?wf=, #/workflows, #/wf/ID, #/overview?…, #/nodes,
 * #/node/HOST. */
(function () {
  'use strict';
  const app = document.getElementById('app');
  const E = JSV.esc;
  let timer = null, page = 0;

  async function get(url) {
    const r = await fetch(url, { cache: 'no-store' });
    if (!r.ok) {
      let msg = 'HTTP ' + r.status;
      try { const j = await r.json(); if (j.error) msg += ': ' + j.error.message; } catch (e) { /* not JSON */ }
      throw new Error(url + ': ' + msg);
    }
    return r.json();
  }
  function every(ms, fn) { timer = setTimeout(async function tick() { const me = page; try { await fn(); } catch (e) { /* retried */ } if (me === page) timer = setTimeout(tick, ms); }, ms); }
  const qs = o => Object.entries(o).filter(e => e[1] !== '' && e[1] != null).map(e => encodeURIComponent(e[0]) + '=' + encodeURIComponent(e[1])).join('&');
  const jobLink = j => '#/job/' + encodeURIComponent(j.job_id) + (j.wf ? '?wf=' + encodeURIComponent(j.wf) : '');
  const pct = v => v == null ? '–' : (100 * v).toFixed(1) + ' %';
  const base = p => (p || '').replace(/.*\//, '');
  const stateText = j => j.state === 'running' ? '<span class="running">running</span>' :
    JSV.exitText({ finished: true, exit_code: j.exit_code, signal_name: j.signal_name, exit_type: j.exit_type, stopped_by: j.stopped_by });

  /* the header: which page, and the time zone every page shows */
  const tzSel = document.getElementById('tz');
  if (tzSel) {
    tzSel.innerHTML = '<option value="local">' + E(Intl.DateTimeFormat().resolvedOptions().timeZone || 'local') + '</option><option value="utc">UTC</option>';
    tzSel.value = JSV.tz();
    tzSel.addEventListener('change', () => JSV.setTz(tzSel.value));
    document.addEventListener('jobscope-tz', () => { tzSel.value = JSV.tz(); if (!document.querySelector('.jv-tz')) route(); });
  }
  /* datetime-local <-> epoch seconds, in the chosen zone */
  const toInput = ts => { if (!ts) return ''; const s = JSV.fmtTime(+ts, true); return s.slice(0, 10) + 'T' + s.slice(11, 16); };
  const fromInput = v => {
    if (!v) return '';
    const d = JSV.tz() === 'utc' ? new Date(v + ':00Z') : new Date(v);
    return isFinite(d) ? String(Math.floor(d / 1000)) : '';
  };

  /* ---- the jobs list ---- */
  const COLS = [
    { t: 'job', w: '9em', sort: 'job', r: j => '<a href="' + jobLink(j) + '">' + E(j.job_id) + '</a>' },
    { t: 'state / exit', w: '9em', sort: 'state', r: stateText },
    { t: 'executable', w: '1fr', sort: 'exe', r: j => '<span title="' + E(j.exe) + '">' + E(base(j.exe)) + '</span>' },
    { t: 'workflow', w: '1fr', sort: 'wf', r: j => j.wf ? '<a href="#/wf/' + encodeURIComponent(j.wf) + '" title="' + E(j.wf) + '">' + E(j.wf_label || j.wf.slice(0, 8)) + '</a>' : '' },
    { t: 'transformation', w: '1.2fr', r: j => E(j.xformation || '') },
    { t: 'host', w: '6em', sort: 'host', r: j => '<a href="#/node/' + encodeURIComponent(j.host || '') + '">' + E(j.host || '') + '</a>' },
    { t: 'user', w: '5em', sort: 'user', r: j => E(j.user || '') },
    { t: 'start (' + JSV.tzName() + ')', w: '10.5em', sort: 'start', r: j => JSV.fmtTime(j.start, true).slice(0, 16) },
    { t: 'duration', w: '7em', sort: 'duration', num: 1, r: j => JSV.fmtDur(j.duration) },
    { t: 'CPUs', w: '4em', sort: 'cores', num: 1, r: j => j.cores == null ? '–' : '<span title="' + E(j.cores_from || '') + '">' + j.cores + '</span>' },
    { t: 'CPU eff.', w: '6em', sort: 'cpu_efficiency', num: 1, r: j => pct(j.cpu_efficiency) },
    { t: 'peak memory', w: '8.5em', sort: 'peak_mem', num: 1, r: j => JSV.fmtBytes(j.peak_mem) },
    { t: 'warnings', w: '6.5em', num: 1, r: j => (j.warnings || []).length ? '<span title="' + E((j.warnings || []).map(w => w.kind).join(', ')) + '">' + j.warnings.length + '</span>' : '' },
  ];
  const GRID = COLS.map(c => /fr$/.test(c.w) ? 'minmax(6em, ' + c.w + ')' : c.w).join(' ');
  const ROW = 26, PAGE = 100;
  const WARN_KINDS = ['cpu_efficiency', 'memory_limit', 'idle_gpu', 'io_bound', 'signal', 'limit', 'oom_kill'];

  async function jobsPage(params) {
    const f = {};
    for (const k of ['q', 'wf', 'xformation', 'host', 'user', 'exe', 'state', 'warning', 'since', 'until']) f[k] = params.get(k) || '';
    const sort = params.get('sort') || 'start', order = params.get('order') || 'desc';
    const input = (k, ph, w) => '<input id="f-' + k + '" placeholder="' + ph + '" value="' + E(f[k]) + '"' + (w ? ' style="width:' + w + '"' : '') + '>';
    app.innerHTML = '<h2>Jobs</h2><div class="filters">' + input('q', 'search: job id, workflow id or label (prefix)') +
      input('wf', 'workflow', '9em') + input('xformation', 'transformation', '9em') + input('host', 'host', '7em') +
      input('user', 'user', '6em') + input('exe', 'executable', '8em') +
      '<select id="f-state"><option value="">any state</option><option>running</option><option>done</option><option>failed</option><option>stopped</option></select>' +
      '<select id="f-warning"><option value="">any warning</option>' + WARN_KINDS.map(k => '<option>' + k + '</option>').join('') + '</select>' +
      '<label>from <input id="f-since" type="datetime-local" value="' + toInput(f.since) + '"></label>' +
      '<label>to <input id="f-until" type="datetime-local" value="' + toInput(f.until) + '"></label></div>' +
      '<div class="muted" id="count">…</div><div class="vlist" id="jobs" style="--cols:' + GRID + '"><div class="vhead">' +
      COLS.map(c => '<div' + (c.sort ? ' data-sort="' + c.sort + '" class="sortable' + (c.sort === sort ? ' sorted' + (order === 'asc' ? ' asc' : '') : '') + '"' : '') + '>' + E(c.t) + '</div>').join('') +
      '</div><div class="vbody"></div></div>';
    document.getElementById('f-state').value = f.state;
    document.getElementById('f-warning').value = f.warning;
    const go = n => { location.hash = '#/jobs?' + qs(n); };
    const apply = () => {
      const n = Object.assign({}, f, { sort, order });
      for (const k of ['q', 'wf', 'xformation', 'host', 'user', 'exe', 'state', 'warning']) n[k] = document.getElementById('f-' + k).value.trim();
      n.since = fromInput(document.getElementById('f-since').value);
      n.until = fromInput(document.getElementById('f-until').value);
      go(n);
    };
    app.querySelectorAll('.filters input, .filters select').forEach(i => i.addEventListener('change', apply));
    document.getElementById('f-q').addEventListener('keydown', e => { if (e.key === 'Enter') apply(); });
    app.querySelectorAll('.vhead [data-sort]').forEach(h => h.addEventListener('click', () =>
      go(Object.assign({}, f, { sort: h.dataset.sort, order: sort === h.dataset.sort && order === 'desc' ? 'asc' : 'desc' }))));

    const list = document.getElementById('jobs'), body = list.querySelector('.vbody');
    const query = Object.assign({}, f, { sort, order, limit: PAGE });
    const pages = new Map(), pending = new Set();
    const stats = { total: null, fetches: [], rendered: 0, etag: null };
    window.jobscopeList = stats;
    const me = page;
    async function load(p, revalidate) {
      if (pending.has(p)) return;
      pending.add(p);
      try {
        const headers = revalidate && stats.etag ? { 'If-None-Match': stats.etag } : {};
        const r = await fetch('/api/jobs?' + qs(Object.assign({ offset: p * PAGE }, query)), { cache: 'no-store', headers });
        const text = r.status === 200 ? await r.text() : '';
        stats.fetches.push({ page: p, status: r.status, bytes: text.length, t: Date.now() });
        if (me !== page) return;
        if (r.status === 304) return;
        if (!r.ok) {
          let msg = 'HTTP ' + r.status;
          try { msg += ': ' + JSON.parse(text).error.message; } catch (e) { /* not JSON */ }
          document.getElementById('count').innerHTML = '<span class="bad">' + E(msg) + '</span>';
          return;
        }
        const d = JSON.parse(text);
        stats.etag = r.headers.get('ETag') || stats.etag;
        if (revalidate) pages.clear();   // something changed: what is in view is fetched again
        pages.set(p, d.jobs);
        if (d.total !== stats.total) {
          stats.total = d.total;
          body.style.height = (d.total * ROW) + 'px';
          document.getElementById('count').textContent = d.total.toLocaleString('en') + ' job' + (d.total === 1 ? '' : 's') +
            ' — sorted by ' + sort + ' (' + (order === 'asc' ? 'ascending' : 'descending') + ', on the server); click a column to sort, scroll through all of them';
        }
        render();
      } finally { pending.delete(p); }
    }
    function visible() {
      const first = Math.max(0, Math.floor(list.scrollTop / ROW) - 5);
      const last = Math.min((stats.total || PAGE) - 1, Math.ceil((list.scrollTop + list.clientHeight) / ROW) + 5);
      return [first, last];
    }
    function render() {
      const [first, last] = visible();
      let html = '', n = 0;
      for (let i = first; i <= last && i < (stats.total || 0); i++) {
        const rows = pages.get(Math.floor(i / PAGE));
        const j = rows && rows[i % PAGE];
        html += j ? '<div class="vrow" data-job="' + E(j.job_id) + '" data-i="' + i + '" style="top:' + i * ROW + 'px">' +
          COLS.map(c => '<div' + (c.num ? ' class="num"' : '') + '>' + c.r(j) + '</div>').join('') + '</div>'
          : '<div class="vrow loading" style="top:' + i * ROW + 'px"><div>…</div></div>';
        if (j) n++;
      }
      body.innerHTML = html;
      stats.rendered = n;
      for (let p = Math.floor(first / PAGE); p <= Math.floor(last / PAGE); p++) if (!pages.has(p)) load(p);
    }
    let raf = 0;
    list.addEventListener('scroll', () => { if (!raf) raf = requestAnimationFrame(() => { raf = 0; render(); }); });
    await load(0);
    // idle: ask whether anything changed (304, no body); if so, refetch what is in view
    every(2000, () => load(Math.floor(visible()[0] / PAGE), true));
  }

  /* ---- one job, live while it runs ---- */
  function merge(job, d) {
    const S = job.series, N = d.series || {}, n0 = (S.ts || []).length, add = (N.ts || []).length;
    for (const k in N) {
      if (!S[k]) S[k] = new Array(n0).fill(null);
      S[k] = S[k].concat(N[k]);
    }
    for (const k in S) if (!N[k]) S[k] = S[k].concat(new Array(add).fill(null));
    for (const x of d.extra || []) {
      const o = job.extra.find(e => e.name === x.name);
      if (o) { o.ts = o.ts.concat(x.ts); o.val = o.val.concat(x.val); } else job.extra.push(x);
    }
    job.events = job.events.concat(d.events || []);
    for (const k of ['summary', 'warnings', 'end', 'start', 'tags', 'state', 'record', 'assessment']) if (k in d) job[k] = d[k];
    if (d.summary_update) job.summary = Object.assign({}, job.summary, d.summary_update);
  }

  async function jobPage(id, params) {
    const wf = params.get('wf') || '', run = params.get('run') || '';
    const url = '/api/jobs/' + encodeURIComponent(id) + '?' + (wf ? 'wf=' + encodeURIComponent(wf) + '&' : '') + (run ? 'run=' + encodeURIComponent(run) + '&' : '');
    const job = await get(url);
    const whole = '#/job/' + encodeURIComponent(id) + (wf ? '?' + qs({ wf }) : '');
    const runHref = key => '#/job/' + encodeURIComponent(id) + '?' + qs(Object.assign(wf ? { wf } : {}, { run: key }));
    app.innerHTML = '<h2>Job ' + E(id) + (run ? ', run ' + E(run) : '') + ' <span class="muted" id="jstate"></span></h2>' +
      (run ? '<div class="jobnav">one run of the job: <a href="' + E(whole) + '">the whole job</a></div>' : '') +
      (job.summary.wf ? '<div class="jobnav">workflow <a href="#/wf/' + encodeURIComponent(job.summary.wf) + '">' + E(job.summary.wf_label || job.summary.wf) + '</a>' +
        ' · <a href="#/jobs?' + qs({ wf: job.summary.wf }) + '">its jobs</a></div>' : '') + '<div id="job"></div>';
    const view = new JSV.JobView(document.getElementById('job'), job, { runHref });
    window.jobscopeView = view;
    const st = () => { document.getElementById('jstate').textContent = job.state === 'running' ? '— running, updated every second' : '— ' + job.state; };
    st();
    if (job.state !== 'running') return;
    every(job.runs ? 5000 : 1000, async () => {   // a whole job of several runs is summed anew: less often
      const ts = job.series.ts || [];
      const d = await get(url + 'since=' + (ts.length ? ts[ts.length - 1] : 0));
      if (d.append) merge(job, d);
      else Object.assign(job, d);            // a whole job of several runs: summed anew, the full page
      if (job.state !== 'running') {         // ended: the full record, warnings and assessment included
        clearTimeout(timer); timer = null; page++;
        Object.assign(job, await get(url));
      }
      view.update(job);
      st();
    });
  }

  /* ---- workflows ---- */
  async function workflowsPage(params) {
    const d = await get('/api/workflows');
    const q = (params.get('q') || '').toLowerCase();
    const ws = d.workflows.filter(w => !q || (w.wf || '').toLowerCase().startsWith(q) || (w.label || '').toLowerCase().startsWith(q));
    app.innerHTML = '<h2>Workflows</h2><div class="filters"><input id="wq" placeholder="label or id (prefix)" value="' + E(q) + '"> <span class="muted">' +
      ws.length + ' of ' + d.workflows.length + '</span></div><table><tr><th>workflow</th><th>label</th><th>state</th><th>start (' + E(JSV.tzName()) + ')</th><th>jobs</th><th>running</th><th>failed</th></tr>' +
      ws.slice(0, 2000).map(w => '<tr><td><a href="#/wf/' + encodeURIComponent(w.wf) + '">' + E(w.wf) + '</a></td><td>' + E(w.label) + '</td><td>' + E(w.state || '') +
        '</td><td>' + JSV.fmtTime(w.start || w.first, true) + '</td><td class="num">' + w.jobs + '</td><td class="num">' + w.running + '</td><td class="num">' + w.failed + '</td></tr>').join('') + '</table>';
    document.getElementById('wq').addEventListener('change', e => { location.hash = '#/workflows?' + qs({ q: e.target.value.trim() }); });
  }

  /* Nice ticks of a time axis: a step from a readable set, ~n of them. */
  function timeTicks(t0, t1, n) {
    const steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800];
    const step = steps.find(s => (t1 - t0) / s <= n) || 604800;
    const off = JSV.tz() === 'utc' ? 0 : -new Date(t0 * 1000).getTimezoneOffset() * 60;
    const out = [];
    for (let t = Math.ceil((t0 + off) / step) * step - off; t <= t1; t += step) out.push(t);
    return { ticks: out, step };
  }

  /* The Gantt: jobs packed into lanes (a lane holds jobs that do not
   * overlap), on a canvas whose height follows the concurrency, not the
   * number of jobs; hover names a job, a click opens it. */
  function gantt(box, jobs, t0, t1) {
    const W = Math.max(600, (box.clientWidth || 1200) - 10), left = 8, right = 8;
    const items = jobs.map(j => ({ j, s: j.start != null ? j.start : t0, e: j.end != null ? j.end : (j.last != null ? j.last : (j.start != null ? j.start : t0)) }))
      .sort((a, b) => a.s - b.s || a.e - b.e);
    const lanes = [];
    for (const it of items) {
      let k = lanes.findIndex(end => end <= it.s);
      if (k < 0) { k = lanes.length; lanes.push(0); }
      lanes[k] = Math.max(it.e, it.s + (t1 - t0) * 0.002);
      it.lane = k;
    }
    const lh = Math.max(2, Math.min(14, Math.floor(560 / Math.max(1, lanes.length))));
    const axisH = 34, H = lanes.length * lh + axisH + 6;
    const cv = document.createElement('canvas'), ratio = window.devicePixelRatio || 1;
    cv.width = W * ratio; cv.height = H * ratio; cv.style.width = W + 'px'; cv.style.height = H + 'px';
    const g = cv.getContext('2d');
    g.scale(ratio, ratio);
    const span = Math.max(1e-3, t1 - t0), X = t => left + (t - t0) / span * (W - left - right);
    const color = j => j.state === 'running' ? '#1f77b4' : j.stopped_by ? '#e67e22' : j.exit_code === 0 ? '#2ca02c' : j.state === 'done' ? '#d62728' : '#999';
    const { ticks } = timeTicks(t0, t1, Math.max(4, Math.floor(W / 130)));
    g.font = '11px system-ui, sans-serif';
    g.strokeStyle = '#eee';
    g.fillStyle = '#555';
    for (const t of ticks) {
      const x = X(t);
      g.beginPath(); g.moveTo(x, 0); g.lineTo(x, H - axisH); g.stroke();
      if (x + 56 > W) continue;   // no label cut by the right edge
      const s = JSV.fmtTime(t, true);
      g.fillText(t1 - t0 > 86400 ? s.slice(5, 16) : s.slice(11, 19), x + 2, H - axisH + 13);
      g.fillText('+' + JSV.fmtElapsed(t - t0), x + 2, H - axisH + 26);
    }
    for (const it of items) {
      g.fillStyle = color(it.j);
      const x0 = X(it.s), x1 = Math.max(x0 + 2, X(it.e));
      g.fillRect(x0, it.lane * lh + 1, x1 - x0, Math.max(1, lh - (lh > 4 ? 2 : 0)));
    }
    const wrap = document.createElement('div');
    wrap.className = 'gantt-wrap';
    wrap.appendChild(cv);
    const tip = document.createElement('div');
    tip.className = 'gantt-tip';
    wrap.appendChild(tip);
    const at = ev => {
      const r = cv.getBoundingClientRect(), x = ev.clientX - r.left, lane = Math.floor((ev.clientY - r.top) / lh);
      return items.find(it => it.lane === lane && x >= X(it.s) - 1 && x <= Math.max(X(it.s) + 2, X(it.e)) + 1);
    };
    cv.addEventListener('mousemove', ev => {
      const it = at(ev);
      cv.style.cursor = it ? 'pointer' : 'default';
      if (!it) { tip.style.display = 'none'; return; }
      tip.textContent = it.j.job_id + ' — ' + JSV.fmtDur(it.e - it.s) + ', ' + (it.j.state === 'running' ? 'running' : 'exit ' + (it.j.exit_code == null ? '?' : it.j.exit_code)) +
        (it.j.xformation ? ', ' + it.j.xformation : '') + (it.j.host ? ' on ' + it.j.host : '');
      tip.style.display = 'block';
      tip.style.left = Math.min(W - 200, ev.offsetX + 12) + 'px';
      tip.style.top = (ev.offsetY + 12) + 'px';
    });
    cv.addEventListener('mouseleave', () => { tip.style.display = 'none'; });
    cv.addEventListener('click', ev => { const it = at(ev); if (it) location.hash = jobLink(it.j); });
    box.innerHTML = '';
    box.appendChild(wrap);
    box.insertAdjacentHTML('beforeend', '<div class="muted legend"><span style="background:#2ca02c"></span>exit 0<span style="background:#d62728"></span>failed' +
      '<span style="background:#e67e22"></span>stopped (signal, limit)<span style="background:#1f77b4"></span>running<span style="background:#999"></span>unknown · ' +
      items.length + ' jobs in ' + lanes.length + ' lane' + (lanes.length === 1 ? '' : 's') + ' (a lane holds jobs that ran one after the other) · time in ' + E(JSV.tzName()) +
      ', below it the time since the first job started · click a bar to open its job</div>');
    window.jobscopeGantt = { jobs: items.length, lanes: lanes.length, height: H, laneHeight: lh, ticks: ticks.length,
      bars: items.map(it => ({ job: it.j.job_id, x: X(it.s) + 1, y: it.lane * lh + lh / 2 })) };
  }

  async function workflowPage(id) {
    const load = async () => {
      const d = await get('/api/workflows/' + encodeURIComponent(id));
      const w = d.workflow, jobs = d.jobs;
      const times = jobs.flatMap(j => [j.start, j.end, j.last]).concat([w.start, w.end, w.first, w.last]).filter(v => v != null);
      const t0 = Math.min.apply(null, times), t1 = Math.max.apply(null, times);
      const cpu = jobs.reduce((a, j) => a + (j.cpu_time || 0), 0);
      const top = (key) => jobs.filter(j => j[key] != null).sort((a, b) => b[key] - a[key]).slice(0, 5);
      const small = (t, key, fmt) => t.length ? '<table><tr><th>job</th><th>' + key + '</th><th>exit</th></tr>' + t.map(j => '<tr><td><a href="' + jobLink(j) + '">' + E(j.job_id) +
        '</a></td><td class="num">' + fmt(j) + '</td><td>' + stateText(j) + '</td></tr>').join('') + '</table>' : '<div class="muted">none recorded</div>';
      app.innerHTML = '<h2>Workflow ' + E(w.label || '') + ' <span class="muted">' + E(w.wf) + '</span></h2>' +
        '<table class="kv"><tr><td>State</td><td>' + E(w.state || '–') + '</td></tr><tr><td>Start</td><td>' + JSV.fmtTime(w.start || w.first) +
        '</td></tr><tr><td>Submit host, user</td><td>' + E(w.submit_host || '–') + ', ' + E(w.user || '–') + '</td></tr><tr><td>Jobs</td><td>' + w.jobs +
        ' (' + w.running + ' running, ' + w.failed + ' failed) · <a href="#/jobs?' + qs({ wf: w.wf }) + '">list them</a> · <a href="#/overview?' + qs({ by: 'xformation', wf: w.wf }) + '">by transformation</a></td></tr><tr><td>Total CPU time</td><td>' + JSV.fmtDur(cpu) + '</td></tr><tr><td>Span</td><td>' +
        JSV.fmtDur(t1 - t0) + '</td></tr></table><h3>Jobs in time</h3><div id="gantt"></div>' +
        '<div class="grid"><div><h3>Slowest jobs</h3>' + small(top('duration'), 'duration', j => JSV.fmtDur(j.duration)) + '</div>' +
        '<div><h3>Most memory-hungry jobs</h3>' + small(top('peak_mem'), 'peak memory', j => JSV.fmtBytes(j.peak_mem)) + '</div></div>' +
        '<h3>Stampede, transfer and payload events (' + d.events.length + ')</h3><table id="wfevents" class="events"><tr><th>time (' + E(JSV.tzName()) + ')</th><th>event</th><th>job / details (click to expand)</th></tr>' +
        d.events.slice(-500).map(e => '<tr><td class="t">' + JSV.fmtTime(e.ts, true) + '</td><td>' + E(e.event) + '</td><td>' + (e.job_id || e.dag_job_id ? E(e.job_id || e.dag_job_id) + ' ' : '') +
          JSV.eventCell(e, ['event', 'ts', 'xwf_id', 'wf_uuid', 'job_id']) + '</td></tr>').join('') + '</table>';
      gantt(document.getElementById('gantt'), jobs, t0, t1);
      return w.running > 0;
    };
    if (await load()) every(5000, load);
  }

  /* ---- the overview: aggregates over time ---- */
  async function overviewPage(params) {
    const by = params.get('by') || 'wf';
    const f = {};
    for (const k of ['q', 'wf', 'xformation', 'host', 'user', 'exe', 'state', 'since', 'until']) f[k] = params.get(k) || '';
    const d = await get('/api/aggregate?' + qs(Object.assign({ by, buckets: 120, top: 8 }, f)));
    const labels = { wf: 'workflow', xformation: 'transformation', host: 'host', exe: 'executable', user: 'user' };
    const filt = Object.entries(f).filter(e => e[1]).map(e => e[0] + '=' + (e[0] === 'since' || e[0] === 'until' ? JSV.fmtTime(+e[1]) : e[1])).join(', ');
    app.innerHTML = '<h2>Overview <span class="muted">' + d.jobs.toLocaleString('en') + ' jobs' + (filt ? ' where ' + E(filt) : '') + '</span></h2>' +
      '<div class="filters">group by <select id="by">' + Object.entries(labels).map(e => '<option value="' + e[0] + '">' + e[1] + '</option>').join('') +
      '</select><label>from <input id="o-since" type="datetime-local" value="' + toInput(f.since) + '"></label><label>to <input id="o-until" type="datetime-local" value="' + toInput(f.until) + '"></label>' +
      '<span class="muted">' + JSV.fmtTime(d.from, true).slice(0, 16) + ' to ' + JSV.fmtTime(d.to) + (d.recent ? ' (the last 14 days with jobs: set from/to for others)' : '') +
      '; buckets of ' + JSV.fmtDur(d.bucket_seconds) + '; the ' + Math.min(8, d.groups.length) + ' largest groups drawn, the rest summed</span></div>' +
      '<div class="grid" id="ocharts"></div><h3>Per ' + labels[by] + ' (' + d.groups.length + ')</h3><table id="ogroups"></table>';
    document.getElementById('by').value = by;
    const go = () => { location.hash = '#/overview?' + qs(Object.assign({}, f, { by: document.getElementById('by').value, since: fromInput(document.getElementById('o-since').value), until: fromInput(document.getElementById('o-until').value) })); };
    app.querySelectorAll('.filters select, .filters input').forEach(i => i.addEventListener('change', go));
    const cols = [['key', labels[by]], ['jobs', 'jobs'], ['running', 'running'], ['failed', 'failed'], ['stopped', 'stopped'], ['cpu_time', 'CPU time'],
      ['core_seconds_allocated', 'CPU time allocated'], ['cpu_efficiency', 'CPU eff.'], ['peak_mem_mean', 'mean peak memory'], ['peak_mem_max', 'max peak memory'], ['alloc_mem_mean', 'mean memory allocated']];
    const fmt = (k, v, g) => k === 'key' ? (by === 'wf' ? '<a href="#/wf/' + encodeURIComponent(v) + '">' + E(g.label || v) + '</a>' :
      '<a href="#/jobs?' + qs({ [by]: v }) + '">' + E(v) + '</a>') : k.startsWith('cpu_time') || k === 'core_seconds_allocated' ? JSV.fmtDur(v) :
      k === 'cpu_efficiency' ? pct(v) : k.indexOf('mem') >= 0 ? JSV.fmtBytes(v) : (v == null ? '–' : v.toLocaleString('en'));
    let sk = 'jobs', asc = false;
    const drawTable = () => {
      const gs = d.groups.slice().sort((a, b) => { const x = a[sk], y = b[sk]; const r = typeof x === 'string' ? x.localeCompare(y) : (x == null) - (y == null) || x - y; return asc ? r : -r; });
      const t = document.getElementById('ogroups');
      t.innerHTML = '<tr>' + cols.map(c => '<th data-sort="' + c[0] + '" class="' + (c[0] === sk ? 'sorted' + (asc ? ' asc' : '') : '') + '">' + c[1] + '</th>').join('') + '</tr>' +
        gs.slice(0, 1000).map(g => '<tr>' + cols.map(c => '<td' + (c[0] === 'key' ? '' : ' class="num"') + '>' + fmt(c[0], g[c[0]], g) + '</td>').join('') + '</tr>').join('');
      t.querySelectorAll('th').forEach(th => th.addEventListener('click', () => { asc = sk === th.dataset.sort ? !asc : th.dataset.sort === 'key'; sk = th.dataset.sort; drawTable(); }));
    };
    drawTable();
    const box = document.getElementById('ocharts'), W = Math.max(380, Math.min(640, (app.clientWidth || 1200) / 2 - 40));
    const xa = JSV.xAxis(false), group = { key: 'ov' };
    const label = s => s.key === '(all)' || s.key === '(other)' ? s.key : (by === 'wf' ? ((d.groups.find(g => g.key === s.key) || {}).label || s.key) : s.key);
    const chart = (title, unit, axis, series, stepped) => {
      const div = document.createElement('div');
      div.className = 'chart';
      box.appendChild(div);
      new uPlot({ title, width: W, height: 230, tzDate: JSV.tzDate(), cursor: { sync: { key: group.key } }, scales: { x: xa.scale },
        axes: [xa.axis, JSV.yAxis(unit, axis)],
        series: [{ value: xa.value }].concat(series.map((s, i) => ({ label: s[0], stroke: s[2] || ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'][i % 10],
          width: 1.5, dash: s[3], paths: stepped ? uPlot.paths.stepped({ align: 1 }) : undefined, value: (u, v) => unit === 'bytes' ? JSV.fmtBytes(v) : JSV.fmtNum(v) }))) },
      [d.ts].concat(series.map(s => s[1])), div);
    };
    const tl = d.timeline, all = tl.find(s => s.key === '(all)') || tl[tl.length - 1], groups = tl.filter(s => s !== all);
    chart('Jobs running, per ' + labels[by] + ' (mean over a bucket)', '', 'jobs', groups.map(s => [label(s), s.running]));
    chart('CPUs used and allocated, all jobs (mean over a bucket)', '', 'CPUs', [['used', all.cores_used, '#1f77b4'], ['allocated', all.cores_allocated, '#555', [6, 4]]]);
    chart('Memory held and allocated, all jobs (each job at its peak)', 'bytes', 'bytes', [['held', all.mem_used, '#1f77b4'], ['allocated', all.mem_allocated, '#555', [6, 4]]]);
    chart('Jobs failed or stopped, per ' + labels[by] + ' (per bucket)', '', 'jobs', groups.map(s => [label(s), s.failed]), true);
    window.jobscopeOverview = { groups: d.groups.length, charts: box.querySelectorAll('canvas').length, jobs: d.jobs };
  }

  /* ---- nodes ---- */
  async function nodesPage() {
    const d = await get('/api/nodes');
    app.innerHTML = '<h2>Nodes</h2><table><tr><th>host</th><th>jobs</th><th>running</th><th>last seen (' + E(JSV.tzName()) + ')</th></tr>' +
      d.nodes.map(n => '<tr><td><a href="#/node/' + encodeURIComponent(n.host) + '">' + E(n.host) + '</a></td><td class="num">' + n.jobs +
        '</td><td class="num">' + n.running + '</td><td>' + JSV.fmtTime(n.last, true) + '</td></tr>').join('') + '</table>';
  }

  async function nodePage(host) {
    const jobs = await get('/api/jobs?' + qs({ host, limit: 200 }));
    app.innerHTML = '<h2>Node ' + E(host) + '</h2><h3>Node metrics (last hour)</h3><div class="grid" id="nodecharts"><span class="muted">looking for node metrics…</span></div>' +
      '<h3>Jobs that ran here (' + jobs.total + ') <a class="muted" href="#/jobs?' + qs({ host }) + '">all of them</a></h3><table><tr><th>job</th><th>executable</th><th>start</th><th>duration</th><th>CPU eff.</th><th>peak memory</th><th>exit</th></tr>' +
      jobs.jobs.map(j => '<tr><td><a href="' + jobLink(j) + '">' + E(j.job_id) + '</a></td><td>' + E(base(j.exe)) + '</td><td>' + JSV.fmtTime(j.start, true) + '</td><td class="num">' +
        JSV.fmtDur(j.duration) + '</td><td class="num">' + pct(j.cpu_efficiency) + '</td><td class="num">' + JSV.fmtBytes(j.peak_mem) + '</td><td>' + stateText(j) + '</td></tr>').join('') + '</table>';
    const box = document.getElementById('nodecharts');
    let names = [];
    // the node collector's metrics, under Dragon's names (docs/serve-site.md), with their units
    const NODE = { cpu_percent: ['%', 'CPU % (100 = one CPU)'], load_average: ['', 'load (runnable tasks)'], used_RAM: ['bytes', 'bytes'],
      num_running_processes: ['', 'processes'], DeviceUtilization: ['%', 'GPU %'], DeviceMemoryUtilization: ['%', 'GPU memory %'], DevicePowerUsage: ['', 'milliwatts'] };
    try { const known = await get('/api/suggest?type=metrics&max=10000&q='); names = Object.keys(NODE).filter(n => known.includes(n)); } catch (e) { /* no store */ }
    if (!names.length) { box.innerHTML = '<span class="muted">no node metrics in the store (the node collector of jobscope serve: --node-interval)</span>'; return; }
    box.innerHTML = '';
    const group = { key: 'node' }, xa = JSV.xAxis(false);
    for (const m of names) {
      let res = [];
      try { res = await get('/api/query?' + qs({ start: '1h-ago', m: 'avg:' + m + '{host=' + host + '}' })); } catch (e) { continue; }
      if (!res.length) continue;
      const dps = Object.entries(res[0].dps).map(e => [+e[0], e[1]]).sort((a, b) => a[0] - b[0]);
      const div = document.createElement('div');
      div.className = 'chart';
      box.appendChild(div);
      const [unit, axis] = NODE[m];
      new uPlot({ title: m, width: 440, height: 200, tzDate: JSV.tzDate(), cursor: { sync: { key: group.key } }, scales: { x: xa.scale },
                  axes: [xa.axis, JSV.yAxis(unit, axis)], series: [{ value: xa.value }, { label: m, stroke: '#1f77b4', width: 1.5 }] }, [dps.map(p => p[0]), dps.map(p => p[1])], div);
    }
    if (!box.children.length) box.innerHTML = '<span class="muted">no node metrics for this host in the last hour</span>';
  }

  async function route() {
    if (timer) clearTimeout(timer);
    timer = null;
    page++;
    const h = location.hash.slice(1) || '/jobs';
    const [path, query] = h.split('?');
    const params = new URLSearchParams(query || '');
    const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
    document.querySelectorAll('header nav a').forEach(a => a.classList.toggle('active', a.getAttribute('href').slice(2).split('?')[0] === (parts[0] === 'job' ? 'jobs' : parts[0] === 'wf' ? 'workflows' : parts[0] === 'node' ? 'nodes' : parts[0] || 'jobs')));
    delete document.body.dataset.loaded;
    try {
      if (parts[0] === 'job' && parts[1]) await jobPage(parts[1], params);
      else if (parts[0] === 'workflows') await workflowsPage(params);
      else if (parts[0] === 'wf' && parts[1]) await workflowPage(parts[1]);
      else if (parts[0] === 'overview') await overviewPage(params);
      else if (parts[0] === 'nodes') await nodesPage();
      else if (parts[0] === 'node' && parts[1]) await nodePage(parts[1]);
      else await jobsPage(params);
    } catch (e) {
      app.innerHTML = '<div class="warn">' + E(e.message) + '</div>';
    }
    document.body.dataset.loaded = String(page);
  }
  window.addEventListener('hashchange', route);
  route();
})();
