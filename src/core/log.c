/*
 * log.c - component loggers (see log.h).
 */
#include "core/log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define WF_LOG_INIT_LEVEL_(n) WF_LOG_INFO,
wf_log_ctx wf_log_process = {
    .levels = {WF_LOG_COMPONENTS(WF_LOG_INIT_LEVEL_)},
    .fd = 2,
    .clock = NULL,
};
#undef WF_LOG_INIT_LEVEL_

#define WF_LOG_NAME_(n) #n,
static const char *const comp_names[WF_LC_COUNT] = {WF_LOG_COMPONENTS(WF_LOG_NAME_)};
#undef WF_LOG_NAME_

static const char *const level_names[] = {"trace", "debug",    "info", "warning",
                                          "error", "critical", "off"};

void wf_log_init(int fd, wf_log_level level, wf_log_clock_fn clock)
{
    atomic_store_explicit(&wf_log_process.fd, fd, memory_order_relaxed);
    wf_log_process.clock = clock;
    wf_log_set_all(level);
}

void wf_log_set_level(wf_log_comp comp, wf_log_level level)
{
    if ((int)comp < 0 || comp >= WF_LC_COUNT || (int)level < 0 || level > WF_LOG_OFF)
        return;
    atomic_store_explicit(&wf_log_process.levels[comp], (int)level, memory_order_relaxed);
}

void wf_log_set_all(wf_log_level level)
{
    for (int c = 0; c < WF_LC_COUNT; c++)
        wf_log_set_level((wf_log_comp)c, level);
}

wf_log_level wf_log_get_level(wf_log_comp comp)
{
    if ((int)comp < 0 || comp >= WF_LC_COUNT)
        return WF_LOG_OFF;
    return (wf_log_level)atomic_load_explicit(&wf_log_process.levels[comp], memory_order_relaxed);
}

static bool name_eq(const char *name, size_t len, const char *lit)
{
    return strlen(lit) == len && memcmp(name, lit, len) == 0;
}

int wf_log_level_from_name(const char *name, size_t len)
{
    if (!name)
        return -1;
    for (int i = 0; i <= WF_LOG_OFF; i++) {
        if (name_eq(name, len, level_names[i]))
            return i;
    }
    if (name_eq(name, len, "warn"))
        return WF_LOG_WARN;
    if (name_eq(name, len, "err"))
        return WF_LOG_ERROR;
    return -1;
}

const char *wf_log_level_name(wf_log_level level)
{
    if ((int)level < 0 || level > WF_LOG_OFF)
        return "unknown";
    return level_names[level];
}

int wf_log_comp_from_name(const char *name, size_t len)
{
    if (!name)
        return -1;
    for (int c = 0; c < WF_LC_COUNT; c++) {
        if (name_eq(name, len, comp_names[c]))
            return c;
    }
    return -1;
}

const char *wf_log_comp_name(wf_log_comp comp)
{
    if ((int)comp < 0 || comp >= WF_LC_COUNT)
        return "unknown";
    return comp_names[comp];
}

/* One "name:level" item of a spec: parse into comp and level, or report. */
static int parse_item(const char *item, size_t len, int *comp, int *level, wf_strbuf *err)
{
    const char *colon = memchr(item, ':', len);
    if (!colon || memchr(colon + 1, ':', len - (size_t)(colon - item) - 1)) {
        if (err)
            wf_strbuf_printf(err, "component log level not correctly specified '%.*s'", (int)len,
                             item);
        return -1;
    }
    size_t nlen = (size_t)(colon - item);
    *comp = wf_log_comp_from_name(item, nlen);
    if (*comp < 0) {
        if (err)
            wf_strbuf_printf(err, "invalid component specified '%.*s'", (int)nlen, item);
        return -1;
    }
    *level = wf_log_level_from_name(colon + 1, len - nlen - 1);
    if (*level < 0) {
        if (err)
            wf_strbuf_printf(err, "invalid log level specified '%.*s'", (int)(len - nlen - 1),
                             colon + 1);
        return -1;
    }
    return 0;
}

/* Walk the spec; apply only when `apply` (so a first pass validates everything). */
static int walk_spec(const char *spec, bool apply, wf_strbuf *err)
{
    const char *p = spec;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        int comp, level;
        if (parse_item(p, len, &comp, &level, err) != 0)
            return -1;
        if (apply)
            wf_log_set_level((wf_log_comp)comp, (wf_log_level)level);
        if (!end)
            break;
        p = end + 1;
        if (!*p) { /* trailing comma: an empty item */
            if (err)
                wf_strbuf_puts(err, "component log level not correctly specified ''");
            return -1;
        }
    }
    return 0;
}

int wf_log_apply_component_levels(const char *spec, wf_strbuf *err)
{
    if (!spec || !*spec)
        return 0;
    if (walk_spec(spec, false, err) != 0)
        return -1;
    return walk_spec(spec, true, err);
}

void wf_log_list(wf_strbuf *out)
{
    wf_strbuf_puts(out, "active loggers:\n");
    for (int c = 0; c < WF_LC_COUNT; c++)
        wf_strbuf_printf(out, "  %s: %s\n", comp_names[c],
                         wf_log_level_name(wf_log_get_level((wf_log_comp)c)));
}

static int64_t realtime_us(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return 0;
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static const char *base_name(const char *file)
{
    const char *slash = file ? strrchr(file, '/') : NULL;
    return slash ? slash + 1 : (file ? file : "");
}

/* Bounded appender over a fixed buffer; `len` may exceed `cap` to signal truncation. */
typedef struct {
    char *buf;
    size_t cap;
    size_t len;
} linebuf;

static void lb_vprintf(linebuf *lb, const char *fmt, va_list ap)
{
    size_t room = lb->len < lb->cap ? lb->cap - lb->len : 0;
    int n = vsnprintf(lb->buf + (room ? lb->len : 0), room, fmt, ap);
    if (n > 0)
        lb->len += (size_t)n;
}

static void lb_printf(linebuf *lb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void lb_printf(linebuf *lb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    lb_vprintf(lb, fmt, ap);
    va_end(ap);
}

static void lb_time(linebuf *lb, int64_t us)
{
    time_t secs = (time_t)(us / 1000000);
    int64_t frac = us % 1000000;
    if (frac < 0) {
        frac += 1000000;
        secs -= 1;
    }
    struct tm tm;
    if (!gmtime_r(&secs, &tm))
        memset(&tm, 0, sizeof tm);
    lb_printf(lb, "%04d-%02d-%02dT%02d:%02d:%02d.%06" PRId64 "Z", tm.tm_year + 1900, tm.tm_mon + 1,
              tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
}

static void write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        p += n;
        len -= (size_t)n;
    }
}

/* Room kept at the end of the line for "\tthread=<id>\n". */
#define WF_LOG_TAIL_MAX 32

void wf_log_emit(wf_log_comp comp, wf_log_level level, const char *file, int line, int tags,
                 uint64_t conn_id, uint64_t stream_id, const char *fmt, ...)
{
    char buf[WF_LOG_LINE_MAX];
    linebuf lb = {buf, sizeof buf - WF_LOG_TAIL_MAX, 0};
    wf_log_clock_fn clock = wf_log_process.clock ? wf_log_process.clock : realtime_us;

    lb_time(&lb, clock());
    lb_printf(&lb, "\t%s\tenvoy %s %s:%d\t", wf_log_level_name(level), wf_log_comp_name(comp),
              base_name(file), line);
    if (tags == 1)
        lb_printf(&lb, "[Tags: \"ConnectionId\":\"%" PRIu64 "\"] ", conn_id);
    else if (tags == 2)
        lb_printf(&lb, "[Tags: \"ConnectionId\":\"%" PRIu64 "\",\"StreamId\":\"%" PRIu64 "\"] ",
                  conn_id, stream_id);
    va_list ap;
    va_start(ap, fmt);
    lb_vprintf(&lb, fmt, ap);
    va_end(ap);
    if (lb.len >= lb.cap) { /* truncated: vsnprintf left a NUL at cap - 1 */
        lb.len = lb.cap - 1;
        memcpy(buf + lb.len - 3, "...", 3);
    }
    lb.cap = sizeof buf;
    lb_printf(&lb, "\tthread=%ld\n", (long)syscall(SYS_gettid));
    write_all(atomic_load_explicit(&wf_log_process.fd, memory_order_relaxed), buf,
              lb.len < lb.cap ? lb.len : lb.cap - 1);
}
