/*
 * validate_schema.h - field tables of the Istio kinds for type and unknown-field checks.
 *
 * One table per proto message, with the JSON (camelCase) field names of istio.io/api and
 * their proto3 JSON types. A message marked open accepts fields it does not list (used
 * where the API grows often or carries free-form config); listed fields are still typed.
 * Fields of one oneof share a nonzero group number.
 */
#ifndef WF_MODEL_VALIDATE_SCHEMA_H
#define WF_MODEL_VALIDATE_SCHEMA_H

#include <stdbool.h>
#include <stdint.h>

#include "model/kinds.h"

typedef enum vs_type {
    S_STR,
    S_BOOL,
    S_I32,
    S_U32,
    S_I64,
    S_U64,
    S_DBL,
    S_DUR,    /* google.protobuf.Duration as Go duration text ("1.5s", "1m") */
    S_ENUM,   /* sub: NULL-terminated names, in number order */
    S_MSG,    /* sub: const vs_msg * */
    S_STRUCT, /* google.protobuf.Struct: any object */
    S_ANY,    /* google.protobuf.Value: anything */
    S_BYTES,
} vs_type;

enum { F_LIST = 1, F_MAP = 2, F_U32KEY = 4 };

typedef struct vs_field {
    const char *name;
    uint8_t type;
    uint8_t flags;
    uint8_t oneof;
    const void *sub;
} vs_field;

typedef struct vs_msg {
    const vs_field *fields; /* terminated by a NULL name */
    bool open;
} vs_msg;

/* The spec message of a kind, or NULL. */
const vs_msg *vs_schema_for_kind(wf_kind kind);

#endif
