/*
 * log.h - component loggers with runtime levels, as Envoy's (source/common/common/logger.h).
 *
 * Components are Envoy's logger ids (ALL_LOGGER_IDS, in Envoy's order, which is also the order
 * of the admin /logging listing); the list is the one of the Envoy revision that has
 * basic_auth, rate_limit_quota and golang. Envoy has no "http1" or "xds" logger: the HTTP/1
 * codec logs under "http" and xDS under "config", and so does weft.
 *
 * Levels are spdlog's: trace, debug, info, warning, error, critical, off ("warn" and "err" are
 * accepted when parsing). The default level of every component is info (Envoy's default
 * --log-level).
 *
 * Threads. The process-wide context wf_log_process holds one atomic level per component:
 * written by the admin/main thread (wf_log_set_level & co.), read by every worker with one
 * relaxed load (wf_log_enabled), never locked. wf_log_init() and the clock must be set before
 * worker threads start.
 *
 * Line layout (Istio's bootstrap application_log_config text format
 * "%Y-%m-%dT%T.%fZ\t%l\tenvoy %n %g:%#\t%v\tthread=%t"):
 *
 *   2026-09-30T10:14:02.118123Z\tdebug\tenvoy router router.c:412\t<message>\tthread=1234\n
 *
 * time in UTC with microseconds, spdlog's level name, "envoy <logger>", source file and line,
 * the message, the OS thread id. [verify] spdlog's %g prints __FILE__ as compiled (Envoy's
 * build gives "source/common/router/router.cc"); weft prints the basename only (this task's
 * choice, independent of the build directory). Connection/stream logs carry the tags of
 * Envoy >= 1.28 in front of the message: `[Tags: "ConnectionId":"123"] ` and
 * `[Tags: "ConnectionId":"123","StreamId":"456"] ` (tags sorted by key).
 *
 * A line is at most WF_LOG_LINE_MAX bytes (<= PIPE_BUF) and is written with a single write(2),
 * so lines from different threads never interleave; a longer message is truncated and ends
 * with "...". Newlines inside the message are not escaped.
 */
#ifndef WF_CORE_LOG_H
#define WF_CORE_LOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/strbuf.h"

/* Envoy's ALL_LOGGER_IDS, same order. */
#define WF_LOG_COMPONENTS(X)                                                                       \
    X(admin)                                                                                       \
    X(alternate_protocols_cache)                                                                   \
    X(aws)                                                                                         \
    X(assert)                                                                                      \
    X(backtrace)                                                                                   \
    X(basic_auth)                                                                                  \
    X(cache_filter)                                                                                \
    X(client)                                                                                      \
    X(config)                                                                                      \
    X(connection)                                                                                  \
    X(conn_handler)                                                                                \
    X(decompression)                                                                               \
    X(dns)                                                                                         \
    X(dubbo)                                                                                       \
    X(envoy_bug)                                                                                   \
    X(ext_authz)                                                                                   \
    X(ext_proc)                                                                                    \
    X(rocketmq)                                                                                    \
    X(file)                                                                                        \
    X(filter)                                                                                      \
    X(forward_proxy)                                                                               \
    X(geolocation)                                                                                 \
    X(grpc)                                                                                        \
    X(happy_eyeballs)                                                                              \
    X(hc)                                                                                          \
    X(health_checker)                                                                              \
    X(http)                                                                                        \
    X(http2)                                                                                       \
    X(hystrix)                                                                                     \
    X(init)                                                                                        \
    X(io)                                                                                          \
    X(jwt)                                                                                         \
    X(kafka)                                                                                       \
    X(key_value_store)                                                                             \
    X(lua)                                                                                         \
    X(main)                                                                                        \
    X(matcher)                                                                                     \
    X(misc)                                                                                        \
    X(mongo)                                                                                       \
    X(multi_connection)                                                                            \
    X(oauth2)                                                                                      \
    X(quic)                                                                                        \
    X(quic_stream)                                                                                 \
    X(pool)                                                                                        \
    X(rate_limit_quota)                                                                            \
    X(rbac)                                                                                        \
    X(rds)                                                                                         \
    X(redis)                                                                                       \
    X(router)                                                                                      \
    X(runtime)                                                                                     \
    X(stats)                                                                                       \
    X(secret)                                                                                      \
    X(tap)                                                                                         \
    X(testing)                                                                                     \
    X(thrift)                                                                                      \
    X(tracing)                                                                                     \
    X(upstream)                                                                                    \
    X(udp)                                                                                         \
    X(wasm)                                                                                        \
    X(websocket)                                                                                   \
    X(golang)

#define WF_LOG_COMP_ENUM_(n) WF_LC_##n,
typedef enum { WF_LOG_COMPONENTS(WF_LOG_COMP_ENUM_) WF_LC_COUNT } wf_log_comp;
#undef WF_LOG_COMP_ENUM_

/* spdlog's level order; a message is written when its level >= the component's level. */
typedef enum {
    WF_LOG_TRACE = 0,
    WF_LOG_DEBUG,
    WF_LOG_INFO,
    WF_LOG_WARN,
    WF_LOG_ERROR,
    WF_LOG_CRITICAL,
    WF_LOG_OFF,
} wf_log_level;

/* Longest line written, bytes, including the trailing newline. */
#define WF_LOG_LINE_MAX 4096

/* Microseconds since the Unix epoch (UTC). */
typedef int64_t (*wf_log_clock_fn)(void);

/* The process-wide logging context. Levels: atomics, see the top comment. fd and clock are set
 * by wf_log_init before worker threads start. */
typedef struct wf_log_ctx {
    _Atomic int levels[WF_LC_COUNT];
    _Atomic int fd;        /* where lines go; 2 (stderr) until wf_log_init */
    wf_log_clock_fn clock; /* NULL: CLOCK_REALTIME */
} wf_log_ctx;

extern wf_log_ctx wf_log_process;

/* Set the output fd (not owned: never closed here), the level of every component, and the
 * clock (NULL for the real-time clock; tests pass a fixed one). Call before starting threads. */
void wf_log_init(int fd, wf_log_level level, wf_log_clock_fn clock);

/* True when a message of `level` on `comp` would be written. One relaxed atomic load. */
static inline bool wf_log_enabled(wf_log_comp comp, wf_log_level level)
{
    return (int)level >= atomic_load_explicit(&wf_log_process.levels[comp], memory_order_relaxed);
}

/* Change levels at runtime (admin /logging). Any thread. Out-of-range arguments are ignored. */
void wf_log_set_level(wf_log_comp comp, wf_log_level level);
void wf_log_set_all(wf_log_level level);
wf_log_level wf_log_get_level(wf_log_comp comp);

/* Level from spdlog's name ("trace" ... "critical", "off", also "warn", "err"); exact,
 * case-sensitive, as Envoy. Returns the level, or -1 when unknown. `len` in bytes. */
int wf_log_level_from_name(const char *name, size_t len);
/* spdlog's name: "trace", "debug", "info", "warning", "error", "critical", "off"; "unknown"
 * when out of range. Static string. */
const char *wf_log_level_name(wf_log_level level);

/* Component from its Envoy logger name; -1 when unknown. `len` in bytes. */
int wf_log_comp_from_name(const char *name, size_t len);
/* Envoy logger name of a component (static string), "unknown" when out of range. */
const char *wf_log_comp_name(wf_log_comp comp);

/* Apply Envoy's --component-log-level spec "http:debug,router:trace" (also what admin
 * /logging?paths= takes). All-or-nothing: the spec is checked completely before any level
 * changes. Returns 0 on success (an empty spec is a no-op), -1 on error with a message in
 * `err` (may be NULL) naming the bad logger or level:
 *   "invalid component specified 'foo'", "invalid log level specified 'loud'",
 *   "component log level not correctly specified 'http'". */
int wf_log_apply_component_levels(const char *spec, wf_strbuf *err);

/* Append Envoy's /logging listing: "active loggers:\n" then "  <name>: <level>\n" for every
 * logger in Envoy's order. */
void wf_log_list(wf_strbuf *out);

/* Format and write one line (used by the macros; call them instead). file: __FILE__ (only its
 * basename is printed); line: __LINE__. tags: 0 none, 1 ConnectionId, 2 ConnectionId and
 * StreamId. Does not check the level. Errors writing are ignored (there is nowhere to report
 * them). */
void wf_log_emit(wf_log_comp comp, wf_log_level level, const char *file, int line, int tags,
                 uint64_t conn_id, uint64_t stream_id, const char *fmt, ...)
    __attribute__((format(printf, 8, 9)));

/* Logging macros: the level is checked first, so arguments are not evaluated and nothing is
 * formatted when the level is off. The format is printf's.
 *   WF_LOG(WF_LC_router, WF_LOG_DEBUG, "cluster '%s' not found", name);
 *   WF_CONN_LOG(WF_LC_connection, WF_LOG_DEBUG, conn_id, "closing");
 *   WF_STREAM_LOG(WF_LC_http, WF_LOG_DEBUG, conn_id, stream_id, "request end stream"); */
#define WF_LOG(comp, level, ...)                                                                   \
    do {                                                                                           \
        if (wf_log_enabled((comp), (level)))                                                       \
            wf_log_emit((comp), (level), __FILE__, __LINE__, 0, 0, 0, __VA_ARGS__);                \
    } while (0)

#define WF_CONN_LOG(comp, level, conn_id, ...)                                                     \
    do {                                                                                           \
        if (wf_log_enabled((comp), (level)))                                                       \
            wf_log_emit((comp), (level), __FILE__, __LINE__, 1, (uint64_t)(conn_id), 0,            \
                        __VA_ARGS__);                                                              \
    } while (0)

#define WF_STREAM_LOG(comp, level, conn_id, stream_id, ...)                                        \
    do {                                                                                           \
        if (wf_log_enabled((comp), (level)))                                                       \
            wf_log_emit((comp), (level), __FILE__, __LINE__, 2, (uint64_t)(conn_id),               \
                        (uint64_t)(stream_id), __VA_ARGS__);                                       \
    } while (0)

#endif
