/*
 * kube_expand.h - Kubernetes' `$(VAR_NAME)` expansion, as the kubelet applies it to a
 * container's `command`, `args` and `env[].value` (k8s.io/kubernetes
 * third_party/forked/golang/expansion, Expand and MappingFuncFor; the API reference of
 * Container.command: "Variable references $(VAR_NAME) are expanded using the container's
 * environment. If a variable cannot be resolved, the reference in the input string will be
 * unchanged. Double $$ are reduced to a single $, which allows for escaping the $(VAR_NAME)
 * syntax").
 *
 * Exactly as there: `$(NAME)` becomes NAME's value when vars defines NAME, else stays as
 * written; `$$` becomes `$` (so `$$(NAME)` is the literal `$(NAME)`); `$(` without a closing
 * `)` and `$` before any other character stay as written, as does a `$` at the end.
 */
#ifndef WF_MODEL_KUBE_EXPAND_H
#define WF_MODEL_KUBE_EXPAND_H

#include <stddef.h>

#include "core/arena.h"

/* Expand in. vars: nvars "NAME=value" strings (a name set twice: the later wins, as a map
 * built from the container's env in order). Returns in itself when it holds no `$`, else a
 * new string in a (NULL when out of memory). in must not be NULL. */
const char *wf_kube_expand(wf_arena *a, const char *in, const char *const *vars, size_t nvars);

#endif
