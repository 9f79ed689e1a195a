// configdump.js - istioctl proxy-config's tables from an Envoy ConfigDump (the JSON of
// GET /debug/config_dump?proxyID=<id>&include_eds, which weft-pilot answers as istiod does).
// Pure functions, no DOM: each returns {headers: [...], rows: [[...], ...]} with the columns,
// cell values and row order istioctl prints (../shared/reference/istioctl-troubleshooting.md
// §1.4, §2.2 pc cluster, §2.3 pc listener, §2.4 pc route, §2.6 pc eds / pc all ENDPOINTS), the
// same logic as weftctl's src/cli/cmd_pc_{cluster,listener,route,endpoint}.c.
// The endpoints table is §2.6's (NAME STATUS LOCALITY CLUSTER): a config dump holds EDS, not
// the proxy's live host health, so the OUTLIER CHECK column of `pc endpoint` (Envoy's
// /clusters) cannot be known from it.

const T = 'type.googleapis.com/envoy.admin.v3.';
const HCM = 'envoy.filters.network.http_connection_manager';
const TCP = 'envoy.filters.network.tcp_proxy';

// The config of one type (snake_case, as Envoy and pilot print it; camelCase is accepted too).
function section(dump, type) {
  const configs = (dump && Array.isArray(dump.configs)) ? dump.configs : [];
  return configs.find((c) => c && c['@type'] === T + type) || null;
}

function get(obj, path) {
  let v = obj;
  for (const k of path.split('.')) {
    if (v === null || typeof v !== 'object') return undefined;
    const camel = k.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
    v = k in v ? v[k] : v[camel];
  }
  return v;
}

function items(sec, lists) {
  const out = [];
  if (!sec) return out;
  for (const spec of lists) {
    const [list, inner] = spec.split(':');
    const arr = get(sec, list);
    if (!Array.isArray(arr)) continue;
    for (const it of arr) {
      const v = inner ? get(it, inner) : it;
      if (v && typeof v === 'object') out.push(v);
    }
  }
  return out;
}

const cmpStr = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

// §1.4: "direction|port|subset|host" -> parts; ok=false for any other name.
export function subsetKey(name) {
  const p = name.split('|');
  if (p.length < 4) return {ok: false, direction: '', port: 0, subset: '', host: ''};
  const port = /^[+-]?\d+$/.test(p[1]) ? parseInt(p[1], 10) : 0;
  return {ok: true, direction: p[0], port, subset: p[2], host: p.length === 4 ? p[3] : ''};
}

export function cmpClusterNames(a, b) {
  const ka = subsetKey(a), kb = subsetKey(b);
  return cmpStr(ka.ok ? ka.host : a, kb.ok ? kb.host : b) || cmpStr(ka.subset, kb.subset) ||
    (ka.port - kb.port) || cmpStr(ka.direction, kb.direction);
}

// §1.4 management metadata: "/apis/networking.istio.io/<v>/namespaces/<ns>/<kind>/<name>" -> name.ns.
export function mgmtMetadata(obj) {
  const cfg = get(obj, 'metadata.filter_metadata.istio.config');
  if (typeof cfg !== 'string') return '';
  if (!cfg.startsWith('/apis/networking.istio.io/')) return '<unknown>';
  const p = cfg.split('/');
  return p.length === 8 ? `${p[7]}.${p[5]}` : '';
}

const stableSort = (arr, cmp) => arr.map((v, i) => [v, i]).sort((x, y) => cmp(x[0], y[0]) || x[1] - y[1])
  .map((x) => x[0]);

// ---- pc cluster (§2.2) ----------------------------------------------------------------------
export function clusters(dump) {
  const cs = items(section(dump, 'ClustersConfigDump'),
    ['dynamic_active_clusters:cluster', 'static_clusters:cluster']);
  const sorted = stableSort(cs, (a, b) => cmpClusterNames(a.name || '', b.name || ''));
  const rows = sorted.map((c) => {
    const name = c.name || '';
    const k = subsetKey(name);
    const type = c.type || 'STATIC';
    const dr = mgmtMetadata(c);
    if (!k.ok) return [name, '-', '-', '-', type, dr];
    return [k.host, String(k.port), k.subset || '-', k.direction, type, dr];
  });
  return {headers: ['SERVICE FQDN', 'PORT', 'SUBSET', 'DIRECTION', 'TYPE', 'DESTINATION RULE'], rows,
          empty: cs.length ? '' : 'no clusters found'};
}

// ---- pc listener (§2.3) ---------------------------------------------------------------------
function sockAddr(addr) {
  return get(addr, 'socket_address.address') ?? get(addr, 'pipe.path') ?? '';
}

function filterChains(l) {
  const out = [...(get(l, 'filter_chains') || [])];
  const def = get(l, 'default_filter_chain');
  if (def && typeof def === 'object') out.push(def);
  return out;
}

const mentionsBlackhole = (f) => JSON.stringify(get(f, 'typed_config') || null).includes('BlackHoleCluster');

export function listenerType(l) {
  let http = 0, tcp = 0;
  for (const c of filterChains(l)) {
    for (const f of get(c, 'filters') || []) {
      if (f.name === HCM) http++;
      else if (f.name === TCP && !mentionsBlackhole(f)) tcp++;
    }
  }
  if (http > 0) return tcp === 0 ? 'HTTP' : 'HTTP+TCP';
  return tcp > 0 ? 'TCP' : 'UNKNOWN';
}

const same = (arr, want) => Array.isArray(arr) && arr.length === want.length && arr.every((s, i) => s === want[i]);

function appProtocols(arr) {
  if (same(arr, ['http/1.0', 'http/1.1', 'h2c', 'istio-http/1.0', 'istio-http/1.1', 'istio-h2'])) return 'App: HTTP TLS';
  if (same(arr, ['istio', 'istio-http/1.0', 'istio-http/1.1', 'istio-h2'])) return 'App: Istio HTTP Plain';
  if (same(arr, ['istio-peer-exchange', 'istio'])) return 'App: TCP TLS';
  if (same(arr, ['http/1.0', 'http/1.1', 'h2c'])) return 'App: HTTP';
  return 'App: ' + arr.join(',');
}

export function chainMatch(chain) {
  const m = get(chain, 'filter_chain_match') || {};
  const parts = [];
  const sni = get(m, 'server_names');
  if (Array.isArray(sni) && sni.length) parts.push('SNI: ' + sni.join(','));
  const tp = get(m, 'transport_protocol');
  if (tp) parts.push('Trans: ' + tp);
  const ap = get(m, 'application_protocols');
  if (Array.isArray(ap) && ap.length) parts.push(appProtocols(ap));
  const dp = get(m, 'destination_port');
  const port = dp !== undefined && dp !== null ? ':' + Number(typeof dp === 'object' ? dp.value : dp) : '';
  const pr = get(m, 'prefix_ranges');
  if (Array.isArray(pr) && pr.length) {
    parts.push('Addr: ' + pr.map((p) => `${get(p, 'address_prefix') || ''}/${Number(get(p, 'prefix_len') ?? 0)}`).join(',') + port);
  } else if (port) {
    parts.push('Addr: *' + port);
  }
  return parts.length ? parts.join('; ') : 'ALL';
}

// §2.4 MATCH of one route.
export function routeMatch(match) {
  if (!match) return '';
  if (get(match, 'prefix') !== undefined) return get(match, 'prefix') + '*';
  if (get(match, 'path_separated_prefix') !== undefined) return 'PathPrefix:' + get(match, 'path_separated_prefix');
  if (get(match, 'path') !== undefined) return get(match, 'path');
  const re = get(match, 'safe_regex.regex');
  if (re !== undefined) return 'regex ' + re;
  return '';
}

const clusterDest = (c) => (c.includes('Cluster') ? c : 'Cluster: ' + c);

function inlineRoute(rc) {
  const vhs = get(rc, 'virtual_hosts') || [];
  if (vhs.length === 1 && same(get(vhs[0], 'domains'), ['*'])) {
    const rs = get(vhs[0], 'routes') || [];
    if (rs.length === 1 && get(rs[0], 'match.prefix') === '/' && typeof get(rs[0], 'route.cluster') === 'string') {
      return clusterDest(get(rs[0], 'route.cluster'));
    }
  }
  return 'Inline Route: ' + vhs.map((vh) => {
    const doms = get(vh, 'domains') || [];
    const d = same(doms, ['*']) ? '' : doms.join('/') + ' ';
    return d + (get(vh, 'routes') || []).map((r) => routeMatch(get(r, 'match'))).join(', ');
  }).join('; ');
}

function chainDestination(chain) {
  for (const f of get(chain, 'filters') || []) {
    const tc = get(f, 'typed_config') || {};
    if (f.name === HCM) {
      const rc = get(tc, 'route_config');
      const rds = get(tc, 'rds.route_config_name');
      if (rc && typeof rc === 'object') return inlineRoute(rc);
      if (rds) return 'Route: ' + rds;
      return 'HTTP';
    }
    if (f.name === TCP && !mentionsBlackhole(f)) return clusterDest(get(tc, 'cluster') || '');
  }
  return 'Non-HTTP/Non-TCP';
}

const listenerPort = (l) => Number(get(l, 'address.socket_address.port_value') || 0);

function listenerAddresses(l) {
  return [sockAddr(get(l, 'address')), ...(get(l, 'additional_addresses') || []).map((a) => sockAddr(get(a, 'address')))].join(',');
}

export function listeners(dump) {
  const ls = items(section(dump, 'ListenersConfigDump'),
    ['dynamic_listeners:active_state.listener', 'static_listeners:listener']);
  const sorted = stableSort(ls, (a, b) => (listenerPort(a) - listenerPort(b)) ||
    cmpStr(sockAddr(get(a, 'address')), sockAddr(get(b, 'address'))) || cmpStr(listenerType(a), listenerType(b)));
  const rows = [];
  for (const l of sorted) {
    const addrs = listenerAddresses(l), port = String(listenerPort(l));
    const chains = filterChains(l).map((c) => ({match: chainMatch(c), dest: chainDestination(c)}));
    // sort.Slice by destination descending; stable here so ties keep chain order
    for (const c of stableSort(chains, (a, b) => cmpStr(b.dest, a.dest))) rows.push([addrs, port, c.match, c.dest]);
  }
  return {headers: ['ADDRESSES', 'PORT', 'MATCH', 'DESTINATION'], rows, empty: ls.length ? '' : 'no listeners found'};
}

// ---- pc route (§2.4) ------------------------------------------------------------------------
export function routeDomains(doms) {
  if (!Array.isArray(doms) || doms.length === 0) return '';
  if (doms.length === 1) return doms[0];
  const kept = doms.filter((d) => {
    const colons = (d.match(/:/g) || []).length;
    return colons === 0 || (colons > 2 && d.endsWith(']'));
  });
  const shown = kept.filter((d) => ![('.svc.cluster.local'), '.svc'].some((s) =>
    d.length > s.length && d.endsWith(s) && kept.includes(d.slice(0, d.length - s.length))));
  let out = shown.slice(0, 2).join(', ');
  if (shown.length > 2) out += ` + ${shown.length - 2} more...`;
  return out;
}

function sortRouteConfigs(v) {
  const num = (s) => (/^[+-]?\d{1,18}$/.test(s) ? Number(s) : null);
  const a = [...v];
  for (let i = 1; i < a.length; i++) {
    for (let j = i; j > 0; j--) {
      const x = num(a[j].name || ''), y = num(a[j - 1].name || '');
      if (x === null || y === null || !(x < y)) break;
      [a[j], a[j - 1]] = [a[j - 1], a[j]];
    }
  }
  return a;
}

export function routes(dump) {
  const rcs = sortRouteConfigs(items(section(dump, 'RoutesConfigDump'),
    ['dynamic_route_configs:route_config', 'static_route_configs:route_config']));
  const rows = [];
  for (const rc of rcs) {
    const name = rc.name || '';
    for (const vh of get(rc, 'virtual_hosts') || []) {
      const doms = routeDomains(get(vh, 'domains'));
      const rs = get(vh, 'routes') || [];
      for (const r of rs) {
        if (get(r, 'route.cluster') === 'PassthroughCluster') continue;
        rows.push([name, vh.name || '', doms, routeMatch(get(r, 'match')), mgmtMetadata(r)]);
      }
      if (rs.length === 0) rows.push([name, vh.name || '', doms, '/*', '404']);
    }
  }
  return {headers: ['NAME', 'VHOST NAME', 'DOMAINS', 'MATCH', 'VIRTUAL SERVICE'], rows,
          empty: rcs.length ? '' : 'no routes found'};
}

// ---- pc eds / pc all ENDPOINTS (§2.6) -------------------------------------------------------
function edsAddress(addr) {
  const sa = get(addr, 'socket_address');
  if (sa && typeof sa === 'object') return `${get(sa, 'address') || ''}:${Number(get(sa, 'port_value') || 0)}`;
  const pipe = get(addr, 'pipe');
  if (pipe && typeof pipe === 'object') return get(pipe, 'path') || '';
  const ia = get(addr, 'envoy_internal_address');
  if (ia && typeof ia === 'object') return `envoy://${get(ia, 'server_listener_name') || ''}/${get(ia, 'endpoint_id') || ''}`;
  return 'unknown';
}

function locality(loc) {
  const region = get(loc, 'region') || '', zone = get(loc, 'zone') || '', sub = get(loc, 'sub_zone') || '';
  return region + (zone ? '/' + zone + (sub ? '/' + sub : '') : '');
}

export function endpoints(dump) {
  const clas = items(section(dump, 'EndpointsConfigDump'),
    ['dynamic_endpoint_configs:endpoint_config', 'static_endpoint_configs:endpoint_config'])
    .filter((cla) => (get(cla, 'endpoints') || []).some((g) => (get(g, 'lb_endpoints') || []).length > 0));
  const rows = [];
  for (const cla of stableSort(clas, (a, b) => cmpClusterNames(get(a, 'cluster_name') || '', get(b, 'cluster_name') || ''))) {
    const cluster = get(cla, 'cluster_name') || '';
    for (const g of get(cla, 'endpoints') || []) {
      const loc = locality(get(g, 'locality'));
      for (const lbe of get(g, 'lb_endpoints') || []) {
        const ep = get(lbe, 'endpoint') || {};
        const names = [edsAddress(get(ep, 'address')), ...(get(ep, 'additional_addresses') || []).map((a) => edsAddress(get(a, 'address')))];
        rows.push([names.join(','), get(lbe, 'health_status') || 'UNKNOWN', loc, cluster]);
      }
    }
  }
  const sec = section(dump, 'EndpointsConfigDump');
  return {headers: ['NAME', 'STATUS', 'LOCALITY', 'CLUSTER'], rows,
          empty: sec ? (rows.length ? '' : 'no endpoints') : 'the dump has no EndpointsConfigDump (include_eds)'};
}

export function allTables(dump) {
  return {clusters: clusters(dump), listeners: listeners(dump), routes: routes(dump), endpoints: endpoints(dump)};
}
