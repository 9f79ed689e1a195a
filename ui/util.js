// util.js - small helpers shared by the views of weft's web view: DOM building, JSON fetching
// that never throws (every failure becomes a message the view shows), number and time formats.

// el('div', {class: 'x', onclick: f, dataset: {k: v}}, child, 'text', ...) -> HTMLElement.
// Children that are null/undefined/false are skipped; strings become text nodes (never HTML).
export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'dataset') Object.assign(e.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

export function clear(node, ...children) {
  node.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
  return node;
}

// GET url; resolves {ok: true, data} or {ok: false, status, error} (HTTP status, the server's
// message: a JSON body's "error"/"message", else its text, else the network error). Never rejects.
export async function getJSON(url) {
  let res;
  try {
    res = await fetch(url, {cache: 'no-store', headers: {Accept: 'application/json'}});
  } catch (e) {
    return {ok: false, status: 0, error: `${url}: cannot reach weft-pilot (${e.message || e})`};
  }
  let text = '';
  try {
    text = await res.text();
  } catch (e) {
    text = '';
  }
  if (!res.ok) {
    let msg = text.trim();
    try {
      const j = JSON.parse(text);
      if (j && typeof j === 'object') msg = j.error || j.message || msg;
    } catch (e) { /* a text body */ }
    if (msg.length > 600) msg = msg.slice(0, 600) + '…';
    return {ok: false, status: res.status,
            error: `${url.split('?')[0]}: ${res.status} ${res.statusText}${msg ? ': ' + msg : ''}`};
  }
  try {
    return {ok: true, status: res.status, data: JSON.parse(text)};
  } catch (e) {
    return {ok: false, status: res.status, error: `${url.split('?')[0]}: answer is not JSON (${e.message})`};
  }
}

// A message box for a view: kind 'error' | 'info' | 'warn'.
export function notice(kind, text) {
  return el('div', {class: `notice notice-${kind}`, role: kind === 'error' ? 'alert' : 'status'}, text);
}

export function fmtRate(rps) {
  if (rps === null || rps === undefined || Number.isNaN(rps)) return '-';
  if (rps === 0) return '0';
  if (rps < 0.01) return rps.toExponential(1);
  if (rps < 10) return rps.toFixed(2);
  return rps.toFixed(1);
}

// success_rate (0..1) -> "99.5%"; one decimal unless whole.
export function fmtPct(rate) {
  if (rate === null || rate === undefined || Number.isNaN(rate)) return '-';
  const p = rate * 100;
  return (Math.abs(p - Math.round(p)) < 0.05 ? Math.round(p).toString() : p.toFixed(1)) + '%';
}

// n and the word, singular for 1: plural(1, 'warning') -> "1 warning", plural(2, 'warning') ->
// "2 warnings"; many is the plural when it is not word + "s".
export function plural(n, word, many) {
  return `${n} ${n === 1 ? word : many || word + 's'}`;
}

export function fmtMs(ms) {
  if (ms === null || ms === undefined) return '-';
  return ms >= 1000 ? (ms / 1000).toFixed(2) + ' s' : Math.round(ms) + ' ms';
}

export function fmtBytes(bps) {
  if (!bps) return '0 B/s';
  const u = ['B/s', 'kB/s', 'MB/s', 'GB/s'];
  let i = 0;
  while (bps >= 1000 && i < u.length - 1) { bps /= 1000; i++; }
  return `${bps.toFixed(bps < 10 ? 1 : 0)} ${u[i]}`;
}

// unix ms -> "2026-12-06 08:00:00Z"; 0/absent -> "-".
export function fmtTime(ms) {
  if (!ms) return '-';
  return new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

// unix ms -> "12 s ago" / "in 3 d" relative to now.
export function fmtAgo(ms, now = Date.now()) {
  if (!ms) return '';
  const d = (now - ms) / 1000;
  const a = Math.abs(d);
  const s = a < 60 ? `${Math.round(a)} s` : a < 3600 ? `${Math.round(a / 60)} min`
    : a < 86400 ? `${(a / 3600).toFixed(1)} h` : `${(a / 86400).toFixed(1)} d`;
  return d >= 0 ? `${s} ago` : `in ${s}`;
}

// A table: headers (strings), rows (arrays of cell values or Nodes); opts.class, opts.rowAttrs(i).
export function table(headers, rows, opts = {}) {
  return el('table', {class: opts.class || 'grid'},
    el('thead', {}, el('tr', {}, headers.map((h) => el('th', {}, h)))),
    el('tbody', {}, rows.map((r, i) => el('tr', opts.rowAttrs ? opts.rowAttrs(i) : {},
      r.map((c) => el('td', {}, c === undefined || c === null ? '' : c))))));
}
