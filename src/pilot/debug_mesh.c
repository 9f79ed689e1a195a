/*
 * debug_mesh.c - istiod's /debug/mesh: the active MeshConfig as JSON (debug.h).
 *
 * istiod answers its Environment's MeshConfig, marshalled with protomarshal (camelCase field
 * names, the values after mesh.DefaultMeshConfig() and the mesh file were merged). weft's
 * MeshConfig is meshcfg.h: Istio's defaults for the fields weft reads, with the --meshConfig
 * file merged over them. The answer is that merge: each top-level field of the file replaces
 * the default (as protobuf's JSON decoding over the defaults does), except defaultConfig
 * (ProxyConfig), whose fields are merged one by one as istiod's MergeProxyConfig does. YAML
 * scalars become JSON as protojson writes them: true/false as booleans, plain numbers as
 * numbers, everything else (durations "10s", enums) as strings.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "analysis/meshcfg.h"
#include "pilot/ads.h"
#include "pilot/debug_internal.h"

static json_t *scalar_json(const wf_node *n)
{
    if (!n->quoted) {
        bool b;
        int64_t v;
        if (wf_node_bool(n, &b))
            return json_boolean(b);
        if (wf_node_int(n, &v))
            return json_integer(v);
    }
    return json_stringn(n->u.str, n->len);
}

static json_t *node_json(const wf_node *n)
{
    json_t *o = NULL;
    switch (n ? n->type : WF_NODE_NULL) {
    case WF_NODE_SCALAR:
        return scalar_json(n);
    case WF_NODE_MAP:
        o = json_object();
        for (size_t i = 0; o && i < n->len; i++)
            if (json_object_set_new(o, n->u.entries[i].key, node_json(n->u.entries[i].value))) {
                json_decref(o);
                return NULL;
            }
        return o;
    case WF_NODE_SEQ:
        o = json_array();
        for (size_t i = 0; o && i < n->len; i++)
            if (json_array_append_new(o, node_json(n->u.items[i]))) {
                json_decref(o);
                return NULL;
            }
        return o;
    default:
        return json_null();
    }
}

json_t *wf_debug_mesh_json(const wf_meshcfg *mesh)
{
    wf_meshcfg *defaults = wf_meshcfg_new_default();
    json_t *out = defaults ? node_json(wf_meshcfg_get(defaults, "")) : NULL;
    /* the newest file's root (the defaults' own root when no file was loaded) */
    json_t *file = mesh ? node_json(wf_meshcfg_get(mesh, "")) : json_object();
    wf_meshcfg_free(defaults);
    if (!json_is_object(out) || !json_is_object(file)) {
        json_decref(out);
        json_decref(file);
        return NULL;
    }
    json_t *pc = json_object_get(out, "defaultConfig");
    json_t *fpc = json_object_get(file, "defaultConfig");
    int rc = 0;
    if (json_is_object(pc) && json_is_object(fpc)) {
        rc = json_object_update(pc, fpc);
        if (rc == 0)
            rc = json_object_del(file, "defaultConfig");
    }
    if (rc == 0)
        rc = json_object_update(out, file);
    json_decref(file);
    if (rc != 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

void wf_debug_mesh(wf_ads *a, wf_debug_reply *r)
{
    const wf_snapshot *s = wf_ads_snapshot(a);
    wf_debug_reply_json(r, 200, wf_debug_mesh_json(s ? s->mesh : NULL));
}
