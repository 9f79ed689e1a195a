/*
 * manifest_opts.c - the options of `weftctl manifest generate`: defaults, istioctl's `--set`
 * keys and an IstioOperator values file (`-f`). See manifest.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/manifest.h"
#include "model/node.h"
#include "model/parse_file.h"
#include "model/validate.h"

#ifndef WEFT_VERSION
#define WEFT_VERSION "0.1.0"
#endif

static int set_str(char **dst, const char *v)
{
    char *c = strdup(v);
    if (!c)
        return -1;
    free(*dst);
    *dst = c;
    return 0;
}

int wf_manifest_opts_init(wf_manifest_opts *o)
{
    memset(o, 0, sizeof *o);
    o->ingress = true;
    o->crds = true;
    if (set_str(&o->hub, "localhost/weft") || set_str(&o->image, "weft") ||
        set_str(&o->tag, WEFT_VERSION) || set_str(&o->ns, "istio-system") ||
        set_str(&o->revision, "") || set_str(&o->trust_domain, "cluster.local") ||
        set_str(&o->access_log_file, "") || set_str(&o->outbound_mode, "ALLOW_ANY"))
        return -1;
    return 0;
}

void wf_manifest_opts_free(wf_manifest_opts *o)
{
    free(o->hub);
    free(o->image);
    free(o->tag);
    free(o->ns);
    free(o->revision);
    free(o->trust_domain);
    free(o->access_log_file);
    free(o->outbound_mode);
    memset(o, 0, sizeof *o);
}

/* An image reference part: non-empty, no white space. */
static bool image_part(const char *v)
{
    return *v && !strpbrk(v, " \t\n\"'");
}

static int bad(wf_strbuf *why, const char *key, const char *v, const char *want)
{
    wf_strbuf_printf(why, "invalid value \"%s\" for %s: want %s", v, key, want);
    return -1;
}

int wf_manifest_set(wf_manifest_opts *o, const char *key, const char *v, wf_strbuf *why)
{
    if (strncmp(key, "spec.", 5) == 0)
        key += 5;
    if (!strcmp(key, "hub") || !strcmp(key, "values.global.hub"))
        return image_part(v) ? set_str(&o->hub, v) : bad(why, key, v, "an image repository");
    if (!strcmp(key, "tag") || !strcmp(key, "values.global.tag"))
        return image_part(v) && !strchr(v, '/') ? set_str(&o->tag, v)
                                                : bad(why, key, v, "an image tag");
    if (!strcmp(key, "namespace") || !strcmp(key, "values.global.istioNamespace"))
        return wf_is_dns1123_label(v) ? set_str(&o->ns, v)
                                      : bad(why, key, v, "a namespace name (DNS-1123 label)");
    if (!strcmp(key, "revision") || !strcmp(key, "values.revision")) {
        if (*v && (!wf_is_dns1123_label(v) || !strcmp(v, "default")))
            return bad(why, key, v, "a DNS-1123 label other than \"default\", or empty");
        return set_str(&o->revision, v);
    }
    if (!strcmp(key, "meshConfig.trustDomain"))
        return *v ? set_str(&o->trust_domain, v) : bad(why, key, v, "a trust domain");
    if (!strcmp(key, "meshConfig.accessLogFile"))
        return set_str(&o->access_log_file, v);
    if (!strcmp(key, "meshConfig.outboundTrafficPolicy.mode")) {
        if (strcmp(v, "ALLOW_ANY") && strcmp(v, "REGISTRY_ONLY"))
            return bad(why, key, v, "ALLOW_ANY or REGISTRY_ONLY");
        return set_str(&o->outbound_mode, v);
    }
    if (!strcmp(key, "components.ingressGateways[0].enabled") ||
        !strcmp(key, "values.gateways.istio-ingressgateway.enabled")) {
        if (strcmp(v, "true") && strcmp(v, "false"))
            return bad(why, key, v, "true or false");
        o->ingress = !strcmp(v, "true");
        return 0;
    }
    if (!strcmp(key, "components.base.enabled")) { /* Istio's base component: the CRDs */
        if (strcmp(v, "true") && strcmp(v, "false"))
            return bad(why, key, v, "true or false");
        o->crds = !strcmp(v, "true");
        return 0;
    }
    if (!strcmp(key, "components.ingressGateways[0].name"))
        return !strcmp(v, "istio-ingressgateway")
                   ? 0
                   : bad(why, key, v, "istio-ingressgateway (the one gateway weft installs)");
    wf_strbuf_printf(why,
                     "unknown key \"%s\" (weft knows hub, tag, namespace, revision, "
                     "meshConfig.trustDomain, meshConfig.accessLogFile, "
                     "meshConfig.outboundTrafficPolicy.mode, "
                     "components.ingressGateways[0].enabled, components.base.enabled: "
                     "docs/weftctl.md)",
                     key);
    return -1;
}

/* Every scalar under n as a --set key (maps: ".", sequences: "[i]"). */
static int walk(wf_manifest_opts *o, const wf_node *n, char *key, size_t len, size_t cap,
                const char *path, wf_strbuf *why)
{
    if (n->type == WF_NODE_MAP) {
        for (size_t i = 0; i < n->len; i++) {
            const wf_map_entry *e = &n->u.entries[i];
            int w = snprintf(key + len, cap - len, "%s%s", len ? "." : "", e->key);
            if (w < 0 || (size_t)w >= cap - len) {
                wf_strbuf_printf(why, "%s:%u: key too long", path, e->key_line);
                return -1;
            }
            if (walk(o, e->value, key, len + (size_t)w, cap, path, why) != 0)
                return -1;
        }
        return 0;
    }
    if (n->type == WF_NODE_SEQ) {
        for (size_t i = 0; i < n->len; i++) {
            int w = snprintf(key + len, cap - len, "[%zu]", i);
            if (w < 0 || (size_t)w >= cap - len ||
                walk(o, n->u.items[i], key, len + (size_t)w, cap, path, why) != 0) {
                if (w < 0 || (size_t)w >= cap - len)
                    wf_strbuf_printf(why, "%s:%u: key too long", path, n->line);
                return -1;
            }
        }
        return 0;
    }
    wf_strbuf why1 = WF_STRBUF_INIT;
    int rc = wf_manifest_set(o, key, n->type == WF_NODE_SCALAR ? n->u.str : "", &why1);
    if (rc != 0)
        wf_strbuf_printf(why, "%s:%u: spec.%s: %s", path, wf_node_report_line(n), key,
                         wf_strbuf_cstr(&why1));
    wf_strbuf_free(&why1);
    return rc;
}

int wf_manifest_values(wf_manifest_opts *o, const char *path, wf_strbuf *why)
{
    wf_parsed_file pf;
    wf_parsed_file_init(&pf, path, false);
    int rc = -1;
    if (wf_parsed_file_read(&pf) != 0) {
        wf_strbuf_printf(why, "%s: out of memory", path);
    } else if (pf.failed) {
        if (pf.err_line)
            wf_strbuf_printf(why, "%s:%u: %s", path, pf.err_line, pf.err);
        else
            wf_strbuf_printf(why, "%s: %s", path, pf.err);
    } else if (pf.ndocs != 1 || !pf.docs[0].root || pf.docs[0].root->type != WF_NODE_MAP) {
        wf_strbuf_printf(why, "%s: want one IstioOperator document", path);
    } else {
        const wf_node *root = pf.docs[0].root, *spec = wf_map_get(root, "spec");
        const char *kind = wf_map_str(root, "kind");
        if (!kind || strcmp(kind, "IstioOperator") != 0) {
            wf_strbuf_printf(why, "%s:%u: kind: want IstioOperator, got \"%s\"", path,
                             pf.docs[0].line, kind ? kind : "");
        } else if (spec && spec->type != WF_NODE_NULL && spec->type != WF_NODE_MAP) {
            wf_strbuf_printf(why, "%s:%u: spec: want a mapping", path, wf_node_report_line(spec));
        } else {
            char key[512] = "";
            rc = spec && spec->type == WF_NODE_MAP ? walk(o, spec, key, 0, sizeof key, path, why)
                                                   : 0;
        }
    }
    wf_parsed_file_free(&pf);
    return rc;
}
