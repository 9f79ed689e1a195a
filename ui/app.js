// app.js - weft's web view, served by weft-pilot at /ui/ on its monitoring port (issue 22).
// Plain ES modules, no build step: one view per tab (graph.js, validations.js, proxies.js,
// failed.js), each reading pilot's JSON endpoints under api/ (relative to /ui/, contract in
// docs) and /debug/config_dump. The URL keeps the tab (#graph, #validations, #proxies, #failed)
// and the selectors (?namespace=NS&window=S), so a link opens a view. Every endpoint that does
// not answer 200 shows its message in the view. Tests read window.weftView.
import {getJSON, el} from './util.js';
import {GraphView} from './graph.js';
import {ValidationsView} from './validations.js';
import {ProxiesView} from './proxies.js';
import {FailedView} from './failed.js';

const TABS = {graph: GraphView, validations: ValidationsView, proxies: ProxiesView, failed: FailedView};
const REFRESH_MS = 5000;
const WINDOWS = [[60, '1 min'], [300, '5 min'], [900, '15 min'], [3600, '1 h']];

class App {
  constructor() {
    const q = new URLSearchParams(location.search);
    this.namespace = q.get('namespace') || '';
    const w = parseInt(q.get('window') || '60', 10);
    this.window = Number.isFinite(w) ? Math.min(3600, Math.max(10, w)) : 60;
    this.views = {};
    this.current = null;
    this.namespaces = new Set(this.namespace ? [this.namespace] : []);
    this.running = null;
    this.nsSelect = document.getElementById('namespace');
    this.winSelect = document.getElementById('window');
    this.auto = document.getElementById('auto-refresh');
    this.stamp = document.getElementById('updated');
    window.weftView = Object.assign(window.weftView || {}, {
      cy: null, lastGraph: null, lastValidations: null, refreshes: 0, tab: null,
      refreshNow: () => this.refresh()});
    for (const [s, label] of WINDOWS) this.winSelect.append(el('option', {value: String(s)}, label));
    if (!WINDOWS.some(([s]) => s === this.window)) this.winSelect.append(el('option', {value: String(this.window)}, `${this.window} s`));
    this.winSelect.value = String(this.window);
    this.renderNamespaces();
    this.nsSelect.addEventListener('change', () => { this.namespace = this.nsSelect.value; this.saveQuery(); this.refresh(); });
    this.winSelect.addEventListener('change', () => { this.window = parseInt(this.winSelect.value, 10); this.saveQuery(); this.refresh(); });
    this.auto.addEventListener('change', () => this.schedule());
    document.getElementById('refresh-now').addEventListener('click', () => this.refresh());
    window.addEventListener('hashchange', () => this.show());
    document.addEventListener('visibilitychange', () => this.schedule());
    this.show();
  }

  get(url) {
    return getJSON(url);
  }

  saveQuery() {
    const q = new URLSearchParams();
    if (this.namespace) q.set('namespace', this.namespace);
    if (this.window !== 60) q.set('window', String(this.window));
    const s = q.toString();
    history.replaceState(null, '', location.pathname + (s ? '?' + s : '') + location.hash);
  }

  noteNamespaces(list) {
    let added = false;
    for (const ns of list) {
      if (ns && !this.namespaces.has(ns)) { this.namespaces.add(ns); added = true; }
    }
    if (added) this.renderNamespaces();
  }

  renderNamespaces() {
    const cur = this.namespace;
    this.nsSelect.replaceChildren(el('option', {value: ''}, 'all namespaces'),
      ...[...this.namespaces].sort().map((ns) => el('option', {value: ns}, ns)));
    this.nsSelect.value = cur;
  }

  show() {
    let tab = location.hash.replace(/^#/, '');
    if (!TABS[tab]) tab = 'graph';
    this.current = tab;
    window.weftView.tab = tab;
    for (const a of document.querySelectorAll('nav.tabs a')) {
      a.classList.toggle('active', a.getAttribute('href') === '#' + tab);
      a.setAttribute('aria-selected', a.getAttribute('href') === '#' + tab ? 'true' : 'false');
    }
    for (const s of document.querySelectorAll('main > section.view')) s.hidden = s.id !== 'view-' + tab;
    document.getElementById('window-box').hidden = tab !== 'graph';
    if (!this.views[tab]) this.views[tab] = new TABS[tab](document.getElementById('view-' + tab), this);
    if (tab === 'graph' && this.views.graph.cy) this.views.graph.cy.resize();
    this.refresh();
  }

  // Refresh the visible view now (one refresh at a time; a request during one runs after it).
  async refresh() {
    if (this.running) { this.again = true; return this.running; }
    clearTimeout(this.timer);
    const view = this.views[this.current];
    this.running = (async () => {
      try {
        await view.refresh();
      } catch (e) {
        console.error(e);
        const box = view.status || view.root;
        box.replaceChildren(el('div', {class: 'notice notice-error', role: 'alert'}, `The view failed: ${e.message || e}`));
      }
      this.stamp.textContent = 'updated ' + new Date().toLocaleTimeString();
      window.weftView.refreshes++;
    })();
    await this.running;
    this.running = null;
    if (this.again) { this.again = false; return this.refresh(); }
    this.schedule();
  }

  schedule() {
    clearTimeout(this.timer);
    if (this.auto.checked && !document.hidden) this.timer = setTimeout(() => this.refresh(), REFRESH_MS);
  }
}

new App();
