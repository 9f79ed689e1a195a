/*
 * localmesh_sys.h - host helpers for the local mesh: folders, atomic file writes, PID files,
 * whether a process is alive, the default state folder, and who holds a TCP port (from /proc,
 * Linux).
 *
 * Errors are reported as -1 with a message in err (naming the path or port); nothing here
 * keeps state between calls.
 */
#ifndef WF_CLI_LOCALMESH_SYS_H
#define WF_CLI_LOCALMESH_SYS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "core/strbuf.h"

/* mkdir -p (mode 0755). Returns 0 or -1 with err naming the folder. */
int wf_lm_mkdirs(const char *path, wf_strbuf *err);

/* Remove the regular files in dir whose names end in suffix (a missing dir is fine). */
int wf_lm_clean_dir(const char *dir, const char *suffix, wf_strbuf *err);

/* Write len bytes to path through a temporary file and rename (readers never see half a
 * file), mode 0644. Returns 0 or -1 with err naming the path. */
int wf_lm_write_file(const char *path, const char *data, size_t len, wf_strbuf *err);

/* The same with the file's mode (0600 for a secret: set on the temporary file before any byte
 * is written, and the temporary is not followed if it is a symbolic link). */
int wf_lm_write_file_mode(const char *path, const char *data, size_t len, unsigned mode,
                          wf_strbuf *err);

/* The PID in a PID file, or 0 when the file is missing or holds no number. */
pid_t wf_lm_read_pid(const char *path);

/* True when pid runs and its command line contains want (NULL: any), so a recycled PID of
 * an unrelated program is not mistaken for ours. Zombies count as not running. */
bool wf_lm_pid_alive(pid_t pid, const char *want);

/* The start time of process pid (field 22 of /proc/PID/stat, clock ticks since boot), or 0
 * when unknown. It survives exec, so (pid, start ticks) names one process across a launcher
 * that execs another program, and a recycled PID has another start time. */
unsigned long long wf_lm_pid_start_ticks(pid_t pid);

/* True when pid runs (not a zombie) and is the process that started at start_ticks; with
 * start_ticks 0 (an older record) as wf_lm_pid_alive(pid, want). */
bool wf_lm_pid_is(pid_t pid, unsigned long long start_ticks, const char *want);

/* Try to bind ip:port as a server would (SO_REUSEADDR). Returns 0 when free, else -1 with
 * err saying who holds it when /proc tells ("127.0.0.1:15010 is in use by weft-pilot (pid
 * 123)"). */
int wf_lm_port_free(const char *ip, int port, wf_strbuf *err);

/* The default state folder of the manifests folder absdir (absolute): outside it, so that
 * analyzing or copying the manifests never picks up pod objects:
 *   $XDG_STATE_HOME/weft/<NAME>-<HASH>, else $HOME/.local/state/weft/<NAME>-<HASH> (each when
 *   the variable is an absolute path and the weft folder exists or can be created there,
 *   writable), else /tmp/weft-<uid>/<NAME>, used only when it is a folder of this user that nobody
 * else may write (created mode 0700, never through a symlink), as the last-mesh record. NAME is the
 * folder's base name (characters outside [A-Za-z0-9._-] as '_', "root" for /) and 12 hex digits of
 * a hash of absdir: "catalog-3f9c0a1b2c4d". The folders up to weft/ are created; NAME is not.
 * Returns a malloc'd path (the caller frees), or NULL with err. */
char *wf_lm_default_state(const char *absdir, wf_strbuf *err);

/* The default state folder of `up --capture`, whose proxies run as uid 1337 and must pass
 * through every folder above their bootstraps: as root without $XDG_STATE_HOME,
 * /run/weft/<NAME>-<HASH> (/run/weft made 0711, root's; root's home is closed to others);
 * otherwise wf_lm_default_state. Returns a malloc'd path, or NULL with err. */
char *wf_lm_capture_state(const char *absdir, wf_strbuf *err);

/* The folder of the running executable (for programs installed next to weftctl), or NULL.
 * The caller frees. */
char *wf_lm_self_dir(void);

#endif
