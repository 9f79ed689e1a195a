/*
 * istio_annotations.h - Istio's table of resource annotations, as the annotation
 * analyzers (annotations.K8sAnalyzer, annotations.AlphaAnalyzer) consult it, and as
 * model/unimplemented.c does to tell an Istio annotation weft ignores from a typo.
 *
 * Follows istio/api annotation/annotations.gen.go (AllResourceAnnotations()): for each
 * annotation its name, feature status, deprecation and the resource types it attaches to,
 * in the order the generated file lists them. See istio_annotations.c for the source.
 */
#ifndef WF_MODEL_ISTIO_ANNOTATIONS_H
#define WF_MODEL_ISTIO_ANNOTATIONS_H

#include <stdbool.h>
#include <stdint.h>

/* annotation.FeatureStatus */
typedef enum wf_ann_status { WF_ANN_ALPHA = 0, WF_ANN_BETA, WF_ANN_STABLE } wf_ann_status;

/* annotation.ResourceTypes (0 = Unknown, also the list terminator). */
typedef enum wf_ann_resource {
    WF_ANN_RES_UNKNOWN = 0,
    WF_ANN_RES_ANY,
    WF_ANN_RES_AUTHORIZATIONPOLICY,
    WF_ANN_RES_GATEWAY,
    WF_ANN_RES_GATEWAYCLASS,
    WF_ANN_RES_INGRESS,
    WF_ANN_RES_NAMESPACE,
    WF_ANN_RES_POD,
    WF_ANN_RES_SERVICE,
    WF_ANN_RES_SERVICEENTRY,
    WF_ANN_RES_WORKLOADENTRY,
} wf_ann_resource;

#define WF_ANN_MAX_RESOURCES 3

typedef struct wf_annotation_def {
    const char *name;
    uint8_t status; /* wf_ann_status */
    bool deprecated;
    uint8_t resources[WF_ANN_MAX_RESOURCES]; /* wf_ann_resource, 0-terminated when short */
} wf_annotation_def;

/* The definition of annotation `name`, or NULL when Istio does not know it. */
const wf_annotation_def *wf_annotation_lookup(const char *name);

/* ResourceTypes.String(): "Any", "Pod", ...; "Unknown" for anything else. */
const char *wf_annotation_resource_name(unsigned r);

#endif
