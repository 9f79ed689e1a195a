/*
 * localmesh_health.c - what is wrong in a running local mesh (localmesh_health.h).
 */
#include <stdlib.h>
#include <string.h>

#include "cli/http_client.h"
#include "cli/localmesh_health.h"
#include "cli/localmesh_plan.h"

json_t *wf_lm_pilot_json(const char *path, long timeout_ms, wf_strbuf *err)
{
    wf_http_resp r = {0};
    json_t *doc = NULL;
    if (wf_http_request("GET", WF_LM_MON_ADDR, path, timeout_ms, &r, err) != 0)
        return NULL;
    if (r.status != 200) {
        wf_strbuf_printf(err, "GET http://%s%s: status %d", WF_LM_MON_ADDR, path, r.status);
    } else {
        json_error_t je;
        doc = json_loadb(r.body ? r.body : "", r.len, 0, &je);
        if (!doc)
            wf_strbuf_printf(err, "GET http://%s%s: not JSON: %s", WF_LM_MON_ADDR, path, je.text);
    }
    wf_http_resp_free(&r);
    return doc;
}

static const char *str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

bool wf_lm_cfg_is_warning(const json_t *e)
{
    return strcmp(str(e, "level"), "warning") == 0;
}

bool wf_lm_cfg_fails(const json_t *e)
{
    return !wf_lm_cfg_is_warning(e) || strcmp(str(e, "code"), WF_LM_CODE_SECURITY) == 0;
}

void wf_lm_cfg_remap(json_t *cfg, const char *from, const char *to, long line0, long col0)
{
    size_t i;
    json_t *e;
    json_array_foreach(cfg, i, e)
    {
        if (!from || !to || strcmp(str(e, "file"), from) != 0)
            continue;
        json_int_t line = json_integer_value(json_object_get(e, "line"));
        json_int_t col = json_integer_value(json_object_get(e, "column"));
        json_object_set_new(e, "file", json_string(to));
        if (line > 0) {
            json_object_set_new(e, "line", json_integer(line + line0));
            json_object_set_new(e, "column", json_integer(col + col0));
        }
    }
}

void wf_lm_cfg_line(const json_t *e, wf_strbuf *out)
{
    wf_strbuf_reset(out);
    json_int_t line = json_integer_value(json_object_get(e, "line"));
    json_int_t col = json_integer_value(json_object_get(e, "column"));
    const char *file = str(e, "file"), *res = str(e, "resource"), *field = str(e, "field");
    wf_strbuf_puts(out, *file ? file : "(no file)");
    if (line > 0)
        wf_strbuf_printf(out, ":%lld:%lld", (long long)line, (long long)(col > 0 ? col : 1));
    wf_strbuf_puts(out, ": ");
    if (*res)
        wf_strbuf_printf(out, "%s: ", res);
    const char *msg = str(e, "message");
    /* a warning's message starts with its field (pilot's WFT warnings): said once */
    if (*field && !(wf_lm_cfg_is_warning(e) && strncmp(msg, field, strlen(field)) == 0))
        wf_strbuf_printf(out, "%s: ", field);
    wf_strbuf_puts(out, msg);
    if (wf_lm_cfg_is_warning(e) && *str(e, "code"))
        wf_strbuf_printf(out, " [%s]", str(e, "code"));
}

static size_t print_block(FILE *f, const json_t *arr, bool warnings, const char *head)
{
    wf_strbuf line = WF_STRBUF_INIT;
    size_t i, n = 0, failing = 0;
    json_t *e;
    json_array_foreach(arr, i, e) n += wf_lm_cfg_is_warning(e) == warnings;
    if (n)
        fprintf(f, head, n, n == 1 ? "" : "s");
    json_array_foreach(arr, i, e)
    {
        if (wf_lm_cfg_is_warning(e) != warnings)
            continue;
        wf_lm_cfg_line(e, &line);
        fprintf(f, "  %s\n", wf_strbuf_cstr(&line));
        failing += wf_lm_cfg_fails(e);
    }
    wf_strbuf_free(&line);
    return failing;
}

size_t wf_lm_cfg_print(FILE *f, const json_t *arr)
{
    size_t failing = print_block(f, arr, false,
                                 "pilot rejected %zu resource%s (as the validation webhook would "
                                 "refuse them; each keeps its last good version or is left "
                                 "out):\n");
    failing += print_block(f, arr, true,
                           "accepted with a warning: %zu field%s (WFT0001: weft does not implement "
                           "it, no effect; WFT0002: a security control weft does not enforce, a "
                           "problem; IST0133: the validation webhook's warning; IST0101/IST0161: a "
                           "gateway's credentialName Secret missing from the gateway workload's "
                           "namespace or invalid; WFT0003: a certificate near its end)\n");
    return failing;
}

static bool running(const json_t *proc)
{
    return strcmp(str(proc, "state"), "running") == 0;
}

const char *wf_lm_app_problem(const json_t *proc, char *buf, size_t cap)
{
    const char *last = str(proc, "lastExit");
    long long restarts = (long long)json_integer_value(json_object_get(proc, "restarts"));
    char times[64] = "";
    if (restarts > 0)
        snprintf(times, sizeof times, " (restarted %lld time%s)", restarts,
                 restarts == 1 ? "" : "s");
    if (!*last)
        return NULL;
    if (!running(proc)) {
        snprintf(buf, cap, "cannot start: %s%s", last, times);
        return buf;
    }
    snprintf(buf, cap, "restarted %lld time%s, last: %s", restarts, restarts == 1 ? "" : "s", last);
    return buf;
}

bool wf_lm_app_settled(const json_t *proc, long long now_ms)
{
    if (!running(proc))
        return *str(proc, "lastExit") != '\0';
    json_int_t started = json_integer_value(json_object_get(proc, "startedAt"));
    return started > 0 && now_ms - started >= WF_LM_APP_SETTLE_MS;
}

bool wf_lm_proxy_synced(const json_t *syncz, const char *id, wf_strbuf *why, bool *nacked)
{
    bool nack = false;
    if (nacked)
        *nacked = false;
    static const struct {
        const char *prefix, *name;
    } types[] = {{"cluster", "CDS"}, {"listener", "LDS"}, {"endpoint", "EDS"}, {"route", "RDS"}};
    wf_strbuf_reset(why);
    const json_t *entry = NULL, *e;
    size_t i;
    json_array_foreach(syncz, i, e) if (strcmp(str(e, "proxy"), id) == 0 &&
                                        (!entry || json_is_true(json_object_get(e, "connected"))))
        entry = e;
    if (!entry) {
        wf_strbuf_puts(why, "never connected to pilot");
        return false;
    }
    if (!json_is_true(json_object_get(entry, "connected"))) {
        wf_strbuf_puts(why, "not connected to pilot");
        return false;
    }
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        char key[32];
        snprintf(key, sizeof key, "%s_status", types[t].prefix);
        const char *st = str(entry, key);
        if (!*st || !strcmp(st, "SYNCED") || !strcmp(st, "IGNORED"))
            continue;
        snprintf(key, sizeof key, "%s_error", types[t].prefix);
        if (why->len)
            wf_strbuf_puts(why, ", ");
        wf_strbuf_printf(why, "%s %s", types[t].name, st);
        if (*str(entry, key))
            wf_strbuf_printf(why, ": %s", str(entry, key));
        snprintf(key, sizeof key, "%s_since_s", types[t].prefix);
        nack |= !strcmp(st, "ERROR") &&
                json_integer_value(json_object_get(entry, key)) >= WF_LM_NACK_SETTLE_S;
    }
    if (nacked)
        *nacked = nack;
    return why->len == 0;
}
