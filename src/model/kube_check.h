/*
 * kube_check.h - type checks of the Kubernetes built-in objects weft reads.
 *
 * istioctl decodes Kubernetes objects from files with the API machinery's strict JSON
 * decoding (pilot/pkg/config/file/store.go parseChunk: "failed parsing JSON for built-in
 * type"), so a document whose fields have the wrong JSON type is rejected whole. This
 * checks the fields weft uses: metadata (name, namespace, labels, annotations), Service
 * ports and selector, workload replicas/selector/template, and pod containers and ports.
 */
#ifndef WF_MODEL_KUBE_CHECK_H
#define WF_MODEL_KUBE_CHECK_H

#include <stddef.h>

#include "model/kinds.h"
#include "model/node.h"

/* Check `root` (a document of kind k). Returns 0 when the fields have the right types;
 * otherwise 1, with a message naming the field path written to msg (msg_size bytes) and
 * *at set to the node at fault. Kinds other than the Kubernetes built-ins get only the
 * metadata checks. */
int wf_kube_check(const wf_node *root, wf_kind k, char *msg, size_t msg_size, const wf_node **at);

#endif
