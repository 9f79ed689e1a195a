// proxies.js - the Proxies view: `istioctl proxy-status` as a table (NAME CLUSTER CDS LDS EDS
// RDS ECDS ISTIOD VERSION, the classic nine columns of reference istioctl-troubleshooting.md
// §3.2, values from GET api/proxies "sync") joined by proxy_id with GET api/scrape (scrape ok,
// server_state, days until the proxy's first certificate expires, control-plane connection).
// CERT EXPIRES: the time left on the certificate pilot's CA issued (hours), else the proxy's own
// whole days (Envoy's days_until_first_cert_expiring).
// Selecting a proxy shows its certificate (the last pilot's CA issued for it, or pilot's
// certificate_note saying why it cannot tell which one the proxy holds), its history
// (control-plane events and scrape/readiness events, newest first) and istioctl proxy-config's
// tables from GET /debug/config_dump?proxyID=<id>&include_eds (configdump.js).
import {el, clear, notice, table, fmtTime, fmtAgo, plural} from './util.js';
import {allTables} from './configdump.js';

const SYNC_TYPES = ['CDS', 'LDS', 'EDS', 'RDS', 'ECDS'];
const DAY_MS = 86400000;

function syncCell(s) {
  const v = s || 'IGNORED';
  const cls = v.startsWith('SYNCED') ? 'ok' : v.startsWith('STALE') || v === 'ERROR' ? 'bad'
    : v === 'NOT SENT' || v === 'IGNORED' ? 'muted' : 'warn';
  return el('span', {class: `sync sync-${cls}`}, v);
}

const HOUR_MS = 3600000;

// The time left on the certificate pilot's CA issued: "23.4 h" (hours under two days, as
// Istio's 24 h workload certificates are), "12.5 d", "expired"; null when pilot knows none.
export function certLeft(cert, now) {
  if (!cert || !cert.not_after_ms) return null;
  const left = cert.not_after_ms - now;
  if (left <= 0) return 'expired';
  return left < 2 * DAY_MS ? `${(left / HOUR_MS).toFixed(1)} h` : `${(left / DAY_MS).toFixed(1)} d`;
}

// Envoy's server.days_until_first_cert_expiring as the proxy reports it: whole days, rounded
// down (0: less than a day left).
export function agentDaysText(days) {
  const d = Math.max(0, Math.floor(days));
  return `${d} d (agent, ${d === 0 ? '< 1 day' : 'whole days'})`;
}

// expired: bad; less than a fifth of its lifetime left (the agent rotates at about half, so
// a certificate this close to its end was not renewed): warn.
function certClass(cert, now) {
  if (cert.not_after_ms <= now) return 'bad';
  const life = cert.not_after_ms - (cert.not_before_ms || cert.issued_ms || cert.not_after_ms);
  return life > 0 && cert.not_after_ms - now < life / 5 ? 'warn' : '';
}

export class ProxiesView {
  constructor(root, app) {
    this.root = root;
    this.app = app;
    this.selected = null;
    this.dumpFor = null;
    this.status = el('div', {class: 'view-status', id: 'proxies-status'});
    this.tableBox = el('div', {class: 'proxies-table', id: 'proxies-table'});
    this.detail = el('div', {class: 'proxy-detail', id: 'proxy-detail'});
    clear(root, this.status, this.tableBox, this.detail);
  }

  async refresh() {
    const [p, s] = await Promise.all([this.app.get('api/proxies'), this.app.get('api/scrape')]);
    const notes = [];
    if (!p.ok) notes.push(notice('error', `Proxies unavailable: ${p.error}`));
    if (!s.ok) notes.push(notice('warn', `Scrape state unavailable (metrics collection): ${s.error}`));
    clear(this.status, notes);
    window.weftView = window.weftView || {};
    window.weftView.lastProxies = p.ok ? p.data : null;
    window.weftView.lastScrape = s.ok ? s.data : null;
    if (!p.ok) {
      clear(this.tableBox);
      clear(this.detail);
      return;
    }
    const scrape = new Map(((s.ok && s.data.targets) || []).map((t) => [t.proxy_id, t]));
    let proxies = (p.data.proxies || []).slice().sort((a, b) => (a.proxy_id < b.proxy_id ? -1 : a.proxy_id > b.proxy_id ? 1 : 0));
    this.app.noteNamespaces(proxies.map((x) => x.namespace));
    if (this.app.namespace) proxies = proxies.filter((x) => x.namespace === this.app.namespace);
    this.proxies = proxies;
    this.scrape = scrape;
    const now = Date.now();
    const headers = ['NAME', 'CLUSTER', ...SYNC_TYPES, 'ISTIOD', 'VERSION', 'SCRAPE', 'STATE', 'CERT EXPIRES',
      'CONTROL PLANE'];
    const rows = proxies.map((x) => {
      const t = scrape.get(x.proxy_id);
      const left = certLeft(x.certificate, now);
      const agentDays = t && typeof t.days_until_first_cert_expiring === 'number' ? t.days_until_first_cert_expiring : null;
      return [
        el('a', {href: '#proxies', class: 'proxy-link', onclick: (ev) => { ev.preventDefault(); this.select(x.proxy_id); }}, x.proxy_id),
        x.cluster_id || x.cluster || 'Kubernetes',
        ...SYNC_TYPES.map((k) => syncCell((x.sync || {})[k])),
        x.istiod || 'weft-pilot',
        x.istio_version || '',
        t ? el('span', {class: t.ok ? 'ok' : 'bad', title: t.error || t.url}, t.ok ? 'ok' : `failed: ${t.error}`)
          : el('span', {class: 'muted'}, s.ok ? 'not scraped' : '-'),
        t ? (t.server_state || '-') : '-',
        left === null ? el('span', {class: 'muted', title: x.certificate_note || undefined},
          agentDays === null ? '-' : agentDaysText(agentDays))
          : el('span', {class: certClass(x.certificate, now), title: `not after ${fmtTime(x.certificate.not_after_ms)}` +
            (agentDays !== null ? `; the proxy reports ${plural(Math.floor(agentDays), 'whole day')} until its first ` +
              'certificate expires (Envoy\'s days_until_first_cert_expiring)' : '')}, left),
        !x.connected ? el('span', {class: 'bad'}, 'disconnected')
          : t && t.control_plane_connected === false ? el('span', {class: 'warn'}, 'agent: not connected')
            : el('span', {class: 'ok'}, 'connected'),
      ];
    });
    clear(this.tableBox, proxies.length ? table(headers, rows, {class: 'grid proxies', rowAttrs: (i) => ({
      dataset: {proxy: proxies[i].proxy_id}, class: proxies[i].proxy_id === this.selected ? 'selected' : undefined})})
      : notice('info', 'No proxy is connected to pilot' + (this.app.namespace ? ` in namespace ${this.app.namespace}` : '') + '.'));
    if (this.selected) this.renderDetail();
  }

  select(id) {
    this.selected = id;
    this.dump = null;
    this.dumpFor = null;
    for (const tr of this.tableBox.querySelectorAll('tr[data-proxy]')) tr.classList.toggle('selected', tr.dataset.proxy === id);
    this.renderDetail();
    this.loadDump();
  }

  async loadDump() {
    const id = this.selected;
    this.dumpState = {loading: true};
    this.renderDetail();
    const r = await this.app.get(`../debug/config_dump?proxyID=${encodeURIComponent(id)}&include_eds`);
    if (this.selected !== id) return;
    this.dumpFor = id;
    this.dumpState = r.ok ? {tables: allTables(r.data)} : {error: r.error};
    window.weftView.lastConfigDump = r.ok ? r.data : null;
    this.renderDetail();
  }

  renderDetail() {
    const x = (this.proxies || []).find((p) => p.proxy_id === this.selected);
    if (!x) {
      clear(this.detail, this.selected ? notice('warn', `${this.selected} is no longer connected.`) : null);
      return;
    }
    const t = this.scrape.get(x.proxy_id);
    const c = x.certificate;
    const expired = c && c.not_after_ms && c.not_after_ms <= Date.now();
    const hist = [...(x.history || []).map((h) => ({...h, from: 'pilot'})),
      ...((t && t.history) || []).map((h) => ({...h, from: 'scrape'}))].sort((a, b) => b.t_ms - a.t_ms);
    const ds = this.dumpState || {};
    clear(this.detail,
      el('h2', {}, x.proxy_id),
      el('dl', {class: 'kv'}, [['pod', `${x.namespace}/${x.pod}`], ['workload', x.workload], ['type', x.type],
        ['ip', x.ip], ['identity', x.identity], ['stats', t ? t.url : '']].filter(([, v]) => v)
        .flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)])),
      el('section', {class: 'cert', id: 'proxy-cert'}, el('h3', {}, 'Certificate'), c
        ? el('dl', {class: 'kv'}, [['serial', c.serial], ['issued', `${fmtTime(c.issued_ms)} (${fmtAgo(c.issued_ms)})`],
          ['not before', fmtTime(c.not_before_ms)], ['not after', `${fmtTime(c.not_after_ms)} (${expired ? 'expired ' : ''}${fmtAgo(c.not_after_ms)})`]]
          .flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]))
        : x.certificate_note ? el('p', {class: 'hint cert-note', id: 'proxy-cert-note'}, x.certificate_note)
          : el('p', {class: 'hint'}, 'pilot\'s CA has issued no certificate for this proxy since pilot started (no ' +
            'mTLS identity yet, a certificate issued before pilot\'s last restart, shown after the proxy\'s next ' +
            'rotation, or certificates from another CA).')),
      el('section', {class: 'history', id: 'proxy-history'}, el('h3', {}, 'History'),
        el('p', {class: 'hint'}, 'Kept in pilot\'s memory: it begins when pilot started (a restart begins it anew).'),
        hist.length
        ? table(['TIME', 'FROM', 'EVENT', 'DETAIL'], hist.map((h) => [fmtTime(h.t_ms), h.from, h.event, h.detail || '']))
        : el('p', {class: 'hint'}, 'No event recorded.')),
      el('section', {class: 'config', id: 'proxy-config'},
        el('h3', {}, 'Configuration pilot serves it ',
          el('button', {class: 'small', onclick: () => this.loadDump()}, 'reload')),
        ds.loading ? el('p', {class: 'hint'}, 'loading /debug/config_dump …') : null,
        ds.error ? notice('error', `Config dump unavailable: ${ds.error}`) : null,
        ds.tables ? ['clusters', 'listeners', 'routes', 'endpoints'].map((k) => {
          const tb = ds.tables[k];
          return el('div', {class: 'pc-table', id: `pc-${k}`, dataset: {table: k}},
            el('h4', {}, `${k} (${tb.rows.length})`),
            tb.rows.length ? table(tb.headers, tb.rows, {class: 'grid mono'}) : el('p', {class: 'hint'}, tb.empty || 'none'));
        }) : null));
  }
}
