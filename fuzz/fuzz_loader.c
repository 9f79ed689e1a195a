/*
 * fuzz_loader.c - libFuzzer target for the YAML/JSON loader and the typed decoding.
 * The first byte selects the parser (odd: JSON), the rest is the document text.
 */
#include <stddef.h>
#include <stdint.h>

#include "model/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    wf_store *s = wf_store_new();
    if (!s)
        return 0;
    bool json = data[0] & 1;
    (void)wf_store_load_buffer(s, "fuzz.yaml", (const char *)data + 1, size - 1, json);
    (void)wf_store_finalize(s, "default", true);
    wf_store_free(s);
    return 0;
}
