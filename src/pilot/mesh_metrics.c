/*
 * mesh_metrics.c - the Istio metrics store (mesh_metrics.h): a scrape's tuples, the per-target
 * increases, rounds, and windows over them.
 */
#include "pilot/mesh_metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fnv.h"
#include "pilot/mesh_metrics_text.h"

const char *const wf_mm_label_names[WF_MM_NLABELS] = {
    "reporter",
    "source_workload",
    "source_workload_namespace",
    "source_app",
    "source_version",
    "destination_service",
    "destination_workload",
    "destination_workload_namespace",
    "destination_app",
    "destination_version",
    "request_protocol",
    "response_code",
    "response_flags",
    "connection_security_policy",
    "grpc_response_status",
};

const double wf_mm_bounds[WF_MM_NBOUNDS] = {0.5,   1,      5,      10,      25,     50,    100,
                                            250,   500,    1000,   2500,    5000,   10000, 30000,
                                            60000, 300000, 600000, 1800000, 3600000};

#define KEY_SEP '\x1f'

/* ---- a tuple of the store ---- */

typedef struct {
    char *key;                      /* the label values joined by KEY_SEP */
    const char *lab[WF_MM_NLABELS]; /* into lab_buf */
    char *lab_buf;                  /* the key with NULs for separators */
    bool gateway_source;
    bool acc_set;         /* acc holds a non-zero increase */
    double acc[WF_MM_NV]; /* this round's increase so far */
    float fine[WF_MM_FINE_SLOTS][WF_MM_NV];
    float coarse[WF_MM_COARSE_SLOTS][WF_MM_NV];
} mm_tuple;

struct wf_mm_store {
    mm_tuple **tup;
    size_t n, cap;
    uint32_t *index; /* open addressing: tuple position + 1, 0 = empty */
    size_t index_cap;
    size_t key_bytes;
    /* the rounds: fine ring (end time, duration) and coarse slots (slot number, time covered) */
    uint64_t rounds;
    int64_t fine_end[WF_MM_FINE_SLOTS], fine_dt[WF_MM_FINE_SLOTS];
    int64_t coarse_k[WF_MM_COARSE_SLOTS], coarse_ms[WF_MM_COARSE_SLOTS];
    int64_t last_end;
};

/* ---- a target's last values (sorted by key) ---- */

typedef struct {
    char *key;
    double v[WF_MM_NV];
} mm_entry;

struct wf_mm_target {
    mm_entry *e;
    size_t n;
    bool scraped; /* a baseline exists */
};

const char *wf_mm_server_state_name(double state)
{
    static const char *const names[] = {"LIVE", "DRAINING", "PRE_INITIALIZING", "INITIALIZING"};
    if (state >= 0 && state <= 3 && state == floor(state))
        return names[(int)state];
    return "UNKNOWN";
}

wf_mm_store *wf_mm_store_new(void)
{
    return calloc(1, sizeof(wf_mm_store));
}

static void tuple_free(mm_tuple *t)
{
    if (t) {
        free(t->key);
        free(t->lab_buf);
        free(t);
    }
}

void wf_mm_store_free(wf_mm_store *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        tuple_free(s->tup[i]);
    free(s->tup);
    free(s->index);
    free(s);
}

wf_mm_target *wf_mm_target_new(void)
{
    return calloc(1, sizeof(wf_mm_target));
}

static void entries_free(mm_entry *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(e[i].key);
    free(e);
}

void wf_mm_target_free(wf_mm_target *t)
{
    if (t) {
        entries_free(t->e, t->n);
        free(t);
    }
}

/* ---- the store's index ---- */

static uint64_t key_hash(const char *k)
{
    return wf_fnv32a(WF_FNV32_OFFSET, k);
}

static int index_rebuild(wf_mm_store *s, size_t want)
{
    size_t cap = 64;
    while (cap < want * 2)
        cap *= 2;
    uint32_t *ix = calloc(cap, sizeof *ix);
    if (!ix)
        return -1;
    for (size_t i = 0; i < s->n; i++) {
        size_t h = (size_t)key_hash(s->tup[i]->key) & (cap - 1);
        while (ix[h])
            h = (h + 1) & (cap - 1);
        ix[h] = (uint32_t)(i + 1);
    }
    free(s->index);
    s->index = ix;
    s->index_cap = cap;
    return 0;
}

static mm_tuple *tuple_find(const wf_mm_store *s, const char *key)
{
    if (!s->index_cap)
        return NULL;
    size_t h = (size_t)key_hash(key) & (s->index_cap - 1);
    while (s->index[h]) {
        mm_tuple *t = s->tup[s->index[h] - 1];
        if (strcmp(t->key, key) == 0)
            return t;
        h = (h + 1) & (s->index_cap - 1);
    }
    return NULL;
}

static mm_tuple *tuple_new(const char *key)
{
    mm_tuple *t = calloc(1, sizeof *t);
    size_t n = strlen(key);
    if (!t || !(t->key = strdup(key)) || !(t->lab_buf = strdup(key))) {
        tuple_free(t);
        return NULL;
    }
    char *p = t->lab_buf;
    for (int i = 0; i < WF_MM_NLABELS; i++) {
        t->lab[i] = p;
        char *sep = strchr(p, KEY_SEP);
        if (sep) {
            *sep = '\0';
            p = sep + 1;
        } else {
            p += strlen(p); /* fewer separators than labels: the rest are "" */
        }
    }
    (void)n;
    return t;
}

static mm_tuple *tuple_get(wf_mm_store *s, const char *key)
{
    mm_tuple *t = tuple_find(s, key);
    if (t || s->n >= WF_MM_MAX_TUPLES)
        return t;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        mm_tuple **v = realloc(s->tup, cap * sizeof *v);
        if (!v)
            return NULL;
        s->tup = v;
        s->cap = cap;
    }
    if ((s->n + 1) * 2 > s->index_cap && index_rebuild(s, s->n + 1) != 0)
        return NULL;
    if (!(t = tuple_new(key)))
        return NULL;
    s->tup[s->n++] = t;
    s->key_bytes += 2 * (strlen(key) + 1);
    size_t h = (size_t)key_hash(key) & (s->index_cap - 1);
    while (s->index[h])
        h = (h + 1) & (s->index_cap - 1);
    s->index[h] = (uint32_t)s->n;
    return t;
}

/* ---- one scrape: its tuples while parsing ---- */

#define BUILD_CAP (WF_MM_MAX_TARGET_TUPLES * 2) /* open addressing slots */

typedef struct {
    mm_entry *e; /* WF_MM_MAX_TARGET_TUPLES */
    size_t n;
    uint16_t slot[BUILD_CAP]; /* entry + 1 */
    wf_mm_scrape_info *info;
    char key[WF_PROM_MAX_LINE];
} mm_build;

typedef enum { M_NONE, M_REQ, M_BUCKET, M_SUM, M_COUNT, M_SENT, M_RECV, M_OPEN, M_CLOSE } mm_kind;

static const struct {
    const char *name;
    mm_kind kind;
} metric_names[] = {
    {"istio_requests_total", M_REQ},
    {"istio_request_duration_milliseconds_bucket", M_BUCKET},
    {"istio_request_duration_milliseconds_sum", M_SUM},
    {"istio_request_duration_milliseconds_count", M_COUNT},
    {"istio_tcp_sent_bytes_total", M_SENT},
    {"istio_tcp_received_bytes_total", M_RECV},
    {"istio_tcp_connections_opened_total", M_OPEN},
    {"istio_tcp_connections_closed_total", M_CLOSE},
};

static const char *const gauge_names[] = {"envoy_server_state",
                                          "envoy_server_days_until_first_cert_expiring",
                                          "envoy_control_plane_connected_state"};

static bool want_name(void *ud, const char *name, size_t len)
{
    (void)ud;
    if (len > 6 && memcmp(name, "istio_", 6) == 0) {
        for (size_t i = 0; i < sizeof metric_names / sizeof metric_names[0]; i++)
            if (strlen(metric_names[i].name) == len && memcmp(metric_names[i].name, name, len) == 0)
                return true;
        return false;
    }
    for (size_t i = 0; i < 3; i++)
        if (strlen(gauge_names[i]) == len && memcmp(gauge_names[i], name, len) == 0)
            return true;
    return false;
}

static mm_kind kind_of(const char *name)
{
    for (size_t i = 0; i < sizeof metric_names / sizeof metric_names[0]; i++)
        if (strcmp(metric_names[i].name, name) == 0)
            return metric_names[i].kind;
    return M_NONE;
}

/* The sample's tuple key into b->key; false when too long. */
static bool build_key(mm_build *b, const wf_prom_sample *smp)
{
    size_t o = 0;
    for (int i = 0; i < WF_MM_NLABELS; i++) {
        const char *v = wf_prom_label(smp, wf_mm_label_names[i]);
        size_t n = v ? strlen(v) : 0;
        if (o + n + 2 > sizeof b->key)
            return false;
        for (size_t j = 0; j < n; j++) /* a separator inside a value would split it */
            b->key[o + j] = v[j] == KEY_SEP ? '?' : v[j];
        o += n;
        if (i + 1 < WF_MM_NLABELS)
            b->key[o++] = KEY_SEP;
    }
    b->key[o] = '\0';
    return true;
}

static mm_entry *build_entry(mm_build *b)
{
    size_t h = (size_t)key_hash(b->key) & (BUILD_CAP - 1);
    while (b->slot[h]) {
        mm_entry *e = &b->e[b->slot[h] - 1];
        if (strcmp(e->key, b->key) == 0)
            return e;
        h = (h + 1) & (BUILD_CAP - 1);
    }
    if (b->n == WF_MM_MAX_TARGET_TUPLES) {
        b->info->dropped++;
        return NULL;
    }
    mm_entry *e = &b->e[b->n];
    memset(e, 0, sizeof *e);
    if (!(e->key = strdup(b->key)))
        return NULL;
    b->slot[h] = (uint16_t)++b->n;
    return e;
}

static int bound_index(const char *le)
{
    char *end = NULL;
    double v = strtod(le, &end);
    if (!le[0] || *end)
        return -2;
    if (isinf(v))
        return -1;
    for (int i = 0; i < WF_MM_NBOUNDS; i++)
        if (fabs(v - wf_mm_bounds[i]) <= 1e-9 * wf_mm_bounds[i])
            return i;
    return -2;
}

static void gauge(mm_build *b, const wf_prom_sample *smp)
{
    wf_mm_scrape_info *in = b->info;
    if (strcmp(smp->name, gauge_names[0]) == 0) {
        in->has_state = true;
        in->server_state = smp->value;
    } else if (strcmp(smp->name, gauge_names[1]) == 0) {
        in->has_cert_days = true;
        in->cert_days = smp->value;
    } else {
        in->has_cp = true;
        in->cp_connected = smp->value;
    }
}

static int on_sample(void *ud, const wf_prom_sample *smp)
{
    mm_build *b = ud;
    mm_kind k = kind_of(smp->name);
    if (k == M_NONE) {
        gauge(b, smp);
        return 0;
    }
    if (!isfinite(smp->value) || smp->value < 0)
        return 0; /* a counter is finite and not negative: nothing to add */
    int bi = 0;
    if (k == M_BUCKET) {
        const char *le = wf_prom_label(smp, "le");
        bi = le ? bound_index(le) : -2;
        if (bi == -1)
            return 0; /* +Inf: the _count line carries it */
        if (bi < 0) {
            b->info->ignored_buckets++;
            return 0;
        }
    }
    if (!build_key(b, smp)) {
        b->info->dropped++;
        return 0;
    }
    mm_entry *e = build_entry(b);
    if (!e)
        return b->n == WF_MM_MAX_TARGET_TUPLES ? 0 : -2; /* -2: out of memory */
    static const int idx[] = {[M_REQ] = WF_MM_V_REQUESTS,      [M_SUM] = WF_MM_V_DUR_SUM,
                              [M_COUNT] = WF_MM_V_DUR_COUNT,   [M_SENT] = WF_MM_V_TCP_SENT,
                              [M_RECV] = WF_MM_V_TCP_RECEIVED, [M_OPEN] = WF_MM_V_TCP_OPENED,
                              [M_CLOSE] = WF_MM_V_TCP_CLOSED};
    /* the same tuple may come in several lines (labels summed over): add */
    if (k == M_BUCKET)
        e->v[WF_MM_V_BUCKET0 + bi] += smp->value;
    else
        e->v[idx[k]] += smp->value;
    return 0;
}

static int entry_cmp(const void *a, const void *b)
{
    return strcmp(((const mm_entry *)a)->key, ((const mm_entry *)b)->key);
}

/* The increase from prev (NULL: from 0) to cur, reset-aware (Prometheus: a value that went
 * down restarted from 0). Returns whether any part is non-zero. */
static bool increase(const double *prev, const double *cur, double *out)
{
    bool any = false;
    bool hist_reset = prev && cur[WF_MM_V_DUR_COUNT] < prev[WF_MM_V_DUR_COUNT];
    for (int i = 0; i < WF_MM_NV; i++) {
        bool hist = i == WF_MM_V_DUR_COUNT || i == WF_MM_V_DUR_SUM || i >= WF_MM_V_BUCKET0;
        double p = prev ? prev[i] : 0;
        double d = (hist && hist_reset) || cur[i] < p ? cur[i] : cur[i] - p;
        out[i] = d;
        any |= d != 0;
    }
    return any;
}

/* Adds the increases of the new entries (sorted) over t's previous ones into the store. */
static void account(wf_mm_store *s, const wf_mm_target *t, bool router, const mm_entry *e, size_t n,
                    wf_mm_scrape_info *info)
{
    size_t j = 0;
    double d[WF_MM_NV];
    for (size_t i = 0; i < n; i++) {
        int c = 1;
        while (j < t->n && (c = strcmp(t->e[j].key, e[i].key)) < 0)
            j++;
        const double *prev = j < t->n && c == 0 ? t->e[j].v : NULL;
        if (!t->scraped || !increase(prev, e[i].v, d))
            continue;
        mm_tuple *tu = tuple_get(s, e[i].key);
        if (!tu) {
            info->dropped++;
            continue;
        }
        for (int k = 0; k < WF_MM_NV; k++)
            tu->acc[k] += d[k];
        tu->acc_set = true;
        if (router && strcmp(tu->lab[WF_MM_REPORTER], "source") == 0)
            tu->gateway_source = true;
    }
}

static bool known(const char *s)
{
    return s[0] && strcmp(s, "unknown") != 0;
}

/* The workload the target itself is (mesh_metrics.h wf_mm_scrape_info.workload). */
static void own_workload(const mm_entry *e, size_t n, wf_mm_scrape_info *info)
{
    for (size_t i = 0; i < n && !info->workload[0]; i++) {
        mm_tuple *t = tuple_new(e[i].key); /* split into labels */
        if (!t)
            return;
        bool src = strcmp(t->lab[WF_MM_REPORTER], "source") == 0;
        const char *wl = t->lab[src ? WF_MM_SOURCE_WORKLOAD : WF_MM_DESTINATION_WORKLOAD];
        const char *ns =
            t->lab[src ? WF_MM_SOURCE_WORKLOAD_NAMESPACE : WF_MM_DESTINATION_WORKLOAD_NAMESPACE];
        const char *app = t->lab[src ? WF_MM_SOURCE_APP : WF_MM_DESTINATION_APP];
        const char *ver = t->lab[src ? WF_MM_SOURCE_VERSION : WF_MM_DESTINATION_VERSION];
        if (known(wl))
            snprintf(info->workload, sizeof info->workload, "%s", wl);
        else if (known(app)) /* no WORKLOAD_NAME: named as the graph names it (ui_graph.h) */
            snprintf(info->workload, sizeof info->workload, "%s%s%s", app, known(ver) ? "-" : "",
                     known(ver) ? ver : "");
        if (info->workload[0])
            snprintf(info->workload_ns, sizeof info->workload_ns, "%s", ns);
        tuple_free(t);
    }
}

int wf_mm_ingest(wf_mm_store *s, wf_mm_target *t, bool router, const char *text, size_t len,
                 wf_mm_scrape_info *info, char *err, size_t cap)
{
    memset(info, 0, sizeof *info);
    mm_build *b = calloc(1, sizeof *b);
    mm_entry *e = calloc(WF_MM_MAX_TARGET_TUPLES, sizeof *e);
    if (!b || !e) {
        free(b);
        free(e);
        snprintf(err, cap, "out of memory");
        return -1;
    }
    b->e = e;
    b->info = info;
    int rc = wf_prom_parse(text, len, want_name, on_sample, b, err, cap);
    if (rc != 0) {
        if (rc == -2)
            snprintf(err, cap, "out of memory");
        entries_free(e, b->n);
        free(b);
        return -1;
    }
    size_t n = b->n;
    free(b);
    qsort(e, n, sizeof *e, entry_cmp);
    info->tuples = n;
    own_workload(e, n, info);
    account(s, t, router, e, n, info);
    entries_free(t->e, t->n);
    mm_entry *shrunk = n ? realloc(e, n * sizeof *e) : NULL;
    if (!n)
        free(e);
    t->e = n ? (shrunk ? shrunk : e) : NULL;
    t->n = n;
    t->scraped = true;
    return 0;
}

/* ---- rounds ---- */

static bool slots_zero(const mm_tuple *t)
{
    for (int i = 0; i < WF_MM_FINE_SLOTS; i++)
        for (int k = 0; k < WF_MM_NV; k++)
            if (t->fine[i][k] != 0)
                return false;
    for (int i = 0; i < WF_MM_COARSE_SLOTS; i++)
        for (int k = 0; k < WF_MM_NV; k++)
            if (t->coarse[i][k] != 0)
                return false;
    return true;
}

void wf_mm_round_end(wf_mm_store *s, int64_t now_ms)
{
    int64_t dt = s->last_end && now_ms > s->last_end ? now_ms - s->last_end : 0;
    int fi = (int)(s->rounds % WF_MM_FINE_SLOTS);
    int64_t k = now_ms / WF_MM_COARSE_MS;
    int ci = (int)(k % WF_MM_COARSE_SLOTS);
    bool new_coarse = s->coarse_k[ci] != k;
    s->fine_end[fi] = now_ms;
    s->fine_dt[fi] = dt;
    if (new_coarse) {
        s->coarse_k[ci] = k;
        s->coarse_ms[ci] = 0;
    }
    s->coarse_ms[ci] += dt;
    size_t kept = 0;
    for (size_t i = 0; i < s->n; i++) {
        mm_tuple *t = s->tup[i];
        if (new_coarse)
            memset(t->coarse[ci], 0, sizeof t->coarse[ci]);
        for (int v = 0; v < WF_MM_NV; v++) {
            t->fine[fi][v] = (float)t->acc[v];
            t->coarse[ci][v] += (float)t->acc[v];
        }
        memset(t->acc, 0, sizeof t->acc);
        t->acc_set = false;
        if (slots_zero(t)) {
            s->key_bytes -= 2 * (strlen(t->key) + 1);
            tuple_free(t);
        } else {
            s->tup[kept++] = t;
        }
    }
    bool dropped = kept != s->n;
    s->n = kept;
    if (dropped)
        index_rebuild(s, s->n); /* on failure the old index is kept: rebuilt again next time */
    s->rounds++;
    s->last_end = now_ms;
}

uint64_t wf_mm_rounds(const wf_mm_store *s)
{
    return s->rounds;
}

int64_t wf_mm_last_round_ms(const wf_mm_store *s)
{
    return s->last_end;
}

size_t wf_mm_tuple_count(const wf_mm_store *s)
{
    return s->n;
}

size_t wf_mm_memory(const wf_mm_store *s)
{
    return sizeof *s + s->n * sizeof(mm_tuple) + s->key_bytes + s->cap * sizeof(mm_tuple *) +
           s->index_cap * sizeof(uint32_t);
}

/* ---- windows ---- */

double wf_mm_window(const wf_mm_store *s, unsigned window_s,
                    void (*fn)(void *ud, const wf_mm_series_view *v), void *ud)
{
    if (!s->rounds)
        return 0;
    if (window_s < 1)
        window_s = 1;
    if (window_s > WF_MM_MAX_WINDOW_S)
        window_s = WF_MM_MAX_WINDOW_S;
    int64_t from = s->last_end - (int64_t)window_s * 1000;
    /* the fine rounds cover the window when the oldest one kept starts at or before it */
    uint64_t nf = s->rounds < WF_MM_FINE_SLOTS ? s->rounds : WF_MM_FINE_SLOTS;
    int oldest = (int)((s->rounds - nf) % WF_MM_FINE_SLOTS);
    bool fine = s->fine_end[oldest] - s->fine_dt[oldest] <= from || s->rounds <= WF_MM_FINE_SLOTS;
    bool use[WF_MM_COARSE_SLOTS > WF_MM_FINE_SLOTS ? WF_MM_COARSE_SLOTS : WF_MM_FINE_SLOTS] = {0};
    int64_t covered = 0;
    int nslots = fine ? WF_MM_FINE_SLOTS : WF_MM_COARSE_SLOTS;
    for (int i = 0; i < nslots; i++) {
        if (fine) {
            use[i] = (uint64_t)i < s->rounds && s->fine_end[i] > from && s->fine_dt[i] > 0;
            covered += use[i] ? s->fine_dt[i] : 0;
        } else {
            use[i] = s->coarse_ms[i] > 0 && (s->coarse_k[i] + 1) * WF_MM_COARSE_MS > from;
            covered += use[i] ? s->coarse_ms[i] : 0;
        }
    }
    if (covered <= 0)
        return 0;
    wf_mm_values inc;
    for (size_t i = 0; i < s->n; i++) {
        const mm_tuple *t = s->tup[i];
        memset(&inc, 0, sizeof inc);
        bool any = false;
        for (int j = 0; j < nslots; j++) {
            if (!use[j])
                continue;
            const float *v = fine ? t->fine[j] : t->coarse[j];
            for (int k = 0; k < WF_MM_NV; k++) {
                inc.v[k] += v[k];
                any |= v[k] != 0;
            }
        }
        if (!any)
            continue;
        wf_mm_series_view view = {
            .labels = t->lab, .inc = &inc, .gateway_source = t->gateway_source};
        fn(ud, &view);
    }
    return (double)covered / 1000.0;
}

double wf_mm_quantile(double q, const double *bounds, const double *cum, size_t n, double total)
{
    if (!(total > 0) || isnan(q))
        return NAN;
    if (q < 0)
        return -INFINITY;
    if (q > 1)
        return INFINITY;
    double rank = q * total;
    size_t b = 0;
    while (b < n && cum[b] < rank)
        b++;
    if (b == n) /* in the +Inf bucket */
        return n ? bounds[n - 1] : NAN;
    double start = 0, end = bounds[b], count = cum[b];
    if (b > 0) {
        start = bounds[b - 1];
        count -= cum[b - 1];
        rank -= cum[b - 1];
    }
    if (count <= 0)
        return end;
    return start + (end - start) * (rank / count);
}
