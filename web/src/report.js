/* report.js — the page of a self-contained `jobscope report` (all assets are
 * inlined by src/report/report.c): reads the jobs from the JSON block
 * #jobscope-data and shows each with charts.js; an index when there are
 * several.  Works offline (file://). */
(function () {
  'use strict';
  const data = JSON.parse(document.getElementById('jobscope-data').textContent);
  const app = document.getElementById('app');
  const jobs = data.jobs || [];
  let html = '<header><h1>jobscope report</h1><span>' + jobs.length + ' job' + (jobs.length === 1 ? '' : 's') +
    '</span><span class="muted" style="color:#cde">generated ' + JSV.fmtTime(data.generated) + '</span></header><main>';
  if (jobs.length > 1) {
    html += '<h2>Jobs</h2><table><tr><th>job</th><th>executable</th><th>host</th><th>start</th><th>duration</th>' +
      '<th>CPU eff.</th><th>peak memory</th><th>exit</th><th>warnings</th></tr>' + jobs.map((j, i) => {
        const s = j.summary;
        return '<tr><td><a href="#job-' + i + '">' + JSV.esc(s.job_id) + '</a></td><td>' + JSV.esc(s.exe) + '</td><td>' + JSV.esc(s.host) +
          '</td><td>' + JSV.fmtTime(s.start) + '</td><td class="num">' + JSV.fmtDur(s.duration) + '</td><td class="num">' +
          (s.cpu_efficiency == null ? '–' : (100 * s.cpu_efficiency).toFixed(1) + ' %') + '</td><td class="num">' + JSV.fmtBytes(s.peak_mem) +
          '</td><td>' + JSV.exitText(s) + '</td><td class="num">' + (j.warnings || []).length + '</td></tr>';
      }).join('') + '</table>';
  }
  html += jobs.map((j, i) => '<section id="job-' + i + '"><h2>Job ' + JSV.esc(j.summary.job_id) + '</h2><div class="job"></div></section>').join('');
  app.innerHTML = html + '</main>';
  const views = [];
  app.querySelectorAll('section .job').forEach((div, i) => views.push(new JSV.JobView(div, jobs[i])));
  window.jobscopeReport = { jobs: jobs.length, charts: views.reduce((n, v) => n + v.plots.length, 0) };
})();
