/*
 * localmesh_report.c - `weftctl up`'s view of the mesh it started (localmesh_report.h).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/http_client.h"
#include "cli/localmesh_health.h"
#include "cli/localmesh_report.h"
#include "cli/localmesh_state.h"

#define PROBE_TIMEOUT 1000

/* ---- probes ------------------------------------------------------------------------------- */

/* 0 when addr answers 200 on path; else -1 with why in reason. */
int wf_lm_probe(const char *addr, const char *path, wf_strbuf *reason)
{
    wf_http_resp r = {0};
    wf_strbuf err = WF_STRBUF_INIT;
    int rc = -1;
    wf_strbuf_reset(reason);
    if (wf_http_request("GET", addr, path, PROBE_TIMEOUT, &r, &err) != 0) {
        wf_strbuf_puts(reason, wf_strbuf_cstr(&err));
    } else if (r.status == 200) {
        rc = 0;
    } else {
        size_t len = r.body ? strcspn(r.body, "\n") : 0;
        wf_strbuf_printf(reason, "%d %.*s", r.status, (int)(len > 300 ? 300 : len),
                         r.body ? r.body : "");
    }
    wf_http_resp_free(&r);
    wf_strbuf_free(&err);
    return rc;
}

/* ---- what the mesh is doing ------------------------------------------------------------- */

void wf_lm_look_free(wf_lm_look *l)
{
    json_decref(l->syncz);
    json_decref(l->mesh);
    *l = (wf_lm_look){0};
}

static json_t *read_mesh_json(const char *state)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", state, WF_LM_MESH_JSON);
    json_error_t je;
    return json_load_file(path, 0, &je);
}

static long long wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static bool has_proxy(const wf_lm_pod *pod)
{
    return (pod->sidecar || pod->gateway) && !pod->error;
}

/* One look at everything; true when settled: pilot ready, every proxy SYNCED and ready (or
 * refusing pilot's config: nothing to wait for), every app running (or failed: likewise). */
bool wf_lm_look_take(const wf_lm_plan *p, wf_lm_look *l)
{
    wf_lm_look_free(l);
    wf_strbuf why = WF_STRBUF_INIT;
    l->pilot_ready = wf_lm_probe(WF_LM_MON_ADDR, "/ready", &why) == 0;
    wf_strbuf_reset(&why);
    l->syncz = wf_lm_pilot_json("/debug/syncz", PROBE_TIMEOUT, &why);
    l->mesh = read_mesh_json(p->state);
    for (size_t i = 0; i < p->npods; i++) {
        const wf_lm_pod *pod = &p->pods[i];
        if (!has_proxy(pod))
            continue;
        char id[600], addr[40];
        snprintf(id, sizeof id, "%s.%s", pod->name, pod->ns);
        snprintf(addr, sizeof addr, "%s:%d", pod->ip, WF_LM_STATUS_PORT);
        bool nacked = false;
        bool synced = l->syncz && wf_lm_proxy_synced(l->syncz, id, &why, &nacked);
        bool ready = wf_lm_probe(addr, "/healthz/ready", &why) == 0;
        l->proxies++;
        l->synced += synced;
        l->ready += ready;
        l->proxies_ok += synced && ready;
        l->nacked += !synced && nacked;
    }
    size_t i;
    json_t *proc;
    long long now = wall_ms();
    json_array_foreach(json_object_get(l->mesh, "processes"), i, proc)
    {
        const char *kind = json_string_value(json_object_get(proc, "kind"));
        if (!kind || strcmp(kind, "app") != 0)
            continue;
        l->apps++;
        if (wf_lm_app_settled(proc, now)) {
            const char *st = json_string_value(json_object_get(proc, "state"));
            if (st && strcmp(st, "running") == 0)
                l->running++;
            else
                l->failed++;
        }
    }
    wf_strbuf_free(&why);
    return l->mesh && l->pilot_ready && l->proxies_ok + l->nacked == l->proxies &&
           l->running + l->failed == l->apps;
}

/* "waiting for 5 pods: pilot ready, 3/4 proxies SYNCED, 2/4 ready, 4/5 apps running, 1
 * cannot start ..." on stderr when it changed: a line each time, or rewritten in place on a
 * terminal (progress_end ends it). */
void wf_lm_progress(const wf_lm_plan *p, const wf_lm_look *l, wf_strbuf *last)
{
    char line[300];
    int n = snprintf(line, sizeof line,
                     "waiting for %zu pods: pilot %s, %zu/%zu proxies SYNCED, %zu/%zu ready, "
                     "%zu/%zu apps running",
                     p->npods, l->pilot_ready ? "ready" : "not ready", l->synced, l->proxies,
                     l->ready, l->proxies, l->running, l->apps);
    if (l->failed && n > 0 && (size_t)n < sizeof line)
        n += snprintf(line + n, sizeof line - (size_t)n, ", %zu cannot start", l->failed);
    if (l->nacked && n > 0 && (size_t)n < sizeof line)
        snprintf(line + n, sizeof line - (size_t)n, ", %zu refusing pilot's config", l->nacked);
    if (strcmp(line, wf_strbuf_cstr(last)) == 0)
        return;
    wf_strbuf_reset(last);
    wf_strbuf_puts(last, line);
    if (isatty(2))
        fprintf(stderr, "\r\033[K%s ...", line);
    else
        fprintf(stderr, "%s ...\n", line);
}

void wf_lm_progress_end(const wf_strbuf *last)
{
    if (last->len && isatty(2))
        fputc('\n', stderr);
}

/* ---- the summary of problems -------------------------------------------------------------- */

static size_t count_kind(const wf_store *s, wf_kind k)
{
    size_t n = 0;
    if (s)
        wf_store_kind(s, k, &n);
    return n;
}

bool wf_lm_node_port_problem(const json_t *syncz, const char *gw_id, const char *target,
                             wf_strbuf *why)
{
    wf_strbuf r = WF_STRBUF_INIT;
    bool synced = syncz && wf_lm_proxy_synced(syncz, gw_id, &r, NULL);
    wf_strbuf_reset(&r);
    wf_http_resp resp = {0};
    bool bad = synced && wf_http_request("GET", target, "/", PROBE_TIMEOUT, &resp, &r) != 0;
    wf_http_resp_free(&resp);
    wf_strbuf_reset(why);
    if (bad)
        wf_strbuf_printf(
            why,
            "node port: %s:%d forwards to the gateway pod %s at %s, which does not "
            "answer (%s): nothing listens on %s; the gateway listens on the targetPort "
            "of its Service's port 80 (Istio's default profile: 80 -> %d), so it needs "
            "a Service selecting its labels with that port",
            WF_LM_GW_HOST_IP, WF_LM_GW_HOST_PORT, gw_id, target, wf_strbuf_cstr(&r), target,
            WF_LM_GW_HTTP_PORT);
    wf_strbuf_free(&r);
    return bad;
}

/* The node port, checked when DIR has a Gateway (else nothing is meant to listen). 1 when it
 * fails, else 0. */
static size_t check_forwarder(const wf_lm_plan *p, const wf_lm_look *l, FILE *f)
{
    if (p->gateway >= p->npods || p->pods[p->gateway].error ||
        count_kind(p->store, WF_KIND_GATEWAY) == 0)
        return 0;
    const wf_lm_pod *gw = &p->pods[p->gateway];
    char id[600], addr[40];
    snprintf(id, sizeof id, "%s.%s", gw->name, gw->ns);
    snprintf(addr, sizeof addr, "%s:%d", gw->ip, WF_LM_GW_HTTP_PORT);
    wf_strbuf why = WF_STRBUF_INIT;
    bool bad = wf_lm_node_port_problem(l->syncz, id, addr, &why);
    if (bad)
        fprintf(f, "  %s\n", wf_strbuf_cstr(&why));
    wf_strbuf_free(&why);
    return bad;
}

/* Pods up did not start (their proxy would refuse the bootstrap, or Istio's injector the
 * pod: localmesh_plan.h); up named each before starting. */
static size_t report_pods(const wf_lm_plan *p, FILE *f)
{
    size_t bad = 0;
    for (size_t i = 0; i < p->npods; i++)
        if (p->pods[i].error) {
            fprintf(f, "  pod %s.%s: not started: %s\n", p->pods[i].name, p->pods[i].ns,
                    p->pods[i].error);
            bad++;
        } else if (p->pods[i].clash) {
            fprintf(f, "  pod %s.%s: port clash: %s\n", p->pods[i].name, p->pods[i].ns,
                    p->pods[i].clash);
            bad++;
        }
    return bad;
}

static size_t report_apps(const wf_lm_look *l, FILE *f)
{
    size_t i, bad = 0;
    json_t *proc;
    json_array_foreach(json_object_get(l->mesh, "processes"), i, proc)
    {
        const char *kind = json_string_value(json_object_get(proc, "kind"));
        char why[400];
        if (!kind || strcmp(kind, "app") != 0 || !wf_lm_app_problem(proc, why, sizeof why))
            continue;
        const char *log = json_string_value(json_object_get(proc, "log"));
        fprintf(f, "  app %s (pod %s.%s): %s (log: %s)\n",
                json_string_value(json_object_get(proc, "name")),
                json_string_value(json_object_get(proc, "pod")),
                json_string_value(json_object_get(proc, "namespace")), why, log ? log : "-");
        bad++;
    }
    return bad;
}

/* "; its process: exited with status 1 (restarted 2 times)" when the process named name
 * in mesh.json is not running or exited since the mesh started, else "". */
static const char *process_note(const wf_lm_look *l, const char *name, char *buf, size_t cap)
{
    size_t i;
    json_t *proc;
    char why[400];
    buf[0] = '\0';
    json_array_foreach(json_object_get(l->mesh, "processes"), i, proc)
    {
        const char *n = json_string_value(json_object_get(proc, "name"));
        if (n && strcmp(n, name) == 0 && wf_lm_app_problem(proc, why, sizeof why))
            snprintf(buf, cap, "; its process: %s", why);
    }
    return buf;
}

bool wf_lm_proxy_problem(const json_t *syncz, const char *id, const char *addr, wf_strbuf *why)
{
    wf_strbuf r = WF_STRBUF_INIT;
    bool bad = true;
    wf_strbuf_reset(why);
    if (!syncz)
        wf_strbuf_puts(why, "not SYNCED: pilot's /debug/syncz did not answer");
    else if (!wf_lm_proxy_synced(syncz, id, &r, NULL))
        wf_strbuf_printf(why, "not SYNCED: %s", wf_strbuf_cstr(&r));
    else if (wf_lm_probe(addr, "/healthz/ready", &r) != 0)
        wf_strbuf_printf(why, "not ready (http://%s/healthz/ready): %s", addr, wf_strbuf_cstr(&r));
    else
        bad = false;
    wf_strbuf_free(&r);
    return bad;
}

static size_t report_proxies(const wf_lm_plan *p, const wf_lm_look *l, FILE *f)
{
    wf_strbuf why = WF_STRBUF_INIT;
    size_t bad = 0;
    char note[500], name[600];
    if (wf_lm_probe(WF_LM_MON_ADDR, "/ready", &why) != 0) {
        fprintf(f, "  weft-pilot (http://%s/ready): %s%s\n", WF_LM_MON_ADDR, wf_strbuf_cstr(&why),
                process_note(l, "pilot", note, sizeof note));
        bad++;
    }
    for (size_t i = 0; i < p->npods; i++) {
        const wf_lm_pod *pod = &p->pods[i];
        if (!has_proxy(pod))
            continue;
        char id[600], addr[40];
        snprintf(id, sizeof id, "%s.%s", pod->name, pod->ns);
        snprintf(addr, sizeof addr, "%s:%d", pod->ip, WF_LM_STATUS_PORT);
        snprintf(name, sizeof name, "%s.proxy", pod->name);
        if (wf_lm_proxy_problem(l->syncz, id, addr, &why)) {
            fprintf(f, "  proxy %s: %s%s\n", id, wf_strbuf_cstr(&why),
                    process_note(l, name, note, sizeof note));
            bad++;
        }
    }
    wf_strbuf_free(&why);
    return bad;
}

/* Prints pilot's config errors and warnings (seen: the lines printed, for the foreground)
 * and every problem to stderr; returns how many problems make `up` fail. */
size_t wf_lm_report_problems(const wf_lm_plan *p, const wf_lm_look *l, json_t *seen)
{
    wf_strbuf err = WF_STRBUF_INIT, line = WF_STRBUF_INIT;
    size_t bad = 0;
    json_t *cfg = wf_lm_pilot_json("/debug/config_errors", 3000, &err);
    if (json_is_array(cfg)) {
        wf_lm_cfg_remap(cfg, p->mesh_file, p->mesh_cm_file, p->mesh_line0, p->mesh_col0);
        bad += wf_lm_cfg_print(stderr, cfg);
        size_t i;
        json_t *e;
        json_array_foreach(cfg, i, e)
        {
            wf_lm_cfg_line(e, &line);
            json_object_set_new(seen, wf_strbuf_cstr(&line), json_true());
        }
    }
    if (p->nwarnings)
        fprintf(stderr, "the injector accepted with a warning: %zu field%s\n", p->nwarnings,
                p->nwarnings == 1 ? "" : "s");
    for (size_t i = 0; i < p->nwarnings; i++)
        fprintf(stderr, "  %s\n", p->warnings[i]);
    FILE *f = stderr;
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len); /* the problem lines, printed under one heading */
    if (mem) {
        f = mem;
        if (!json_is_array(cfg))
            fprintf(f, "  cannot read pilot's config errors: %s\n", wf_strbuf_cstr(&err));
        size_t n = report_pods(p, f) + report_apps(l, f) + report_proxies(p, l, f) +
                   check_forwarder(p, l, f);
        bad += n + !json_is_array(cfg);
        fclose(mem);
        if (len)
            fprintf(stderr, "problems:\n%s", buf);
        free(buf);
    }
    json_decref(cfg);
    wf_strbuf_free(&err);
    wf_strbuf_free(&line);
    return bad;
}

/* The foreground: print config errors pilot reports that were not there before (what
 * `kubectl apply` would have told), and those no longer reported. */
void wf_lm_follow_config(const wf_lm_plan *p, json_t *seen)
{
    wf_strbuf err = WF_STRBUF_INIT, line = WF_STRBUF_INIT;
    json_t *cfg = wf_lm_pilot_json("/debug/config_errors", PROBE_TIMEOUT, &err);
    wf_lm_cfg_remap(cfg, p->mesh_file, p->mesh_cm_file, p->mesh_line0, p->mesh_col0);
    json_t *now = json_object();
    size_t i;
    json_t *e;
    json_array_foreach(cfg, i, e)
    {
        wf_lm_cfg_line(e, &line);
        const char *text = wf_strbuf_cstr(&line);
        if (!json_object_get(seen, text))
            fprintf(stderr, "%s: %s\n",
                    wf_lm_cfg_is_warning(e) ? "accepted with a warning" : "pilot rejected", text);
        json_object_set_new(now, text, json_true());
    }
    const char *key;
    json_t *v;
    if (json_is_array(cfg) && now) {
        json_object_foreach(seen, key, v) if (!json_object_get(now, key))
            fprintf(stderr, "no longer reported: %s\n", key);
        json_object_clear(seen);
        json_object_update(seen, now);
    }
    json_decref(now);
    json_decref(cfg);
    wf_strbuf_free(&err);
    wf_strbuf_free(&line);
}
