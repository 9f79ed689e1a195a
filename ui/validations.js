// validations.js - the Validations view: GET api/validations?namespace=, every analyzer message
// (IST and weft codes, as `weftctl analyze` prints them) per namespace and resource, with the
// resource's YAML shown with line numbers and the line at fault marked; the files pilot rejected
// (and the last good version it still serves); the fields pilot does not implement.
import {el, clear, notice, plural} from './util.js';

const LEVELS = ['Error', 'Warning', 'Info'];

function yamlBlock(r) {
  const lines = (r.yaml || '').replace(/\n$/, '').split('\n');
  const bad = new Map();
  for (const m of r.messages || []) {
    if (m.line > 0) bad.set(m.line, (bad.get(m.line) || []).concat(m));
  }
  return el('pre', {class: 'yaml'}, el('code', {}, lines.map((text, i) => {
    const n = i + 1, ms = bad.get(n);
    const worst = ms ? LEVELS.find((l) => ms.some((m) => m.level === l)) || 'Info' : '';
    return el('span', {class: ms ? `line fault fault-${worst}` : 'line', dataset: {line: String(n)},
      title: ms ? ms.map((m) => `${m.code}: ${m.message}`).join('\n') : undefined},
    el('span', {class: 'ln'}, String(n)), el('span', {class: 'src'}, text), '\n');
  })));
}

function messageItem(m) {
  return el('li', {class: `msg level-${m.level}`},
    el('span', {class: `badge badge-${m.level}`}, m.level), ' ',
    m.documentation_url ? el('a', {class: 'code', href: m.documentation_url, target: '_blank', rel: 'noopener'}, m.code)
      : el('span', {class: 'code'}, m.code),
    ' ', m.line ? el('span', {class: 'at'}, `line ${m.line}: `) : null, m.message);
}

function resourceCard(r) {
  const worst = LEVELS.find((l) => (r.messages || []).some((m) => m.level === l)) || 'Info';
  return el('article', {class: `resource level-${worst}`, dataset: {kind: r.kind, name: r.name, namespace: r.namespace}},
    el('header', {}, el('h3', {}, `${r.kind} ${r.namespace ? r.namespace + '/' : ''}${r.name}`),
      el('span', {class: 'origin'}, r.origin || ''),
      (r.services || []).length ? el('span', {class: 'services'}, 'configures ' + r.services.join(', ')) : null),
    el('ul', {class: 'messages'}, (r.messages || []).map(messageItem)),
    el('details', {class: 'yaml-box', open: true}, el('summary', {}, 'YAML'), yamlBlock(r)));
}

export class ValidationsView {
  constructor(root, app) {
    this.root = root;
    this.app = app;
    this.status = el('div', {class: 'view-status', id: 'validations-status'});
    this.body = el('div', {class: 'validations-body', id: 'validations-body'});
    clear(root, this.status, this.body);
  }

  async refresh() {
    const r = await this.app.get('api/validations' +
      (this.app.namespace ? '?namespace=' + encodeURIComponent(this.app.namespace) : ''));
    if (!r.ok) {
      clear(this.status, notice('error', `Validations unavailable: ${r.error}`));
      clear(this.body);
      return;
    }
    clear(this.status);
    const v = r.data;
    window.weftView = window.weftView || {};
    window.weftView.lastValidations = v;
    // the same answer as last time (pilot analyzes once per config version): keep the page as
    // it is, with what the reader opened or scrolled to
    const key = JSON.stringify(v);
    if (key === this.lastKey && this.body.childElementCount) return this.showFocus();
    this.lastKey = key;
    const res = v.resources || [];
    this.app.noteNamespaces(res.map((x) => x.namespace));
    const s = v.summary || {};
    const byNs = new Map();
    for (const x of res) byNs.set(x.namespace || '(cluster)', (byNs.get(x.namespace || '(cluster)') || []).concat(x));
    const scrollY = window.scrollY;
    clear(this.body,
      el('p', {class: 'summary', id: 'validations-summary'},
        el('span', {class: 'badge badge-Error'}, plural(s.error || 0, 'error')), ' ',
        el('span', {class: 'badge badge-Warning'}, plural(s.warning || 0, 'warning')), ' ',
        el('span', {class: 'badge badge-Info'}, `${s.info || 0} info`),
        ` · config version ${v.version || '-'}`),
      res.length || (v.mesh_messages || []).length ? null
        : notice('info', 'No analyzer message for the config pilot serves.'),
      (v.mesh_messages || []).length ? el('section', {class: 'ns-group', id: 'mesh-messages'},
        el('h2', {}, 'mesh-wide (no resource)'), el('ul', {class: 'messages'}, v.mesh_messages.map(messageItem)))
        : null,
      [...byNs.keys()].sort().map((ns) => el('section', {class: 'ns-group', dataset: {namespace: ns}},
        el('h2', {}, `namespace ${ns}`), byNs.get(ns).map(resourceCard))),
      el('section', {class: 'rejected', id: 'rejected'}, el('h2', {}, 'Rejected by pilot'),
        (v.rejected || []).length ? el('ul', {}, v.rejected.map((x) => el('li', {},
          el('span', {class: 'badge badge-Error'}, 'rejected'), ' ',
          el('span', {class: 'origin'}, `${x.origin}${x.line ? ':' + x.line : ''}`), ' ', x.message,
          x.serving ? el('div', {class: 'serving'}, x.serving) : null)))
          : el('p', {class: 'hint'}, 'Nothing rejected: pilot serves the config as written.')),
      el('section', {class: 'not-implemented', id: 'not-implemented'}, el('h2', {}, 'Not implemented by weft'),
        (v.not_implemented || []).length ? el('ul', {}, v.not_implemented.map((x) => el('li', {},
          el('span', {class: 'badge badge-Warning'}, x.code), ' ', el('span', {class: 'origin'}, x.resource),
          x.field ? ` ${x.field}` : '', `: ${x.message}`)))
          : el('p', {class: 'hint'}, 'Every field in use is implemented.')));
    window.scrollTo(0, scrollY);
    this.showFocus();
  }

  // The resource the graph's "show YAML" asked for: scrolled to and outlined, once.
  showFocus() {
    const f = this.app.focus;
    if (!f) return;
    this.app.focus = null;
    for (const a of this.body.querySelectorAll('article.resource')) {
      const hit = a.dataset.kind === f.kind && a.dataset.namespace === f.namespace && a.dataset.name === f.name;
      a.classList.toggle('focused', hit);
      if (hit) a.scrollIntoView({block: 'start'});
    }
  }
}
