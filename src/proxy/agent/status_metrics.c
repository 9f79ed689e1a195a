/*
 * status_metrics.c - the merged scrape's configuration, agent metrics and format
 * (status_metrics.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "proxy/agent/status_metrics.h"

#define FMT_TEXT   "text/plain; version=0.0.4; charset=utf-8"
#define FMT_OM_001 "application/openmetrics-text; version=0.0.1; charset=utf-8"
#define FMT_OM_100 "application/openmetrics-text; version=1.0.0; charset=utf-8"

int wp_prom_scrape_parse(const char *text, int status_port, wp_prom_scrape *out, wf_strbuf *err)
{
    json_error_t je;
    json_t *root = json_loads(text ? text : "", 0, &je);
    if (!json_is_object(root)) {
        wf_strbuf_printf(err, "failed to unmarshal ISTIO_PROMETHEUS_ANNOTATIONS: %s",
                         root ? "not a JSON object" : je.text);
        json_decref(root);
        return -1;
    }
    const char *scrape = json_string_value(json_object_get(root, "scrape"));
    const char *path = json_string_value(json_object_get(root, "path"));
    const char *port = json_string_value(json_object_get(root, "port"));
    int rc = 1;
    if (scrape && strcmp(scrape, "false") == 0) {
        rc = 0;
    } else {
        char *end = NULL;
        long p = port && *port ? strtol(port, &end, 10) : 80;
        if ((port && *port && *end) || p < 1 || p > 65535) {
            wf_strbuf_printf(err,
                             "invalid prometheus scrape configuration: port \"%s\" is not a "
                             "number 1..65535",
                             port);
            rc = -1;
        } else if (p == status_port) {
            wf_strbuf_printf(err,
                             "invalid prometheus scrape configuration: application port is the "
                             "same as agent port, which may lead to a recursive loop. Ensure pod "
                             "does not have prometheus.io/port=%d label, or that injection is not "
                             "happening multiple times",
                             status_port);
            rc = -1;
        } else {
            out->port = (int)p;
            snprintf(out->path, sizeof out->path, "%s%s", path && path[0] == '/' ? "" : "/",
                     path && *path ? path : "metrics");
        }
    }
    json_decref(root);
    return rc;
}

void wp_agent_metrics_render(const wp_agent_metrics *m, wf_strbuf *out)
{
    const struct {
        const char *type;
        uint64_t v;
    } f[] = {{"agent", m->failures_agent},
             {"application", m->failures_app},
             {"envoy", m->failures_envoy}};
    bool any = false;
    for (size_t i = 0; i < 3; i++)
        any |= f[i].v > 0;
    if (any) {
        wf_strbuf_puts(out, "# HELP istio_agent_scrape_failures_total The total number of failed "
                            "scrapes.\n# TYPE istio_agent_scrape_failures_total counter\n");
        for (size_t i = 0; i < 3; i++)
            if (f[i].v)
                wf_strbuf_printf(out, "istio_agent_scrape_failures_total{type=\"%s\"} %llu\n",
                                 f[i].type, (unsigned long long)f[i].v);
    }
    if (m->scrapes)
        wf_strbuf_printf(out,
                         "# HELP istio_agent_scrapes_total The total number of scrapes.\n"
                         "# TYPE istio_agent_scrapes_total counter\n"
                         "istio_agent_scrapes_total %llu\n",
                         (unsigned long long)m->scrapes);
}

const char *wp_metrics_content_type(const char *ct)
{
    static const char om[] = "application/openmetrics-text";
    if (!ct || strncasecmp(ct, om, sizeof om - 1) != 0 ||
        (ct[sizeof om - 1] && ct[sizeof om - 1] != ';' && ct[sizeof om - 1] != ' '))
        return FMT_TEXT;
    const char *v = strstr(ct, "version=");
    if (!v)
        return FMT_OM_001;
    v += 8;
    if (strncmp(v, "1.0.0", 5) == 0)
        return FMT_OM_100;
    if (strncmp(v, "0.0.1", 5) == 0)
        return FMT_OM_001;
    return FMT_TEXT;
}
