/*
 * alog_sink.h - access log files and per-worker buffered writers that never block a
 * worker's event loop.
 *
 * Envoy's AccessLogFileImpl (source/common/access_log/access_log_manager_impl.cc) buffers
 * lines and writes them from a flush thread every file_flush_interval_msec (default 1000 ms)
 * or when the buffer reaches 64 KiB, and /reopen_logs reopens every file on the next flush.
 * Here each worker owns a wp_alog_writer: lines are appended to an in-memory buffer per file
 * (no syscall, no lock) and written with uv_fs_write, which runs on libuv's thread pool. At
 * most one write per file per writer is in flight; the next buffer fills meanwhile (double
 * buffering) and is written as soon as the previous write completes, when it reaches
 * WP_ALOG_FLUSH_BYTES, or when the flush timer fires.
 *
 * Whole lines: each write(2) covers one contiguous buffer of whole lines, and files are
 * opened with O_APPEND, so lines from several workers appending to the same file do not
 * interleave inside a line. Exceptions the kernel imposes: a short write (pipes, full disks)
 * is completed by a second write of the remainder, and writes to a pipe (/dev/stdout piped
 * to a collector) larger than PIPE_BUF (4 KiB) are not atomic against other writers.
 *
 * Memory bound: when a writer's buffered plus in-flight bytes would exceed max_pending_bytes
 * (default 16 MiB) the line is dropped and counted in dropped_lines. Lines that fail to be
 * written (I/O error) are counted in dropped_lines too, and the error in write_errors.
 *
 * Threads: wp_alog_files_open / _reopen / _free are called from the main thread
 * (config load, /reopen_logs, shutdown); a wp_alog_writer is used only from its own loop's
 * thread. The files table has a fixed capacity (WP_ALOG_MAX_FILES) and an entry never moves,
 * so workers read it without a lock; reopen replaces a file behind the same descriptor
 * number (dup3), so a write in flight never sees a closed descriptor.
 */
#ifndef WEFT_PROXY_ALOG_SINK_H
#define WEFT_PROXY_ALOG_SINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "core/strbuf.h"

#define WP_ALOG_MAX_FILES                 256
#define WP_ALOG_FLUSH_BYTES               (64u * 1024u)
#define WP_ALOG_DEFAULT_FLUSH_INTERVAL_MS 1000u
#define WP_ALOG_DEFAULT_MAX_PENDING       (16u * 1024u * 1024u)

/* The process-wide set of open access log files (one per distinct path). */
typedef struct wp_alog_files wp_alog_files;

/* Returns an empty set, or NULL when out of memory. Free with wp_alog_files_free. */
wp_alog_files *wp_alog_files_new(void);

/* Opens path for appending (O_WRONLY|O_APPEND|O_CREAT|O_CLOEXEC, mode 0644) unless it is
 * already in the set, and returns its index (>= 0); the same path always gives the same
 * index. "/dev/stdout" and "/dev/stderr" map to descriptors 1 and 2, which are never closed.
 * Returns -1 with "cannot open access log file '<path>': <strerror>" (or a capacity /
 * out-of-memory message) appended to err (may be NULL). */
int wp_alog_files_open(wp_alog_files *files, const char *path, wf_strbuf *err);

/* Whether wp_alog_files_open could open path, checked without creating it (for the
 * bootstrap, which names the JSON path of a bad one; Envoy fails the load when an access log
 * cannot be opened): 0, or -1 with "cannot open access log file '<path>': <strerror>" for
 * the error the open would most likely meet (a missing or non-directory parent, a directory,
 * no write permission) appended to err. */
int wp_alog_path_check(const char *path, wf_strbuf *err);

/* Number of files in the set. */
size_t wp_alog_files_count(const wp_alog_files *files);

/* Descriptor of file index, -1 when out of range. */
int wp_alog_files_fd(const wp_alog_files *files, int index);

/* Reopens every file except stdout/stderr (for /reopen_logs after log rotation): a new
 * descriptor for the path is opened and moved onto the old descriptor number. Returns 0,
 * or -1 when a file could not be reopened (it keeps writing to the old file; the reason is
 * appended to err, one line per failure). */
int wp_alog_files_reopen(wp_alog_files *files, wf_strbuf *err);

/* Closes every file (not 1/2) and frees the set. Call after every writer has closed. */
void wp_alog_files_free(wp_alog_files *files);

typedef struct wp_alog_filebuf wp_alog_filebuf; /* per-file buffers (private) */

/* A per-worker writer. Fields below "private" are not part of the API. */
typedef struct wp_alog_writer {
    void *data; /* free for the owner */
    /* counters, read by the owner (for stats) */
    uint64_t dropped_lines; /* over max_pending_bytes, after close, or lost to I/O errors */
    uint64_t write_errors;  /* failed write calls */
    uint64_t bytes_written;
    /* private */
    uv_loop_t *loop;
    wp_alog_files *files;
    uv_timer_t timer;
    uint64_t flush_interval_ms;
    size_t max_pending_bytes;
    size_t pending_bytes; /* buffered + in flight */
    unsigned inflight;
    bool closing, timer_closed, finished;
    void (*done)(struct wp_alog_writer *);
    wp_alog_filebuf *bufs[WP_ALOG_MAX_FILES]; /* allocated on a file's first line */
} wp_alog_writer;

/* Prepares w on loop (the thread that calls it must be the loop's thread). flush_interval_ms
 * 0 means WP_ALOG_DEFAULT_FLUSH_INTERVAL_MS, max_pending_bytes 0 WP_ALOG_DEFAULT_MAX_PENDING.
 * The flush timer does not keep the loop alive (uv_unref). Returns 0 or a negative libuv
 * error. w must stay at the same address until done has been called by
 * wp_alog_writer_close. */
int wp_alog_writer_init(wp_alog_writer *w, uv_loop_t *loop, wp_alog_files *files,
                        uint64_t flush_interval_ms, size_t max_pending_bytes);

/* Appends line[0..len) (one or more whole lines, normally ending in '\n') to file's pending
 * buffer; the bytes are copied. No syscall; starts a write when the buffer reaches
 * WP_ALOG_FLUSH_BYTES. Dropped and counted when over the memory bound, when file is not a
 * valid index, or after wp_alog_writer_close. */
void wp_alog_write(wp_alog_writer *w, int file, const char *line, size_t len);

/* Starts a write now for every file that has pending bytes and no write in flight. */
void wp_alog_writer_flush(wp_alog_writer *w);

/* Flushes everything (including what is written while earlier writes complete), waits for
 * in-flight writes, closes the timer and frees the buffers, then calls done(w) from the
 * loop (done may be NULL). Nothing accepted by wp_alog_write before close is lost unless
 * the write itself fails. Run the loop until done is called. */
void wp_alog_writer_close(wp_alog_writer *w, void (*done)(wp_alog_writer *));

#endif
