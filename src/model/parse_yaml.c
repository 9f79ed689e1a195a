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
    /* Where libyaml's marks are in the file (see mark_pos). */
    const char *buf; /* the text, len bytes */
    size_t len;
    size_t bom;     /* 3 when the text starts with a UTF-8 byte order mark, else 0 */
    uint32_t line0; /* lines of the file before this text (wf_parse_yaml_lines) */
    size_t *starts; /* NULL, or the mark index (character) each of the text's LF lines
                     * starts at, when the text has line breaks other than LF and CR LF */
    size_t nstarts;
    size_t ndocs; /* documents started so far */
} yparser;

/* Set *err to the file position line:col (1-based; 0 when unknown). */
static int fail_at(yparser *p, uint32_t line, uint32_t col, const char *fmt, const char *arg)
{
    p->err->line = line;
    p->err->col = col;
    snprintf(p->err->message, sizeof(p->err->message), fmt, arg ? arg : "");
    return 1;
}

/* Whether libyaml counts lines differently from the file's LF lines in buf: YAML 1.1 also
 * breaks lines at a lone CR, NEL (U+0085), LS (U+2028) and PS (U+2029); editors, grep -n and
 * the file's chunk reader (parse_file.c) do not. */
static bool other_breaks(const char *buf, size_t len)
{
    const char *end = buf + len;
    for (const char *c = buf; (c = memchr(c, '\r', (size_t)(end - c))) != NULL; c++)
        if (c + 1 == end || c[1] != '\n')
            return true;
    for (const char *c = buf; (c = memchr(c, '\xc2', (size_t)(end - c))) != NULL; c++)
        if (c + 1 < end && (unsigned char)c[1] == 0x85)
            return true;
    for (const char *c = buf; (c = memchr(c, '\xe2', (size_t)(end - c))) != NULL; c++)
        if (c + 2 < end && (unsigned char)c[1] == 0x80 &&
            ((unsigned char)c[2] == 0xA8 || (unsigned char)c[2] == 0xA9))
            return true;
    return false;
}

/* Fill p->starts when libyaml's lines are not the file's. Returns 0 or -1 (out of memory). */
static int index_lines(yparser *p)
{
    const char *text = p->buf + p->bom, *end = p->buf + p->len;
    if (!other_breaks(text, (size_t)(end - text)))
        return 0;
    size_t n = 1;
    for (const char *c = text; (c = memchr(c, '\n', (size_t)(end - c))) != NULL; c++)
        n++;
    if (!(p->starts = malloc(n * sizeof(*p->starts))))
        return -1;
    size_t chars = 0;
    p->starts[p->nstarts++] = 0;
    for (const char *c = text; c < end; c++) {
        chars += ((unsigned char)*c & 0xC0) != 0x80; /* libyaml's index counts characters */
        if (*c == '\n')
            p->starts[p->nstarts++] = chars;
    }
    return 0;
}

/* The 1-based file line and column (in characters) of a libyaml mark. libyaml's own line and
 * column are right unless the text has other line breaks; then its index (characters after
 * any byte order mark) is placed on the LF lines. */
static void mark_pos(const yparser *p, const yaml_mark_t *m, uint32_t *line, uint32_t *col)
{
    if (!p->starts) {
        *line = (uint32_t)m->line + 1 + p->line0;
        *col = (uint32_t)m->column + 1;
        return;
    }
    size_t lo = 0, hi = p->nstarts; /* the last start <= m->index */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->starts[mid] <= m->index)
            lo = mid;
        else
            hi = mid;
    }
    *line = (uint32_t)lo + 1 + p->line0;
    *col = (uint32_t)(m->index - p->starts[lo]) + 1;
}

/* The file line and column of byte offset off of the text, counted as libyaml counts columns
 * (a leading byte order mark is not a character). */
static void offset_pos(const yparser *p, size_t off, uint32_t *line, uint32_t *col)
{
    off = off < p->bom ? 0 : off - p->bom;
    wf_utf8_check(p->buf + p->bom, off, line, col);
    *line += p->line0;
}

static int fail(yparser *p, const yaml_mark_t *m, const char *fmt, const char *arg)
{
    uint32_t line = 0, col = 0;
    if (m)
        mark_pos(p, m, &line, &col);
    return fail_at(p, line, col, fmt, arg);
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

/* Anchor `name` on node (its position is the anchor's: where the node's event starts). */
static int remember_anchor(yparser *p, const char *name, wf_node *node, size_t weight)
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
        return fail_at(p, node->line, node->col,
                       "yaml: too many anchors in one document (limit %s)", "10000");
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

/* Give a finished child node to the parent frame (or make it the root). `at` is where this
 * use of the child starts when that is not the child's own position (an alias), else NULL. */
static int add_child(yparser *p, wf_node *child, size_t weight, const yaml_mark_t *at)
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
        if (at) /* an alias as a key: the key is where the alias is, not its anchor */
            mark_pos(p, at, &f->key.key_line, &f->key.key_col);
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
    mark_pos(p, m, &n->line, &n->col);
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
        int rc = remember_anchor(p, (const char *)ev->data.scalar.anchor, n, 1);
        if (rc)
            return rc;
    }
    return add_child(p, n, 1, NULL);
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
    char msg[200];
    snprintf(msg, sizeof(msg), "yaml: mapping key \"%.80s\" already defined at line %u", dup->key,
             first->key_line);
    return fail_at(p, dup->key_line, dup->key_col, "%s", msg); /* file positions already */
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

static int close_collection(yparser *p)
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
        rc = remember_anchor(p, anchor_name, n, weight);
        free(anchor_name);
        if (rc)
            return rc;
    }
    return add_child(p, n, weight, NULL);
}

static int handle_event(yparser *p, yaml_event_t *ev, wf_doc_cb doc, void *arg)
{
    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        /* The document's line is where its text starts as Istio's file reader counts it: the
         * line after an explicit "---", or line 1 for the first document of the stream. */
        reset_doc(p);
        mark_pos(p, &ev->start_mark, &p->doc_line, &p->doc_col);
        if (!ev->data.document_start.implicit)
            p->doc_line++;
        else if (p->ndocs == 0)
            p->doc_line = 1 + p->line0;
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
        return close_collection(p);
    default:
        return 0;
    }
}

/* Whether mark m is at the end of the text: libyaml's index counts characters (after any byte
 * order mark), not bytes, and its end-of-stream mark is on a line of its own. */
static bool at_end(const yparser *p, const yaml_mark_t *m)
{
    size_t chars = 0;
    for (size_t i = p->bom; i < p->len; i++)
        chars += ((unsigned char)p->buf[i] & 0xC0) != 0x80;
    return m->index >= chars;
}

/* Report libyaml's error. Reader errors (control characters, bad encodings) carry a byte
 * offset instead of a mark: turn it into a line and column. */
static int syntax_error(yparser *p, const yaml_parser_t *parser)
{
    char msg[240];
    uint32_t line, col;
    if (parser->error == YAML_READER_ERROR) {
        offset_pos(p, parser->problem_offset < p->len ? parser->problem_offset : p->len, &line,
                   &col);
        if (parser->problem_value >= 0)
            snprintf(msg, sizeof(msg), "yaml: %s (character U+%04X)",
                     parser->problem ? parser->problem : "error", (unsigned)parser->problem_value);
        else
            snprintf(msg, sizeof(msg), "yaml: %s", parser->problem ? parser->problem : "error");
        return fail_at(p, line, col, "%s", msg);
    }
    snprintf(msg, sizeof(msg), "yaml: %s%s%s", parser->problem ? parser->problem : "error",
             parser->context ? " " : "", parser->context ? parser->context : "");
    if (at_end(p, &parser->problem_mark)) {
        /* an error found at the end of the text is at its end, not on libyaml's line after it
         * (past the end of a file without a final newline). A parser error is just after the
         * last character that is not white space: the end of the line go-yaml, which Istio
         * uses on the chunk with its white space trimmed, names, not the next chunk's "---"
         * line; a scanner error keeps the line after a final newline, as go-yaml does. */
        size_t end = p->len;
        while (parser->error == YAML_PARSER_ERROR && end > p->bom &&
               (p->buf[end - 1] == ' ' || p->buf[end - 1] == '\t' || p->buf[end - 1] == '\r' ||
                p->buf[end - 1] == '\n'))
            end--;
        offset_pos(p, end, &line, &col);
        return fail_at(p, line, col, "%s", msg);
    }
    return fail(p, &parser->problem_mark, "%s", msg);
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
    p->buf = buf;
    p->len = len;
    p->bom = len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
    p->line0 = line0;
    int rc = index_lines(p);
    while (rc == 0) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            if (parser.error == YAML_MEMORY_ERROR) {
                rc = -1;
                break;
            }
            rc = syntax_error(p, &parser);
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
    free(p->starts);
    free(p);
    yaml_parser_delete(&parser);
    return rc;
}
