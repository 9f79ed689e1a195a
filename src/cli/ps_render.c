/*
 * ps_render.c - proxy-status tables (see proxy_status.h), Go tabwriter padding 5:
 *  classic  NAME CLUSTER CDS LDS EDS RDS ECDS ISTIOD VERSION   (istioctl <= 1.26, weft default)
 *  types    NAME CLUSTER ISTIOD VERSION SUBSCRIBED TYPES       (istioctl >= 1.27)
 *  verbose  NAME CLUSTER <type...> ISTIOD VERSION              (istioctl >= 1.27 -v 1)
 * Cell text follows istioctl's xDS writer: UNKNOWN -> IGNORED, NOT_SENT -> NOT SENT, others the
 * enum name plus " (<HumanDuration>)" when the age is known. weft adds DISCONNECTED (<age>).
 */
#include <stdlib.h>
#include <string.h>

#include "cli/proxy_status.h"
#include "cli/tabwriter.h"

#define PS_PADDING 5

void ps_human_duration(long s, char *buf, size_t cap)
{
    long m = s / 60, h = s / 3600, d = h / 24;
    if (s < -1)
        snprintf(buf, cap, "<invalid>");
    else if (s < 0)
        snprintf(buf, cap, "0s");
    else if (s < 120)
        snprintf(buf, cap, "%lds", s);
    else if (m < 10 && s % 60 == 0)
        snprintf(buf, cap, "%ldm", m);
    else if (m < 10)
        snprintf(buf, cap, "%ldm%lds", m, s % 60);
    else if (m < 180)
        snprintf(buf, cap, "%ldm", m);
    else if (h < 8 && m % 60 == 0)
        snprintf(buf, cap, "%ldh", h);
    else if (h < 8)
        snprintf(buf, cap, "%ldh%ldm", h, m % 60);
    else if (h < 48)
        snprintf(buf, cap, "%ldh", h);
    else if (h < 24 * 8)
        snprintf(buf, cap, h % 24 ? "%ldd%ldh" : "%ldd", d, h % 24);
    else if (h < 24 * 365 * 2)
        snprintf(buf, cap, "%ldd", d);
    else if (h < 24 * 365 * 8)
        snprintf(buf, cap, d % 365 ? "%ldy%ldd" : "%ldy", d / 365, d % 365);
    else
        snprintf(buf, cap, "%ldy", d / 365);
}

static const ps_type *find_type(const ps_row *r, const char *url)
{
    for (size_t i = 0; i < r->ntypes; i++)
        if (strcmp(r->types[i].url, url) == 0)
            return &r->types[i];
    return NULL;
}

/* The cell text of one type of a row (t NULL = not subscribed). */
static void cell(const ps_row *r, const ps_type *t, char *buf, size_t cap)
{
    char age[32];
    if (r->disconnected) {
        ps_human_duration(r->disconnected_for_s, age, sizeof age);
        snprintf(buf, cap, "DISCONNECTED (%s)", age);
    } else if (!t || strcmp(t->status, "UNKNOWN") == 0) {
        snprintf(buf, cap, "IGNORED");
    } else if (strcmp(t->status, "NOT_SENT") == 0) {
        snprintf(buf, cap, "NOT SENT");
    } else if (t->display) {
        snprintf(buf, cap, "%s", t->display);
    } else if (t->has_age) {
        ps_human_duration(t->age_s, age, sizeof age);
        snprintf(buf, cap, "%s (%s)", t->status, age);
    } else {
        snprintf(buf, cap, "%s", t->status);
    }
}

/* istioctl's short type names (pkg/xds GetShortType); NULL: show the full URL. */
static const char *short_type(const char *url)
{
    static const struct {
        const char *suffix, *name;
    } names[] = {
        {"envoy.config.cluster.v3.Cluster", "CDS"},
        {"envoy.config.listener.v3.Listener", "LDS"},
        {"envoy.config.endpoint.v3.ClusterLoadAssignment", "EDS"},
        {"envoy.config.route.v3.RouteConfiguration", "RDS"},
        {"envoy.config.core.v3.TypedExtensionConfig", "ECDS"},
        {"envoy.extensions.transport_sockets.tls.v3.Secret", "SDS"},
        {"istio.networking.nds.v1.NameTable", "NDS"},
        {"istio.mesh.v1alpha1.ProxyConfig", "PCDS"},
        {"istio.workload.Address", "WDS"},
        {"istio.workload.Workload", "WDS"},
        {"istio.security.Authorization", "WADS"},
    };
    const char *prefix = "type.googleapis.com/";
    if (strncmp(url, prefix, strlen(prefix)) != 0)
        return NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(url + strlen(prefix), names[i].suffix) == 0)
            return names[i].name;
    return NULL;
}

static const char *type_label(const char *url)
{
    const char *s = short_type(url);
    return s ? s : url;
}

static int finish(wf_tw *tw, FILE *out)
{
    int rc = wf_tw_flush(tw, out, NULL);
    wf_tw_free(tw);
    return rc;
}

int ps_print_classic(const ps_state *st, FILE *out)
{
    static const char *const urls[] = {PS_TYPE_CDS, PS_TYPE_LDS, PS_TYPE_EDS, PS_TYPE_RDS,
                                       PS_TYPE_ECDS};
    wf_tw tw;
    wf_tw_init(&tw, PS_PADDING);
    wf_tw_puts(&tw, "NAME\tCLUSTER\tCDS\tLDS\tEDS\tRDS\tECDS\tISTIOD\tVERSION\n");
    for (size_t i = 0; i < st->nrows; i++) {
        const ps_row *r = &st->rows[i];
        wf_tw_printf(&tw, "%s\t%s\t", r->name, r->cluster);
        for (size_t k = 0; k < sizeof urls / sizeof urls[0]; k++) {
            char c[96];
            cell(r, find_type(r, urls[k]), c, sizeof c);
            wf_tw_printf(&tw, "%s\t", c);
        }
        wf_tw_printf(&tw, "%s\t%s\n", r->istiod, r->version);
    }
    return finish(&tw, out);
}

/* The distinct type URLs of all rows (borrowed strings), in first-seen order. */
typedef struct url_set {
    const char **v;
    size_t n;
} url_set;

static int url_add(url_set *s, const char *url)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i], url) == 0)
            return 0;
    const char **n = realloc(s->v, (s->n + 1) * sizeof *n);
    if (!n)
        return -1;
    s->v = n;
    s->v[s->n++] = url;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Subscribed (status != UNKNOWN) types seen: CDS, LDS, EDS, RDS first, then the rest by URL. */
static int subscribed_order(const ps_state *st, url_set *out)
{
    static const char *const core[] = {PS_TYPE_CDS, PS_TYPE_LDS, PS_TYPE_EDS, PS_TYPE_RDS};
    url_set seen = {0};
    for (size_t i = 0; i < st->nrows; i++)
        for (size_t k = 0; k < st->rows[i].ntypes; k++)
            if (strcmp(st->rows[i].types[k].status, "UNKNOWN") != 0 &&
                url_add(&seen, st->rows[i].types[k].url) != 0)
                return free(seen.v), -1;
    int rc = 0;
    for (size_t c = 0; c < 4 && rc == 0; c++)
        for (size_t i = 0; i < seen.n; i++)
            if (strcmp(seen.v[i], core[c]) == 0)
                rc = url_add(out, core[c]);
    size_t nrest = out->n;
    for (size_t i = 0; i < seen.n && rc == 0; i++)
        rc = url_add(out, seen.v[i]);
    if (rc == 0 && out->n - nrest > 1)
        qsort(out->v + nrest, out->n - nrest, sizeof *out->v, cmp_str);
    free(seen.v);
    return rc;
}

static void subscribed_cell(const ps_row *r, const url_set *order, wf_tw *tw)
{
    if (r->disconnected) {
        char c[64];
        cell(r, NULL, c, sizeof c);
        wf_tw_printf(tw, "%s\n", c);
        return;
    }
    size_t n = 0;
    for (size_t i = 0; i < order->n; i++) {
        const ps_type *t = find_type(r, order->v[i]);
        n += t && strcmp(t->status, "UNKNOWN") != 0;
    }
    if (n == 0) {
        wf_tw_puts(tw, "0\n");
        return;
    }
    wf_tw_printf(tw, "%zu (", n);
    size_t k = 0;
    for (size_t i = 0; i < order->n; i++) {
        const ps_type *t = find_type(r, order->v[i]);
        if (t && strcmp(t->status, "UNKNOWN") != 0)
            wf_tw_printf(tw, "%s%s", k++ ? "," : "", type_label(order->v[i]));
    }
    wf_tw_puts(tw, ")\n");
}

int ps_print_types(const ps_state *st, FILE *out)
{
    url_set order = {0};
    if (subscribed_order(st, &order) != 0)
        return -1;
    wf_tw tw;
    wf_tw_init(&tw, PS_PADDING);
    wf_tw_puts(&tw, "NAME\tCLUSTER\tISTIOD\tVERSION\tSUBSCRIBED TYPES\n");
    for (size_t i = 0; i < st->nrows; i++) {
        const ps_row *r = &st->rows[i];
        wf_tw_printf(&tw, "%s\t%s\t%s\t%s\t", r->name, r->cluster, r->istiod, r->version);
        subscribed_cell(r, &order, &tw);
    }
    free(order.v);
    return finish(&tw, out);
}

int ps_print_verbose(const ps_state *st, FILE *out)
{
    static const char *const core[] = {PS_TYPE_CDS, PS_TYPE_LDS, PS_TYPE_EDS, PS_TYPE_RDS,
                                       PS_TYPE_ECDS};
    url_set cols = {0};
    int rc = 0;
    for (size_t c = 0; c < 5 && rc == 0; c++)
        rc = url_add(&cols, core[c]);
    for (size_t i = 0; i < st->nrows && rc == 0; i++)
        for (size_t k = 0; k < st->rows[i].ntypes && rc == 0; k++)
            rc = url_add(&cols, st->rows[i].types[k].url);
    if (rc != 0)
        return free(cols.v), -1;
    qsort(cols.v, cols.n, sizeof *cols.v, cmp_str);
    wf_tw tw;
    wf_tw_init(&tw, PS_PADDING);
    wf_tw_puts(&tw, "NAME\tCLUSTER\t");
    for (size_t c = 0; c < cols.n; c++)
        wf_tw_printf(&tw, "%s\t", type_label(cols.v[c]));
    wf_tw_puts(&tw, "ISTIOD\tVERSION\n");
    for (size_t i = 0; i < st->nrows; i++) {
        const ps_row *r = &st->rows[i];
        wf_tw_printf(&tw, "%s\t%s\t", r->name, r->cluster);
        for (size_t c = 0; c < cols.n; c++) {
            char buf[96];
            cell(r, find_type(r, cols.v[c]), buf, sizeof buf);
            wf_tw_printf(&tw, "%s\t", buf);
        }
        wf_tw_printf(&tw, "%s\t%s\n", r->istiod, r->version);
    }
    free(cols.v);
    return finish(&tw, out);
}

static int cmp_doc(const void *a, const void *b)
{
    return strcmp(((const ps_doc *)a)->istiod, ((const ps_doc *)b)->istiod);
}

/* Docs sorted by control-plane name (istioctl prints them in Go map order, i.e. random). */
static ps_doc *sorted_docs(const ps_state *st)
{
    ps_doc *d = malloc((st->ndocs ? st->ndocs : 1) * sizeof *d);
    if (d && st->ndocs) {
        memcpy(d, st->docs, st->ndocs * sizeof *d);
        qsort(d, st->ndocs, sizeof *d, cmp_doc);
    }
    return d;
}

int ps_print_json(const ps_state *st, FILE *out)
{
    ps_doc *d = sorted_docs(st);
    if (!d)
        return -1;
    for (size_t i = 0; i < st->ndocs; i++) {
        ps_write_jsonpb(out, d[i].resp);
        fputc('\n', out);
    }
    if (st->ndocs == 0)
        fputs("{\n\n}\n", out);
    free(d);
    return ferror(out) ? -1 : 0;
}

int ps_print_yaml(const ps_state *st, FILE *out)
{
    ps_doc *d = sorted_docs(st);
    if (!d)
        return -1;
    for (size_t i = 0; i < st->ndocs; i++) {
        ps_write_yaml(out, d[i].resp);
        fputc('\n', out);
    }
    if (st->ndocs == 0)
        fputs("{}\n\n", out);
    free(d);
    return ferror(out) ? -1 : 0;
}
