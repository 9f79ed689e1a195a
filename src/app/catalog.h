/*
 * catalog.h - the book's catalog service inside weft-app (`weft-app --catalog`).
 *
 * "Istio in Action" calls a small catalog API (istioinaction/catalog); weft's examples and
 * `make demo` call the same one. This module is the API's state and logic without any
 * sockets: app.c routes requests here and writes the answers. Not thread-safe (weft-app runs
 * one loop on one thread).
 *
 *   GET  /items        200, a JSON array of every item, in id order (pretty-printed, 2 spaces)
 *   GET  /items/{id}   200, the item; 404 {"error":"item {id} not found"} when absent
 *   POST /items        201, the stored item. The body is a JSON object (at most
 *                      WF_CATALOG_MAX_BODY bytes, else 413); "id" (a positive integer) is
 *                      optional: absent -> the next free id, taken -> 409. Other fields are
 *                      kept as sent (string, number, boolean or null values only). At most
 *                      WF_CATALOG_MAX_ITEMS items (then 507).
 *   GET  /blowup       200, the fault state: {"active":false} or
 *                      {"active":true,"type":"latency","latencyMs":1000,"percentage":100,
 *                       "volatile":true}
 *   POST /blowup       the book's body {"active":true,"type":"latency","latencyMs":1000,
 *                      "volatile":true}; "type" is "latency" (delay the answer by latencyMs,
 *                      default 1000, at most 600000), "500" (answer 500) or "drop" (close the
 *                      connection without an answer); "percentage" (0..100, default 100) is
 *                      the share of requests hit; "volatile" is kept and shown (a fault applies
 *                      until cleared, as in the book's service); {"active":false} clears.
 *                      200 with the new state, 400 {"error":...} for a bad body.
 *   other methods on these paths: 405.
 * The seeded items are the book's four (Elinor Glasses, Atlas Shirt, Small Metal Shoes, Red
 * Dragon Watch), with "imageUrl" added when the version label is "v2", as the book's
 * catalog v2 does. Every JSON answer is application/json.
 *
 * Faults apply to every request of the process except /blowup and /healthz (so the fault
 * can always be cleared and a health probe still answers): app.c asks wf_catalog_fault() once
 * per request, when its head has arrived.
 */
#ifndef WF_APP_CATALOG_H
#define WF_APP_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/strbuf.h"

#define WF_CATALOG_MAX_BODY       (16u * 1024u) /* POST /items and /blowup bodies */
#define WF_CATALOG_MAX_ITEMS      1000u
#define WF_CATALOG_MAX_LATENCY_MS 600000u

/* Which catalog resource a request path names (the query already removed). */
enum wf_catalog_path {
    WF_CAT_NONE,   /* not a catalog path */
    WF_CAT_ITEMS,  /* /items or /items/ */
    WF_CAT_ITEM,   /* /items/{anything} */
    WF_CAT_BLOWUP, /* /blowup */
};

/* What the current fault does to one request. */
enum wf_catalog_action {
    WF_CAT_PASS,  /* answer normally */
    WF_CAT_DELAY, /* answer normally after *delay_ms */
    WF_CAT_FAIL,  /* answer 500 (wf_catalog_fault_body) */
    WF_CAT_DROP,  /* close the connection without an answer */
};

struct wf_catalog;

/* Creates the catalog with the book's items. version: the pod's version label (borrowed
 * only during the call; NULL or "" means none); "v2" adds imageUrl to the seeded items.
 * seed: of the percentage draws. Returns NULL when out of memory. Free with
 * wf_catalog_free (NULL accepted). */
struct wf_catalog *wf_catalog_new(const char *version, uint64_t seed);
void wf_catalog_free(struct wf_catalog *cat);

/* Classifies path[0..len). */
enum wf_catalog_path wf_catalog_match(const char *path, size_t len);

/* True when the fault never applies to path[0..len) (/blowup, /healthz). */
bool wf_catalog_fault_exempt(const char *path, size_t len);

/* Draws the fault's verdict for one request (one draw of the percentage). *delay_ms is set
 * for WF_CAT_DELAY and 0 otherwise. */
enum wf_catalog_action wf_catalog_fault(struct wf_catalog *cat, uint64_t *delay_ms);

/* The body of an injected 500 (JSON), appended to out. */
void wf_catalog_fault_body(wf_strbuf *out);

/* Serves one catalog request whose whole body is body[0..blen) (too_large: the body was
 * longer than WF_CATALOG_MAX_BODY and was cut; the request gets 413). method[0..mlen) and
 * path[0..plen) as received, path without the query. Appends the JSON answer to out and
 * returns its status code, or -1 when memory ran out (out may hold a partial answer). */
int wf_catalog_serve(struct wf_catalog *cat, const char *method, size_t mlen, const char *path,
                     size_t plen, const char *body, size_t blen, bool too_large, wf_strbuf *out);

#endif
