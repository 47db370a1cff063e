/* charts.js — one job's page, shared by the dashboard of `jobscope serve`
 * (dashboard.js) and the self-contained reports of `jobscope report`
 * (report.js): the assessment first (utilization bars against the
 * allocation, notes, the request to make next time, as jobstats shows
 * them), warnings, characteristics as in Panorama's explorer, uPlot charts
 * (CPU, memory, I/O rates from the cumulative counters, processes, GPU,
 * every custom metric) with the allocation drawn as a line, a shared cursor
 * and synchronised zoom, the other events (raw JSON collapsed) and the
 * end-of-job record.  Times are shown in one zone, UTC or the browser's,
 * the user's choice (JSV.tz), labelled everywhere; charts show wall-clock
 * time or the time since the job started.  The job object is what
 * src/report/jobdata_json.c produces.  No network access. */
(function () {
  'use strict';
  const JSV = window.JSV = {};

  /* ---- preferences (kept in localStorage when the page may) ---- */
  const pref = (k, d) => { try { return localStorage.getItem('jobscope.' + k) || d; } catch (e) { return d; } };
  const setPref = (k, v) => { try { localStorage.setItem('jobscope.' + k, v); } catch (e) { /* file:// may refuse */ } };
  JSV.tz = () => pref('tz', 'local');
  JSV.setTz = v => { setPref('tz', v); document.dispatchEvent(new Event('jobscope-tz')); };
  JSV.xmode = () => pref('x', 'clock');
  JSV.setXmode = v => setPref('x', v);
  const localZone = (() => { try { return Intl.DateTimeFormat().resolvedOptions().timeZone || 'local time'; } catch (e) { return 'local time'; } })();
  JSV.tzName = () => JSV.tz() === 'utc' ? 'UTC' : localZone;

  JSV.esc = s => String(s == null ? '' : s).replace(/[&<>"']/g,
    c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
  JSV.fmtBytes = v => {
    if (v == null || !isFinite(v)) return '–';
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
    let k = 0, a = Math.abs(v);
    while (a >= 1024 && k < 5) { a /= 1024; v /= 1024; k++; }
    return (k && Math.abs(v) < 100 ? +v.toFixed(1) : v.toFixed(0)) + ' ' + u[k];
  };
  JSV.fmtDur = s => {
    if (s == null || !isFinite(s)) return '–';
    if (s < 60) return s.toFixed(s < 10 ? 2 : 1) + ' s';
    const d = Math.floor(s / 86400), h = Math.floor(s / 3600) % 24, m = Math.floor(s / 60) % 60, x = Math.floor(s % 60);
    return (d ? d + 'd ' : '') + (d || h ? h + 'h ' : '') + m + 'm ' + x + 's';
  };
  const pad = n => String(n).padStart(2, '0');
  /* "2024-05-01 12:00:00 UTC" in the chosen zone, the zone always named */
  JSV.fmtTime = (ts, short) => {
    if (ts == null || !isFinite(ts)) return '–';
    const d = new Date(ts * 1000);
    let s;
    if (JSV.tz() === 'utc') s = d.toISOString().replace('T', ' ').slice(0, 19);
    else s = d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + ' ' + pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
    return short ? s : s + ' ' + JSV.tzName();
  };
  JSV.fmtPct = v => (v == null || !isFinite(v)) ? '–' : v.toFixed(1) + ' %';
  JSV.fmtNum = v => (v == null || !isFinite(v)) ? '–' :
    (Math.abs(v) >= 1000 || Number.isInteger(v) ? Math.round(v).toLocaleString('en') : +v.toPrecision(4) + '');
  const fmtFor = unit => unit === 'bytes' ? JSV.fmtBytes : unit === 'bytes/s' ? (v => JSV.fmtBytes(v) + '/s')
    : unit === '%' ? JSV.fmtPct : JSV.fmtNum;

  /* Tick steps a reader can add up: binary sizes, clock durations. */
  const BYTE_INCRS = [];
  for (let k = 0; k < 6; k++) for (const m of [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]) BYTE_INCRS.push(m * Math.pow(1024, k));
  const DUR_INCRS = [0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800];
  const NUM_INCRS = [];
  for (let e = -3; e < 16; e++) for (const m of [1, 2, 5]) NUM_INCRS.push(+(m * Math.pow(10, e)).toPrecision(3));
  const fmtElapsed = s => {
    if (s == null || !isFinite(s)) return '–';
    const neg = s < 0; s = Math.abs(s);
    if (s < 60 && s % 1) return (neg ? '-' : '') + +s.toFixed(1) + 's';
    const h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, x = Math.floor(s % 60);
    return (neg ? '-' : '') + (h ? h + ':' + pad(m) + ':' + pad(x) : m + ':' + pad(x));
  };
  JSV.fmtElapsed = fmtElapsed;
  /* time ticks in 24-hour clock in the chosen zone; the date under the
   * first tick and wherever the day changes */
  const timeValues = (u, splits, ax, space, incr) => {
    let prev = null;
    return splits.map(t => {
      const s = JSV.fmtTime(t, true), date = s.slice(0, 10);
      const frac = incr < 1 ? '.' + String(Math.round((t % 1) * 10) % 10) : '';
      const time = incr >= 86400 ? '' : incr >= 60 ? s.slice(11, 16) : s.slice(11, 19) + frac;
      const out = date !== prev ? (time ? time + '\n' + date : date) : time;
      prev = date;
      return out;
    });
  };
  JSV.timeValues = timeValues;
  /* uPlot options for the x axis in the chosen mode and zone */
  JSV.xAxis = (elapsed) => elapsed
    ? { scale: { time: false }, axis: { label: 'time since the job started (h:mm:ss)', incrs: DUR_INCRS, values: (u, v) => v.map(fmtElapsed), size: 40 },
        value: (u, v) => v == null ? '–' : '+' + fmtElapsed(v) }
    : { scale: { time: true }, axis: { label: 'time (' + JSV.tzName() + ')', size: 48, values: timeValues },
        value: (u, v) => v == null ? '–' : JSV.fmtTime(v, true).slice(11) };
  JSV.tzDate = () => JSV.tz() === 'utc' ? (ts => uPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC')) : undefined;
  JSV.yAxis = (unit, label) => ({
    label, size: 72, values: (u, vals) => vals.map(fmtFor(unit)),
    incrs: unit === 'bytes' || unit === 'bytes/s' ? BYTE_INCRS : NUM_INCRS,
  });

  JSV.exitText = s => {
    if (!s.finished) return '<span class="running">running</span>';
    if (s.stopped_by === 'limit') return '<span class="bad">stopped by --limit ' + JSV.esc(s.stop_limit || '') + '</span>';
    if (s.stopped_by === 'oom_kill') return '<span class="bad">out of memory (OOM killer)</span>';
    if (s.signal_name) return '<span class="bad">' + JSV.esc(s.signal_name) + '</span>';
    if (s.exit_type === 'limit') return '<span class="bad">stopped by a limit</span>';
    if (s.exit_code == null) return JSV.esc(s.exit_type || '–');
    return '<span class="' + (s.exit_code ? 'bad' : 'ok') + '">' + s.exit_code + '</span>';
  };

  const CHARTS = [
    { id: 'cpu', title: 'CPU', unit: '%', axis: 'CPU % (100 = one CPU)', cols: [['cpu_percent', 'CPU %']], alloc: 'cpu' },
    { id: 'mem', title: 'Memory', unit: 'bytes', axis: 'bytes', cols: [['rss', 'RSS (the job\'s own)'], ['cg_memory', 'cgroup (incl. page cache)'], ['vm', 'virtual'], ['swap', 'swap']], alloc: 'mem' },
    { id: 'io', title: 'I/O rates', unit: 'bytes/s', axis: 'bytes per second', cols: [['rchar_rate', 'read'], ['wchar_rate', 'written'], ['read_rate', 'storage read'], ['write_rate', 'storage write']] },
    { id: 'procs', title: 'Processes and threads', unit: '', axis: 'count', cols: [['procs', 'processes'], ['threads', 'threads']] },
    { id: 'iowait', title: 'I/O wait', unit: '', axis: 'seconds waited per second', cols: [['iowait_frac', 'I/O wait']] },
    { id: 'gpu', title: 'GPU utilisation', unit: '%', axis: 'GPU % (100 = one GPU)', cols: [['gpu_util', 'GPU %']], alloc: 'gpu' },
    { id: 'gpumem', title: 'GPU memory', unit: 'bytes', axis: 'bytes', cols: [['gpu_mem', 'GPU memory']] },
  ];
  const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b'];
  const hasData = a => Array.isArray(a) && a.some(v => v != null);

  /* The allocation's line on a chart: [value, label] or null. */
  function allocLine(job, kind) {
    const a = (job.assessment || {}).allocation || {}, s = job.summary || {};
    if (kind === 'cpu' && a.cpus > 0) return [a.cpus * 100, 'allocated: ' + a.cpus + ' CPU' + (a.cpus === 1 ? '' : 's') + ' (' + (a.cpus_from || '?') + ')'];
    if (kind === 'mem' && a.mem > 0) return [a.mem, 'allocated: ' + JSV.fmtBytes(a.mem) + ' (' + (a.mem_from || '?') + ')'];
    if (kind === 'mem' && s.req_mem > 0) return [s.req_mem, 'limit: ' + JSV.fmtBytes(s.req_mem)];
    if (kind === 'gpu' && a.gpus > 0) return [a.gpus * 100, 'allocated: ' + a.gpus + ' GPU' + (a.gpus === 1 ? '' : 's')];
    return null;
  }

  function limitsText(job) {
    const out = [], s = job.summary, end = job.end || {};
    const max = end.limits && end.limits.max;
    if (max) for (const k in max) out.push('--limit ' + k + '=' + (k === 'memory' || k === 'rss' || k === 'disk-write' ? JSV.fmtBytes(max[k]) : max[k]));
    if (end.cgroup && end.cgroup.memory_max) out.push('cgroup memory.max=' + JSV.fmtBytes(end.cgroup.memory_max));
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
    const mem = JSV.fmtBytes(s.peak_mem) + ' <span class="muted">the job\'s own, page cache excluded</span>' +
      (s.cg_peak_mem > 1.1 * s.peak_mem ? '; cgroup peak ' + JSV.fmtBytes(s.cg_peak_mem) + ' <span class="muted">(includes reclaimable page cache)</span>' : '');
    const alloc = (s.cores != null ? s.cores + ' CPU' + (s.cores === 1 ? '' : 's') + ' <span class="muted">(' + JSV.esc(s.cores_from) + ')</span>' : '–') +
      (s.alloc_mem != null ? ', ' + JSV.fmtBytes(s.alloc_mem) + ' <span class="muted">(' + JSV.esc(s.alloc_mem_from) + ')</span>' : ', memory: none recorded') +
      (s.alloc_gpus != null ? ', ' + s.alloc_gpus + ' GPU(s) <span class="muted">(' + JSV.esc(s.alloc_gpus_from) + ')</span>' : '');
    const rows = [
      ['Job ID', JSV.esc(s.job_id) + (s.batch_id && s.batch_id !== s.job_id ? ' <span class="muted">(' + JSV.esc(s.batch_system) + ' ' + JSV.esc(s.batch_id) + ')</span>' : '')],
      ['Executable', JSV.esc(s.exe)], ['Command', '<span class="wrap">' + JSV.esc(s.cmd) + '</span>'],
      ['Host', JSV.esc(s.host) + (s.nodes > 1 ? ' <span class="muted">(+' + (s.nodes - 1) + ' node' + (s.nodes > 2 ? 's' : '') + ': below)</span>' : '')], ['Type', JSV.esc(s.type)], ['Workflow', JSV.esc(s.wf || '–') + (s.wf_label ? ' (' + JSV.esc(s.wf_label) + ')' : '')],
      ['Transformation', JSV.esc(s.xformation || '–')], ['Start', JSV.fmtTime(s.start)],
      ['Duration', JSV.fmtDur(s.duration)], ['Allocation', alloc], ['CPU time', JSV.fmtDur(s.cpu_time)],
      ['CPU efficiency', s.cpu_efficiency == null ? '–' : (100 * s.cpu_efficiency).toFixed(1) + ' % of ' + s.cores + ' allocated CPU' + (s.cores === 1 ? '' : 's')],
      ['Peak memory', mem], ['I/O', io], ['GPU', gpu],
      ['Exit', JSV.exitText(s)], ['Limits', limitsText(job)], ['Samples', s.samples],
    ];
    if (job.tags) rows.push(['Tags', JSV.esc(Object.entries(job.tags).map(e => e.join('=')).join(', '))]);
    return '<table class="kv">' + rows.map(r => '<tr><td>' + r[0] + '</td><td>' + r[1] + '</td></tr>').join('') + '</table>';
  };

  JSV.warnings = job => (job.warnings || []).map(w => '<div class="warn">⚠ ' + JSV.esc(w.message) +
    (w.from ? ' <span class="muted">(' + JSV.fmtTime(w.from) + ' – ' + JSV.fmtTime(w.to, true).slice(11) + ')</span>' : '') + '</div>').join('');

  /* The assessment: bars against the allocation, notes, next time. */
  JSV.assessment = function (job) {
    const a = job.assessment;
    if (!a) return '';
    const bars = (a.bars || []).map(b => {
      const p = b.pct == null ? null : b.pct, w = p == null ? 0 : Math.min(100, p);
      const cls = b.key === 'memory' ? (p >= 90 ? 'hi' : p < 30 ? 'lo' : 'ok') : (p < 50 ? 'lo' : p > 105 ? 'hi' : 'ok');
      return '<div class="ubar" data-key="' + JSV.esc(b.key) + '"><span class="ulabel">' + JSV.esc(b.label) + '</span>' +
        '<span class="utrack"><span class="ufill ' + cls + '" style="width:' + w.toFixed(1) + '%"></span><span class="upct">' +
        (p == null ? '–' : Math.round(p) + '%') + '</span></span><span class="utext">' + JSV.esc(b.text) + '</span></div>';
    }).join('');
    const notes = (a.notes || []).map(n => '<li class="note note-' + JSV.esc(n.level) + '" data-kind="' + JSV.esc(n.kind) + '">' + JSV.esc(n.text) + '</li>').join('');
    const nx = a.next || {}, sched = a.scheduler;
    const syn = [['slurm', 'Slurm (sbatch)', nx.slurm], ['htcondor', 'HTCondor (submit file)', nx.htcondor], ['pegasus', 'Pegasus (profiles)', nx.pegasus]]
      .sort((x, y) => (y[0] === sched) - (x[0] === sched));
    return '<div class="assess"><div class="abars"><h3>Overall utilization <span class="muted">against the allocation</span></h3>' + bars + '</div>' +
      '<div class="anotes"><h3>Notes</h3>' + (notes ? '<ul>' + notes + '</ul>' : '<div class="muted">nothing to note: the job used what it was given</div>') +
      '<h3>Next time <span class="muted">fits this run, ' + Math.round(100 * (nx.margin || 0.1)) + '% head room on memory and time</span></h3>' +
      syn.map(x => '<div class="nextreq"><span class="muted">' + x[1] + '</span><code>' + JSV.esc((x[2] || '').trim().replace(/\n/g, '; ')) + '</code></div>').join('') +
      '</div></div>';
  };

  /* A job of several runs (a Slurm job's steps, tasks and nodes; a job run
   * again): its nodes against their allocations, its steps, its runs (each
   * with its own page when runHref is given). */
  JSV.runs = function (job, runHref) {
    if (!job.runs) return '';
    const eff = v => v == null ? '–' : (100 * v).toFixed(1) + ' %';
    const row = cells => '<tr>' + cells.map(c => '<td>' + c + '</td>').join('') + '</tr>';
    const table = (cls, head, rows) => '<table class="' + cls + '"><tr>' + head.map(h => '<th>' + h + '</th>').join('') + '</tr>' + rows.join('') + '</table>';
    const nodes = (job.nodes || []).map(n => row([JSV.esc(n.host), n.cores + ' <span class="muted">(' + JSV.esc(n.cores_from) + ')</span>',
      JSV.fmtDur(n.cpu_time), eff(n.cpu_efficiency), JSV.fmtBytes(n.peak_mem) + ' of ' + JSV.fmtBytes(n.mem) + ' <span class="muted">(' + JSV.esc(n.mem_from || '–') + ')</span>', n.runs]));
    const steps = (job.steps || []).map(s => row([JSV.esc(s.step), s.tasks, s.nodes, JSV.fmtDur(s.duration), JSV.fmtDur(s.cpu_time), JSV.fmtBytes(s.peak_mem),
      JSV.exitText(s), '<span class="wrap">' + JSV.esc(s.exe || '') + '</span>']));
    const runs = job.runs.map(r => row([(runHref ? '<a href="#' + JSV.esc(runHref(r.run).replace(/^#/, '')) + '">' + JSV.esc(r.run) + '</a>' : JSV.esc(r.run)) +
        (r.superseded ? ' <span class="muted">(an earlier attempt, not counted)</span>' : ''),
      JSV.esc(r.host), JSV.esc(r.step || '–'), JSV.esc(r.task || '–'), JSV.fmtTime(r.start, true), JSV.fmtDur(r.duration), JSV.fmtDur(r.cpu_time),
      eff(r.cpu_efficiency), JSV.fmtBytes(r.peak_mem), JSV.exitText(r)]));
    return '<h3>Nodes <span class="muted">each against its own allocation</span></h3>' +
      table('jv-nodes', ['node', 'CPUs', 'CPU time', 'efficiency', 'memory peak (runs at once)', 'runs'], nodes) +
      (steps.length ? '<h3>Steps</h3>' + table('jv-steps', ['step', 'tasks', 'nodes', 'duration', 'CPU time', 'memory peak', 'exit', 'executable'], steps) : '') +
      '<h3>Runs <span class="muted">one monitor each' + (runHref ? ': a click opens its own page' : '') + '</span></h3>' +
      table('jv-runlist', ['run', 'host', 'step', 'task', 'start (' + JSV.esc(JSV.tzName()) + ')', 'duration', 'CPU time', 'efficiency', 'memory peak', 'exit'], runs);
  };

  /* An event as one short line; its JSON wrapped and collapsed. */
  JSV.eventCell = (e, drop) => {
    const d = Object.assign({}, e);
    for (const k of drop) delete d[k];
    const text = JSON.stringify(d);
    return '<details class="ev"><summary>' + JSV.esc(text.length > 160 ? text.slice(0, 160) + '…' : text) + '</summary><pre class="wrap">' +
      JSV.esc(JSON.stringify(d, null, 1)) + '</pre></details>';
  };

  function plotOpts(title, unit, axis, labels, width, group, elapsed, alloc) {
    const fmt = fmtFor(unit), x = JSV.xAxis(elapsed);
    const series = [{ value: x.value }].concat(labels.map((l, i) => ({
      label: l, stroke: COLORS[i % COLORS.length], width: 1.5, value: (u, v) => fmt(v), spanGaps: true,
    })));
    if (alloc) series.push({ label: alloc[1], stroke: '#555', width: 1.5, dash: [6, 4], value: (u, v) => fmt(v), points: { show: false } });
    return {
      title, width, height: 220, tzDate: JSV.tzDate(),
      cursor: { sync: { key: group.key, setSeries: true } },
      scales: { x: Object.assign({ range: (u, mn, mx) => mn === mx ? [mn - 30, mx + 30] : [mn, mx] }, x.scale),
                y: { range: (u, mn, mx) => [Math.min(0, mn), mx > 0 ? mx * 1.05 : 1] } },
      legend: { live: true },
      series,
      axes: [x.axis, JSV.yAxis(unit, axis)],
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
    const self = this;
    const group = { key: 'job' + (++groupSeq), plots: [], syncing: false };
    const width = opts.width || Math.max(360, Math.min(620, (root.clientWidth || 1200) / 2 - 24));
    root.innerHTML = '<div class="jv-assess"></div><div class="jv-warn"></div><h3>Characteristics</h3><div class="jv-chars"></div><div class="jv-runs"></div>' +
      '<h3>Time series</h3><div class="toolbar">x axis: <select class="jv-x"><option value="clock">wall-clock time</option>' +
      '<option value="elapsed">time since the job started</option></select> time zone: <select class="jv-tz"><option value="local">' +
      JSV.esc(localZone) + ' (this browser)</option><option value="utc">UTC</option></select> <span class="muted">Drag to zoom (all charts follow), double-click to reset; ' +
      'dashed: the allocation.</span></div>' +
      '<div class="grid jv-charts"></div><div class="jv-extra-h"></div><div class="grid jv-extra"></div>' +
      '<div class="jv-events"></div><details class="jv-end"><summary>end-of-job record</summary><pre class="wrap"></pre></details>';
    const q = sel => root.querySelector(sel);
    let charts = {};
    this.group = group;
    this.plots = group.plots;
    q('.jv-x').value = JSV.xmode();
    q('.jv-tz').value = JSV.tz();
    const rebuild = () => {
      for (const u of group.plots) u.destroy();
      group.plots.length = 0;
      charts = {};
      q('.jv-charts').innerHTML = '';
      q('.jv-extra').innerHTML = '';
      self.update(job);
    };
    q('.jv-x').addEventListener('change', e => { JSV.setXmode(e.target.value); rebuild(); });
    q('.jv-tz').addEventListener('change', e => { JSV.setTz(e.target.value); });
    document.addEventListener('jobscope-tz', () => { if (root.isConnected) { q('.jv-tz').value = JSV.tz(); rebuild(); } });

    function ensure(id, title, unit, axis, labels, parent, alloc) {
      if (charts[id]) return charts[id];
      const div = document.createElement('div');
      div.className = 'chart';
      div.dataset.chart = id;
      parent.appendChild(div);
      div.addEventListener('dblclick', () => { group.userZoom = false; });
      const data = [[]].concat(labels.map(() => [])).concat(alloc ? [[]] : []);
      const u = new uPlot(plotOpts(title, unit, axis, labels, width, group, JSV.xmode() === 'elapsed', alloc), data, div);
      u.jobscopeAlloc = alloc;
      group.plots.push(u);
      return (charts[id] = u);
    }

    this.update = function (j) {
      job = j;
      const elapsed = JSV.xmode() === 'elapsed', t0 = (j.summary && j.summary.start) || 0;
      q('.jv-assess').innerHTML = JSV.assessment(j);
      q('.jv-warn').innerHTML = JSV.warnings(j);
      q('.jv-chars').innerHTML = JSV.characteristics(j);
      q('.jv-runs').innerHTML = JSV.runs(j, opts.runHref);
      const S = j.series || {};
      const xs = ts => elapsed ? (ts || []).map(t => t == null ? null : t - t0) : ts;
      for (const c of CHARTS) {
        /* iowait is 0 when delay accounting is off: all zeros is no measurement */
        const cols = c.cols.filter(k => hasData(S[k[0]]) && (c.id !== 'iowait' || S[k[0]].some(v => v > 0)));
        if (!cols.length) continue;
        const alloc = c.alloc ? allocLine(j, c.alloc) : null;
        const u = ensure(c.id, c.title, c.unit, c.axis, cols.map(k => k[1]), q('.jv-charts'), alloc);
        if (u.series.length - 1 !== cols.length + (u.jobscopeAlloc ? 1 : 0)) continue;
        const data = [xs(S.ts)].concat(cols.map(k => S[k[0]]));
        if (u.jobscopeAlloc) data.push((S.ts || []).map(() => u.jobscopeAlloc[0]));
        u.setData(data, !group.userZoom);
      }
      const extra = j.extra || [];
      if (extra.length) q('.jv-extra-h').innerHTML = '<h3>Custom metrics and devices</h3>';
      extra.forEach(e => {
        const unit = e.unit === 'bytes' ? 'bytes' : e.unit === '%' ? '%' : '';
        const axis = e.unit || 'value';
        const u = ensure('x:' + e.name, e.name, unit, axis, [e.name], q('.jv-extra'), null);
        u.setData([xs(e.ts), e.val], !group.userZoom);
      });
      const evs = j.events || [];
      q('.jv-events').innerHTML = evs.length ? '<h3>Events (' + evs.length + (j.events_dropped ? ', ' + j.events_dropped + ' more not kept' : '') +
        ')</h3><table class="events"><tr><th>time (' + JSV.esc(JSV.tzName()) + ')</th><th>event</th><th>details (click to expand)</th></tr>' + evs.slice(0, 500).map(e =>
          '<tr><td class="t">' + JSV.fmtTime(e.ts, true) + '</td><td>' + JSV.esc(e.event || e.monitoring_event || e.Type) + '</td><td>' +
            JSV.eventCell(e, ['event', 'ts', 'seq', 'hostname', 'site', 'wf_uuid', 'wf_label', 'dag_job_id', 'condor_job_id', 'xformation', 'task_id', 'rank', 'job_id', 'tags']) + '</td></tr>'
        ).join('') + '</table>' : '';
      q('.jv-end pre').textContent = j.end ? JSON.stringify(j.end, null, 1) : j.runs && j.runs.length > 1 && !j.run ?
        '(a job of ' + j.runs.length + ' runs: each run\'s record is on its own page)' : '(the job has not ended, or its end-of-job record is missing)';
    };
    this.update(job);
  };
})();
