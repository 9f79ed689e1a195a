/*
 * fuzz_loader.c - libFuzzer target for the YAML/JSON loader and the typed decoding.
 * The first byte selects the parser (odd: JSON), the rest is the document text.
 *
 * Besides crashes it checks that every position a YAML load error names is in the file: a
 * line of it (or the empty line after its final newline) and a column at most one past that
 * line's last character (positions in a file's later chunks were once shifted twice).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/store.h"

/* Whether line:col (1-based, columns in characters) is in text or just past a line's end. */
static bool in_text(const char *text, size_t len, uint32_t line, uint32_t col)
{
    const char *p = text, *end = text + len;
    for (uint32_t l = 1; l < line; l++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            return false;
        p = nl + 1;
    }
    uint32_t chars = 0;
    for (; p < end && *p != '\n'; p++)
        chars += ((unsigned char)*p & 0xC0) != 0x80;
    return col >= 1 && col <= chars + 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    wf_store *s = wf_store_new();
    if (!s)
        return 0;
    bool json = data[0] & 1;
    const char *text = (const char *)data + 1;
    (void)wf_store_load_buffer(s, "fuzz.yaml", text, size - 1, json);
    for (size_t i = 0; !json && i < wf_store_error_count(s); i++) {
        const wf_load_error *e = wf_store_error(s, i);
        if (e->line && !in_text(text, size - 1, e->line, e->col))
            abort(); /* a position outside the file */
    }
    (void)wf_store_finalize(s, "default", true);
    wf_store_free(s);
    return 0;
}
