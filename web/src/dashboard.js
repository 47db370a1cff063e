/* dashboard.js — the pages of `jobscope serve`'s dashboard (index.html),
 * drawn from the repository's API (docs/views.md): the jobs list (filters,
 * sorting), a job (charts.js, polled every second with ?since= while it
 * runs), workflows (a Gantt-like view, slowest and most memory-hungry jobs,
 * stampede and payload events), nodes (their jobs and node metrics from
 * the OpenTSDB API).  Routing is by the URL's hash: #/jobs?…, #/job/ID?wf=,
 * #/workflows, #/wf/ID, #/nodes, #/node/HOST. */
(function () {
  'use strict';
  const app = document.getElementById('app');
  const status = document.getElementById('status');
  const E = JSV.esc;
  let timer = null, page = 0;

  async function get(url) {
    const r = await fetch(url, { cache: 'no-store' });
    if (!r.ok) throw new Error(url + ': HTTP ' + r.status);
    return r.json();
  }
  function every(ms, fn) { timer = setTimeout(async function tick() { const me = page; await fn(); if (me === page) timer = setTimeout(tick, ms); }, ms); }
  const qs = o => Object.entries(o).filter(e => e[1] !== '' && e[1] != null).map(e => encodeURIComponent(e[0]) + '=' + encodeURIComponent(e[1])).join('&');
  const jobLink = j => '#/job/' + encodeURIComponent(j.job_id) + (j.wf ? '?wf=' + encodeURIComponent(j.wf) : '');
  const pct = v => v == null ? '–' : (100 * v).toFixed(1) + ' %';

  function jobRows(jobs) {
    return jobs.map(j => '<tr data-job="' + E(j.job_id) + '"><td><a href="' + jobLink(j) + '">' + E(j.job_id) + '</a></td><td>' + E(j.exe) +
      '</td><td><a href="#/node/' + encodeURIComponent(j.host || '') + '">' + E(j.host) + '</a></td><td>' + E(j.user || '') + '</td><td>' +
      (j.wf ? '<a href="#/wf/' + encodeURIComponent(j.wf) + '">' + E(j.wf.slice(0, 8)) + '</a>' : '') + '</td><td>' + JSV.fmtTime(j.start) +
      '</td><td class="num">' + JSV.fmtDur(j.duration) + '</td><td class="num">' + pct(j.cpu_efficiency) + '</td><td class="num">' +
      JSV.fmtBytes(j.peak_mem) + '</td><td>' + (j.state === 'running' ? '<span class="running">running</span>' :
        JSV.exitText({ finished: true, exit_code: j.exit_code, signal_name: j.signal_name, exit_type: j.exit_type })) +
      '</td><td class="num">' + ((j.warnings || []).length || '') + '</td></tr>').join('');
  }
  const JOB_HEAD = '<tr><th>job</th><th>executable</th><th>host</th><th>user</th><th>workflow</th><th data-sort="start" class="sortable">start</th>' +
    '<th data-sort="duration" class="sortable">duration</th><th data-sort="cpu_efficiency" class="sortable">CPU eff.</th>' +
    '<th data-sort="peak_mem" class="sortable">peak memory</th><th>state / exit</th><th>warn.</th></tr>';

  /* ---- jobs ---- */
  async function jobsPage(params) {
    const f = { wf: params.get('wf') || '', host: params.get('host') || '', user: params.get('user') || '',
                exe: params.get('exe') || '', state: params.get('state') || '', sort: params.get('sort') || 'start',
                order: params.get('order') || 'desc' };
    app.innerHTML = '<h2>Jobs</h2><div class="filters">' +
      ['wf', 'host', 'user', 'exe'].map(k => '<input id="f-' + k + '" placeholder="' + (k === 'wf' ? 'workflow' : k === 'exe' ? 'executable' : k) + '" value="' + E(f[k]) + '">').join('') +
      '<select id="f-state"><option value="">any state</option><option>running</option><option>done</option><option>failed</option></select>' +
      '</div><div class="muted" id="count"></div><table id="jobs">' + JOB_HEAD + '</table>';
    document.getElementById('f-state').value = f.state;
    const apply = () => {
      const n = Object.assign({}, f);
      for (const k of ['wf', 'host', 'user', 'exe', 'state']) n[k] = document.getElementById('f-' + k).value.trim();
      location.hash = '#/jobs?' + qs(n);
    };
    app.querySelectorAll('.filters input').forEach(i => i.addEventListener('change', apply));
    document.getElementById('f-state').addEventListener('change', apply);
    app.querySelectorAll('th[data-sort]').forEach(th => th.addEventListener('click', () => {
      const n = Object.assign({}, f, { sort: th.dataset.sort, order: f.sort === th.dataset.sort && f.order === 'desc' ? 'asc' : 'desc' });
      location.hash = '#/jobs?' + qs(n);
    }));
    const load = async () => {
      const d = await get('/api/jobs?' + qs(Object.assign({ limit: 500 }, f)));
      document.getElementById('jobs').innerHTML = JOB_HEAD + jobRows(d.jobs);
      document.getElementById('count').textContent = d.total + ' job(s)' + (d.total > d.jobs.length ? ', first ' + d.jobs.length + ' shown' : '') +
        ' — sorted by ' + f.sort + ' (' + f.order + '); click a column to sort';
      app.querySelectorAll('th[data-sort]').forEach(th => th.addEventListener('click', () => {
        const n = Object.assign({}, f, { sort: th.dataset.sort, order: f.sort === th.dataset.sort && f.order === 'desc' ? 'asc' : 'desc' });
        location.hash = '#/jobs?' + qs(n);
      }));
    };
    await load();
    every(2000, load);
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
    for (const k of ['summary', 'warnings', 'end', 'start', 'tags', 'state', 'record']) if (k in d) job[k] = d[k];
    if (d.summary_update) job.summary = Object.assign({}, job.summary, d.summary_update);
  }

  async function jobPage(id, params) {
    const wf = params.get('wf') || '';
    const url = '/api/jobs/' + encodeURIComponent(id) + (wf ? '?wf=' + encodeURIComponent(wf) + '&' : '?');
    const job = await get(url);
    app.innerHTML = '<h2>Job ' + E(id) + ' <span class="muted" id="jstate"></span></h2>' +
      (job.summary.wf ? '<div class="jobnav">workflow <a href="#/wf/' + encodeURIComponent(job.summary.wf) + '">' + E(job.summary.wf) + '</a></div>' : '') +
      '<div id="job"></div>';
    const view = new JSV.JobView(document.getElementById('job'), job);
    window.jobscopeView = view;
    const st = () => { document.getElementById('jstate').textContent = job.state === 'running' ? '— running, updated every second' : '— ' + job.state; };
    st();
    if (job.state !== 'running') return;
    every(1000, async () => {
      const ts = job.series.ts || [];
      const d = await get(url + 'since=' + (ts.length ? ts[ts.length - 1] : 0));
      merge(job, d);
      if (job.state !== 'running') {         // ended: the full record, warnings included
        clearTimeout(timer); timer = null; page++;
        Object.assign(job, await get(url));
      }
      view.update(job);
      st();
    });
  }

  /* ---- workflows ---- */
  async function workflowsPage() {
    const d = await get('/api/workflows');
    app.innerHTML = '<h2>Workflows</h2><table><tr><th>workflow</th><th>label</th><th>state</th><th>start</th><th>jobs</th><th>running</th><th>failed</th></tr>' +
      d.workflows.map(w => '<tr><td><a href="#/wf/' + encodeURIComponent(w.wf) + '">' + E(w.wf) + '</a></td><td>' + E(w.label) + '</td><td>' + E(w.state || '') +
        '</td><td>' + JSV.fmtTime(w.start || w.first) + '</td><td class="num">' + w.jobs + '</td><td class="num">' + w.running + '</td><td class="num">' + w.failed + '</td></tr>').join('') + '</table>';
  }

  function gantt(jobs, t0, t1) {
    const W = Math.max(600, (app.clientWidth || 1200) - 260), row = 16;
    const span = Math.max(1e-3, t1 - t0);
    const color = j => j.state === 'running' ? '#1f77b4' : (j.exit_code === 0 ? '#2ca02c' : j.state === 'done' ? '#d62728' : '#999');
    let html = '<div class="gantt" style="height:' + (jobs.length * row + 24) + 'px;width:' + (W + 240) + 'px">';
    jobs.forEach((j, i) => {
      const s = j.start != null ? j.start : t0, e = j.end != null ? j.end : (j.last != null ? j.last : s);
      const x = 230 + (s - t0) / span * W, w = Math.max(2, (e - s) / span * W);
      html += '<a class="lbl" href="' + jobLink(j) + '" style="left:4px;top:' + (i * row + 2) + 'px">' + E(j.job_id.slice(0, 34)) + '</a>' +
        '<div class="bar" data-job="' + E(j.job_id) + '" title="' + E(j.job_id + ': ' + JSV.fmtDur(e - s) + ', exit ' + (j.exit_code == null ? '?' : j.exit_code)) +
        '" style="left:' + x.toFixed(1) + 'px;width:' + w.toFixed(1) + 'px;top:' + (i * row + 3) + 'px;background:' + color(j) + '"></div>';
    });
    return html + '<div class="lbl muted" style="left:230px;bottom:2px">' + JSV.fmtTime(t0) + '</div><div class="lbl muted" style="right:6px;bottom:2px">' +
      JSV.fmtTime(t1) + ' (' + JSV.fmtDur(span) + ')</div></div><div class="muted">green: exit 0 · red: failed · blue: running · grey: unknown</div>';
  }

  async function workflowPage(id) {
    const load = async () => {
      const d = await get('/api/workflows/' + encodeURIComponent(id));
      const w = d.workflow, jobs = d.jobs;
      const times = jobs.flatMap(j => [j.start, j.end, j.last]).concat([w.start, w.end, w.first, w.last]).filter(v => v != null);
      const t0 = Math.min.apply(null, times), t1 = Math.max.apply(null, times);
      const cpu = jobs.reduce((a, j) => a + (j.cpu_time || 0), 0);
      const top = (key, n) => jobs.filter(j => j[key] != null).sort((a, b) => b[key] - a[key]).slice(0, n);
      const topTable = (key) => { const t = top(key, 5); return t.length ? '<table>' + JOB_HEAD + jobRows(t) + '</table>' : '<div class="muted">none recorded</div>'; };
      app.innerHTML = '<h2>Workflow ' + E(w.label || '') + ' <span class="muted">' + E(w.wf) + '</span></h2>' +
        '<table class="kv"><tr><td>State</td><td>' + E(w.state || '–') + '</td></tr><tr><td>Start</td><td>' + JSV.fmtTime(w.start || w.first) +
        '</td></tr><tr><td>Submit host, user</td><td>' + E(w.submit_host || '–') + ', ' + E(w.user || '–') + '</td></tr><tr><td>Jobs</td><td>' + w.jobs +
        ' (' + w.running + ' running, ' + w.failed + ' failed)</td></tr><tr><td>Total CPU time</td><td>' + JSV.fmtDur(cpu) + '</td></tr><tr><td>Span</td><td>' +
        JSV.fmtDur(t1 - t0) + '</td></tr></table><h3>Jobs in time</h3>' + gantt(jobs, t0, t1) +
        '<div class="grid"><div><h3>Slowest jobs</h3>' + topTable('duration') + '</div>' +
        '<div><h3>Most memory-hungry jobs</h3>' + topTable('peak_mem') + '</div></div>' +
        '<h3>Stampede, transfer and payload events (' + d.events.length + ')</h3><table id="wfevents"><tr><th>time</th><th>event</th><th>job</th><th>details</th></tr>' +
        d.events.slice(-500).map(e => {
          const x = Object.assign({}, e);
          for (const k of ['event', 'ts', 'xwf_id', 'wf_uuid', 'job_id']) delete x[k];
          return '<tr><td class="t">' + JSV.fmtTime(e.ts) + '</td><td>' + E(e.event) + '</td><td>' + E(e.job_id || e.dag_job_id || '') + '</td><td><code>' + E(JSON.stringify(x).slice(0, 240)) + '</code></td></tr>';
        }).join('') + '</table>';
      return w.running > 0;
    };
    if (await load()) every(2000, load);
  }

  /* ---- nodes ---- */
  async function nodesPage() {
    const d = await get('/api/nodes');
    app.innerHTML = '<h2>Nodes</h2><table><tr><th>host</th><th>jobs</th><th>running</th><th>last seen</th></tr>' +
      d.nodes.map(n => '<tr><td><a href="#/node/' + encodeURIComponent(n.host) + '">' + E(n.host) + '</a></td><td class="num">' + n.jobs +
        '</td><td class="num">' + n.running + '</td><td>' + JSV.fmtTime(n.last) + '</td></tr>').join('') + '</table>';
  }

  async function nodePage(host) {
    const jobs = await get('/api/jobs?' + qs({ host, limit: 500 }));
    app.innerHTML = '<h2>Node ' + E(host) + '</h2><h3>Node metrics (last hour)</h3><div class="grid" id="nodecharts"><span class="muted">looking for node metrics…</span></div>' +
      '<h3>Jobs that ran here (' + jobs.total + ')</h3><table>' + JOB_HEAD + jobRows(jobs.jobs) + '</table>';
    const box = document.getElementById('nodecharts');
    let names = [];
    // the node collector's metrics, under Dragon's names (docs/serve-site.md)
    const NODE = ['cpu_percent', 'load_average', 'used_RAM', 'num_running_processes', 'DeviceUtilization',
                  'DeviceMemoryUtilization', 'DevicePowerUsage'];
    try { const known = await get('/api/suggest?type=metrics&max=10000&q='); names = NODE.filter(n => known.includes(n)); } catch (e) { /* no store */ }
    if (!names.length) { box.innerHTML = '<span class="muted">no node metrics in the store (the node collector of jobscope serve: --node-interval)</span>'; return; }
    box.innerHTML = '';
    const group = { key: 'node', plots: [] };
    for (const m of names) {
      let res = [];
      try { res = await get('/api/query?' + qs({ start: '1h-ago', m: 'avg:' + m + '{host=' + host + '}' })); } catch (e) { continue; }
      if (!res.length) continue;
      const dps = Object.entries(res[0].dps).map(e => [+e[0], e[1]]).sort((a, b) => a[0] - b[0]);
      const div = document.createElement('div');
      div.className = 'chart';
      box.appendChild(div);
      new uPlot({ title: m, width: 420, height: 180, cursor: { sync: { key: group.key } }, scales: { x: { time: true } },
                  series: [{}, { label: m, stroke: '#1f77b4', width: 1.5 }] }, [dps.map(p => p[0]), dps.map(p => p[1])], div);
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
    status.textContent = '';
    try {
      if (parts[0] === 'job' && parts[1]) await jobPage(parts[1], params);
      else if (parts[0] === 'workflows') await workflowsPage();
      else if (parts[0] === 'wf' && parts[1]) await workflowPage(parts[1]);
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
