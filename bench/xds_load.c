/*
 * xds_load.c - weft-xds-load: N simulated sidecars on one libuv loop, each an ADS SotW stream
 * to weft-pilot, for the pilot scale benchmark (bench/run_pilot_scale.sh).
 *
 * Usage: weft-xds-load --addr IP:PORT --proxies FILE [-n N] [--connect-batch B]
 *                      [--connect-interval-ms MS] [--settle-ms MS] [--timeout-s S]
 *                      [--serve-metrics IP:PORT [--metrics-filler N] [--metrics-on-command]]
 *
 * --serve-metrics IP:PORT: the simulated proxies also answer GET /stats/prometheus there, one
 * server for all, told apart by the Host "<pod ip>:15020" weft-pilot sends when it runs with
 * `--uiScrapeAddr IP:PORT` (synthetic Istio metrics, a few edges per proxy: bench/xds_metrics.h;
 * --metrics-filler N lines of other Envoy stats per answer, default 1000). For the web view's
 * graph at scale (pilot/ui_graph.h). With --metrics-on-command the server starts only at the
 * command "metrics" (answered "METRICS serving on IP:PORT"), so that the bench can sample
 * pilot's memory before the scrape loop has anything to keep.
 *
 * FILE (bench/gen_mesh.py proxies.txt) has one line per pod: "<pod> <ns> <podIP> <labels JSON>";
 * the first N lines become clients. Each client is one HTTP/2 connection (xds/h2_stream.h)
 * with one StreamAggregatedResources call whose node is what tests/integration/meshfix.py
 * writes: id "<pod>.<ns>", cluster "<app>.<ns>", metadata NAME, NAMESPACE, LABELS,
 * INSTANCE_IPS, PROXY_TYPE sidecar, WEFT_LOCALHOST (127.11.x.y), ISTIO_VERSION.
 *
 * The stream behaves as Envoy's ADS mux does: CDS (wildcard) first; on each CDS response the
 * EDS names (clusters of type EDS: eds_cluster_config.service_name, else the name) are
 * (re)subscribed when they changed, the CDS response is ACKed and LDS is requested once; on
 * each LDS response the RDS names (rds.route_config_name of the HTTP connection managers) are
 * (re)subscribed likewise. Every response is ACKed (version_info and nonce echoed, the
 * current names). Nothing is ever NACKed.
 *
 * Phases, reported on stdout as one line "READY {json}" / "RESULT {json}" each:
 *  1. initial: connections are opened B at a time every MS ms (default 100 / 10 ms); a client
 *     has converged once it ACKed a CDS, LDS, EDS and RDS response (EDS/RDS only if it has
 *     names) answering its latest subscription. READY reports the time until every client had
 *     its first response ("connect_all_ms"), and p50/p99/max/all of the initial convergence,
 *     from the start of the run.
 *  2. changes, driven by commands on stdin (one per line):
 *       change LABEL SRC DST   t0 = now; rename(SRC, DST) (atomic, so pilot never reads half a
 *                              file); then every response whose version_info differs from what
 *                              the client had at t0 counts: the client converged at its last
 *                              ACK of such a response. The phase ends when every client
 *                              converged and no response came for --settle-ms (default 1500),
 *                              or after --timeout-s (default 120). RESULT: converged clients,
 *                              p50/p99/max from t0 (ms), the first response after t0, and per
 *                              type how many clients got a new version.
 *       mark LABEL MARKER http IP:PORT METHOD PATH CTYPE FILE
 *       mark LABEL MARKER rename SRC DST
 *                              a marked change under churn (xds_mark.h): t0 = now, then the
 *                              HTTP request (body FILE; e.g. an EndpointSlice merge patch to the
 *                              test API server) or the rename; a client converged at its first
 *                              ACK of an EDS response containing MARKER (e.g. "10.10.3.7" with
 *                              its quotes: an endpoint that appears). Marks overlap and do not
 *                              touch the change phase; each is reported as "MARK {json}" once
 *                              every live client converged, or after --timeout-s.
 *       marks-wait             print "MARKS_DONE {json}" once every mark is reported (with the
 *                              bytes and responses received since the start, for the churn's
 *                              share: minus READY's).
 *       quit                   (or EOF) close every stream and exit 0 (open marks are reported
 *                              as timed out).
 *     The client performs the change itself so that t0 and the ACK times come from one clock
 *     (CLOCK_MONOTONIC); the time includes pilot's fs event, its debounce
 *     (PILOT_DEBOUNCE_AFTER, 100 ms by default), the rebuild and the pushes. "ACKed" is when the
 *     client had the response and queued its ACK.
 *
 * Cost per simulated client is kept small: responses are not decoded with jansson (a 2 MB CDS
 * times 1000 clients would cost the shared CPUs more than pilot does) but skimmed: version_info,
 * type_url and nonce are read from the top-level object (front and back), CDS resources are
 * walked structurally for the EDS names, and only LDS (small) is parsed with jansson. Name
 * lists are interned and shared between clients (refcounted), with their JSON text rendered
 * once. So discovery.h's wf_xds_client_* helpers (which need decoded responses and a private
 * copy of the names per client) are not used; the bookkeeping is theirs: version and nonce of
 * the last response echoed, names per type, node on the first request only.
 * Flow control: h2_stream consumes received bytes at once (window updates follow); sends go
 * through its bounded queue, and a full queue (WF_H2_E_BUSY) counts as an error.
 *
 * Exit: 0, 1 on a start failure, 2 on a bad command line. Single-threaded, no globals.
 */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "xds/discovery.h"
#include "xds/h2_stream.h"
#include "xds_mark.h"
#include "xds_metrics.h"

#define NT 4 /* CDS, LDS, RDS, EDS: wf_xds_type 0..3 */

/* ---- interned name lists ------------------------------------------------------------------ */

typedef struct names_set {
    struct names_set *next;
    uint64_t hash;
    size_t refs, n;
    size_t len;
    char json[]; /* ["a","b"] (names as raw JSON string contents) */
} names_set;

#define NS_BUCKETS 1024

typedef struct names_table {
    names_set *b[NS_BUCKETS];
} names_table;

/* A growing list of raw (still JSON-escaped) names being collected. */
typedef struct name_list {
    char *buf; /* JSON array text under construction */
    size_t len, cap, n;
} name_list;

static int nl_add(name_list *l, const char *s, size_t n)
{
    size_t need = l->len + n + 4;
    if (need > l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4096;
        while (cap < need)
            cap *= 2;
        char *b = realloc(l->buf, cap);
        if (!b)
            return -1;
        l->buf = b;
        l->cap = cap;
    }
    l->buf[l->len++] = l->n ? ',' : '[';
    l->buf[l->len++] = '"';
    memcpy(l->buf + l->len, s, n);
    l->len += n;
    l->buf[l->len++] = '"';
    l->n++;
    return 0;
}

static uint64_t fnv(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* The interned set for l (one reference for the caller), NULL on OOM. Empty lists -> "[]". */
static names_set *ns_intern(names_table *t, const name_list *l)
{
    const char *txt = l->n ? l->buf : "[";
    size_t len = l->n ? l->len : 1;
    uint64_t h = fnv(txt, len);
    names_set **slot = &t->b[h % NS_BUCKETS];
    for (names_set *s = *slot; s; s = s->next) {
        if (s->hash == h && s->len == len + 1 && memcmp(s->json, txt, len) == 0) {
            s->refs++;
            return s;
        }
    }
    names_set *s = malloc(sizeof *s + len + 2);
    if (!s)
        return NULL;
    memcpy(s->json, txt, len);
    s->json[len] = ']';
    s->json[len + 1] = '\0';
    s->len = len + 1;
    s->hash = h;
    s->refs = 1;
    s->n = l->n;
    s->next = *slot;
    *slot = s;
    return s;
}

static void ns_unref(names_table *t, names_set *s)
{
    if (!s || --s->refs)
        return;
    for (names_set **p = &t->b[s->hash % NS_BUCKETS]; *p; p = &(*p)->next) {
        if (*p == s) {
            *p = s->next;
            break;
        }
    }
    free(s);
}

/* ---- skimming a DiscoveryResponse --------------------------------------------------------- */

typedef struct span {
    const char *p;
    size_t n;
} span;

static const char *skip_ws(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

/* p at '"': returns the byte after the closing quote, NULL if unterminated. */
static const char *skip_string(const char *p, const char *e)
{
    for (p++; p < e; p++) {
        const char *q = memchr(p, '"', (size_t)(e - p));
        if (!q)
            return NULL;
        size_t bs = 0;
        while (q - bs > p && q[-1 - (ptrdiff_t)bs] == '\\')
            bs++;
        if (bs % 2 == 0)
            return q + 1;
        p = q;
    }
    return NULL;
}

/* Any JSON value at p: the byte after it, NULL when malformed. */
static const char *skip_value(const char *p, const char *e)
{
    if (p >= e)
        return NULL;
    if (*p == '"')
        return skip_string(p, e);
    if (*p == '{' || *p == '[') {
        int depth = 0;
        while (p < e) {
            char c = *p;
            if (c == '"') {
                p = skip_string(p, e);
                if (!p)
                    return NULL;
                continue;
            }
            if (c == '{' || c == '[')
                depth++;
            else if ((c == '}' || c == ']') && --depth == 0)
                return p + 1;
            p++;
        }
        return NULL;
    }
    while (p < e && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n')
        p++;
    return p;
}

/* Iterates the members of the object at *pp: sets key (raw contents) and val (whole value,
 * strings with their quotes). Returns 1 per member, 0 at the end, -1 when malformed. */
static int obj_next(const char **pp, const char *e, span *key, span *val)
{
    const char *p = skip_ws(*pp, e);
    if (p < e && (*p == '{' || *p == ','))
        p = skip_ws(p + 1, e);
    if (p < e && *p == '}') {
        *pp = p + 1;
        return 0;
    }
    if (p >= e || *p != '"')
        return -1;
    const char *k = skip_string(p, e);
    if (!k)
        return -1;
    key->p = p + 1;
    key->n = (size_t)(k - p - 2);
    p = skip_ws(k, e);
    if (p >= e || *p != ':')
        return -1;
    p = skip_ws(p + 1, e);
    const char *v = skip_value(p, e);
    if (!v)
        return -1;
    val->p = p;
    val->n = (size_t)(v - p);
    *pp = v;
    return 1;
}

static bool key_is(span k, const char *s)
{
    size_t n = strlen(s);
    return k.n == n && memcmp(k.p, s, n) == 0;
}

static bool str_contents(span v, span *out)
{
    if (v.n < 2 || v.p[0] != '"')
        return false;
    out->p = v.p + 1;
    out->n = v.n - 2;
    return true;
}

typedef struct skim {
    span version, type_url, nonce, resources;
    bool has_resources;
} skim;

/* Trailing string-valued members read backwards from the closing brace (pilot writes
 * version_info first, resources, then type_url and nonce): returns true when type_url and
 * nonce were found. A quote is a delimiter when an even number of backslashes precede it. */
static bool skim_back(const char *b, size_t len, skim *s)
{
    const char *p = b + len;
    while (p > b && (p[-1] == ' ' || p[-1] == '\n'))
        p--;
    if (p == b || p[-1] != '}')
        return false;
    p--;
    for (int guard = 0; guard < 8; guard++) {
        span str[2]; /* value, then key */
        for (int k = 0; k < 2; k++) {
            if (p == b || p[-1] != '"')
                return s->type_url.p && s->nonce.p;
            const char *end = --p;
            for (;;) {
                const char *q = end;
                while (q > b && q[-1] != '"')
                    q--;
                if (q == b)
                    return false;
                size_t bs = 0;
                while (q - 1 - bs > b && q[-2 - (ptrdiff_t)bs] == '\\')
                    bs++;
                if (bs % 2 == 0) {
                    str[k].p = q;
                    str[k].n = (size_t)(p - q);
                    p = q - 1;
                    break;
                }
                end = q - 1;
            }
            if (k == 0) {
                if (p == b || p[-1] != ':')
                    return s->type_url.p && s->nonce.p;
                p--;
            }
        }
        if (key_is(str[1], "nonce") && !s->nonce.p)
            s->nonce = str[0];
        else if (key_is(str[1], "type_url") && !s->type_url.p)
            s->type_url = str[0];
        else if (key_is(str[1], "version_info") && !s->version.p)
            s->version = str[0];
        if (p == b || p[-1] != ',')
            return s->type_url.p && s->nonce.p;
        p--;
    }
    return s->type_url.p && s->nonce.p;
}

/* Reads the top-level fields. With want_resources the whole object is walked; otherwise the
 * leading string members are read, then the trailing ones (skim_back), and the body in
 * between is only walked when those do not give type_url and nonce. */
static int skim_response(const char *b, size_t len, bool want_resources, skim *s)
{
    memset(s, 0, sizeof *s);
    const char *p = skip_ws(b, b + len), *e = b + len;
    if (p >= e || *p != '{')
        return -1;
    span k, v;
    int rc;
    while ((rc = obj_next(&p, e, &k, &v)) == 1) {
        span c;
        if (key_is(k, "resources")) {
            s->resources = v;
            s->has_resources = true;
        } else if (str_contents(v, &c)) {
            if (key_is(k, "version_info"))
                s->version = c;
            else if (key_is(k, "type_url"))
                s->type_url = c;
            else if (key_is(k, "nonce"))
                s->nonce = c;
        }
        /* fast path: stop before the first non-string member, unless resources are wanted */
        if (!want_resources && p < e && (p = skip_ws(p, e)) < e && *p == ',') {
            const char *q = skip_ws(p + 1, e);
            const char *kq = q < e && *q == '"' ? skip_string(q, e) : NULL;
            const char *vq = kq ? skip_ws(kq, e) : NULL;
            vq = vq && vq < e && *vq == ':' ? skip_ws(vq + 1, e) : NULL;
            if (vq && vq < e && *vq != '"' && skim_back(b, len, s))
                return 0;
        }
    }
    return rc < 0 || !s->type_url.p || !s->nonce.p ? -1 : 0;
}

/* ---- names from resources ----------------------------------------------------------------- */

/* EDS service names of the clusters of type EDS in a CDS resources array. */
static int cds_eds_names(span res, name_list *out)
{
    const char *p = skip_ws(res.p, res.p + res.n), *e = res.p + res.n;
    if (p >= e || *p != '[')
        return -1;
    p++;
    for (;;) {
        p = skip_ws(p, e);
        if (p < e && *p == ',')
            p = skip_ws(p + 1, e);
        if (p >= e)
            return -1;
        if (*p == ']')
            return 0;
        if (*p != '{')
            return -1;
        span k, v, name = {0}, sname = {0};
        bool eds = false;
        int rc;
        while ((rc = obj_next(&p, e, &k, &v)) == 1) {
            span c;
            if (key_is(k, "name") && str_contents(v, &c))
                name = c;
            else if (key_is(k, "type") && str_contents(v, &c))
                eds = c.n == 3 && memcmp(c.p, "EDS", 3) == 0;
            else if (key_is(k, "eds_cluster_config") && v.n && v.p[0] == '{') {
                const char *q = v.p;
                span k2, v2;
                while (obj_next(&q, v.p + v.n, &k2, &v2) == 1)
                    if (key_is(k2, "service_name"))
                        str_contents(v2, &sname);
            }
        }
        if (rc < 0)
            return -1;
        if (eds && (sname.p || name.p)) {
            span n = sname.p ? sname : name;
            if (nl_add(out, n.p, n.n))
                return -1;
        }
    }
}

static int add_rds_name(name_list *out, const char *s)
{
    /* names are kept JSON-escaped: re-escape through jansson */
    json_t *j = json_string(s);
    char *t = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    json_decref(j);
    if (!t)
        return -1;
    size_t n = strlen(t);
    /* dedupe (linear: a sidecar has a handful of route configurations) */
    int rc = 0;
    bool seen = false;
    for (size_t i = 0; out->buf && i + n <= out->len && !seen; i++)
        seen = memcmp(out->buf + i, t, n) == 0 && i > 0 &&
               (out->buf[i - 1] == '[' || out->buf[i - 1] == ',') &&
               (i + n == out->len || out->buf[i + n] == ',');
    if (!seen)
        rc = nl_add(out, t + 1, n - 2);
    free(t);
    return rc;
}

static int walk_rds(json_t *j, name_list *out)
{
    if (json_is_object(j)) {
        json_t *rds = json_object_get(j, "rds");
        const char *n = json_string_value(json_object_get(rds, "route_config_name"));
        if (n && add_rds_name(out, n))
            return -1;
        const char *key;
        json_t *v;
        json_object_foreach(j, key, v)
        {
            if (strcmp(key, "rds") != 0 && walk_rds(v, out))
                return -1;
        }
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v)
        {
            if (walk_rds(v, out))
                return -1;
        }
    }
    return 0;
}

static int lds_rds_names(span res, name_list *out)
{
    json_error_t err;
    json_t *j = json_loadb(res.p, res.n, 0, &err);
    if (!j)
        return -1;
    int rc = walk_rds(j, out);
    json_decref(j);
    return rc;
}

/* ---- clients ------------------------------------------------------------------------------- */

typedef struct xl_ctx xl_ctx;

typedef struct xl_type {
    char *version, *nonce; /* raw JSON string contents as received */
    names_set *names;      /* EDS/RDS subscription; NULL = wildcard (CDS, LDS) */
    bool requested;        /* a request went out on this stream */
    bool waiting;          /* a request (INITIAL / RESOURCE_CHANGE) awaits its response */
    uint64_t responses;
} xl_type;

typedef struct xl_client {
    xl_ctx *ctx;
    size_t idx;
    char *node_json; /* {"id":...}: sent with the first request only */
    wf_h2_conn *conn;
    wf_h2_call *call;
    bool node_sent, ended, first_seen, init_done;
    uint64_t first_ns, init_ns;
    xl_type t[NT];
    /* change phase */
    char *base_version[NT];
    uint64_t conv_ns; /* last ACK of a new-version response, 0 = none */
    unsigned new_types;
} xl_client;

typedef struct xl_phase {
    bool active;
    char label[64];
    uint64_t t0, first_ns, last_resp_ns;
} xl_phase;

struct xl_ctx {
    uv_loop_t *loop;
    char ip[64];
    int port;
    size_t n, opened, n_first, n_init, n_ended;
    size_t connect_batch;
    uint64_t connect_interval_ms, settle_ms, timeout_s;
    xl_client *clients;
    names_table names;
    uint64_t start_ns;
    uint64_t bytes, responses[NT], errors;
    uv_timer_t connect_timer, tick;
    /* --serve-metrics (xds_metrics.h) */
    const char *serve_metrics;
    size_t metrics_filler;
    xmet_proxy *mp; /* while loading: the proxies' strings (owned until the server copied) */
    xmet_server *metrics;
    bool metrics_deferred; /* --metrics-on-command: the server starts at the "metrics" command */
    uv_pipe_t in;
    char line[4096];
    size_t line_len;
    bool ready_printed, quitting, stdin_open;
    xl_phase ph;
    xm_marks marks;  /* marked changes under churn (xds_mark.h) */
    bool marks_wait; /* "marks-wait": print MARKS_DONE once every mark is reported */
};

static const wf_xds_type kTypes[NT] = {WF_XDS_CDS, WF_XDS_LDS, WF_XDS_RDS, WF_XDS_EDS};

static double ms(uint64_t ns)
{
    return (double)ns / 1e6;
}

static char *dup_span(span s)
{
    char *p = malloc(s.n + 1);
    if (p) {
        memcpy(p, s.p, s.n);
        p[s.n] = '\0';
    }
    return p;
}

/* Appends n bytes to buf (capacity checked by the caller's sizing). */
static char *put(char *w, const char *s, size_t n)
{
    memcpy(w, s, n);
    return w + n;
}

#define PUTS(w, lit) put((w), (lit), sizeof(lit) - 1)

/* Sends the request for type t: version and nonce of the last response (none before one),
 * the names (omitted for wildcard), the node on the stream's first request. */
static int send_request(xl_client *c, int t)
{
    xl_type *ty = &c->t[t];
    const char *url = wf_xds_type_url(kTypes[t]);
    bool names = ty->names && ty->names->n, node = !c->node_sent;
    size_t cap = 128 + strlen(url) + (ty->version ? strlen(ty->version) : 0) +
                 (ty->nonce ? strlen(ty->nonce) : 0) + (names ? ty->names->len : 0) +
                 (node ? strlen(c->node_json) : 0);
    char *msg = malloc(cap), *w = msg;
    if (!msg)
        return -1;
    w = PUTS(w, "{");
    if (ty->version) {
        w = PUTS(w, "\"version_info\":\"");
        w = put(w, ty->version, strlen(ty->version));
        w = PUTS(w, "\",");
    }
    if (node) {
        w = PUTS(w, "\"node\":");
        w = put(w, c->node_json, strlen(c->node_json));
        w = PUTS(w, ",");
    }
    if (names) {
        w = PUTS(w, "\"resource_names\":");
        w = put(w, ty->names->json, ty->names->len);
        w = PUTS(w, ",");
    }
    w = PUTS(w, "\"type_url\":\"");
    w = put(w, url, strlen(url));
    w = PUTS(w, "\"");
    if (ty->nonce) {
        w = PUTS(w, ",\"response_nonce\":\"");
        w = put(w, ty->nonce, strlen(ty->nonce));
        w = PUTS(w, "\"");
    }
    w = PUTS(w, "}");
    int rc = wf_h2_call_send(c->call, msg, (size_t)(w - msg));
    free(msg);
    if (rc != 0) {
        c->ctx->errors++;
        fprintf(stderr, "xds-load: client %zu: send failed (%d)\n", c->idx, rc);
        return -1;
    }
    c->node_sent = true;
    ty->requested = true;
    return 0;
}

/* New names for t (takes over ns): re-subscribes when they differ. */
static int set_names(xl_client *c, int t, names_set *ns)
{
    xl_type *ty = &c->t[t];
    if (ty->names == ns) {
        ns_unref(&c->ctx->names, ns);
        return 0;
    }
    ns_unref(&c->ctx->names, ty->names);
    ty->names = ns;
    if (ns->n == 0 && !ty->requested)
        return 0; /* nothing to ask for yet */
    ty->waiting = true;
    return send_request(c, t);
}

static void check_init(xl_client *c)
{
    if (c->init_done)
        return;
    for (int t = 0; t < NT; t++) {
        xl_type *ty = &c->t[t];
        bool need = t < 2 || (ty->names && ty->names->n);
        if (need && (!ty->responses || ty->waiting))
            return;
    }
    c->init_done = true;
    c->init_ns = uv_hrtime();
    c->ctx->n_init++;
}

static int type_index(span url)
{
    for (int t = 0; t < NT; t++) {
        const char *u = wf_xds_type_url(kTypes[t]);
        if (strlen(u) == url.n && memcmp(u, url.p, url.n) == 0)
            return t;
    }
    return -1;
}

static void on_message(wf_h2_call *call, const uint8_t *msg, size_t len, void *ud)
{
    xl_ctx *x = ud;
    xl_client *c = wf_h2_call_data(call);
    const char *b = (const char *)msg;
    uint64_t now = uv_hrtime();
    skim s;
    /* the type decides whether resources are needed: peek with the fast path first */
    if (skim_response(b, len, false, &s) != 0) {
        x->errors++;
        fprintf(stderr, "xds-load: client %zu: undecodable response (%zu bytes)\n", c->idx, len);
        return;
    }
    int t = type_index(s.type_url);
    if (t < 0)
        return;
    if ((t == 0 || t == 1) && (skim_response(b, len, true, &s) != 0)) {
        x->errors++;
        return;
    }
    x->bytes += len;
    x->responses[t]++;
    if (!c->first_seen) {
        c->first_seen = true;
        c->first_ns = now;
        x->n_first++;
    }
    xl_type *ty = &c->t[t];
    ty->responses++;
    ty->waiting = false;
    free(ty->version);
    free(ty->nonce);
    ty->version = s.version.p ? dup_span(s.version) : NULL;
    ty->nonce = dup_span(s.nonce);
    if (!ty->nonce || (s.version.p && !ty->version)) {
        x->errors++;
        return;
    }
    names_set *sub = NULL;
    if (t == 0 || t == 1) {
        name_list nl = {0};
        span empty = {"[]", 2};
        span res = s.has_resources ? s.resources : empty;
        int rc = t == 0 ? cds_eds_names(res, &nl) : lds_rds_names(res, &nl);
        sub = rc == 0 ? ns_intern(&x->names, &nl) : NULL;
        free(nl.buf);
        if (!sub) {
            x->errors++;
            fprintf(stderr, "xds-load: client %zu: bad %s resources\n", c->idx, t ? "LDS" : "CDS");
            return;
        }
    }
    /* ACK first (Envoy ACKs after applying), then the dependent subscriptions */
    if (send_request(c, t) != 0)
        return;
    if (x->ph.active && ty->version &&
        (!c->base_version[t] || strcmp(c->base_version[t], ty->version) != 0)) {
        c->conv_ns = uv_hrtime();
        c->new_types |= 1u << t;
        if (!x->ph.first_ns)
            x->ph.first_ns = now;
    }
    if (x->ph.active)
        x->ph.last_resp_ns = now;
    if (t == 3)
        xm_on_eds(&x->marks, c->idx, b, len, uv_hrtime());
    if (t == 0) {
        if (set_names(c, 3, sub) != 0)
            return;
        if (!c->t[1].requested && send_request(c, 1) != 0)
            return;
    } else if (t == 1 && set_names(c, 2, sub) != 0) {
        return;
    }
    check_init(c);
}

static void on_end(wf_h2_call *call, const wf_h2_end *end, void *ud)
{
    xl_ctx *x = ud;
    xl_client *c = wf_h2_call_data(call);
    if (!c)
        return;
    c->call = NULL;
    c->ended = true;
    x->n_ended++;
    if (!x->quitting) {
        x->errors++;
        fprintf(stderr, "xds-load: client %zu (%s) stream ended: %s %d %s\n", c->idx,
                c->node_json ? c->node_json + 7 : "", wf_h2_end_reason_str(end->reason),
                end->grpc_status, end->grpc_message);
    }
}

static void on_conn_closed(wf_h2_conn *conn, wf_h2_end_reason reason, void *ud)
{
    (void)conn;
    (void)reason;
    (void)ud;
}

static const wf_h2_handlers kHandlers = {
    .on_message = on_message, .on_end = on_end, .on_conn_closed = on_conn_closed};

static int open_client(xl_ctx *x, xl_client *c)
{
    wf_h2_opts o = {.max_msg = (size_t)512 * 1024 * 1024, .max_send_queue = (size_t)16 << 20};
    wf_h2_handlers h = kHandlers;
    h.ud = x;
    if (wf_h2_client_connect(x->loop, x->ip, x->port, &o, &h, &c->conn) != 0 ||
        wf_h2_call_open(c->conn, &c->call) != 0) {
        fprintf(stderr, "xds-load: client %zu: cannot connect\n", c->idx);
        return -1;
    }
    wf_h2_call_set_data(c->call, c);
    return send_request(c, 0);
}

/* ---- reporting ------------------------------------------------------------------------------ */

static void print_stats(const char *name, uint64_t *v, size_t n)
{
    xm_sort_u64(v, n);
    printf("\"%s_p50_ms\":%.1f,\"%s_p99_ms\":%.1f,\"%s_max_ms\":%.1f", name, ms(xm_pct(v, n, 50)),
           name, ms(xm_pct(v, n, 99)), name, ms(n ? v[n - 1] : 0));
}

static void print_ready(xl_ctx *x)
{
    uint64_t *v = calloc(x->n + 1, sizeof *v);
    uint64_t first_all = 0;
    size_t k = 0;
    if (!v)
        return;
    for (size_t i = 0; i < x->n; i++) {
        xl_client *c = &x->clients[i];
        if (c->first_seen && c->first_ns - x->start_ns > first_all)
            first_all = c->first_ns - x->start_ns;
        if (c->init_done)
            v[k++] = c->init_ns - x->start_ns;
    }
    printf("READY {\"clients\":%zu,\"first_response\":%zu,\"converged\":%zu,\"ended\":%zu,"
           "\"connect_all_ms\":%.1f,",
           x->n, x->n_first, k, x->n_ended, ms(first_all));
    print_stats("initial", v, k);
    printf(",\"bytes\":%llu,\"responses\":{\"cds\":%llu,\"lds\":%llu,\"rds\":%llu,\"eds\":%llu},"
           "\"errors\":%llu}\n",
           (unsigned long long)x->bytes, (unsigned long long)x->responses[0],
           (unsigned long long)x->responses[1], (unsigned long long)x->responses[2],
           (unsigned long long)x->responses[3], (unsigned long long)x->errors);
    fflush(stdout);
    free(v);
}

static void phase_start(xl_ctx *x, const char *label)
{
    memset(&x->ph, 0, sizeof x->ph);
    snprintf(x->ph.label, sizeof x->ph.label, "%s", label);
    for (size_t i = 0; i < x->n; i++) {
        xl_client *c = &x->clients[i];
        for (int t = 0; t < NT; t++) {
            free(c->base_version[t]);
            c->base_version[t] = c->t[t].version ? strdup(c->t[t].version) : NULL;
        }
        c->conv_ns = 0;
        c->new_types = 0;
    }
    x->ph.t0 = uv_hrtime();
    x->ph.active = true;
}

static void phase_end(xl_ctx *x, bool timed_out)
{
    uint64_t *v = calloc(x->n + 1, sizeof *v);
    size_t k = 0, per_type[NT] = {0}, live = 0;
    if (!v)
        return;
    for (size_t i = 0; i < x->n; i++) {
        xl_client *c = &x->clients[i];
        live += !c->ended;
        if (c->conv_ns)
            v[k++] = c->conv_ns - x->ph.t0;
        for (int t = 0; t < NT; t++)
            per_type[t] += (c->new_types >> t) & 1;
    }
    printf("RESULT {\"change\":\"%s\",\"clients\":%zu,\"live\":%zu,\"converged\":%zu,"
           "\"timed_out\":%s,\"first_ms\":%.1f,",
           x->ph.label, x->n, live, k, timed_out ? "true" : "false",
           x->ph.first_ns ? ms(x->ph.first_ns - x->ph.t0) : -1.0);
    print_stats("conv", v, k);
    printf(",\"new_version\":{\"cds\":%zu,\"lds\":%zu,\"rds\":%zu,\"eds\":%zu},\"errors\":%llu}\n",
           per_type[0], per_type[1], per_type[2], per_type[3], (unsigned long long)x->errors);
    fflush(stdout);
    free(v);
    x->ph.active = false;
}

static void shutdown_all(xl_ctx *x);

static size_t live_clients(const xl_ctx *x)
{
    size_t live = 0;
    for (size_t i = 0; i < x->n; i++)
        live += !x->clients[i].ended;
    return live;
}

/* Reports the marks every live client converged on, and those older than --timeout-s. */
static void marks_tick(xl_ctx *x, uint64_t now)
{
    if (x->marks.open) {
        size_t live = live_clients(x);
        for (size_t i = 0; i < x->marks.n; i++) {
            xm_mark *k = &x->marks.v[i];
            if (k->done)
                continue;
            if (live && k->n_conv >= live)
                xm_report(&x->marks, i, live, false, stdout);
            else if (now - k->t0 > x->timeout_s * 1000000000ull)
                xm_report(&x->marks, i, live, true, stdout);
        }
    }
    if (x->marks_wait && !x->marks.open) {
        x->marks_wait = false;
        printf("MARKS_DONE {\"marks\":%zu,\"bytes\":%llu,\"eds_responses\":%llu,"
               "\"responses\":%llu,\"errors\":%llu}\n",
               x->marks.n, (unsigned long long)x->bytes, (unsigned long long)x->responses[3],
               (unsigned long long)(x->responses[0] + x->responses[1] + x->responses[2] +
                                    x->responses[3]),
               (unsigned long long)x->errors);
        fflush(stdout);
    }
}

static void on_tick(uv_timer_t *t)
{
    xl_ctx *x = t->data;
    uint64_t now = uv_hrtime();
    if (!x->ready_printed) {
        if (x->opened == x->n && x->n_init + x->n_ended >= x->n) {
            x->ready_printed = true;
            print_ready(x);
        } else if (now - x->start_ns > x->timeout_s * 1000000000ull) {
            fprintf(stderr, "xds-load: initial convergence timed out\n");
            x->ready_printed = true;
            print_ready(x);
        }
        return;
    }
    marks_tick(x, now);
    if (!x->ph.active)
        return;
    size_t conv = 0, live = 0;
    for (size_t i = 0; i < x->n; i++) {
        live += !x->clients[i].ended;
        conv += !x->clients[i].ended && x->clients[i].conv_ns != 0;
    }
    uint64_t quiet = x->ph.last_resp_ns ? now - x->ph.last_resp_ns : 0;
    if (conv == live && live && quiet >= x->settle_ms * 1000000ull)
        phase_end(x, false);
    else if (now - x->ph.t0 > x->timeout_s * 1000000000ull)
        phase_end(x, true);
}

static void on_connect_timer(uv_timer_t *t)
{
    xl_ctx *x = t->data;
    for (size_t k = 0; k < x->connect_batch && x->opened < x->n; k++) {
        xl_client *c = &x->clients[x->opened++];
        if (open_client(x, c) != 0) {
            c->ended = true;
            x->n_ended++;
            x->errors++;
        }
    }
    if (x->opened == x->n)
        uv_timer_stop(t);
}

/* ---- stdin commands ------------------------------------------------------------------------- */

static void on_mark_http(void *ud, long tag, int status)
{
    xl_ctx *x = ud;
    if (tag >= 0 && (size_t)tag < x->marks.n)
        x->marks.v[tag].http_status = status;
    if (status < 200 || status > 299) {
        x->errors++;
        fprintf(stderr, "xds-load: mark %ld: the API request answered %d\n", tag, status);
    }
}

/* The whole file at path (NUL-terminated), NULL on error. */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t cap = 0, n = 0, r;
    if (!f)
        return NULL;
    do {
        if (n + 4096 + 1 > cap) {
            char *b = realloc(buf, cap = (cap ? cap * 2 : 8192));
            if (!b) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = b;
        }
        r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
    } while (r > 0);
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* mark LABEL MARKER http IP:PORT METHOD PATH CTYPE BODYFILE
 * mark LABEL MARKER rename SRC DST */
static void cmd_mark(xl_ctx *x, char **save)
{
    char *a[8] = {0};
    size_t n = 0;
    while (n < 8 && (a[n] = strtok_r(NULL, " \t", save)) != NULL)
        n++;
    bool http = n == 8 && strcmp(a[2], "http") == 0;
    bool ren = n == 5 && strcmp(a[2], "rename") == 0;
    char *colon = http ? strrchr(a[3], ':') : NULL;
    if ((!http && !ren) || (http && !colon)) {
        fprintf(stderr, "xds-load: usage: mark LABEL MARKER http IP:PORT METHOD PATH CTYPE FILE"
                        " | mark LABEL MARKER rename SRC DST\n");
        x->errors++;
        return;
    }
    size_t len = 0;
    char *body = http ? read_file(a[7], &len) : NULL;
    if (http && !body) {
        fprintf(stderr, "xds-load: mark %s: %s: %s\n", a[0], a[7], strerror(errno));
        x->errors++;
        return;
    }
    long i = xm_add(&x->marks, a[0], a[1], uv_hrtime());
    if (i < 0) {
        free(body);
        x->errors++;
        return;
    }
    int rc;
    if (http) {
        *colon = '\0';
        rc = xm_http_send(x->loop, a[3], atoi(colon + 1), a[4], a[5], a[6], body, len, on_mark_http,
                          x, i);
    } else {
        rc = rename(a[3], a[4]);
    }
    free(body);
    if (rc != 0) {
        fprintf(stderr, "xds-load: mark %s: the change failed (%s)\n", a[0],
                http ? "connect" : strerror(errno));
        x->marks.v[i].http_status = -1;
        x->errors++;
    }
}

static void free_mp(xl_ctx *x);

/* The --serve-metrics server (xds_metrics.h) on x->serve_metrics; the proxies' strings are
 * released (the server copied them). 0, or -1 with the reason on stderr. */
static int start_metrics(xl_ctx *x)
{
    char err[256];
    x->metrics =
        xmet_start(x->loop, x->serve_metrics, x->mp, x->n, x->metrics_filler, err, sizeof err);
    free_mp(x);
    if (!x->metrics) {
        fprintf(stderr, "xds-load: %s\n", err);
        return -1;
    }
    return 0;
}

static void command(xl_ctx *x, char *line)
{
    char *save = NULL, *verb = strtok_r(line, " \t", &save);
    if (!verb)
        return;
    if (strcmp(verb, "quit") == 0) {
        shutdown_all(x);
        return;
    }
    if (strcmp(verb, "mark") == 0) {
        cmd_mark(x, &save);
        return;
    }
    if (strcmp(verb, "metrics") == 0) { /* --metrics-on-command: serve from now on */
        if (x->serve_metrics && !x->metrics && start_metrics(x) == 0)
            printf("METRICS serving on %s\n", x->serve_metrics);
        fflush(stdout);
        return;
    }
    if (strcmp(verb, "marks-wait") == 0) {
        x->marks_wait = true;
        return;
    }
    if (strcmp(verb, "change") == 0) {
        char *label = strtok_r(NULL, " \t", &save), *src = strtok_r(NULL, " \t", &save),
             *dst = strtok_r(NULL, " \t", &save);
        if (!label || !src || !dst) {
            fprintf(stderr, "xds-load: usage: change LABEL SRC DST\n");
            return;
        }
        if (x->ph.active)
            phase_end(x, true);
        phase_start(x, label);
        if (rename(src, dst) != 0) {
            fprintf(stderr, "xds-load: rename %s -> %s: %s\n", src, dst, strerror(errno));
            x->ph.active = false;
            printf("RESULT {\"change\":\"%s\",\"error\":\"rename failed\"}\n", label);
            fflush(stdout);
        }
        return;
    }
    fprintf(stderr, "xds-load: unknown command %s\n", verb);
}

static void on_in_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    xl_ctx *x = h->data;
    (void)hint;
    buf->base = x->line + x->line_len;
    buf->len = sizeof x->line - 1 - x->line_len;
}

static void on_in_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    xl_ctx *x = s->data;
    (void)buf;
    if (n < 0) {
        uv_close((uv_handle_t *)s, NULL);
        x->stdin_open = false;
        shutdown_all(x);
        return;
    }
    x->line_len += (size_t)n;
    x->line[x->line_len] = '\0';
    char *nl;
    while ((nl = memchr(x->line, '\n', x->line_len)) != NULL) {
        *nl = '\0';
        size_t used = (size_t)(nl - x->line) + 1;
        char cmd[sizeof x->line];
        memcpy(cmd, x->line, used);
        memmove(x->line, nl + 1, x->line_len - used);
        x->line_len -= used;
        command(x, cmd);
        if (x->quitting)
            return;
    }
    if (x->line_len >= sizeof x->line - 1)
        x->line_len = 0; /* over-long line: dropped */
}

static void shutdown_all(xl_ctx *x)
{
    if (x->quitting)
        return;
    x->quitting = true;
    if (x->ph.active)
        phase_end(x, true);
    for (size_t i = 0; i < x->marks.n; i++)
        if (!x->marks.v[i].done)
            xm_report(&x->marks, i, live_clients(x), true, stdout);
    xmet_close(x->metrics);
    x->metrics = NULL;
    uv_timer_stop(&x->connect_timer);
    uv_timer_stop(&x->tick);
    uv_close((uv_handle_t *)&x->connect_timer, NULL);
    uv_close((uv_handle_t *)&x->tick, NULL);
    if (x->stdin_open) {
        uv_close((uv_handle_t *)&x->in, NULL);
        x->stdin_open = false;
    }
    for (size_t i = 0; i < x->opened; i++)
        if (x->clients[i].conn)
            wf_h2_conn_close(x->clients[i].conn);
}

/* ---- setup ---------------------------------------------------------------------------------- */

static char *node_json(const char *pod, const char *ns, const char *ip, json_t *labels, size_t idx)
{
    char local[32], cluster[600], id[600];
    const char *app = json_string_value(json_object_get(labels, "app"));
    snprintf(local, sizeof local, "127.11.%zu.%zu", 1 + idx / 250, 1 + idx % 250);
    snprintf(cluster, sizeof cluster, "%s.%s", app ? app : pod, ns);
    snprintf(id, sizeof id, "%s.%s", pod, ns);
    json_t *n = json_pack("{s:s,s:s,s:{s:s,s:s,s:O,s:s,s:s,s:s,s:s}}", "id", id, "cluster", cluster,
                          "metadata", "NAME", pod, "NAMESPACE", ns, "LABELS", labels,
                          "INSTANCE_IPS", ip, "PROXY_TYPE", "sidecar", "WEFT_LOCALHOST", local,
                          "ISTIO_VERSION", "weft-xds-load");
    char *s = n ? json_dumps(n, JSON_COMPACT) : NULL;
    json_decref(n);
    return s;
}

static int load_proxies(xl_ctx *x, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "xds-load: %s: %s\n", path, strerror(errno));
        return -1;
    }
    char line[2048];
    size_t k = 0;
    while (k < x->n && fgets(line, sizeof line, f)) {
        char pod[256], ns[256], ip[64];
        int off = 0;
        if (sscanf(line, "%255s %255s %63s %n", pod, ns, ip, &off) != 3)
            continue;
        json_error_t err;
        json_t *labels = json_loads(line + off, JSON_DISABLE_EOF_CHECK, &err);
        if (!json_is_object(labels)) {
            json_decref(labels);
            fprintf(stderr, "xds-load: %s: bad labels in line %zu\n", path, k + 1);
            fclose(f);
            return -1;
        }
        xl_client *c = &x->clients[k];
        c->ctx = x;
        c->idx = k;
        if (x->mp) {
            const char *app = json_string_value(json_object_get(labels, "app"));
            const char *ver = json_string_value(json_object_get(labels, "version"));
            x->mp[k] = (xmet_proxy){strdup(pod), strdup(ns), strdup(ip), strdup(app ? app : pod),
                                    strdup(ver ? ver : "")};
        }
        c->node_json = node_json(pod, ns, ip, labels, k);
        json_decref(labels);
        if (!c->node_json) {
            fclose(f);
            return -1;
        }
        k++;
    }
    fclose(f);
    if (k < x->n) {
        fprintf(stderr, "xds-load: %s has %zu proxies, fewer than -n %zu\n", path, k, x->n);
        return -1;
    }
    return 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: weft-xds-load --addr IP:PORT --proxies FILE [-n N] [--connect-batch B]"
                    " [--connect-interval-ms MS] [--settle-ms MS] [--timeout-s S]"
                    " [--serve-metrics IP:PORT [--metrics-filler N] [--metrics-on-command]]\n");
    exit(2);
}

static uint64_t num_arg(const char *s)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s ? s : "", &end, 10);
    if (!s || errno || *end || end == s)
        usage();
    return v;
}

static void free_mp(xl_ctx *x)
{
    for (size_t i = 0; x->mp && i < x->n; i++) {
        free((char *)x->mp[i].pod);
        free((char *)x->mp[i].ns);
        free((char *)x->mp[i].ip);
        free((char *)x->mp[i].app);
        free((char *)x->mp[i].version);
    }
    free(x->mp);
    x->mp = NULL;
}

static void free_ctx(xl_ctx *x)
{
    for (size_t i = 0; i < x->n; i++) {
        xl_client *c = &x->clients[i];
        free(c->node_json);
        for (int t = 0; t < NT; t++) {
            free(c->t[t].version);
            free(c->t[t].nonce);
            free(c->base_version[t]);
            ns_unref(&x->names, c->t[t].names);
        }
    }
    free(x->clients);
    xm_marks_free(&x->marks);
}

int main(int argc, char **argv)
{
    xl_ctx *x = calloc(1, sizeof *x);
    const char *addr = NULL, *proxies = NULL;
    if (!x)
        return 1;
    x->n = 1000;
    x->connect_batch = 100;
    x->connect_interval_ms = 10;
    x->settle_ms = 1500;
    x->timeout_s = 120;
    x->metrics_filler = 1000;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--addr") && v)
            addr = argv[++i];
        else if (!strcmp(a, "--proxies") && v)
            proxies = argv[++i];
        else if (!strcmp(a, "-n"))
            x->n = num_arg(v), i++;
        else if (!strcmp(a, "--connect-batch"))
            x->connect_batch = num_arg(v), i++;
        else if (!strcmp(a, "--connect-interval-ms"))
            x->connect_interval_ms = num_arg(v), i++;
        else if (!strcmp(a, "--settle-ms"))
            x->settle_ms = num_arg(v), i++;
        else if (!strcmp(a, "--timeout-s"))
            x->timeout_s = num_arg(v), i++;
        else if (!strcmp(a, "--serve-metrics") && v)
            x->serve_metrics = argv[++i];
        else if (!strcmp(a, "--metrics-on-command"))
            x->metrics_deferred = true;
        else if (!strcmp(a, "--metrics-filler"))
            x->metrics_filler = num_arg(v), i++;
        else
            usage();
    }
    const char *colon = addr ? strrchr(addr, ':') : NULL;
    if (!colon || !proxies || x->n == 0 || x->connect_batch == 0 ||
        (size_t)(colon - addr) >= sizeof x->ip)
        usage();
    memcpy(x->ip, addr, (size_t)(colon - addr));
    x->port = (int)num_arg(colon + 1);
    x->clients = calloc(x->n, sizeof *x->clients);
    x->marks.n_clients = x->n;
    if (x->serve_metrics && !(x->mp = calloc(x->n, sizeof *x->mp))) {
        free_ctx(x);
        free(x);
        return 1;
    }
    if (!x->clients || load_proxies(x, proxies) != 0) {
        free_mp(x);
        free_ctx(x);
        free(x);
        return 1;
    }
    x->loop = uv_default_loop();
    if (x->serve_metrics && !x->metrics_deferred && start_metrics(x) != 0) {
        free_ctx(x);
        free(x);
        return 1;
    }
    x->start_ns = uv_hrtime();
    uv_timer_init(x->loop, &x->connect_timer);
    uv_timer_init(x->loop, &x->tick);
    x->connect_timer.data = x->tick.data = x;
    uv_timer_start(&x->connect_timer, on_connect_timer, 0,
                   x->connect_interval_ms ? x->connect_interval_ms : 1);
    uv_timer_start(&x->tick, on_tick, 20, 20);
    if (uv_pipe_init(x->loop, &x->in, 0) == 0 && uv_pipe_open(&x->in, 0) == 0) {
        x->in.data = x;
        x->stdin_open = uv_read_start((uv_stream_t *)&x->in, on_in_alloc, on_in_read) == 0;
    }
    if (!x->stdin_open)
        fprintf(stderr, "xds-load: stdin is not a pipe: no commands (stop with a signal)\n");
    uv_run(x->loop, UV_RUN_DEFAULT);
    uv_loop_close(x->loop);
    free_ctx(x);
    free(x);
    return 0;
}
