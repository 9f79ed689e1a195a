/*
 * ps_sources.c - proxy-status rows from a control plane's answers (see proxy_status.h):
 * weft-pilot's /debug/syncz, istiod's legacy HTTP /debug/syncz (istioctl <= 1.21 status
 * rules) and istiod's xDS istio.io/debug/syncz DiscoveryResponse (istioctl >= 1.22).
 */
#include <stdlib.h>
#include <string.h>

#include "cli/proxy_status.h"

static const char *js(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static void row_free(ps_row *r)
{
    free(r->name);
    free(r->cluster);
    free(r->istiod);
    free(r->version);
    free(r->ns);
    for (size_t i = 0; i < r->ntypes; i++) {
        free(r->types[i].url);
        free(r->types[i].status);
        free(r->types[i].display);
        free(r->types[i].error);
        free(r->types[i].nonce_sent);
        free(r->types[i].nonce_acked);
        free(r->types[i].sent_time);
        free(r->types[i].version_sent);
        free(r->types[i].version_acked);
    }
    free(r->types);
}

void ps_state_free(ps_state *st)
{
    for (size_t i = 0; i < st->nrows; i++)
        row_free(&st->rows[i]);
    for (size_t i = 0; i < st->ndocs; i++) {
        free(st->docs[i].istiod);
        json_decref(st->docs[i].resp);
    }
    free(st->rows);
    free(st->docs);
    memset(st, 0, sizeof *st);
}

static ps_row *new_row(ps_state *st)
{
    ps_row *n = realloc(st->rows, (st->nrows + 1) * sizeof *n);
    if (!n)
        return NULL;
    st->rows = n;
    memset(&n[st->nrows], 0, sizeof n[0]);
    return &n[st->nrows++];
}

/* Appends a type; status/display/error may be NULL. Returns 0 or -1. */
static int add_type(ps_row *r, const char *url, const char *status, const char *display,
                    const char *error)
{
    ps_type *n = realloc(r->types, (r->ntypes + 1) * sizeof *n);
    if (!n)
        return -1;
    r->types = n;
    ps_type *t = &n[r->ntypes++];
    memset(t, 0, sizeof *t);
    t->url = strdup(url);
    t->status = strdup(status ? status : "UNKNOWN");
    t->display = display ? strdup(display) : NULL;
    t->error = error && *error ? strdup(error) : NULL;
    if (!t->url || !t->status || (display && !t->display) || (error && *error && !t->error))
        return -1;
    return 0;
}

/* Sets the identity columns. ns_meta may be NULL or "" (then after the id's last '.'). */
static int set_ident(ps_row *r, const char *name, const char *cluster, const char *istiod,
                     const char *version, const char *ns_meta)
{
    const char *dot = strrchr(name, '.');
    r->name = strdup(name);
    r->cluster = strdup(cluster);
    r->istiod = strdup(istiod);
    r->version = strdup(version);
    r->ns = strdup(ns_meta && *ns_meta ? ns_meta : (dot ? dot + 1 : ""));
    return r->name && r->cluster && r->istiod && r->version && r->ns ? 0 : -1;
}

static int add_doc(ps_state *st, const char *istiod, const json_t *resp);
static json_t *rows_doc(const ps_state *st, size_t first, const char *istiod);

/* ---- /debug/syncz (weft and legacy istiod) ---------------------------------------------- */

/* istiod's prefixes (legacy: true), then weft-pilot's for the other types it serves. */
static const struct {
    const char *prefix;
    const char *url;
    bool istiod;
} syncz_types[] = {
    {"cluster", PS_TYPE_CDS, true},          {"listener", PS_TYPE_LDS, true},
    {"endpoint", PS_TYPE_EDS, true},         {"route", PS_TYPE_RDS, true},
    {"extensionconfig", PS_TYPE_ECDS, true}, {"secret", PS_TYPE_SDS, false},
};

/* A copy of o[key] when it is a non-empty string; *oom on failure. */
static char *opt_dup(const json_t *o, const char *key, bool *oom)
{
    const char *s = json_string_value(json_object_get(o, key));
    if (!s || !*s)
        return NULL;
    char *d = strdup(s);
    *oom |= d == NULL;
    return d;
}

/* The sent/acked nonces of a syncz entry (top-level "<p>_sent"/"<p>_acked") and istiod's
 * `resources` entry of the type (sent, acked, sentTime; weft: versionSent, versionAcked). */
static int sync_details(ps_type *t, const json_t *e, const char *prefix)
{
    char k[64];
    bool oom = false;
    const json_t *res = json_object_get(json_object_get(e, "resources"), t->url);
    snprintf(k, sizeof k, "%s_sent", prefix);
    t->nonce_sent = opt_dup(e, k, &oom);
    if (!t->nonce_sent)
        t->nonce_sent = opt_dup(res, "sent", &oom);
    snprintf(k, sizeof k, "%s_acked", prefix);
    t->nonce_acked = opt_dup(e, k, &oom);
    if (!t->nonce_acked)
        t->nonce_acked = opt_dup(res, "acked", &oom);
    const char *st = json_string_value(json_object_get(res, "sentTime"));
    if (st && strcmp(st, "0001-01-01T00:00:00Z") != 0) /* istiod's zero time: never sent */
        t->sent_time = opt_dup(res, "sentTime", &oom);
    t->version_sent = opt_dup(res, "versionSent", &oom);
    t->version_acked = opt_dup(res, "versionAcked", &oom);
    return oom ? -1 : 0;
}

/* weft's "<p>_status" display names to CSDS enum names. */
static const char *weft_status_enum(const char *s)
{
    if (strcmp(s, "NOT SENT") == 0)
        return "NOT_SENT";
    if (strcmp(s, "IGNORED") == 0)
        return NULL; /* not watched: not subscribed */
    return s;
}

static int parse_rfc3339(const char *s, time_t *out);

/* weft's syncz: "<p>_since" (when the status last changed, RFC 3339) gives a stable
 * lastUpdated; "<p>_since_s" (an age in whole seconds) is the fallback. */
static int weft_type(ps_row *r, const json_t *e, const char *prefix, const char *url, time_t now)
{
    char k[64];
    snprintf(k, sizeof k, "%s_status", prefix);
    const char *st = json_string_value(json_object_get(e, k));
    if (!st || !weft_status_enum(st))
        return 0;
    snprintf(k, sizeof k, "%s_error", prefix);
    const char *err = json_string_value(json_object_get(e, k));
    if (add_type(r, url, weft_status_enum(st), NULL, err) != 0 ||
        sync_details(&r->types[r->ntypes - 1], e, prefix) != 0)
        return -1;
    ps_type *t = &r->types[r->ntypes - 1];
    if (strcmp(t->status, "NOT_SENT") == 0)
        return 0;
    snprintf(k, sizeof k, "%s_since", prefix);
    const char *at = json_string_value(json_object_get(e, k));
    time_t when;
    if (at && parse_rfc3339(at, &when) == 0) {
        t->has_age = true;
        t->age_s = (long)(now - when);
        return 0;
    }
    snprintf(k, sizeof k, "%s_since_s", prefix);
    json_t *since = json_object_get(e, k);
    if (json_is_number(since)) {
        t->has_age = true;
        t->age_s = (long)json_number_value(since);
    }
    return 0;
}

/* istioctl <= 1.21: sent empty -> NOT SENT (IGNORED for ztunnel), sent == acked -> SYNCED,
 * acked empty -> STALE (Never Acknowledged), else STALE. */
static int legacy_status(ps_row *r, const json_t *e, const char *prefix, const char *url)
{
    char k[64];
    snprintf(k, sizeof k, "%s_sent", prefix);
    const char *sent = js(e, k);
    snprintf(k, sizeof k, "%s_acked", prefix);
    const char *acked = js(e, k);
    if (!*sent)
        return r->ztunnel ? add_type(r, url, "UNKNOWN", NULL, NULL)
                          : add_type(r, url, "NOT_SENT", NULL, NULL);
    if (strcmp(sent, acked) == 0)
        return add_type(r, url, "SYNCED", NULL, NULL);
    if (!*acked)
        return add_type(r, url, "STALE", "STALE (Never Acknowledged)", NULL);
    return add_type(r, url, "STALE", NULL, NULL);
}

static int legacy_type(ps_row *r, const json_t *e, const char *prefix, const char *url)
{
    if (legacy_status(r, e, prefix, url) != 0)
        return -1;
    return sync_details(&r->types[r->ntypes - 1], e, prefix);
}

static bool is_weft_entry(const json_t *e)
{
    for (size_t i = 0; i < sizeof syncz_types / sizeof syncz_types[0]; i++) {
        char k[64];
        snprintf(k, sizeof k, "%s_status", syncz_types[i].prefix);
        if (json_object_get(e, k))
            return true;
    }
    return false;
}

static int syncz_entry(ps_state *st, const char *istiod, const json_t *e)
{
    ps_row *r = new_row(st);
    if (!r)
        return -1;
    char version[256];
    const char *v = js(e, "istio_version");
    if (!*v && *js(e, "proxy_version"))
        snprintf(version, sizeof version, "%s*", js(e, "proxy_version"));
    else
        snprintf(version, sizeof version, "%s", v);
    if (set_ident(r, js(e, "proxy"), js(e, "cluster_id"), istiod, version, NULL) != 0)
        return -1;
    r->ztunnel = strcmp(js(e, "proxy_type"), "ztunnel") == 0;
    bool weft = is_weft_entry(e);
    for (size_t i = 0; i < sizeof syncz_types / sizeof syncz_types[0]; i++) {
        if (!weft && !syncz_types[i].istiod)
            continue;
        int rc = weft ? weft_type(r, e, syncz_types[i].prefix, syncz_types[i].url, st->now)
                      : legacy_type(r, e, syncz_types[i].prefix, syncz_types[i].url);
        if (rc != 0)
            return -1;
    }
    json_t *conn = json_object_get(e, "connected");
    if (json_is_false(conn)) {
        r->disconnected = true;
        r->disconnected_for_s = (long)json_number_value(json_object_get(e, "disconnected_for_s"));
    }
    return 0;
}

/* Whether a connected entry with this id exists (a reconnected proxy's old stream is not
 * shown as DISCONNECTED). */
static bool connected_twin(const json_t *entries, const json_t *e)
{
    size_t i;
    json_t *o;
    json_array_foreach(entries, i, o)
    {
        if (o != e && !json_is_false(json_object_get(o, "connected")) &&
            strcmp(js(o, "proxy"), js(e, "proxy")) == 0)
            return true;
    }
    return false;
}

int ps_add_syncz(ps_state *st, const char *istiod, const json_t *entries, wf_strbuf *err)
{
    if (!json_is_array(entries)) {
        wf_strbuf_printf(err, "the /debug/syncz answer of %s is not a JSON array", istiod);
        return -1;
    }
    st->legacy_order = true;
    size_t first = st->nrows;
    size_t i;
    json_t *e;
    json_array_foreach(entries, i, e)
    {
        if (!json_is_object(e) || !json_is_string(json_object_get(e, "proxy"))) {
            wf_strbuf_printf(err, "%s: /debug/syncz entry %zu has no \"proxy\"", istiod, i);
            return -1;
        }
        if (json_is_false(json_object_get(e, "connected")) && connected_twin(entries, e))
            continue;
        if (syncz_entry(st, istiod, e) != 0) {
            wf_strbuf_puts(err, "out of memory");
            return -1;
        }
    }
    json_t *doc = rows_doc(st, first, istiod);
    int rc = doc ? add_doc(st, istiod, doc) : -1;
    json_decref(doc);
    if (rc != 0)
        wf_strbuf_puts(err, "out of memory");
    return rc;
}

/* ---- xDS istio.io/debug/syncz ------------------------------------------------------------- */

/* ISTIOD column: the identifier JSON's ID; MISSING without control_plane; INVALID when the
 * identifier is not JSON. Writes into buf. */
static const char *istiod_id(const json_t *resp, char *buf, size_t cap)
{
    json_t *cp = json_object_get(resp, "controlPlane");
    if (!cp)
        cp = json_object_get(resp, "control_plane");
    if (!cp)
        return "MISSING";
    const char *ident = js(cp, "identifier");
    json_t *id = json_loads(ident, JSON_DECODE_ANY, NULL);
    if (!id)
        return "INVALID";
    snprintf(buf, cap, "%s", js(id, "ID"));
    json_decref(id);
    return buf;
}

/* Parses RFC 3339 (with optional fraction and Z/offset) to epoch seconds. Returns 0 or -1. */
static int parse_rfc3339(const char *s, time_t *out)
{
    struct tm tm = {0};
    const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!p)
        return -1;
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++)
            ;
    long off = 0;
    if ((*p == '+' || *p == '-') && strlen(p) >= 6)
        off = (p[0] == '-' ? -1 : 1) * ((p[1] - '0') * 36000L + (p[2] - '0') * 3600L +
                                        (p[4] - '0') * 600L + (p[5] - '0') * 60L);
    *out = timegm(&tm) - off;
    return 0;
}

static const json_t *jget2(const json_t *o, const char *camel, const char *snake)
{
    const json_t *v = json_object_get(o, camel);
    return v ? v : json_object_get(o, snake);
}

static int xds_type(ps_row *r, const json_t *g, time_t now)
{
    const char *url = json_string_value(jget2(g, "typeUrl", "type_url"));
    const char *status = json_string_value(jget2(g, "configStatus", "config_status"));
    const json_t *es = jget2(g, "errorState", "error_state");
    const char *details = json_string_value(json_object_get(es, "details"));
    if (add_type(r, url ? url : "", status ? status : "UNKNOWN", NULL, details) != 0)
        return -1;
    const char *lu = json_string_value(jget2(g, "lastUpdated", "last_updated"));
    time_t t;
    if (lu && parse_rfc3339(lu, &t) == 0) {
        r->types[r->ntypes - 1].has_age = true;
        r->types[r->ntypes - 1].age_s = (long)(now - t);
    }
    return 0;
}

static int xds_client(ps_state *st, const char *istiod, const json_t *cc, time_t now)
{
    ps_row *r = new_row(st);
    if (!r)
        return -1;
    const json_t *node = json_object_get(cc, "node");
    const json_t *md = json_object_get(node, "metadata");
    if (set_ident(r, js(node, "id"), js(md, "CLUSTER_ID"), istiod, js(md, "ISTIO_VERSION"),
                  js(md, "NAMESPACE")) != 0)
        return -1;
    size_t i;
    json_t *g;
    json_array_foreach(jget2(cc, "genericXdsConfigs", "generic_xds_configs"), i, g)
    {
        if (xds_type(r, g, now) != 0)
            return -1;
    }
    return 0;
}

static int add_doc(ps_state *st, const char *istiod, const json_t *resp)
{
    ps_doc *n = realloc(st->docs, (st->ndocs + 1) * sizeof *n);
    if (!n)
        return -1;
    st->docs = n;
    n[st->ndocs].istiod = strdup(istiod);
    n[st->ndocs].resp = json_deep_copy(resp);
    if (!n[st->ndocs].istiod || !n[st->ndocs].resp) {
        free(n[st->ndocs].istiod);
        json_decref(n[st->ndocs].resp);
        return -1;
    }
    st->ndocs++;
    return 0;
}

int ps_add_xds(ps_state *st, const char *istiod, const json_t *resp, time_t now, wf_strbuf *err)
{
    if (!json_is_object(resp)) {
        wf_strbuf_printf(err, "the syncz answer of %s is not a DiscoveryResponse object", istiod);
        return -1;
    }
    char idbuf[256];
    const char *id = istiod_id(resp, idbuf, sizeof idbuf);
    if (add_doc(st, istiod, resp) != 0) {
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    size_t i;
    json_t *cc;
    json_array_foreach(json_object_get(resp, "resources"), i, cc)
    {
        if (xds_client(st, id, cc, now) != 0) {
            wf_strbuf_puts(err, "out of memory");
            return -1;
        }
    }
    return 0;
}

int ps_add_file_doc(ps_state *st, const json_t *doc, time_t now, wf_strbuf *err)
{
    if (json_is_array(doc))
        return ps_add_syncz(st, "weft-pilot", doc, err);
    if (!json_is_object(doc)) {
        wf_strbuf_puts(err, "expected a /debug/syncz array or an object of control-plane "
                            "answers");
        return -1;
    }
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)doc, name, v)
    {
        int rc =
            json_is_array(v) ? ps_add_syncz(st, name, v, err) : ps_add_xds(st, name, v, now, err);
        if (rc != 0)
            return -1;
    }
    return 0;
}

/* ---- filters and order -------------------------------------------------------------------- */

static void keep_rows(ps_state *st, bool (*keep)(const ps_row *, const char *), const char *arg)
{
    size_t k = 0;
    for (size_t i = 0; i < st->nrows; i++) {
        if (keep(&st->rows[i], arg))
            st->rows[k++] = st->rows[i];
        else
            row_free(&st->rows[i]);
    }
    st->nrows = k;
}

static bool in_ns(const ps_row *r, const char *ns)
{
    return strcmp(r->ns, ns) == 0;
}

static bool has_substr(const ps_row *r, const char *s)
{
    return strstr(r->name, s) != NULL;
}

/* istioctl >= 1.30 -o json: drop ClientConfigs whose metadata NAMESPACE differs. */
static void filter_doc_ns(json_t *resp, const char *ns)
{
    json_t *res = json_object_get(resp, "resources");
    for (size_t i = json_array_size(res); i-- > 0;) {
        const json_t *md =
            json_object_get(json_object_get(json_array_get(res, i), "node"), "metadata");
        if (strcmp(js(md, "NAMESPACE"), ns) != 0)
            json_array_remove(res, i);
    }
}

void ps_filter_namespace(ps_state *st, const char *ns)
{
    keep_rows(st, in_ns, ns);
    for (size_t i = 0; i < st->ndocs; i++)
        filter_doc_ns(st->docs[i].resp, ns);
}

void ps_filter_substring(ps_state *st, const char *substr)
{
    keep_rows(st, has_substr, substr);
}

static bool connected(const ps_row *r, const char *unused)
{
    (void)unused;
    return !r->disconnected;
}

/* Drops ClientConfigs weft marked disconnected (metadata WEFT_DISCONNECTED_FOR, row_doc). */
static void filter_doc_connected(json_t *resp)
{
    json_t *res = json_object_get(resp, "resources");
    for (size_t i = json_array_size(res); i-- > 0;) {
        const json_t *md =
            json_object_get(json_object_get(json_array_get(res, i), "node"), "metadata");
        if (json_object_get(md, "WEFT_DISCONNECTED_FOR"))
            json_array_remove(res, i);
    }
}

void ps_filter_connected(ps_state *st)
{
    keep_rows(st, connected, NULL);
    for (size_t i = 0; i < st->ndocs; i++)
        filter_doc_connected(st->docs[i].resp);
}

static int cmp_name(const void *a, const void *b)
{
    const ps_row *x = a, *y = b;
    return strcmp(x->name, y->name);
}

static int cmp_cluster_name(const void *a, const void *b)
{
    const ps_row *x = a, *y = b;
    int c = strcmp(x->cluster, y->cluster);
    return c ? c : strcmp(x->name, y->name);
}

void ps_sort(ps_state *st)
{
    if (st->nrows > 1)
        qsort(st->rows, st->nrows, sizeof st->rows[0],
              st->legacy_order ? cmp_cluster_name : cmp_name);
}

/* ---- DiscoveryResponse documents of /debug/syncz sources (for -o json|yaml) ---------------- */

static void rfc3339(time_t t, char *buf, size_t cap)
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static json_t *type_doc(const ps_type *t, time_t now)
{
    json_t *g = json_object();
    json_object_set_new(g, "typeUrl", json_string(t->url));
    json_object_set_new(g, "configStatus", json_string(t->status));
    if (t->has_age) {
        char ts[40];
        rfc3339(now - t->age_s, ts, sizeof ts);
        json_object_set_new(g, "lastUpdated", json_string(ts));
    }
    if (t->version_acked)
        json_object_set_new(g, "versionInfo", json_string(t->version_acked));
    if (t->error)
        json_object_set_new(g, "errorState", json_pack("{s:s}", "details", t->error));
    /* istiod's /debug/syncz names (camelCase as in its `resources` map), weft's versionSent */
    const struct {
        const char *key, *val;
    } extra[] = {{"sent", t->nonce_sent},
                 {"acked", t->nonce_acked},
                 {"sentTime", t->sent_time},
                 {"versionSent", t->version_sent}};
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++)
        if (extra[i].val)
            json_object_set_new(g, extra[i].key, json_string(extra[i].val));
    return g;
}

/* A CSDS ClientConfig for a row (weft's disconnected proxies carry
 * metadata WEFT_DISCONNECTED_FOR = the time since the stream ended). */
static json_t *row_doc(const ps_row *r, time_t now)
{
    json_t *md = json_pack("{s:s,s:s,s:s}", "CLUSTER_ID", r->cluster, "ISTIO_VERSION", r->version,
                           "NAMESPACE", r->ns);
    if (md && r->disconnected) {
        char age[32];
        ps_human_duration(r->disconnected_for_s, age, sizeof age);
        json_object_set_new(md, "WEFT_DISCONNECTED_FOR", json_string(age));
    }
    json_t *gs = json_array();
    for (size_t i = 0; gs && i < r->ntypes; i++)
        if (strcmp(r->types[i].status, "UNKNOWN") != 0)
            json_array_append_new(gs, type_doc(&r->types[i], now));
    return json_pack("{s:s,s:{s:s,s:o},s:o}", "@type", PS_CLIENT_CONFIG, "node", "id", r->name,
                     "metadata", md, "genericXdsConfigs", gs);
}

static json_t *rows_doc(const ps_state *st, size_t first, const char *istiod)
{
    json_t *res = json_array();
    for (size_t i = first; res && i < st->nrows; i++)
        json_array_append_new(res, row_doc(&st->rows[i], st->now));
    json_t *ident = json_pack("{s:s,s:s}", "Component", "weft-pilot", "ID", istiod);
    char *id = ident ? json_dumps(ident, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(ident);
    json_t *doc = NULL;
    if (res && id && json_array_size(res) > 0)
        doc = json_pack("{s:o,s:s,s:{s:s}}", "resources", res, "typeUrl", PS_CLIENT_CONFIG,
                        "controlPlane", "identifier", id);
    else if (res && id)
        doc = (json_decref(res), json_object());
    else
        json_decref(res);
    free(id);
    return doc;
}
