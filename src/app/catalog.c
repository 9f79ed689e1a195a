/*
 * catalog.c - the catalog API and its fault controls (see catalog.h).
 *
 * Items live in a jansson array kept in id order; each item is an object whose first key is
 * "id" (jansson keeps insertion order, so answers print the fields as they were given).
 */
#include "app/catalog.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#define CAT_MAX_ID    1000000000LL
#define CAT_DUMP      (JSON_INDENT(2) | JSON_PRESERVE_ORDER)
#define CAT_IMAGE_URL "http://lorempixel.com/640/480"

enum cat_fault_type { FAULT_LATENCY, FAULT_500, FAULT_DROP };

struct cat_fault {
    bool active;
    enum cat_fault_type type;
    uint64_t latency_ms;
    double percentage; /* 0..100 */
    bool volatile_;
};

struct wf_catalog {
    json_t *items; /* array of objects, sorted by "id" */
    struct cat_fault fault;
    uint64_t rng;
};

/* The book's catalog items (istioinaction/catalog). */
static const struct {
    long long id;
    const char *color, *department, *name, *price;
} seed_items[] = {
    {1, "amber", "Eyewear", "Elinor Glasses", "282.00"},
    {2, "cyan", "Clothing", "Atlas Shirt", "127.00"},
    {3, "teal", "Clothing", "Small Metal Shoes", "232.00"},
    {4, "red", "Watches", "Red Dragon Watch", "232.00"},
};

/* ---- helpers ---- */

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static bool span_eq(const char *p, size_t n, const char *lit)
{
    size_t l = strlen(lit);
    return n == l && memcmp(p, lit, l) == 0;
}

/* Appends the JSON text of v (pretty when pretty) to out; -1 when out of memory. */
static int dump_to(wf_strbuf *out, const json_t *v, bool pretty)
{
    char *s = json_dumps(v, pretty ? CAT_DUMP : JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!s)
        return -1;
    wf_strbuf_puts(out, s);
    if (pretty)
        wf_strbuf_putc(out, '\n');
    free(s);
    return wf_strbuf_failed(out) ? -1 : 0;
}

/* {"error":"msg"} with status; returns status, or -1 when out of memory. */
static int reply_error(wf_strbuf *out, int status, const char *msg)
{
    json_t *o = json_pack("{s:s}", "error", msg);
    int r = o ? dump_to(out, o, false) : -1;
    json_decref(o);
    if (r == 0)
        wf_strbuf_putc(out, '\n');
    return r == 0 && !wf_strbuf_failed(out) ? status : -1;
}

static long long item_id(const json_t *item)
{
    return json_integer_value(json_object_get(item, "id"));
}

/* Index of the item with id, or -1. */
static long long find_item(const struct wf_catalog *cat, long long id)
{
    size_t i;
    json_t *it;
    json_array_foreach(cat->items, i, it)
    {
        if (item_id(it) == id)
            return (long long)i;
    }
    return -1;
}

/* Inserts item (reference stolen) keeping id order; -1 when out of memory. */
static int insert_item(struct wf_catalog *cat, json_t *item)
{
    long long id = item_id(item);
    size_t i, n = json_array_size(cat->items);
    for (i = 0; i < n; i++)
        if (item_id(json_array_get(cat->items, i)) > id)
            break;
    return json_array_insert_new(cat->items, i, item);
}

/* ---- lifecycle ---- */

static json_t *seed_item(size_t i, bool v2)
{
    json_t *o = json_pack("{s:I,s:s,s:s,s:s,s:s}", "id", (json_int_t)seed_items[i].id, "color",
                          seed_items[i].color, "department", seed_items[i].department, "name",
                          seed_items[i].name, "price", seed_items[i].price);
    if (o && v2 && json_object_set_new(o, "imageUrl", json_string(CAT_IMAGE_URL)) != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

struct wf_catalog *wf_catalog_new(const char *version, uint64_t seed)
{
    struct wf_catalog *cat = calloc(1, sizeof *cat);
    if (!cat)
        return NULL;
    cat->items = json_array();
    cat->rng = (seed * 0x9E3779B97F4A7C15ULL) | 1;
    bool v2 = version && strcmp(version, "v2") == 0;
    for (size_t i = 0; cat->items && i < sizeof seed_items / sizeof seed_items[0]; i++) {
        json_t *o = seed_item(i, v2);
        if (!o || json_array_append_new(cat->items, o) != 0) {
            wf_catalog_free(cat);
            return NULL;
        }
    }
    if (!cat->items) {
        free(cat);
        return NULL;
    }
    cat->fault.percentage = 100;
    return cat;
}

void wf_catalog_free(struct wf_catalog *cat)
{
    if (!cat)
        return;
    json_decref(cat->items);
    free(cat);
}

/* ---- paths and faults ---- */

enum wf_catalog_path wf_catalog_match(const char *path, size_t len)
{
    if (span_eq(path, len, "/items") || span_eq(path, len, "/items/"))
        return WF_CAT_ITEMS;
    if (len > 7 && memcmp(path, "/items/", 7) == 0)
        return WF_CAT_ITEM;
    if (span_eq(path, len, "/blowup"))
        return WF_CAT_BLOWUP;
    return WF_CAT_NONE;
}

bool wf_catalog_fault_exempt(const char *path, size_t len)
{
    return span_eq(path, len, "/blowup") || span_eq(path, len, "/healthz");
}

enum wf_catalog_action wf_catalog_fault(struct wf_catalog *cat, uint64_t *delay_ms)
{
    *delay_ms = 0;
    if (!cat->fault.active)
        return WF_CAT_PASS;
    /* a draw in [0, 10000) against the percentage in hundredths */
    uint64_t draw = rng_next(&cat->rng) % 10000u;
    if ((double)draw >= cat->fault.percentage * 100.0)
        return WF_CAT_PASS;
    switch (cat->fault.type) {
    case FAULT_LATENCY:
        *delay_ms = cat->fault.latency_ms;
        return *delay_ms ? WF_CAT_DELAY : WF_CAT_PASS;
    case FAULT_500:
        return WF_CAT_FAIL;
    case FAULT_DROP:
        return WF_CAT_DROP;
    }
    return WF_CAT_PASS;
}

void wf_catalog_fault_body(wf_strbuf *out)
{
    wf_strbuf_puts(out, "{\"error\":\"blowup: injected failure (type 500)\"}\n");
}

/* ---- /items ---- */

static int get_items(struct wf_catalog *cat, wf_strbuf *out)
{
    return dump_to(out, cat->items, true) == 0 ? 200 : -1;
}

/* Parses the {id} of /items/{id}: 1..CAT_MAX_ID in decimal, else -1. */
static long long parse_id(const char *s, size_t n)
{
    long long v = 0;
    if (n == 0 || n > 10)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v >= 1 && v <= CAT_MAX_ID ? v : -1;
}

static int get_item(struct wf_catalog *cat, const char *path, size_t plen, wf_strbuf *out)
{
    const char *idp = path + 7;
    size_t idn = plen - 7;
    long long id = parse_id(idp, idn);
    long long at = id > 0 ? find_item(cat, id) : -1;
    if (at < 0) {
        char msg[64];
        snprintf(msg, sizeof msg, "item %.*s not found", (int)(idn > 20 ? 20 : idn), idp);
        return reply_error(out, 404, msg);
    }
    return dump_to(out, json_array_get(cat->items, (size_t)at), true) == 0 ? 200 : -1;
}

/* The new item from a POST body: "id" first, then the other scalar fields as sent. Returns
 * NULL with *status and *msg set when the body is not acceptable (or memory ran out: status -1). */
static json_t *build_item(struct wf_catalog *cat, const json_t *in, int *status, const char **msg)
{
    const json_t *idv = json_object_get(in, "id");
    long long id;
    *status = 400;
    if (idv) {
        id = json_is_integer(idv) ? json_integer_value(idv) : -1;
        if (id < 1 || id > CAT_MAX_ID) {
            *msg = "\"id\" must be an integer from 1 to 1000000000";
            return NULL;
        }
        if (find_item(cat, id) >= 0) {
            *status = 409;
            *msg = "an item with this id exists";
            return NULL;
        }
    } else {
        size_t n = json_array_size(cat->items);
        id = n ? item_id(json_array_get(cat->items, n - 1)) + 1 : 1;
        if (id > CAT_MAX_ID) {
            *status = 507;
            *msg = "no free id";
            return NULL;
        }
    }
    json_t *item = json_pack("{s:I}", "id", (json_int_t)id);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)in, key, v)
    {
        if (!item || strcmp(key, "id") == 0)
            continue;
        if (json_is_object(v) || json_is_array(v)) {
            json_decref(item);
            *msg = "item fields must be strings, numbers, booleans or null";
            return NULL;
        }
        if (json_object_set(item, key, v) != 0) {
            json_decref(item);
            item = NULL;
        }
    }
    if (!item)
        *status = -1;
    return item;
}

static int post_item(struct wf_catalog *cat, const char *body, size_t blen, wf_strbuf *out)
{
    json_error_t err;
    int status = 400;
    const char *msg = "the body must be a JSON object";
    if (json_array_size(cat->items) >= WF_CATALOG_MAX_ITEMS)
        return reply_error(out, 507, "the catalog is full (1000 items)");
    json_t *in = json_loadb(body, blen, JSON_REJECT_DUPLICATES, &err);
    json_t *item = json_is_object(in) ? build_item(cat, in, &status, &msg) : NULL;
    json_decref(in);
    if (!item)
        return status < 0 ? -1 : reply_error(out, status, msg);
    if (dump_to(out, item, true) != 0) {
        json_decref(item);
        return -1;
    }
    return insert_item(cat, item) == 0 ? 201 : -1;
}

/* ---- /blowup ---- */

static const char *fault_type_name(enum cat_fault_type t)
{
    return t == FAULT_LATENCY ? "latency" : t == FAULT_500 ? "500" : "drop";
}

static int blowup_state(const struct wf_catalog *cat, wf_strbuf *out)
{
    const struct cat_fault *f = &cat->fault;
    json_t *o = json_pack("{s:b}", "active", f->active);
    int r = -1;
    if (o && f->active) {
        double p = f->percentage;
        json_t *pv = p == floor(p) ? json_integer((json_int_t)p) : json_real(p);
        if (json_object_set_new(o, "type", json_string(fault_type_name(f->type))) != 0 ||
            (f->type == FAULT_LATENCY &&
             json_object_set_new(o, "latencyMs", json_integer((json_int_t)f->latency_ms)) != 0) ||
            json_object_set_new(o, "percentage", pv) != 0 ||
            json_object_set_new(o, "volatile", json_boolean(f->volatile_)) != 0) {
            json_decref(o);
            o = NULL;
        }
    }
    if (o)
        r = dump_to(out, o, false);
    json_decref(o);
    if (r == 0)
        wf_strbuf_putc(out, '\n');
    return r == 0 && !wf_strbuf_failed(out) ? 200 : -1;
}

/* Reads the fault fields of an active blowup into f; NULL, or the error message. */
static const char *parse_fault(const json_t *in, struct cat_fault *f)
{
    const char *type = json_string_value(json_object_get(in, "type"));
    const json_t *lat = json_object_get(in, "latencyMs");
    const json_t *pct = json_object_get(in, "percentage");
    const json_t *vol = json_object_get(in, "volatile");
    if (!type)
        return "\"type\" must be \"latency\", \"500\" or \"drop\"";
    if (strcmp(type, "latency") == 0)
        f->type = FAULT_LATENCY;
    else if (strcmp(type, "500") == 0)
        f->type = FAULT_500;
    else if (strcmp(type, "drop") == 0)
        f->type = FAULT_DROP;
    else
        return "\"type\" must be \"latency\", \"500\" or \"drop\"";
    f->latency_ms = 1000;
    if (lat && (!json_is_integer(lat) || json_integer_value(lat) < 0 ||
                json_integer_value(lat) > WF_CATALOG_MAX_LATENCY_MS))
        return "\"latencyMs\" must be an integer from 0 to 600000";
    if (lat)
        f->latency_ms = (uint64_t)json_integer_value(lat);
    f->percentage = pct ? json_number_value(pct) : 100;
    if (pct && (!json_is_number(pct) || !(f->percentage >= 0 && f->percentage <= 100)))
        return "\"percentage\" must be a number from 0 to 100";
    if (vol && !json_is_boolean(vol))
        return "\"volatile\" must be a boolean";
    f->volatile_ = vol && json_is_true(vol);
    f->active = true;
    return NULL;
}

static int post_blowup(struct wf_catalog *cat, const char *body, size_t blen, wf_strbuf *out)
{
    json_error_t err;
    json_t *in = json_loadb(body, blen, JSON_REJECT_DUPLICATES, &err);
    const json_t *active = json_object_get(in, "active");
    const char *msg = NULL;
    struct cat_fault f = {.percentage = 100};
    if (!json_is_object(in) || !json_is_boolean(active))
        msg = "the body must be a JSON object with \"active\": true or false";
    else if (json_is_true(active))
        msg = parse_fault(in, &f);
    json_decref(in);
    if (msg)
        return reply_error(out, 400, msg);
    cat->fault = f;
    return blowup_state(cat, out);
}

/* ---- dispatch ---- */

int wf_catalog_serve(struct wf_catalog *cat, const char *method, size_t mlen, const char *path,
                     size_t plen, const char *body, size_t blen, bool too_large, wf_strbuf *out)
{
    bool get = span_eq(method, mlen, "GET") || span_eq(method, mlen, "HEAD");
    bool post = span_eq(method, mlen, "POST");
    enum wf_catalog_path p = wf_catalog_match(path, plen);
    if (post && too_large)
        return reply_error(out, 413, "the body is larger than 16384 bytes");
    switch (p) {
    case WF_CAT_ITEMS:
        if (get)
            return get_items(cat, out);
        if (post)
            return post_item(cat, body, blen, out);
        return reply_error(out, 405, "use GET or POST");
    case WF_CAT_ITEM:
        return get ? get_item(cat, path, plen, out) : reply_error(out, 405, "use GET");
    case WF_CAT_BLOWUP:
        if (get)
            return blowup_state(cat, out);
        if (post)
            return post_blowup(cat, body, blen, out);
        return reply_error(out, 405, "use GET or POST");
    case WF_CAT_NONE:
        break;
    }
    return reply_error(out, 404, "not found");
}
