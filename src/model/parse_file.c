/*
 * parse_file.c - reading and parsing one input file, and many in parallel (parse_file.h).
 */
#include "model/parse_file.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model/parse.h"
#include "model/store_internal.h"

void wf_parsed_file_init(wf_parsed_file *pf, const char *path, bool json)
{
    memset(pf, 0, sizeof(*pf));
    pf->path = path;
    pf->json = json;
    wf_arena_init(&pf->arena);
}

void wf_parsed_file_free(wf_parsed_file *pf)
{
    free(pf->docs);
    free(pf->res);
    free(pf->doc_errors);
    pf->docs = NULL;
    pf->res = NULL;
    pf->doc_errors = NULL;
    pf->ndocs = pf->capdocs = pf->nres = pf->capres = 0;
    pf->ndoc_errors = pf->capdoc_errors = 0;
    wf_arena_destroy(&pf->arena);
}

static void fail(wf_parsed_file *pf, uint32_t line, uint32_t col, const char *msg)
{
    pf->failed = true;
    pf->err_line = line;
    pf->err_col = col;
    snprintf(pf->err, sizeof(pf->err), "%s", msg);
}

static int on_doc(wf_node *root, uint32_t line, uint32_t col, void *arg)
{
    wf_parsed_file *pf = arg;
    if (pf->ndocs == pf->capdocs) {
        size_t cap = pf->capdocs ? pf->capdocs * 2 : 4;
        wf_parsed_doc *nd = realloc(pf->docs, cap * sizeof(*nd));
        if (!nd)
            return -1;
        pf->docs = nd;
        pf->capdocs = cap;
    }
    pf->docs[pf->ndocs++] = (wf_parsed_doc){root, line, col};
    return 0;
}

static bool grow_array(void **v, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return true;
    size_t ncap = *cap ? *cap * 2 : 8;
    void *nv = realloc(*v, ncap * elem);
    if (!nv)
        return false;
    *v = nv;
    *cap = ncap;
    return true;
}

static int on_resource(void *arg, wf_resource *r)
{
    wf_parsed_file *pf = arg;
    if (!grow_array((void **)&pf->res, &pf->capres, pf->nres, sizeof(*pf->res)))
        return -1;
    pf->res[pf->nres++] = r;
    return 0;
}

static int on_doc_error(void *arg, uint32_t line, uint32_t col, const char *msg)
{
    wf_parsed_file *pf = arg;
    const char *copy = wf_arena_strdup(&pf->arena, msg);
    if (!copy || !grow_array((void **)&pf->doc_errors, &pf->capdoc_errors, pf->ndoc_errors,
                             sizeof(*pf->doc_errors)))
        return -1;
    pf->doc_errors[pf->ndoc_errors++] = (wf_doc_error){line, col, copy};
    return 0;
}

/* Every document delivered (also those before a syntax error) becomes resources. */
static int build_all(wf_parsed_file *pf)
{
    wf_res_sink sink = {&pf->arena, on_resource, on_doc_error, pf};
    for (size_t i = 0; i < pf->ndocs; i++)
        if (wf_build_resources(&sink, pf->file, pf->json, pf->docs[i].root, pf->docs[i].line,
                               pf->docs[i].col))
            return -1;
    return 0;
}

/* A line that separates two chunks of a YAML file, as Kubernetes' YAMLReader sees it:
 * "---" at the start, then only blanks or a comment. */
static bool separator_line(const char *p, size_t n)
{
    if (n < 3 || memcmp(p, "---", 3) != 0)
        return false;
    for (size_t i = 3; i < n; i++) {
        if (p[i] == '#')
            return true;
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
            return false;
    }
    return true;
}

/* Whether a chunk holds no document: blank lines, comments and "..." end markers only. */
static bool empty_chunk(const char *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r'))
            i++;
        if (i + 3 <= n && memcmp(p + i, "...", 3) == 0)
            i += 3;
        else if (i < n && p[i] == '#')
            while (i < n && p[i] != '\n')
                i++;
        while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r'))
            i++;
        if (i < n && p[i] != '\n')
            return false;
        i++;
    }
    return true;
}

/* One chunk: its documents, or its syntax error as an error of the file (the chunks after it
 * are still read). Returns 0, or -1 on out of memory. */
static int parse_chunk(wf_parsed_file *pf, const char *buf, size_t len, uint32_t line0)
{
    if (empty_chunk(buf, len))
        return 0;
    wf_parse_error err = {0};
    int rc = wf_parse_yaml_lines(&pf->arena, buf, len, line0, on_doc, pf, &err);
    if (rc < 0)
        return -1;
    if (rc > 0 && on_doc_error(pf, err.line, err.col, err.message) != 0)
        return -1;
    return 0;
}

/* Istio reads a YAML file as chunks between separator lines, each parsed on its own: a chunk
 * that does not parse is reported and skipped, and the others are still read (istioctl
 * analyze's KubeSource.parseContent, Kubernetes' YAMLReader). Returns 0, or -1 on out of
 * memory. */
static int parse_yaml_chunks(wf_parsed_file *pf, const char *buf, size_t len)
{
    size_t start = 0, pos = 0;
    uint32_t line = 1, start_line = 1;
    while (pos < len) {
        const char *nl = memchr(buf + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - buf) + 1 : len;
        if (separator_line(buf + pos, end - pos - (nl ? 1 : 0))) {
            if (pos > start && parse_chunk(pf, buf + start, pos - start, start_line - 1) != 0)
                return -1;
            start = end;
            start_line = line + 1;
        }
        pos = end;
        line++;
    }
    if (len > start && parse_chunk(pf, buf + start, len - start, start_line - 1) != 0)
        return -1;
    return 0;
}

int wf_parsed_file_text(wf_parsed_file *pf, const char *buf, size_t len)
{
    if (!pf->file && !(pf->file = wf_arena_strdup(&pf->arena, pf->path))) {
        pf->oom = true;
        return -1;
    }
    char msg[128];
    if (len > WF_LOAD_MAX_FILE_BYTES) {
        snprintf(msg, sizeof(msg), "input is larger than the limit of %u bytes",
                 WF_LOAD_MAX_FILE_BYTES);
        fail(pf, 0, 0, msg);
        return 0;
    }
    size_t bad = wf_utf8_check(buf, len, NULL, NULL);
    if (bad < len) {
        uint32_t line, col;
        wf_utf8_check(buf, bad, &line, &col); /* the position, only when needed */
        snprintf(msg, sizeof(msg), "invalid UTF-8 (byte 0x%02X at offset %zu)",
                 (unsigned char)buf[bad], bad);
        fail(pf, line, col, msg);
        return 0;
    }
    wf_parse_error err = {0};
    int rc = pf->json ? wf_parse_json(&pf->arena, buf, len, on_doc, pf, &err)
                      : parse_yaml_chunks(pf, buf, len);
    if (rc < 0) {
        pf->oom = true;
        return -1;
    }
    if (rc > 0)
        fail(pf, err.line, err.col, err.message);
    if (build_all(pf) < 0) {
        pf->oom = true;
        return -1;
    }
    return 0;
}

/* Read all of f, stopping one byte past the size limit (the size error is then reported).
 * Returns 0, 1 on a read error, -1 on out of memory. */
static int read_stream(FILE *f, char **out, size_t *len)
{
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    if (!buf)
        return -1;
    for (;;) {
        if (n == cap) {
            if (n > WF_LOAD_MAX_FILE_BYTES)
                break;
            size_t ncap = cap * 2 > (size_t)WF_LOAD_MAX_FILE_BYTES + 1
                              ? (size_t)WF_LOAD_MAX_FILE_BYTES + 1
                              : cap * 2;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                return -1;
            }
            buf = nb;
            cap = ncap;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
    }
    if (ferror(f)) {
        free(buf);
        return 1;
    }
    *out = buf;
    *len = n;
    return 0;
}

int wf_parsed_file_read(wf_parsed_file *pf)
{
    pf->from_file = true;
    bool is_stdin = strcmp(pf->path, "-") == 0;
    FILE *f = is_stdin ? stdin : fopen(pf->path, "rb");
    if (!f) {
        fail(pf, 0, 0, strerror(errno));
        return 0;
    }
    struct stat st;
    if (!is_stdin && fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) &&
        (uint64_t)st.st_size > WF_LOAD_MAX_FILE_BYTES) {
        char msg[128];
        snprintf(msg, sizeof(msg), "file is %llu bytes, larger than the limit of %u bytes",
                 (unsigned long long)st.st_size, WF_LOAD_MAX_FILE_BYTES);
        fclose(f);
        fail(pf, 0, 0, msg); /* never read a file that is too large */
        return 0;
    }
    char *buf = NULL;
    size_t len = 0;
    int rc = read_stream(f, &buf, &len);
    if (!is_stdin)
        fclose(f);
    if (rc < 0) {
        pf->oom = true;
        return -1;
    }
    if (rc > 0) {
        fail(pf, 0, 0, "read error");
        return 0;
    }
    rc = wf_parsed_file_text(pf, buf, len);
    free(buf);
    return rc;
}

typedef struct parse_job {
    wf_parsed_file *files;
    size_t n;
    atomic_size_t next;
    atomic_bool *done; /* per file */
    atomic_int oom;
} parse_job;

/* Claim and parse the next unclaimed file; false when none is left. */
static bool parse_next(parse_job *job)
{
    size_t i = atomic_fetch_add(&job->next, 1);
    if (i >= job->n)
        return false;
    if (wf_parsed_file_read(&job->files[i]) < 0)
        atomic_store(&job->oom, 1);
    atomic_store(&job->done[i], true);
    return true;
}

static void *parse_worker(void *arg)
{
    while (parse_next(arg))
        ;
    return NULL;
}

int wf_parse_files(wf_parsed_file *files, size_t n, unsigned threads,
                   int (*take)(wf_parsed_file *pf, void *arg), void *arg)
{
    parse_job job = {files, n, 0, calloc(n ? n : 1, sizeof(atomic_bool)), 0};
    if (!job.done)
        return -1;
    if (threads > 8)
        threads = 8;
    pthread_t tid[8];
    unsigned started = 0;
    for (unsigned t = 1; t < threads && n > 1; t++) {
        if (pthread_create(&tid[started], NULL, parse_worker, &job) != 0)
            break; /* fewer threads: the calling thread does the rest */
        started++;
    }
    /* The calling thread hands files over in order, parsing others while it waits. */
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        while (!atomic_load(&job.done[i]))
            if (!parse_next(&job))
                sched_yield(); /* file i is being parsed by another thread */
        if (rc == 0 && !atomic_load(&job.oom) && take(&files[i], arg) < 0)
            rc = -1;
    }
    for (unsigned t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
    free(job.done);
    return rc < 0 || atomic_load(&job.oom) ? -1 : 0;
}
