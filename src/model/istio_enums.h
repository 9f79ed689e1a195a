/*
 * istio_enums.h - enum value names of the Istio API (istio.io/api) that more than one part
 * of weft reads: the validator checks them, analyzers and pilot act on them.
 *
 * Each table lists the proto enum's value names in number order and ends with NULL, so a
 * value's index is its protobuf number.
 */
#ifndef WF_MODEL_ISTIO_ENUMS_H
#define WF_MODEL_ISTIO_ENUMS_H

#include <stddef.h>

/* networking.v1alpha3.EnvoyFilter.ApplyTo: INVALID, LISTENER, ... LISTENER_FILTER. */
extern const char *const wf_envoyfilter_apply_to[];

/* networking.v1alpha3.EnvoyFilter.Patch.Operation: INVALID, MERGE, ... REPLACE. */
extern const char *const wf_envoyfilter_patch_op[];

/* Number of names in a NULL-terminated table. */
size_t wf_enum_count(const char *const *names);

#endif
