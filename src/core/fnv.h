/*
 * fnv.h - FNV-1a, 32 bits (the Fowler-Noll-Vo hash Istio's auto-allocation and weft's stable
 * address choices use): wf_fnv32a(WF_FNV32_OFFSET, s) hashes s; chain calls to hash several
 * strings as one (NULL hashes as ""). Header only, no state.
 */
#ifndef WF_CORE_FNV_H
#define WF_CORE_FNV_H

#include <stdint.h>

#define WF_FNV32_OFFSET 2166136261u

static inline uint32_t wf_fnv32a(uint32_t h, const char *s)
{
    for (const char *p = s; p && *p; p++) {
        h ^= (unsigned char)*p;
        h *= 16777619u;
    }
    return h;
}

#endif
