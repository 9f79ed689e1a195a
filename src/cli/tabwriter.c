/*
 * tabwriter.c - Go's text/tabwriter (minwidth 0, padchar ' ', flags 0), see tabwriter.h.
 *
 * The algorithm is Go's Writer.format: lines are split into cells; column k of a run of
 * consecutive lines that all have a tab-terminated cell k forms a block whose width is the
 * widest cell (in runes) plus padding; blocks are found recursively left to right.
 */
#include "cli/tabwriter.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct tw_cell {
    size_t off;   /* into the text */
    size_t size;  /* bytes */
    size_t width; /* runes */
} tw_cell;

typedef struct tw_line {
    tw_cell *cells;
    size_t n; /* cells; the last one is the trailing (not tab-terminated) cell */
} tw_line;

typedef struct tw_ctx {
    const char *text;
    size_t padding;
    tw_line *lines;
    size_t nlines;
    size_t *widths; /* stack of column widths */
    size_t nwidths;
    bool final_nl; /* the text ended in '\n' */
    wf_strbuf *out;
} tw_ctx;

void wf_tw_init(wf_tw *tw, size_t padding)
{
    tw->padding = padding;
    wf_strbuf tmp = WF_STRBUF_INIT;
    tw->text = tmp;
}

void wf_tw_printf(wf_tw *tw, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0) {
        tw->text.failed = true;
        return;
    }
    wf_strbuf_append(&tw->text, s, (size_t)n);
    free(s);
}

void wf_tw_puts(wf_tw *tw, const char *s)
{
    wf_strbuf_puts(&tw->text, s);
}

static size_t rune_count(const char *s, size_t n)
{
    size_t r = 0;
    for (size_t i = 0; i < n; i++) {
        if (((unsigned char)s[i] & 0xC0) != 0x80) {
            r++;
        }
    }
    return r;
}

static void free_lines(tw_line *lines, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(lines[i].cells);
    }
    free(lines);
}

/* Splits [start, end) (one line without its '\n') into cells. Returns 0 or -1 (no memory). */
static int split_line(const char *text, size_t start, size_t end, tw_line *line)
{
    size_t n = 1;
    for (size_t i = start; i < end; i++) {
        n += text[i] == '\t';
    }
    line->cells = calloc(n, sizeof *line->cells);
    if (!line->cells) {
        return -1;
    }
    line->n = n;
    size_t k = 0, cs = start;
    for (size_t i = start; i <= end; i++) {
        if (i == end || text[i] == '\t') {
            line->cells[k].off = cs;
            line->cells[k].size = i - cs;
            line->cells[k].width = rune_count(text + cs, i - cs);
            k++;
            cs = i + 1;
        }
    }
    return 0;
}

/* Splits the text into lines; a text ending in '\n' has no trailing empty line. */
static int split_text(const char *text, size_t len, tw_line **out, size_t *nout)
{
    size_t n = 1;
    for (size_t i = 0; i < len; i++) {
        n += text[i] == '\n';
    }
    if (len > 0 && text[len - 1] == '\n') {
        n--;
    }
    tw_line *lines = calloc(n ? n : 1, sizeof *lines);
    if (!lines) {
        return -1;
    }
    size_t k = 0, ls = 0;
    for (size_t i = 0; i <= len && k < n; i++) {
        if (i == len || text[i] == '\n') {
            if (split_line(text, ls, i, &lines[k]) != 0) {
                free_lines(lines, k);
                return -1;
            }
            k++;
            ls = i + 1;
        }
    }
    *out = lines;
    *nout = k;
    return 0;
}

static void pad(wf_strbuf *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        wf_strbuf_putc(out, ' ');
    }
}

/* Go's writeLines: cells j < nwidths are padded to widths[j]; the rest written as-is. */
static void write_lines(tw_ctx *c, size_t l0, size_t l1)
{
    for (size_t i = l0; i < l1; i++) {
        const tw_line *ln = &c->lines[i];
        for (size_t j = 0; j < ln->n; j++) {
            const tw_cell *cell = &ln->cells[j];
            wf_strbuf_append(c->out, c->text + cell->off, cell->size);
            if (j < c->nwidths && c->widths[j] > cell->width) {
                pad(c->out, c->widths[j] - cell->width);
            }
        }
        if (c->final_nl || i + 1 < c->nlines) {
            wf_strbuf_putc(c->out, '\n');
        }
    }
}

/* Go's Writer.format: formats lines [l0, l1) for column c->nwidths and the ones right of it.
 * Returns 0, or -1 when out of memory. */
static int format(tw_ctx *c, size_t l0, size_t l1)
{
    size_t column = c->nwidths;
    for (size_t cur = l0; cur < l1; cur++) {
        if (column + 1 >= c->lines[cur].n) {
            continue;
        }
        write_lines(c, l0, cur);
        l0 = cur;
        size_t width = 0;
        for (; cur < l1 && column + 1 < c->lines[cur].n; cur++) {
            size_t w = c->lines[cur].cells[column].width + c->padding;
            width = w > width ? w : width;
        }
        c->widths[c->nwidths++] = width;
        if (format(c, l0, cur) != 0) {
            return -1;
        }
        c->nwidths--;
        l0 = cur; /* as in Go, the loop's increment skips the line that ended the block */
    }
    write_lines(c, l0, l1);
    return 0;
}

static size_t max_cells(const tw_line *lines, size_t n)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        m = lines[i].n > m ? lines[i].n : m;
    }
    return m;
}

int wf_tw_flush(wf_tw *tw, FILE *out, wf_strbuf *sb)
{
    if (wf_strbuf_failed(&tw->text)) {
        wf_strbuf_free(&tw->text);
        tw->text = (wf_strbuf)WF_STRBUF_INIT;
        return -1;
    }
    tw_ctx c = {.text = wf_strbuf_cstr(&tw->text), .padding = tw->padding};
    if (split_text(c.text, tw->text.len, &c.lines, &c.nlines) != 0) {
        return -1;
    }
    c.final_nl = tw->text.len > 0 && c.text[tw->text.len - 1] == '\n';
    c.widths = calloc(max_cells(c.lines, c.nlines) + 1, sizeof *c.widths);
    wf_strbuf res = WF_STRBUF_INIT;
    c.out = &res;
    int rc = c.widths ? format(&c, 0, c.nlines) : -1;
    free(c.widths);
    free_lines(c.lines, c.nlines);
    wf_strbuf_reset(&tw->text);
    if (rc == 0 && wf_strbuf_failed(&res)) {
        rc = -1;
    }
    if (rc == 0 && out && res.len > 0 && fwrite(res.data, 1, res.len, out) != res.len) {
        rc = -1;
    } else if (rc == 0 && !out && sb) {
        wf_strbuf_append(sb, wf_strbuf_cstr(&res), res.len);
    }
    wf_strbuf_free(&res);
    return rc;
}

void wf_tw_free(wf_tw *tw)
{
    wf_strbuf_free(&tw->text);
}
