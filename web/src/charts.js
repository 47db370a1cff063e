/* charts.js — one job's page, shared by the dashboard of `jobscope serve`
 * (dashboard.js) and the self-contained reports of `jobscope report`
 * (report.js): characteristics as in Panorama's explorer, warnings, uPlot
 * charts (CPU, memory, I/O rates from the cumulative counters, processes,
 * GPU, every custom metric) with a shared cursor and synchronised zoom, the
 * end-of-job record and the other events.  The job object is what
 * src/report/jobdata.c's jobdata_json() produces.  No network access. */
(function () {
  'use strict';
  const JSV = window.JSV = {};

  JSV.esc = s => String(s == null ? '' : s).replace(/[&<>"']/g,
    c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
  JSV.fmtBytes = v => {
    if (v == null || !isFinite(v)) return '–';
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
    let k = 0, a = Math.abs(v);
    while (a >= 1024 && k < 5) { a /= 1024; v /= 1024; k++; }
    return (k && Math.abs(v) < 100 ? v.toFixed(1) : v.toFixed(0)) + ' ' + u[k];
  };
  JSV.fmtDur = s => {
    if (s == null || !isFinite(s)) return '–';
    if (s < 60) return s.toFixed(s < 10 ? 2 : 1) + ' s';
    const h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, x = Math.floor(s % 60);
    return (h ? h + 'h ' : '') + m + 'm ' + x + 's';
  };
  JSV.fmtTime = ts => (ts == null || !isFinite(ts)) ? '–' :
    new Date(ts * 1000).toISOString().replace('T', ' ').slice(0, 19) + ' UTC';
  JSV.fmtPct = v => (v == null || !isFinite(v)) ? '–' : v.toFixed(1) + ' %';
  JSV.fmtNum = v => (v == null || !isFinite(v)) ? '–' :
    (Math.abs(v) >= 1000 || Number.isInteger(v) ? Math.round(v).toLocaleString('en') : +v.toPrecision(4) + '');
  const fmtFor = unit => unit === 'bytes' ? JSV.fmtBytes : unit === 'bytes/s' ? (v => JSV.fmtBytes(v) + '/s')
    : unit === '%' ? JSV.fmtPct : JSV.fmtNum;

  JSV.exitText = s => {
    if (!s.finished) return '<span class="running">running</span>';
    if (s.signal_name) return '<span class="bad">' + JSV.esc(s.signal_name) + '</span>';
    if (s.exit_type === 'limit') return '<span class="bad">stopped by a limit</span>';
    if (s.exit_code == null) return JSV.esc(s.exit_type || '–');
    return '<span class="' + (s.exit_code ? 'bad' : 'ok') + '">' + s.exit_code + '</span>';
  };

  const CHARTS = [
    { id: 'cpu', title: 'CPU % (100 = one core)', unit: '%', cols: [['cpu_percent', 'CPU %']] },
    { id: 'mem', title: 'Memory', unit: 'bytes', cols: [['rss', 'RSS'], ['vm', 'virtual'], ['swap', 'swap'], ['cg_memory', 'cgroup']] },
    { id: 'io', title: 'I/O rates', unit: 'bytes/s', cols: [['rchar_rate', 'read'], ['wchar_rate', 'written'], ['read_rate', 'storage read'], ['write_rate', 'storage write']] },
    { id: 'procs', title: 'Processes and threads', unit: '', cols: [['procs', 'processes'], ['threads', 'threads']] },
    { id: 'iowait', title: 'I/O wait (seconds per second)', unit: '', cols: [['iowait_frac', 'I/O wait']] },
    { id: 'gpu', title: 'GPU utilisation (100 = one GPU)', unit: '%', cols: [['gpu_util', 'GPU %']] },
    { id: 'gpumem', title: 'GPU memory', unit: 'bytes', cols: [['gpu_mem', 'GPU memory']] },
  ];
  const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b'];
  const hasData = a => Array.isArray(a) && a.some(v => v != null);

  function limitsText(job) {
    const out = [], s = job.summary, end = job.end || {};
    const max = end.limits && end.limits.max;
    if (max) for (const k in max) out.push(k + '=' + (k === 'memory' || k === 'rss' || k === 'disk-write' ? JSV.fmtBytes(max[k]) : max[k]));
    if (end.cgroup && end.cgroup.memory_max) out.push('cgroup memory.max=' + JSV.fmtBytes(end.cgroup.memory_max));
    if (s.req_mem != null && !max) out.push('memory request ' + JSV.fmtBytes(s.req_mem));
    if (s.req_cpus != null) out.push('cores ' + s.req_cpus);
    if (s.req_wall != null) out.push('wall ' + JSV.fmtDur(s.req_wall));
    const rl = job.start && job.start.rlimits;
    if (rl) for (const k of ['as', 'rss', 'cpu', 'nproc', 'nofile'])
      if (rl[k] && rl[k].soft != null) out.push('RLIMIT_' + k.toUpperCase() + '=' + rl[k].soft);
    return out.length ? JSV.esc(out.join(', ')) : '–';
  }

  JSV.characteristics = function (job) {
    const s = job.summary;
    const io = 'read ' + JSV.fmtBytes(s.rchar) + ', written ' + JSV.fmtBytes(s.wchar) +
      ' (storage: ' + JSV.fmtBytes(s.read_bytes) + ' / ' + JSV.fmtBytes(s.write_bytes) + ')';
    const gpu = s.gpu_devices ? s.gpu_devices + ' device(s), peak ' + JSV.fmtBytes(s.gpu_peak_mem) +
      ', mean ' + JSV.fmtPct(s.gpu_util_mean) : '–';
    const rows = [
      ['Job ID', JSV.esc(s.job_id)], ['Executable', JSV.esc(s.exe)], ['Command', JSV.esc(s.cmd)],
      ['Host', JSV.esc(s.host)], ['Type', JSV.esc(s.type)], ['Workflow', JSV.esc(s.wf || '–') + (s.wf_label ? ' (' + JSV.esc(s.wf_label) + ')' : '')],
      ['Transformation', JSV.esc(s.xformation || '–')], ['Start', JSV.fmtTime(s.start)],
      ['Duration', JSV.fmtDur(s.duration)], ['CPU time', JSV.fmtDur(s.cpu_time)],
      ['CPU efficiency', s.cpu_efficiency == null ? '–' : (100 * s.cpu_efficiency).toFixed(1) + ' % of ' + s.cores + ' core(s)'],
      ['Peak memory', JSV.fmtBytes(s.peak_mem)], ['I/O', io], ['GPU', gpu],
      ['Exit', JSV.exitText(s)], ['Limits', limitsText(job)], ['Samples', s.samples],
    ];
    if (job.tags) rows.push(['Tags', JSV.esc(Object.entries(job.tags).map(e => e.join('=')).join(', '))]);
    return '<table class="kv">' + rows.map(r => '<tr><td>' + r[0] + '</td><td>' + r[1] + '</td></tr>').join('') + '</table>';
  };

  JSV.warnings = job => (job.warnings || []).map(w => '<div class="warn">⚠ ' + JSV.esc(w.message) +
    (w.from ? ' <span class="muted">(' + JSV.fmtTime(w.from) + ' – ' + JSV.fmtTime(w.to) + ')</span>' : '') + '</div>').join('');

  function plotOpts(title, unit, labels, width, group) {
    const fmt = fmtFor(unit);
    return {
      title, width, height: 210,
      cursor: { sync: { key: group.key, setSeries: true } },
      scales: { x: { time: true } },
      legend: { live: true },
      series: [{ value: (u, v) => v == null ? '–' : JSV.fmtTime(v).slice(11) }].concat(labels.map((l, i) => ({
        label: l, stroke: COLORS[i % COLORS.length], width: 1.5, value: (u, v) => fmt(v), spanGaps: true,
      }))),
      axes: [{}, { size: 88, values: (u, vals) => vals.map(fmt) }],
      hooks: {
        setSelect: [u => { if (u.select.width > 0) group.userZoom = true; }],
        setScale: [(u, key) => {       // zoom one chart: zoom them all
          if (key !== 'x' || group.syncing) return;
          group.syncing = true;
          for (const o of group.plots) if (o !== u) o.setScale('x', { min: u.scales.x.min, max: u.scales.x.max });
          group.syncing = false;
        }],
      },
    };
  }

  let groupSeq = 0;
  /* A job view in `root`; update(job) refreshes it in place (live pages). */
  JSV.JobView = function (root, job, opts) {
    opts = opts || {};
    const group = { key: 'job' + (++groupSeq), plots: [], syncing: false };
    const width = opts.width || Math.max(360, Math.min(620, (root.clientWidth || 1200) / 2 - 24));
    root.innerHTML = '<div class="jv-warn"></div><div class="jv-chars"></div><h3>Time series</h3>' +
      '<div class="muted">Drag to zoom (all charts follow), double-click to reset.</div>' +
      '<div class="grid jv-charts"></div><div class="jv-extra-h"></div><div class="grid jv-extra"></div>' +
      '<div class="jv-events"></div><details class="jv-end"><summary>end-of-job record</summary><pre></pre></details>';
    const q = sel => root.querySelector(sel);
    const charts = {};
    this.group = group;
    this.plots = group.plots;

    function ensure(id, title, unit, labels, parent) {
      if (charts[id]) return charts[id];
      const div = document.createElement('div');
      div.className = 'chart';
      div.dataset.chart = id;
      parent.appendChild(div);
      div.addEventListener('dblclick', () => { group.userZoom = false; });
      const data = [[]].concat(labels.map(() => []));
      const u = new uPlot(plotOpts(title, unit, labels, width, group), data, div);
      group.plots.push(u);
      return (charts[id] = u);
    }

    this.update = function (j) {
      job = j;
      q('.jv-warn').innerHTML = JSV.warnings(j);
      q('.jv-chars').innerHTML = JSV.characteristics(j);
      const S = j.series || {};
      for (const c of CHARTS) {
        const cols = c.cols.filter(k => hasData(S[k[0]]));
        if (!cols.length) continue;
        const u = ensure(c.id, c.title, c.unit, cols.map(k => k[1]), q('.jv-charts'));
        if (u.series.length - 1 !== cols.length) continue;
        u.setData([S.ts].concat(cols.map(k => S[k[0]])), !group.userZoom);
      }
      const extra = j.extra || [];
      if (extra.length) q('.jv-extra-h').innerHTML = '<h3>Custom metrics and devices</h3>';
      extra.forEach(e => {
        const unit = e.unit === 'bytes' ? 'bytes' : e.unit === '%' ? '%' : '';
        const u = ensure('x:' + e.name, e.name + (e.unit && unit === '' ? ' (' + e.unit + ')' : ''), unit, [e.name], q('.jv-extra'));
        u.setData([e.ts, e.val], !group.userZoom);
      });
      const evs = j.events || [];
      q('.jv-events').innerHTML = evs.length ? '<h3>Events (' + evs.length + (j.events_dropped ? ', ' + j.events_dropped + ' more not kept' : '') +
        ')</h3><table><tr><th>time</th><th>event</th><th>details</th></tr>' + evs.slice(0, 500).map(e => {
          const d = Object.assign({}, e);
          for (const k of ['event', 'ts', 'seq', 'hostname', 'site', 'wf_uuid', 'wf_label', 'dag_job_id', 'condor_job_id', 'xformation', 'task_id', 'rank', 'job_id', 'tags']) delete d[k];
          return '<tr><td class="t">' + JSV.fmtTime(e.ts) + '</td><td>' + JSV.esc(e.event || e.monitoring_event || e.Type) + '</td><td><code>' +
            JSV.esc(JSON.stringify(d).slice(0, 300)) + '</code></td></tr>';
        }).join('') + '</table>' : '';
      q('.jv-end pre').textContent = j.end ? JSON.stringify(j.end, null, 1) : '(the job has not ended, or its end-of-job record is missing)';
    };
    this.update(job);
  };
})();
