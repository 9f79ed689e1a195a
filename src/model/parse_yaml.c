/*
 * parse_yaml.c - libyaml event stream to wf_node trees (see parse.h for the limits).
 */
#include "model/parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "model/store.h"

#define MAX_ANCHORS  10000u
#define ANCHOR_SLOTS 16384u /* hash slots for anchor names: a power of two > 1.5 * MAX_ANCHORS */

/* One open collection. Its child buffers are kept when it closes and reused by the next
 * collection at the same depth (fewer mallocs); they are freed when parsing ends. */
typedef struct frame {
    wf_node *node; /* MAP or SEQ being built */
    size_t weight; /* nodes in the expanded subtree so far */
    char *anchor;  /* heap copy of the anchor name, or NULL */
    /* children collected on the heap, copied to the arena when the frame closes */
    wf_map_entry *entries;
    wf_node **items;
    size_t n, ecap, icap;
    /* map only: the key waiting for its value */
    bool have_key;
    wf_map_entry key;
    wf_node **merges; /* values of "<<" keys */
    size_t nmerges, mcap;
} frame;

typedef struct anchor {
    char *name;
    wf_node *node;
    size_t weight;
    uint32_t slot; /* its slot in yparser.aslots */
} anchor;

typedef struct yparser {
    wf_arena *a;
    wf_parse_error *err;
    frame stack[WF_LOAD_MAX_DEPTH + 1];
    size_t depth;
    anchor *anchors;
    size_t nanchors, capanchors;
    uint16_t *aslots;   /* ANCHOR_SLOTS entries, allocated at the first anchor: anchor index
                         * + 1 by name hash; 0 = empty */
    size_t alias_total; /* expanded nodes reached through aliases in this document */
    wf_node *root;
    size_t root_weight;
    uint32_t doc_line, doc_col;
    uint32_t line0; /* lines of the file before this text (wf_parse_yaml_lines) */
    size_t ndocs;   /* documents started so far */
} yparser;

static int fail(yparser *p, const yaml_mark_t *m, const char *fmt, const char *arg)
{
    p->err->line = m ? (uint32_t)m->line + 1 + p->line0 : 0;
    p->err->col = m ? (uint32_t)m->column + 1 : 0;
    snprintf(p->err->message, sizeof(p->err->message), fmt, arg ? arg : "");
    return 1;
}

/* Close a frame's use; its buffers stay for reuse. */
static void clear_frame(frame *f)
{
    free(f->anchor);
    f->anchor = NULL;
    f->node = NULL;
    f->n = f->nmerges = 0;
    f->have_key = false;
}

static void free_frames(yparser *p)
{
    for (size_t i = 0; i < sizeof(p->stack) / sizeof(p->stack[0]); i++) {
        frame *f = &p->stack[i];
        clear_frame(f);
        free(f->entries);
        free(f->items);
        free(f->merges);
        memset(f, 0, sizeof(*f));
    }
}

static void reset_doc(yparser *p)
{
    while (p->depth > 0)
        clear_frame(&p->stack[--p->depth]);
    for (size_t i = 0; i < p->nanchors; i++) {
        p->aslots[p->anchors[i].slot] = 0;
        free(p->anchors[i].name);
    }
    p->nanchors = 0;
    p->alias_total = 0;
    p->root = NULL;
    p->root_weight = 0;
}

/* The slot for anchor `name` in p->aslots: it holds the anchor's index + 1 when the name is
 * defined, else 0 (the free slot where it would go). */
static uint32_t anchor_slot(const yparser *p, const char *name)
{
    if (!p->aslots)
        return 0;
    uint32_t h = 2166136261u;
    for (const unsigned char *c = (const unsigned char *)name; *c; c++)
        h = (h ^ *c) * 16777619u;
    uint32_t j = h & (ANCHOR_SLOTS - 1);
    while (p->aslots[j] && strcmp(p->anchors[p->aslots[j] - 1].name, name) != 0)
        j = (j + 1) & (ANCHOR_SLOTS - 1);
    return j;
}

static int remember_anchor(yparser *p, const char *name, wf_node *node, size_t weight,
                           const yaml_mark_t *m)
{
    if (!p->aslots && !(p->aslots = calloc(ANCHOR_SLOTS, sizeof(*p->aslots))))
        return -1;
    uint32_t slot = anchor_slot(p, name);
    if (p->aslots[slot]) { /* redefinition: latest wins */
        anchor *old = &p->anchors[p->aslots[slot] - 1];
        old->node = node;
        old->weight = weight;
        return 0;
    }
    if (p->nanchors >= MAX_ANCHORS)
        return fail(p, m, "yaml: too many anchors in one document (limit %s)", "10000");
    if (p->nanchors == p->capanchors) {
        size_t cap = p->capanchors ? p->capanchors * 2 : 16;
        anchor *na = realloc(p->anchors, cap * sizeof(*na));
        if (!na)
            return -1;
        p->anchors = na;
        p->capanchors = cap;
    }
    char *copy = strdup(name);
    if (!copy)
        return -1;
    p->anchors[p->nanchors++] = (anchor){copy, node, weight, slot};
    p->aslots[slot] = (uint16_t)p->nanchors;
    return 0;
}

/* Make room for at least `need` entries in a map frame. Returns 0 or -1 on OOM. */
static int grow_entries(frame *f, size_t need)
{
    if (need <= f->ecap)
        return 0;
    size_t cap = f->ecap ? f->ecap * 2 : 8;
    while (cap < need)
        cap *= 2;
    wf_map_entry *ne = realloc(f->entries, cap * sizeof(*ne));
    if (!ne)
        return -1;
    f->entries = ne;
    f->ecap = cap;
    return 0;
}

/* Give a finished child node to the parent frame (or make it the root). */
static int add_child(yparser *p, wf_node *child, size_t weight, const yaml_mark_t *m)
{
    if (p->depth == 0) {
        p->root = child;
        p->root_weight = weight;
        return 0;
    }
    frame *f = &p->stack[p->depth - 1];
    f->weight += weight;
    if (f->node->type == WF_NODE_SEQ) {
        if (f->n == f->icap) {
            size_t cap = f->icap ? f->icap * 2 : 8;
            wf_node **ni = realloc(f->items, cap * sizeof(*ni));
            if (!ni)
                return -1;
            f->items = ni;
            f->icap = cap;
        }
        f->items[f->n++] = child;
        return 0;
    }
    if (!f->have_key) {
        f->have_key = true;
        f->key.key = (child->type == WF_NODE_SCALAR) ? child->u.str : "";
        f->key.key_line = child->line;
        f->key.key_col = child->col;
        f->key.value = NULL;
        /* a plain "<<" key is a YAML merge key: remember it by a NULL-free marker */
        if (child->type == WF_NODE_SCALAR && !child->quoted && strcmp(child->u.str, "<<") == 0)
            f->key.key = NULL;
        return 0;
    }
    f->have_key = false;
    if (f->key.key == NULL) {
        if (f->nmerges == f->mcap) {
            size_t cap = f->mcap ? f->mcap * 2 : 4;
            wf_node **nm = realloc(f->merges, cap * sizeof(*nm));
            if (!nm)
                return -1;
            f->merges = nm;
            f->mcap = cap;
        }
        f->merges[f->nmerges++] = child;
        return 0;
    }
    if (f->n == f->ecap && grow_entries(f, f->n + 1))
        return -1;
    f->key.value = child;
    if (!child->key_line)
        child->key_line = f->key.key_line;
    f->entries[f->n++] = f->key;
    (void)m;
    return 0;
}

static bool is_null_plain(const char *s, size_t len)
{
    return len == 0 || (len == 1 && s[0] == '~') ||
           (len == 4 &&
            (memcmp(s, "null", 4) == 0 || memcmp(s, "Null", 4) == 0 || memcmp(s, "NULL", 4) == 0));
}

static wf_node *new_node(yparser *p, wf_node_type t, const yaml_mark_t *m)
{
    wf_node *n = wf_arena_alloc(p->a, sizeof(*n));
    if (!n)
        return NULL;
    n->type = t;
    n->line = (uint32_t)m->line + 1 + p->line0;
    n->col = (uint32_t)m->column + 1;
    return n;
}

static int on_scalar(yparser *p, yaml_event_t *ev)
{
    const char *val = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    const char *tag = (const char *)ev->data.scalar.tag;
    bool quoted =
        ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || (tag && strcmp(tag, YAML_STR_TAG) == 0);
    bool is_null = !quoted && (is_null_plain(val, len) || (tag && strcmp(tag, YAML_NULL_TAG) == 0));
    wf_node *n = new_node(p, is_null ? WF_NODE_NULL : WF_NODE_SCALAR, &ev->start_mark);
    if (!n)
        return -1;
    n->quoted = quoted;
    if (!is_null) { /* a null keeps str NULL and len 0 */
        char *s = wf_arena_strndup(p->a, val, len);
        if (!s)
            return -1;
        n->u.str = s;
        n->len = len;
    }
    if (ev->data.scalar.anchor) {
        int rc = remember_anchor(p, (const char *)ev->data.scalar.anchor, n, 1, &ev->start_mark);
        if (rc)
            return rc;
    }
    return add_child(p, n, 1, &ev->start_mark);
}

static int on_alias(yparser *p, yaml_event_t *ev)
{
    const char *name = (const char *)ev->data.alias.anchor;
    uint32_t slot = anchor_slot(p, name);
    if (!p->aslots || !p->aslots[slot])
        return fail(p, &ev->start_mark, "yaml: unknown anchor '%s' referenced", name);
    const anchor *an = &p->anchors[p->aslots[slot] - 1];
    p->alias_total += an->weight;
    if (p->alias_total > WF_LOAD_MAX_ALIAS_NODES)
        return fail(p, &ev->start_mark,
                    "yaml: document expands to too many nodes through aliases (limit %s)",
                    "100000");
    return add_child(p, an->node, an->weight, &ev->start_mark);
}

static int open_collection(yparser *p, yaml_event_t *ev, wf_node_type t, const char *anchor_name)
{
    if (p->depth >= WF_LOAD_MAX_DEPTH)
        return fail(p, &ev->start_mark, "yaml: document nested too deeply (limit %s levels)",
                    "128");
    wf_node *n = new_node(p, t, &ev->start_mark);
    if (!n)
        return -1;
    frame *f = &p->stack[p->depth++];
    clear_frame(f);
    f->node = n;
    f->weight = 1;
    if (anchor_name) {
        f->anchor = strdup(anchor_name);
        if (!f->anchor)
            return -1;
    }
    return 0;
}

static int cmp_entry_key(const void *a, const void *b)
{
    const wf_map_entry *x = *(wf_map_entry *const *)a, *y = *(wf_map_entry *const *)b;
    int c = strcmp(x->key, y->key);
    if (c)
        return c;
    return (x > y) - (x < y); /* keep document order among equals */
}

/* Kubernetes' YAML decoding rejects repeated keys; report the second one. */
static int check_duplicates(yparser *p, frame *f)
{
    if (f->n < 2)
        return 0;
    const wf_map_entry *dup = NULL, *first = NULL;
    if (f->n <= 16) {
        for (size_t i = 1; i < f->n && !dup; i++)
            for (size_t j = 0; j < i; j++)
                if (f->entries[i].key[0] && strcmp(f->entries[i].key, f->entries[j].key) == 0) {
                    dup = &f->entries[i];
                    first = &f->entries[j];
                    break;
                }
    } else {
        wf_map_entry **sorted = malloc(f->n * sizeof(*sorted));
        if (!sorted)
            return -1;
        for (size_t i = 0; i < f->n; i++)
            sorted[i] = &f->entries[i];
        qsort(sorted, f->n, sizeof(*sorted), cmp_entry_key);
        for (size_t i = 1; i < f->n; i++)
            if (sorted[i]->key[0] && strcmp(sorted[i]->key, sorted[i - 1]->key) == 0) {
                dup = sorted[i];
                first = sorted[i - 1];
                break;
            }
        free(sorted);
    }
    if (!dup)
        return 0;
    yaml_mark_t m = {0, dup->key_line - 1, dup->key_col - 1};
    char msg[200];
    snprintf(msg, sizeof(msg), "yaml: mapping key \"%.80s\" already defined at line %u", dup->key,
             first->key_line);
    return fail(p, &m, "%s", msg);
}

/* Map keys seen so far, to apply merges in linear time (open addressing, power-of-two cap). */
typedef struct keyset {
    const char **slots;
    size_t cap;
} keyset;

static uint64_t key_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* Add key; returns true when it was not there yet. */
static bool keyset_add(keyset *ks, const char *key)
{
    size_t j = (size_t)key_hash(key) & (ks->cap - 1);
    while (ks->slots[j]) {
        if (strcmp(ks->slots[j], key) == 0)
            return false;
        j = (j + 1) & (ks->cap - 1);
    }
    ks->slots[j] = key;
    return true;
}

/* The maps a "<<" value names: itself, or the maps of a sequence. */
static size_t merge_count(const wf_node *src)
{
    return src->type == WF_NODE_SEQ ? src->len : 1;
}

static const wf_node *merge_at(const wf_node *src, size_t i)
{
    return src->type == WF_NODE_SEQ ? src->u.items[i] : src;
}

/* Apply YAML merge keys: entries of merged maps not set explicitly (or by an earlier merge)
 * are appended. */
static int apply_merges(frame *f)
{
    if (!f->nmerges)
        return 0;
    size_t total = f->n;
    for (size_t m = 0; m < f->nmerges; m++)
        for (size_t s = 0; s < merge_count(f->merges[m]); s++) {
            const wf_node *mp = merge_at(f->merges[m], s);
            total += mp->type == WF_NODE_MAP ? mp->len : 0;
        }
    keyset ks = {NULL, 16};
    while (ks.cap < total * 2)
        ks.cap *= 2;
    if (grow_entries(f, total) || !(ks.slots = calloc(ks.cap, sizeof(*ks.slots))))
        return -1;
    for (size_t j = 0; j < f->n; j++)
        keyset_add(&ks, f->entries[j].key);
    for (size_t m = 0; m < f->nmerges; m++)
        for (size_t s = 0; s < merge_count(f->merges[m]); s++) {
            const wf_node *mp = merge_at(f->merges[m], s);
            for (size_t i = 0; mp->type == WF_NODE_MAP && i < mp->len; i++)
                if (keyset_add(&ks, mp->u.entries[i].key))
                    f->entries[f->n++] = mp->u.entries[i];
        }
    free(ks.slots);
    return 0;
}

static int close_collection(yparser *p, const yaml_mark_t *m)
{
    frame *f = &p->stack[p->depth - 1];
    wf_node *n = f->node;
    int rc = 0;
    if (n->type == WF_NODE_MAP) {
        if ((rc = check_duplicates(p, f)) != 0 || (rc = apply_merges(f)) != 0) {
            return rc;
        }
        n->u.entries = wf_arena_alloc(p->a, (f->n ? f->n : 1) * sizeof(wf_map_entry));
        if (!n->u.entries)
            return -1;
        if (f->n)
            memcpy(n->u.entries, f->entries, f->n * sizeof(wf_map_entry));
    } else {
        n->u.items = wf_arena_alloc(p->a, (f->n ? f->n : 1) * sizeof(wf_node *));
        if (!n->u.items)
            return -1;
        if (f->n)
            memcpy(n->u.items, f->items, f->n * sizeof(wf_node *));
    }
    n->len = f->n;
    size_t weight = f->weight;
    char *anchor_name = f->anchor;
    f->anchor = NULL;
    clear_frame(f);
    p->depth--;
    if (anchor_name) {
        rc = remember_anchor(p, anchor_name, n, weight, m);
        free(anchor_name);
        if (rc)
            return rc;
    }
    return add_child(p, n, weight, m);
}

static int handle_event(yparser *p, yaml_event_t *ev, wf_doc_cb doc, void *arg)
{
    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        /* The document's line is where its text starts as Istio's file reader counts it: the
         * line after an explicit "---", or line 1 for the first document of the stream. */
        reset_doc(p);
        if (!ev->data.document_start.implicit)
            p->doc_line = (uint32_t)ev->start_mark.line + 2;
        else
            p->doc_line = p->ndocs == 0 ? 1 : (uint32_t)ev->start_mark.line + 1;
        p->doc_line += p->line0;
        p->doc_col = 1;
        p->ndocs++;
        return 0;
    case YAML_DOCUMENT_END_EVENT:
        if (p->root && doc(p->root, p->doc_line, p->doc_col, arg) != 0)
            return -1;
        reset_doc(p);
        return 0;
    case YAML_SCALAR_EVENT:
        return on_scalar(p, ev);
    case YAML_ALIAS_EVENT:
        return on_alias(p, ev);
    case YAML_SEQUENCE_START_EVENT:
        return open_collection(p, ev, WF_NODE_SEQ, (const char *)ev->data.sequence_start.anchor);
    case YAML_MAPPING_START_EVENT:
        return open_collection(p, ev, WF_NODE_MAP, (const char *)ev->data.mapping_start.anchor);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        return close_collection(p, &ev->start_mark);
    default:
        return 0;
    }
}

/* Report libyaml's error. Reader errors (control characters, bad encodings) carry a byte
 * offset instead of a mark: turn it into a line and column. */
static int syntax_error(yparser *p, const yaml_parser_t *parser, const char *buf, size_t len)
{
    char msg[240];
    if (parser->error == YAML_READER_ERROR) {
        uint32_t line, col;
        size_t off = parser->problem_offset < len ? parser->problem_offset : len;
        wf_utf8_check(buf, off, &line, &col);
        yaml_mark_t m = {off, line - 1, col - 1};
        if (parser->problem_value >= 0)
            snprintf(msg, sizeof(msg), "yaml: %s (character U+%04X)",
                     parser->problem ? parser->problem : "error", (unsigned)parser->problem_value);
        else
            snprintf(msg, sizeof(msg), "yaml: %s", parser->problem ? parser->problem : "error");
        return fail(p, &m, "%s", msg);
    }
    snprintf(msg, sizeof(msg), "yaml: %s%s%s", parser->problem ? parser->problem : "error",
             parser->context ? " " : "", parser->context ? parser->context : "");
    yaml_mark_t m = parser->problem_mark;
    if (parser->error == YAML_PARSER_ERROR && m.index >= len && len > 0 && buf[len - 1] == '\n' &&
        m.line > 0) {
        /* a parser error found at the end of the text: at the end of its last line, not on
         * the empty line after the final newline (the line go-yaml, which Istio uses, names;
         * scanner errors keep the next line there too) */
        size_t start = len - 1;
        while (start > 0 && buf[start - 1] != '\n')
            start--;
        m.line--;
        m.column = len - 1 - start;
    }
    return fail(p, &m, "%s", msg);
}

int wf_parse_yaml(wf_arena *a, const char *buf, size_t len, wf_doc_cb doc, void *arg,
                  wf_parse_error *err)
{
    return wf_parse_yaml_lines(a, buf, len, 0, doc, arg, err);
}

int wf_parse_yaml_lines(wf_arena *a, const char *buf, size_t len, uint32_t line0, wf_doc_cb doc,
                        void *arg, wf_parse_error *err)
{
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return -1;
    yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
    yparser *p = calloc(1, sizeof(*p));
    if (!p) {
        yaml_parser_delete(&parser);
        return -1;
    }
    p->a = a;
    p->err = err;
    p->line0 = line0;
    int rc = 0;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            if (parser.error == YAML_MEMORY_ERROR) {
                rc = -1;
                break;
            }
            rc = syntax_error(p, &parser, buf, len);
            break;
        }
        bool end = ev.type == YAML_STREAM_END_EVENT;
        rc = handle_event(p, &ev, doc, arg);
        yaml_event_delete(&ev);
        if (rc || end)
            break;
    }
    reset_doc(p);
    free_frames(p);
    free(p->aslots);
    free(p->anchors);
    free(p);
    yaml_parser_delete(&parser);
    return rc;
}
