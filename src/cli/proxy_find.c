/*
 * proxy_find.c - resolving POD, POD.NS, POD -n NS and deploy/NAME through weft-pilot's
 * /debug/syncz (see proxy_find.h). Name parsing follows istioctl's inferNsInfo: the namespace
 * is after the last '.' (after the last '/' when a resource type is given).
 */
#include "cli/proxy_find.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/http_client.h"

#define PILOT_TIMEOUT_MS 5000

int wf_pilot_get_json(const char *pilot, const char *path, json_t **out, wf_strbuf *err)
{
    *out = NULL;
    wf_http_resp r;
    wf_strbuf e = WF_STRBUF_INIT;
    if (wf_http_request("GET", pilot, path, PILOT_TIMEOUT_MS, &r, &e) != 0) {
        wf_strbuf_printf(err, "cannot reach weft-pilot at %s: %s", pilot, wf_strbuf_cstr(&e));
        wf_strbuf_free(&e);
        return -1;
    }
    wf_strbuf_free(&e);
    if (r.status != 200) {
        size_t n = r.len > 200 ? 200 : r.len;
        while (n > 0 && (r.body[n - 1] == '\n' || r.body[n - 1] == '\r'))
            n--;
        wf_strbuf_printf(err, "weft-pilot at %s answered GET %s with status %d: %.*s", pilot, path,
                         r.status, (int)n, r.body);
        wf_http_resp_free(&r);
        return -1;
    }
    json_error_t je;
    *out = json_loadb(r.body, r.len, JSON_DECODE_ANY, &je);
    wf_http_resp_free(&r);
    if (!*out) {
        wf_strbuf_printf(err, "weft-pilot at %s: GET %s is not JSON: %s (line %d)", pilot, path,
                         je.text, je.line);
        return -1;
    }
    return 0;
}

void wf_proxy_ref_free(wf_proxy_ref *r)
{
    if (!r)
        return;
    free(r->id);
    free(r->pod);
    free(r->ns);
    free(r->admin);
    free(r->type);
    memset(r, 0, sizeof *r);
}

/* A parsed user name: kind is "pod" or "deployment"; name and ns malloc'd. */
typedef struct wanted {
    bool deploy;
    char *name;
    char *ns;
} wanted;

static bool is_deploy_type(const char *t, size_t n)
{
    static const char *const kinds[] = {"deploy", "deployment", "deployments", "deployment.apps",
                                        "deployments.apps"};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strlen(kinds[i]) == n && strncasecmp(t, kinds[i], n) == 0)
            return true;
    return false;
}

static bool is_pod_type(const char *t, size_t n)
{
    static const char *const kinds[] = {"pod", "pods", "po"};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strlen(kinds[i]) == n && strncasecmp(t, kinds[i], n) == 0)
            return true;
    return false;
}

/* istioctl inferNsInfo + the resource type prefix. Returns 0, or -1 with err. */
static int parse_name(const char *name, const char *ns, wanted *w, wf_strbuf *err)
{
    memset(w, 0, sizeof *w);
    const char *slash = strrchr(name, '/');
    const char *base = name;
    if (slash) {
        size_t tl = (size_t)(slash - name);
        w->deploy = is_deploy_type(name, tl);
        if (!w->deploy && !is_pod_type(name, tl)) {
            wf_strbuf_printf(err,
                             "unsupported resource type %.*s in %s (want a pod or deploy/NAME)",
                             (int)tl, name, name);
            return -1;
        }
        base = slash + 1;
    }
    const char *dot = strrchr(base, '.');
    size_t bl = dot ? (size_t)(dot - base) : strlen(base);
    w->name = strndup(base, bl);
    w->ns = strdup(dot ? dot + 1 : (ns && *ns ? ns : "default"));
    if (!w->name || !w->ns) {
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    if (bl == 0 || w->ns[0] == '\0') {
        wf_strbuf_printf(err, "invalid proxy name %s (want POD, POD.NAMESPACE or deploy/NAME)",
                         name);
        return -1;
    }
    return 0;
}

/* Whether pod (Deployment-made: NAME-<replicaset hash>-<pod hash>) belongs to deploy. */
static bool pod_of_deploy(const char *pod, const char *deploy)
{
    size_t dl = strlen(deploy);
    if (strncmp(pod, deploy, dl) != 0 || pod[dl] != '-')
        return false;
    const char *rest = pod + dl + 1;
    const char *d = strchr(rest, '-');
    return d && d > rest && d[1] != '\0' && !strchr(d + 1, '-');
}

static const char *jstr(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : NULL;
}

/* Whether syncz entry e is the wanted proxy. */
static bool entry_matches(const json_t *e, const wanted *w)
{
    const char *id = jstr(e, "proxy");
    if (!id)
        return false;
    const char *dot = strrchr(id, '.');
    if (!dot || strcmp(dot + 1, w->ns) != 0)
        return false;
    size_t pl = (size_t)(dot - id);
    char *pod = strndup(id, pl);
    if (!pod)
        return false;
    bool ok = w->deploy ? pod_of_deploy(pod, w->name) : strcmp(pod, w->name) == 0;
    free(pod);
    return ok;
}

/* The matching entry, a connected one first. */
static const json_t *find_entry(const json_t *sync, const wanted *w)
{
    const json_t *best = NULL;
    size_t i;
    json_t *e;
    json_array_foreach(sync, i, e)
    {
        if (!entry_matches(e, w))
            continue;
        if (json_is_true(json_object_get(e, "connected")) || !json_object_get(e, "connected"))
            return e;
        if (!best)
            best = e;
    }
    return best;
}

static void list_connected(const json_t *sync, wf_strbuf *err)
{
    size_t i, n = 0;
    json_t *e;
    json_array_foreach(sync, i, e)
    {
        const char *id = jstr(e, "proxy");
        if (!id || json_is_false(json_object_get(e, "connected")))
            continue;
        wf_strbuf_puts(err, n++ ? ", " : "");
        wf_strbuf_puts(err, id);
    }
    if (n == 0)
        wf_strbuf_puts(err, "none");
}

static void not_found(const json_t *sync, const wanted *w, const char *name, wf_strbuf *err)
{
    if (w->deploy)
        wf_strbuf_printf(err, "no pod of deploy/%s in namespace %s (connected proxies: ", w->name,
                         w->ns);
    else
        wf_strbuf_printf(err, "pod %s not found in namespace %s (connected proxies: ", w->name,
                         w->ns);
    list_connected(sync, err);
    wf_strbuf_puts(err, ")");
    (void)name;
}

static int fill_ref(const json_t *e, wf_proxy_ref *out, wf_strbuf *err)
{
    const char *id = jstr(e, "proxy");
    const char *dot = strrchr(id, '.');
    const char *admin = jstr(e, "admin");
    const char *type = jstr(e, "proxy_type");
    out->id = strdup(id);
    out->pod = strndup(id, (size_t)(dot - id));
    out->ns = strdup(dot + 1);
    out->admin = admin && *admin ? strdup(admin) : NULL;
    out->type = strdup(type ? type : "sidecar");
    if (!out->id || !out->pod || !out->ns || !out->type || (admin && *admin && !out->admin)) {
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    if (!out->admin) {
        wf_strbuf_printf(err, "proxy %s has no admin address (WEFT_ADMIN)", id);
        return -1;
    }
    return 0;
}

int wf_proxy_find(const char *pilot, const char *name, const char *ns, wf_proxy_ref *out,
                  wf_strbuf *err)
{
    memset(out, 0, sizeof *out);
    wanted w;
    json_t *sync = NULL;
    int rc = parse_name(name, ns, &w, err);
    if (rc == 0)
        rc = wf_pilot_get_json(pilot ? pilot : WF_DEFAULT_PILOT, "/debug/syncz", &sync, err);
    if (rc == 0 && !json_is_array(sync)) {
        wf_strbuf_printf(err, "weft-pilot at %s: /debug/syncz is not a JSON array",
                         pilot ? pilot : WF_DEFAULT_PILOT);
        rc = -1;
    }
    const json_t *e = rc == 0 ? find_entry(sync, &w) : NULL;
    if (rc == 0 && !e) {
        not_found(sync, &w, name, err);
        rc = -1;
    }
    if (rc == 0)
        rc = fill_ref(e, out, err);
    if (rc != 0)
        wf_proxy_ref_free(out);
    json_decref(sync);
    free(w.name);
    free(w.ns);
    return rc;
}
