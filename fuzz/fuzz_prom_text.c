/*
 * fuzz_prom_text.c - libFuzzer target for weft-pilot's Prometheus text parser
 * (pilot/mesh_metrics_text.h) and the Istio metrics store that reads a proxy's scrape with it
 * (pilot/mesh_metrics.h), then the graph built from it (pilot/ui_graph.h): what any proxy, or
 * anything answering on a proxy's address, may send pilot.
 *
 * Input: the scrape text. Checks besides crashes, leaks and undefined behaviour: an error
 * names its line ("line N: ..."); every sample has a name, at most WF_PROM_MAX_LABELS labels
 * and NUL-terminated strings; lines are independent, so the text cut after any newline parses
 * to as many samples (and to an error exactly when one of the parts has one); a scrape read
 * twice into the store (a baseline, then the same values) adds nothing, and a second scrape of
 * the same text after a counter reset adds at most its own values; the graph of the store is
 * built without failing.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "pilot/mesh_metrics.h"
#include "pilot/mesh_metrics_text.h"
#include "pilot/ui_graph.h"

static int count(void *ud, const wf_prom_sample *s)
{
    if (!s->name || !s->name[0] || s->n_labels > WF_PROM_MAX_LABELS)
        abort();
    for (size_t i = 0; i < s->n_labels; i++)
        if (!s->label_name[i] || !s->label_value[i] || !s->label_name[i][0])
            abort();
    (*(size_t *)ud)++;
    return 0;
}

static int parse(const char *p, size_t n, size_t *samples)
{
    char err[128] = "";
    *samples = 0;
    int rc = wf_prom_parse(p, n, NULL, count, samples, err, sizeof err);
    if (rc != 0 && strncmp(err, "line ", 5) != 0)
        abort();
    return rc;
}

static void whole_and_parts(const uint8_t *data, size_t size)
{
    const char *t = (const char *)data;
    size_t whole = 0;
    int rc = parse(t, size, &whole);
    const char *nl = memchr(t, '\n', size);
    if (!nl)
        return;
    size_t cut = (size_t)(nl - t) + 1, a = 0, b = 0;
    int ra = parse(t, cut, &a);
    int rb = ra == 0 ? parse(t + cut, size - cut, &b) : 0;
    if ((rc != 0) != (ra != 0 || rb != 0))
        abort();
    if (rc == 0 && whole != a + b)
        abort();
}

static void store(const uint8_t *data, size_t size)
{
    wf_mm_store *s = wf_mm_store_new();
    wf_mm_target *t = wf_mm_target_new();
    if (!s || !t)
        abort();
    wf_mm_scrape_info info;
    char err[128];
    const char *txt = (const char *)data;
    if (wf_mm_ingest(s, t, true, txt, size, &info, err, sizeof err) == 0) {
        wf_mm_round_end(s, 1000);
        if (wf_mm_ingest(s, t, true, txt, size, &info, err, sizeof err) != 0)
            abort(); /* the same text again */
        wf_mm_round_end(s, 16000);
        if (wf_mm_tuple_count(s) != 0) /* nothing increased */
            abort();
        wf_mm_target *fresh = wf_mm_target_new(); /* a restarted proxy's second target */
        wf_mm_ingest(s, fresh, false, "", 0, &info, err, sizeof err);
        wf_mm_ingest(s, fresh, false, txt, size, &info, err, sizeof err);
        wf_mm_target_free(fresh);
        wf_mm_round_end(s, 31000);
        json_t *g = wf_ui_graph_build(s, 60, NULL);
        json_t *g2 = wf_ui_graph_build(s, 3600, "ns");
        if (!g || !g2)
            abort();
        json_decref(g);
        json_decref(g2);
    }
    wf_mm_target_free(t);
    wf_mm_store_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    whole_and_parts(data, size);
    store(data, size);
    return 0;
}
