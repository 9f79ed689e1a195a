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
#include "model/node_json.h"
#include "pilot/ads.h"
#include "pilot/debug_internal.h"

json_t *wf_debug_mesh_json(const wf_meshcfg *mesh)
{
    wf_meshcfg *defaults = wf_meshcfg_new_default();
    json_t *out = defaults ? wf_node_to_json(wf_meshcfg_get(defaults, "")) : NULL;
    /* the newest file's root (the defaults' own root when no file was loaded) */
    json_t *file = mesh ? wf_node_to_json(wf_meshcfg_get(mesh, "")) : json_object();
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
