// failed.js - the Failed requests view: GET api/failed?namespace=, per workload the recent
// failed requests its proxies keep (admin GET /failed_requests: status, response flags,
// details, route, cluster, upstream host; no bodies, no sensitive headers) with the
// explanation `weftctl log explain` gives (summary; meaning, causes, next steps expandable).
import {el, clear, notice, fmtTime, fmtMs, plural} from './util.js';

function explanation(x) {
  if (!x) return el('span', {class: 'muted'}, 'no explanation');
  const more = [['meaning', x.meaning], ['causes', x.causes], ['next', x.next]].filter(([, v]) => v);
  return el('div', {class: 'explanation'}, el('div', {class: 'summary'}, x.summary || ''),
    more.length ? el('details', {}, el('summary', {}, 'more'),
      el('dl', {class: 'kv'}, more.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]))) : null);
}

function workloadSection(w) {
  const down = (w.proxies || []).filter((p) => !p.ok);
  const reqs = (w.requests || []).slice().sort((a, b) => b.start_time_ms - a.start_time_ms);
  return el('section', {class: 'failed-workload', dataset: {workload: w.workload, namespace: w.namespace}},
    el('h2', {}, `${w.namespace}/${w.workload}`,
      el('span', {class: 'count'}, ' ' + plural(reqs.length, 'failed request'))),
    down.map((p) => notice('warn', `${p.proxy_id}: failed requests not fetched: ${p.error}`)),
    reqs.length ? el('table', {class: 'grid failed'},
      el('thead', {}, el('tr', {}, ['TIME', 'METHOD', 'AUTHORITY + PATH', 'STATUS', 'FLAGS', 'DETAILS', 'ROUTE',
        'CLUSTER', 'UPSTREAM HOST', 'EXPLANATION'].map((h) => el('th', {}, h)))),
      el('tbody', {}, reqs.map((r) => el('tr', {dataset: {flags: r.response_flags || '', status: String(r.response_code)},
        title: `${r.proxy_id} · request id ${r.request_id || '-'} · ${fmtMs(r.duration_ms)}`},
      el('td', {class: 'nowrap'}, fmtTime(r.start_time_ms)), el('td', {}, r.method),
      el('td', {class: 'mono'}, `${r.authority || ''}${r.path || ''}`),
      el('td', {class: r.response_code >= 500 || r.response_code === 0 ? 'bad' : 'warn'}, String(r.response_code)),
      el('td', {class: 'mono'}, r.response_flags || '-'), el('td', {class: 'mono'}, r.details || ''),
      el('td', {class: 'mono'}, r.route_name || ''), el('td', {class: 'mono'}, r.upstream_cluster || ''),
      el('td', {class: 'mono'}, r.upstream_host || ''), el('td', {}, explanation(r.explanation))))))
      : el('p', {class: 'hint'}, down.length ? '' : 'No failed request kept by its proxies.'));
}

export class FailedView {
  constructor(root, app) {
    this.root = root;
    this.app = app;
    this.status = el('div', {class: 'view-status', id: 'failed-status'});
    this.body = el('div', {class: 'failed-body', id: 'failed-body'});
    clear(root, this.status, this.body);
  }

  async refresh() {
    const q = this.app.namespace ? '?namespace=' + encodeURIComponent(this.app.namespace) : '';
    const r = await this.app.get('api/failed' + q);
    if (!r.ok) {
      clear(this.status, notice('error', `Failed requests unavailable: ${r.error}`));
      clear(this.body);
      return;
    }
    clear(this.status);
    window.weftView = window.weftView || {};
    window.weftView.lastFailed = r.data;
    const key = JSON.stringify(r.data);
    if (key === this.lastKey && this.body.childElementCount) return;
    this.lastKey = key;
    const ws = r.data.workloads || [];
    this.app.noteNamespaces(ws.map((w) => w.namespace));
    // keep the <details> the reader opened across refreshes
    const open = new Set([...this.body.querySelectorAll('details[open]')].map((d) => d.closest('tr')?.title));
    clear(this.body, ws.length ? ws.map(workloadSection)
      : notice('info', 'No workload has failed requests (or no proxy is known to pilot).'));
    for (const d of this.body.querySelectorAll('details')) if (open.has(d.closest('tr')?.title)) d.open = true;
  }
}
