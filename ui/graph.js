// graph.js - the Graph view: GET api/graph?namespace=&window= drawn with Cytoscape.js and the
// dagre layered layout (left to right, as Kiali draws its versioned-app graph), validation
// messages from api/validations put on the edges into the services they configure.
//
// Colours follow the "health" pilot computed with Kiali's default thresholds (ui_graph.h):
// healthy green, degraded orange, failure red, idle grey. An edge into a service that a resource
// with an Error message configures is drawn red too and carries the message code (IST0101).
// A lock is drawn on every edge with mtls_percent > 0 (a DOM overlay: the canvas has no emoji
// font to rely on). When pilot says the source and destination views disagree, the label shows
// both ("src 70% | dst 100%", or "src 0.82 rps | dst 1.50 rps" when they disagree in rate only).
// An edge into the unknown node (a gateway's 503 NC: Istio's metrics name no service) says so
// in its panel, with a link to Failed requests.
import {el, clear, notice, fmtRate, fmtPct, fmtMs, fmtBytes, fmtAgo, plural} from './util.js';

export const HEALTH_COLOURS = {healthy: '#3e8635', degraded: '#ec7a08', failure: '#c9190b', idle: '#8a8d90'};
const ERROR_RED = HEALTH_COLOURS.failure;

let cytoscapePromise = null;

// Cytoscape and the dagre layout from ui/node_modules (installed by scripts/setup). Resolves to
// the cytoscape function, or rejects with a message naming what is missing.
function loadCytoscape() {
  if (!cytoscapePromise) {
    cytoscapePromise = (async () => {
      try {
        const [{default: cytoscape}, {default: dagre}] = await Promise.all([
          import('./node_modules/cytoscape/dist/cytoscape.esm.min.mjs'),
          import('./node_modules/cytoscape-dagre/dist/cytoscape-dagre.mjs')]);
        cytoscape.use(dagre);
        return cytoscape;
      } catch (e) {
        throw new Error('the graph library (cytoscape, cytoscape-dagre in ui/node_modules) could not be ' +
          `loaded: run scripts/setup (${e.message || e})`);
      }
    })();
  }
  return cytoscapePromise;
}

// The validation messages of resources configuring service FQDN svc: [{resource, message}].
export function messagesForService(validations, svc) {
  const out = [];
  if (!svc || !validations || !Array.isArray(validations.resources)) return out;
  for (const r of validations.resources) {
    if (!Array.isArray(r.services) || !r.services.includes(svc)) continue;
    for (const m of r.messages || []) out.push({resource: r, message: m});
  }
  return out;
}

// Istio's "unknown": the source of requests from outside the mesh (kind unknown), or the service
// node of destination_service="unknown" (requests no cluster took, e.g. a gateway's 503 NC).
export function isUnknown(n) {
  return !!n && (n.kind === 'unknown' || (n.kind === 'service' && n.service === 'unknown'));
}

// The service an edge's requests are for: the service node it leads into, or the service node
// it leaves (service -> workload, in Kiali's graph with service nodes), else the target's service.
export function edgeService(e, byId) {
  const t = byId.get(e.target) || {}, s = byId.get(e.source) || {};
  const svcOf = (n) => (isUnknown(n) ? '' : n.service || (n.id && n.id.startsWith('svc:') ? n.id.slice(4) : ''));
  if (t.kind === 'service') return svcOf(t);
  if (s.kind === 'service') return svcOf(s);
  return t.service || '';
}

function nodeLabel(n) {
  if (n.kind === 'app') return n.app || n.name;
  if (n.kind === 'service') return n.name;
  if (isUnknown(n)) return 'unknown';
  if (n.parent && n.version) return n.version;
  return n.name + (n.version ? ` ${n.version}` : '');
}

function viewSummary(v, protocol) {
  if (!v) return '';
  if (protocol === 'tcp') return fmtBytes((v.tcp_sent_bps || 0) + (v.tcp_received_bps || 0));
  return `${fmtRate(v.rps)} rps ${fmtPct(v.success_rate)}`;
}

// The edge's label: [CODES · ] rate and success, or both views when they disagree: their
// success rates ("10.0 rps src 70% | dst 100%"), or, when those print the same (the views
// disagree in request rate only), their rates ("src 0.82 rps | dst 1.50 rps").
export function edgeLabel(e, codes) {
  const sv = e.source_view, dv = e.destination_view;
  let text;
  if (e.disagree && sv && dv) {
    if (e.protocol === 'tcp') {
      text = `src ${fmtBytes(sv.tcp_sent_bps)} | dst ${fmtBytes(dv.tcp_received_bps)}`;
    } else if (fmtPct(sv.success_rate) === fmtPct(dv.success_rate)) {
      text = `src ${fmtRate(sv.rps)} rps | dst ${fmtRate(dv.rps)} rps`;
    } else {
      text = `${fmtRate(sv.rps)} rps src ${fmtPct(sv.success_rate)} | dst ${fmtPct(dv.success_rate)}`;
    }
  } else {
    text = viewSummary(sv || dv, e.protocol) || 'no traffic';
  }
  return codes.length ? `${codes.join(' ')} · ${text}` : text;
}

function elementsOf(graph, validations) {
  const nodes = graph.nodes || [];
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const els = [];
  for (const n of nodes) {
    // a service node carries the codes of its configuration's Error messages, as its edges do
    const codes = n.kind === 'service' ? [...new Set(messagesForService(validations, n.service)
      .filter((m) => m.message.level === 'Error').map((m) => m.message.code))] : [];
    els.push({group: 'nodes', data: {
      id: n.id, parent: n.parent && byId.has(n.parent) ? n.parent : undefined,
      label: (codes.length ? codes.join(' ') + ' ' : '') + nodeLabel(n),
      kind: isUnknown(n) ? 'unknown' : n.kind, health: n.health || 'idle', gateway: !!n.is_gateway, namespace: n.namespace,
      name: n.name, service: n.service || '', codes: codes.join(' '), validation_error: codes.length > 0,
      colour: codes.length ? ERROR_RED : HEALTH_COLOURS[n.health] || HEALTH_COLOURS.idle}});
  }
  for (const e of graph.edges || []) {
    if (!byId.has(e.source) || !byId.has(e.target)) continue;
    const svc = edgeService(e, byId);
    const msgs = messagesForService(validations, svc);
    const errors = msgs.filter((m) => m.message.level === 'Error');
    const codes = [...new Set(errors.map((m) => m.message.code))];
    const colour = errors.length ? ERROR_RED : (HEALTH_COLOURS[e.health] || HEALTH_COLOURS.idle);
    els.push({group: 'edges', data: {
      id: e.id, source: e.source, target: e.target, label: edgeLabel(e, codes), colour,
      health: e.health || 'idle', protocol: e.protocol, mtls: (e.mtls_percent || 0) > 0,
      mtls_percent: e.mtls_percent || 0, disagree: !!e.disagree, validation_error: errors.length > 0,
      codes: codes.join(' '), service: svc}});
  }
  return els;
}

const STYLE = [
  {selector: 'node', style: {
    'label': 'data(label)', 'font-size': 11, 'font-family': 'DejaVu Sans, sans-serif',
    'text-valign': 'bottom', 'text-margin-y': 4, 'min-zoomed-font-size': 7, 'background-color': '#fff', 'border-width': 3,
    'border-color': 'data(colour)', 'width': 30, 'height': 30, 'color': '#151515'}},
  {selector: 'node[kind = "service"]', style: {'shape': 'round-triangle', 'width': 32, 'height': 28}},
  {selector: 'node[kind = "unknown"]', style: {'shape': 'diamond', 'border-style': 'dashed'}},
  {selector: 'node[?gateway]', style: {'shape': 'round-pentagon', 'width': 36, 'height': 36,
    'background-color': '#e7f1fa'}},
  {selector: ':parent', style: {'shape': 'round-rectangle', 'background-color': '#f5f5f5',
    'border-width': 1, 'border-style': 'dashed', 'text-valign': 'top', 'text-margin-y': -4,
    'padding': 14, 'border-color': '#8a8d90'}},
  {selector: 'edge', style: {
    'width': 2, 'line-color': 'data(colour)', 'target-arrow-color': 'data(colour)',
    'target-arrow-shape': 'triangle', 'curve-style': 'bezier', 'label': 'data(label)',
    'font-size': 10, 'font-family': 'DejaVu Sans, sans-serif', 'text-rotation': 'none',
    'text-background-color': '#fff', 'text-background-opacity': 0.85, 'text-background-padding': 2,
    'text-margin-y': -9, 'color': '#151515', 'min-zoomed-font-size': 7}},
  {selector: 'edge[?validation_error]', style: {'width': 3, 'color': ERROR_RED}},
  {selector: 'node[?validation_error]', style: {'color': ERROR_RED}},
  {selector: 'edge[?disagree]', style: {'line-style': 'solid', 'width': 3}},
  {selector: 'edge[health = "idle"]', style: {'line-style': 'dashed'}},
  {selector: ':selected', style: {'overlay-color': '#0066cc', 'overlay-opacity': 0.15}},
];

const LOCK_SVG = '<svg viewBox="0 0 16 16" width="14" height="14" aria-hidden="true">' +
  '<path d="M4.5 7V5a3.5 3.5 0 0 1 7 0v2" fill="none" stroke="currentColor" stroke-width="1.8"/>' +
  '<rect x="2.5" y="7" width="11" height="8" rx="1.5" fill="currentColor"/></svg>';

export class GraphView {
  constructor(root, app) {
    this.root = root;
    this.app = app;
    this.cy = null;
    this.lastGraph = null;
    this.lastValidations = null;
    this.selectedEdge = null;
    this.status = el('div', {class: 'view-status', id: 'graph-status'});
    this.legend = el('div', {class: 'legend'},
      Object.entries(HEALTH_COLOURS).map(([k, c]) => el('span', {class: 'legend-item'},
        el('span', {class: 'swatch', style: `background:${c}`}), k)),
      el('span', {class: 'legend-item'}, el('span', {class: 'lock-inline', title: 'mutual TLS'}), 'mTLS'),
      el('span', {class: 'legend-item'}, 'src | dst: the two reporters disagree'));
    this.canvas = el('div', {class: 'graph-canvas', id: 'graph-canvas'});
    this.locks = el('div', {class: 'lock-layer', id: 'lock-layer'});
    this.side = el('aside', {class: 'side-panel', id: 'side-panel', hidden: true});
    this.info = el('div', {class: 'graph-info', id: 'graph-info'});
    clear(root, this.status, el('div', {class: 'graph-wrap'},
      el('div', {class: 'graph-stage'}, this.canvas, this.locks), this.side), this.info, this.legend);
    this.legend.querySelector('.lock-inline').innerHTML = LOCK_SVG;
    window.weftView = window.weftView || {};
    Object.assign(window.weftView, {cy: null, lastGraph: null, lastValidations: null});
  }

  async refresh() {
    const q = new URLSearchParams();
    if (this.app.namespace) q.set('namespace', this.app.namespace);
    q.set('window', String(this.app.window));
    const [g, v] = await Promise.all([this.app.get('api/graph?' + q), this.app.get(
      'api/validations' + (this.app.namespace ? '?namespace=' + encodeURIComponent(this.app.namespace) : ''))]);
    const notes = [];
    if (!g.ok) notes.push(notice('error', `Graph unavailable: ${g.error}`));
    if (!v.ok) notes.push(notice('warn', `Validations unavailable (edges are not checked against them): ${v.error}`));
    this.lastValidations = v.ok ? v.data : null;
    if (g.ok) {
      this.lastGraph = g.data;
      this.app.noteNamespaces((g.data.nodes || []).map((n) => n.namespace));
      this.info.textContent = this.infoText(g.data);
      if (!(g.data.nodes || []).length) {
        notes.push(notice('info', 'No traffic in this window: the graph is drawn from the proxies\' ' +
          'Istio metrics (istio_requests_total, istio_tcp_*); send requests and wait for the next scrape.'));
      }
    }
    clear(this.status, notes);
    window.weftView.lastGraph = this.lastGraph;
    window.weftView.lastValidations = this.lastValidations;
    if (!g.ok) {
      this.info.textContent = '';
      return;
    }
    let cytoscape;
    try {
      cytoscape = await loadCytoscape();
    } catch (e) {
      this.status.append(notice('error', e.message));
      return;
    }
    this.draw(cytoscape, g.data, this.lastValidations);
  }

  infoText(g) {
    const s = g.scrape || {};
    const t = g.timestamp_ms ? new Date(g.timestamp_ms).toISOString().replace(/\.\d+Z/, 'Z') : '-';
    const covered = typeof g.covered_s === 'number' && g.covered_s < (g.window_s || 0)
      ? ` (${Math.round(g.covered_s)} s of it scraped)` : '';
    const last = s.last_round_ms ? `, last round ${fmtAgo(s.last_round_ms)}` : '';
    return `window ${g.window_s || this.app.window} s${covered} · at ${t} · scrape every ${s.interval_s ?? '-'} s: ` +
      `${s.ok ?? '-'}/${typeof s.targets === 'number' ? plural(s.targets, 'target') : '- targets'} ok` +
      `${s.failed ? `, ${s.failed} failed` : ''}${last}`;
  }

  draw(cytoscape, graph, validations) {
    const els = elementsOf(graph, validations);
    const key = els.map((x) => x.data.id + '>' + (x.data.parent || '')).sort().join('\n');
    if (!this.cy) {
      // a large mesh (make bench-pilot's 1,000 services): draw a texture while panning
      const big = els.length > 600;
      this.cy = cytoscape({container: this.canvas, elements: els, style: STYLE, wheelSensitivity: 0.3,
        minZoom: 0.05, maxZoom: 3, textureOnViewport: big, hideEdgesOnViewport: big});
      this.cy.on('tap', 'edge', (ev) => this.showEdge(ev.target.id()));
      this.cy.on('tap', 'node', (ev) => this.showNode(ev.target.id()));
      this.cy.on('tap', (ev) => { if (ev.target === this.cy) this.hideSide(); });
      this.cy.on('render viewport resize', () => this.placeLocks());
      this.layoutKey = '';
    } else {
      // update in place: keep positions when the same elements come back
      this.cy.batch(() => {
        const want = new Set(els.map((x) => x.data.id));
        this.cy.elements().forEach((x) => { if (!want.has(x.id())) this.cy.remove(x); });
        for (const x of els) {
          const cur = this.cy.getElementById(x.data.id);
          if (cur.nonempty()) {
            const {parent, source, target, ...rest} = x.data;
            cur.data(rest);
            if (x.group === 'nodes' && (cur.data('parent') || undefined) !== parent) cur.move({parent: parent ?? null});
          } else {
            this.cy.add(x);
          }
        }
      });
    }
    window.weftView.cy = this.cy;
    if (key !== this.layoutKey) {
      this.layoutKey = key;
      this.cy.layout({name: 'dagre', rankDir: 'LR', nodeSep: 40, rankSep: 150, edgeSep: 20,
        padding: 30, fit: true, animate: false}).run();
    }
    this.placeLocks();
    if (this.selectedEdge && this.cy.getElementById(this.selectedEdge).nonempty()) this.showEdge(this.selectedEdge);
  }

  // One lock per edge with mutual TLS, just below the edge's midpoint.
  placeLocks() {
    if (this.lockFrame) return;
    this.lockFrame = requestAnimationFrame(() => {
      this.lockFrame = 0;
      if (!this.cy) return;
      // locks are unreadable when zoomed far out (and thousands of them cost): hide them
      this.locks.hidden = this.cy.zoom() < 0.45;
      if (this.locks.hidden) return;
      const have = new Map([...this.locks.children].map((c) => [c.dataset.edge, c]));
      for (const e of this.cy.edges('[?mtls]')) {
        let lock = have.get(e.id());
        have.delete(e.id());
        if (!lock) {
          lock = el('span', {class: 'mtls-lock', dataset: {edge: e.id()}});
          lock.innerHTML = LOCK_SVG;
          this.locks.append(lock);
        }
        const p = e.renderedMidpoint();
        const pct = e.data('mtls_percent');
        lock.title = `mutual TLS on ${Math.round(pct)}% of the requests`;
        lock.classList.toggle('partial', pct < 100);
        lock.style.transform = `translate(${Math.round(p.x - 7)}px, ${Math.round(p.y + 3)}px)`;
      }
      for (const stale of have.values()) stale.remove();
    });
  }

  hideSide() {
    this.selectedEdge = null;
    if (!this.side.hidden) {
      this.side.hidden = true;
      this.refit();
    }
  }

  // The stage changed size (side panel shown or hidden): fit the graph to it again.
  refit() {
    if (!this.cy) return;
    this.cy.resize();
    this.cy.fit(undefined, 30);
    this.placeLocks();
  }

  sideFrame(title, ...body) {
    clear(this.side, el('div', {class: 'side-head'}, el('h3', {}, title),
      el('button', {class: 'close', title: 'close', 'aria-label': 'close', onclick: () => this.hideSide()}, '×')), body);
    if (this.side.hidden) {
      this.side.hidden = false;
      this.refit();
    }
  }

  showNode(id) {
    const n = (this.lastGraph.nodes || []).find((x) => x.id === id);
    if (!n) return;
    this.selectedEdge = null;
    const msgs = messagesForService(this.lastValidations, n.service);
    this.sideFrame(`${n.kind} ${n.namespace ? n.namespace + '/' : ''}${n.name}`,
      el('dl', {class: 'kv'}, [['id', n.id], ['app', n.app], ['version', n.version], ['service', n.service],
        ['health', n.health], ['gateway', n.is_gateway ? 'yes' : '']].filter(([, v]) => v)
        .flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)])),
      this.messagesBlock(msgs, n.service));
  }

  showEdge(id) {
    const e = (this.lastGraph.edges || []).find((x) => x.id === id);
    if (!e) return;
    this.selectedEdge = id;
    const nodes = new Map((this.lastGraph.nodes || []).map((n) => [n.id, n]));
    const svc = edgeService(e, nodes);
    const rows = [
      ['requests/s', (v) => fmtRate(v.rps)], ['success', (v) => fmtPct(v.success_rate)],
      ['errors', (v) => fmtPct(v.error_rate)], ['p50', (v) => fmtMs(v.p50_ms)], ['p99', (v) => fmtMs(v.p99_ms)],
      ['codes', (v) => codesText(v.codes)], ['flags', (v) => codesText(v.flags)],
      ['TCP sent', (v) => fmtBytes(v.tcp_sent_bps)], ['TCP received', (v) => fmtBytes(v.tcp_received_bps)]];
    const cell = (v, f) => (v ? f(v) : 'not reported');
    const views = el('table', {class: 'grid views', id: 'edge-views'},
      el('thead', {}, el('tr', {}, el('th', {}, ''), el('th', {}, 'source view'), el('th', {}, 'destination view'))),
      el('tbody', {}, rows.map(([k, f]) => el('tr', {}, el('th', {}, k),
        el('td', {class: 'src'}, cell(e.source_view, f)), el('td', {class: 'dst'}, cell(e.destination_view, f))))));
    this.sideFrame(`${(nodes.get(e.source) || {}).name || e.source} → ${(nodes.get(e.target) || {}).name || e.target}`,
      el('p', {class: 'edge-meta'}, `${e.protocol || ''} · health ${e.health} · mTLS ${Math.round(e.mtls_percent || 0)}%`,
        e.disagree ? el('strong', {class: 'disagree'}, ' · the two views disagree') : null),
      e.disagree ? el('p', {class: 'hint'}, 'The source view is what the client proxy saw (its timeouts, ' +
        'retries and local failures included); the destination view is what the server proxy answered.') : null,
      views, this.messagesBlock(messagesForService(this.lastValidations, svc), svc),
      isUnknown(nodes.get(e.target)) ? this.unknownHint() : null);
  }

  // An edge into the unknown node: requests whose destination service Istio's metrics could not
  // name (destination_service="unknown"), typically a gateway's 503 NC: no cluster took them, and
  // a gateway does not fall back to the Host header for the name. The service they were meant
  // for (and its IST0101) is on the service node; the requests themselves are in Failed requests.
  unknownHint() {
    return el('p', {class: 'hint', id: 'edge-unknown-hint'},
      'requests no cluster took (e.g. 503 NC): Istio\'s metrics cannot name their service; see ',
      el('a', {href: '#failed', class: 'jump'}, 'Failed requests'));
  }

  messagesBlock(msgs, svc) {
    if (!svc) return null;
    if (!this.lastValidations) return el('p', {class: 'hint'}, 'Validations unavailable.');
    if (!msgs.length) return el('p', {class: 'hint'}, `No validation message for ${svc}.`);
    return el('div', {class: 'edge-validations'}, el('h4', {}, `Validation messages for ${svc}`),
      el('ul', {class: 'messages'}, msgs.map(({resource: r, message: m}) => el('li', {class: `level-${m.level}`},
        el('span', {class: `badge badge-${m.level}`}, m.level), ' ',
        m.documentation_url ? el('a', {href: m.documentation_url, target: '_blank', rel: 'noopener'}, m.code) : m.code,
        ` ${r.kind} ${r.namespace}/${r.name}${m.line ? ':' + m.line : ''}: ${m.message} `,
        el('a', {href: '#validations', class: 'jump',
          onclick: () => { this.app.focus = {kind: r.kind, namespace: r.namespace, name: r.name}; }},
        'show YAML')))));
  }
}

function codesText(obj) {
  const ent = Object.entries(obj || {}).filter(([, v]) => v > 0);
  return ent.length ? ent.map(([k, v]) => `${k}: ${fmtRate(v)}/s`).join(', ') : '-';
}
