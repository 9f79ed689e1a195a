/*
 * cmd_pc_log.c - `proxy-config log PROXY [--level ...] [--reset]` (reference
 * istioctl-troubleshooting.md §2.10; istioctl/pkg/proxyconfig logCmd):
 *
 *  1. POST /logging (no query): the logger listing, used to validate logger names by
 *     substring search (as istioctl does; the pseudo-logger "level" is always accepted);
 *  2. --level: comma-separated `level` (all loggers) or `logger:level` / `logger=level`, a
 *     `namespace::` prefix stripped; levels trace, debug, info, warning, warn, error,
 *     critical, off (anything else: "unrecognized logging level: X");
 *     --reset: level=<default> where the default is the proxy's own startup level
 *     (/server_info command_line_options.log_level; weft has no injector ConfigMap), else
 *     "warning" as istioctl;
 *  3. POST /logging?level=L first when a global level is given, then POST /logging?<logger>=L
 *     per logger, in the order given (weft-proxy's admin accepts both forms);
 *  4. prints "<pod>.<ns>:\n" and the last response (Envoy's "active loggers:" listing).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd_pc.h"

static const char *const levels[] = {"trace", "debug", "info",     "warning",
                                     "warn",  "error", "critical", "off"};

static const char *level_name(const char *s)
{
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++)
        if (strcmp(s, levels[i]) == 0)
            return strcmp(s, "warn") == 0 ? "warning" : levels[i];
    return NULL;
}

typedef struct log_set {
    char logger[128];
    const char *level;
} log_set;

typedef struct log_plan {
    const char *global; /* NULL = leave as is */
    log_set sets[64];
    size_t n;
} log_plan;

/* Parses --level against the logger listing. Returns 0, or -1 with err. */
static int parse_levels(const char *spec, const char *listing, log_plan *plan, wf_strbuf *err)
{
    char *copy = strdup(spec);
    if (!copy) {
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    int rc = 0;
    char *save = NULL;
    for (char *item = strtok_r(copy, ",", &save); item && rc == 0;
         item = strtok_r(NULL, ",", &save)) {
        if (!strpbrk(item, ":=")) {
            const char *l = level_name(item);
            if (!l) {
                wf_strbuf_printf(err, "unrecognized logging level: %s", item);
                rc = -1;
            } else {
                plan->global = l;
                plan->n = 0; /* istioctl replaces the whole map with {level: L} */
            }
            continue;
        }
        char *p = item, *ns;
        while ((ns = strstr(p, "::")) != NULL)
            p = ns + 2;
        size_t kl = strcspn(p, ":=");
        char logger[128];
        snprintf(logger, sizeof logger, "%.*s", (int)kl, p);
        const char *lv = p[kl] ? p + kl + 1 : "";
        if (strcmp(logger, "level") != 0 && !strstr(listing, logger)) {
            wf_strbuf_printf(err, "unrecognized logger name: %s", logger);
            rc = -1;
        } else if (!level_name(lv)) {
            wf_strbuf_printf(err, "unrecognized logging level: %s", lv);
            rc = -1;
        } else if (strcmp(logger, "level") == 0) {
            plan->global = level_name(lv);
        } else if (plan->n < sizeof plan->sets / sizeof plan->sets[0]) {
            snprintf(plan->sets[plan->n].logger, sizeof plan->sets[0].logger, "%s", logger);
            plan->sets[plan->n++].level = level_name(lv);
        }
    }
    free(copy);
    return rc;
}

int pc_log_check_levels(const char *spec, wf_strbuf *err)
{
    const char *p = spec;
    while (*p) {
        size_t len = strcspn(p, ",");
        char item[160];
        snprintf(item, sizeof item, "%.*s", (int)len, p);
        /* a bare level, or the pseudo-logger "level": a logger's own level is checked after
         * its name, against the proxy's listing, as istioctl orders the two errors */
        const char *lv = strncmp(item, "level", 5) == 0 && strchr(":=", item[5]) && item[5]
                             ? item + 6
                         : strpbrk(item, ":=") ? NULL
                                               : item;
        if (len && lv && !level_name(lv)) {
            wf_strbuf_printf(err, "unrecognized logging level: %s", lv);
            return -1;
        }
        p += len + (p[len] == ',');
    }
    return 0;
}

/* The proxy's startup level from /server_info, or "warning". */
static const char *default_level(const pc_live *live)
{
    char *body = NULL;
    wf_strbuf err = WF_STRBUF_INIT;
    const char *result = "warning";
    if (pc_live_fetch(live, "GET", "/server_info", &body, &err) == 0) {
        json_t *j = json_loads(body, 0, NULL);
        const char *l = json_string_value(wf_jpath(j, "command_line_options.log_level"));
        if (l && level_name(l))
            result = level_name(l);
        json_decref(j);
    }
    free(body);
    wf_strbuf_free(&err);
    return result;
}

static int post(const pc_live *live, const char *query, char **resp, wf_strbuf *err)
{
    char path[300];
    snprintf(path, sizeof path, "/logging%s%s", query[0] ? "?" : "", query);
    free(*resp);
    *resp = NULL;
    return pc_live_fetch(live, "POST", path, resp, err);
}

int pc_log(const pc_live *live, const char *level_spec, bool reset, wf_strbuf *out, wf_strbuf *err)
{
    char *resp = NULL;
    if (post(live, "", &resp, err) != 0)
        return -1;
    log_plan plan;
    memset(&plan, 0, sizeof plan);
    int rc = 0;
    if (reset)
        plan.global = default_level(live);
    else if (level_spec && *level_spec && parse_levels(level_spec, resp, &plan, err) != 0)
        rc = PC_E_USAGE; /* a logger or level the proxy does not know: a bad --level */
    char q[256];
    if (rc == 0 && plan.global) {
        snprintf(q, sizeof q, "level=%s", plan.global);
        rc = post(live, q, &resp, err);
    }
    for (size_t i = 0; rc == 0 && i < plan.n; i++) {
        snprintf(q, sizeof q, "%s=%s", plan.sets[i].logger, plan.sets[i].level);
        rc = post(live, q, &resp, err);
    }
    if (rc == 0)
        wf_strbuf_printf(out, "%s:\n%s", live->id, resp ? resp : "");
    free(resp);
    return rc;
}
