/*
 * ui_static.h - the web view's static files (issue 22), served by weft-pilot's monitoring
 * server (debug.h) under /ui: GET /ui/ answers ui/index.html (GET /ui is redirected there, 301
 * Location /ui/, so that the page's relative links resolve under /ui/, as Go's FileServer and
 * Kiali's /kiali do), GET /ui/<path> the file
 * <path> of the UI folder (ui/app.js, ui/style.css, ui/node_modules/cytoscape/dist/...). The
 * view's JSON endpoints (/ui/api/...) are routes of their own (debug_views.c); an /ui/api/ path
 * that no route serves is 404 here, never a file.
 *
 * The UI folder (wf_ui_dir_resolve): weft-pilot's --uiDir DIR, else $WEFT_UI_DIR, else
 * <exe dir>/../ui (the repository's ui/ when run from build/), else <exe dir>/../share/weft/ui
 * (an installed layout). The view's libraries (Cytoscape.js and its layout, from npm) are
 * installed by scripts/setup into <ui>/node_modules: when the folder or its node_modules is
 * missing, or the folder is not one, every static path answers 503 with a text naming what is
 * wrong (wf_ui_dir_problem: "run scripts/setup" for the default folder or node_modules; the
 * flag for a folder given explicitly), and pilot logs it as a WARN at start.
 *
 * Safety: the path after "/ui/" is taken as it came (never percent-decoded) and refused (400)
 * unless every segment is non-empty, does not start with '.' (no ".", "..", hidden files), and
 * the path holds no '%', '\\', control character or NUL; the file's real path (symbolic links
 * resolved) must lie inside the UI folder's real path (403 otherwise). Only regular files up to
 * WF_UI_MAX_FILE bytes are served (404 for what is missing or a folder, 403 for another file that
 * is not a regular file: a FIFO, a socket, a device; 413 beyond the size); a file is opened O_NONBLOCK | O_NOFOLLOW,
 * so that a FIFO never blocks pilot's loop. Content types by extension (wf_ui_content_type). Files are read per request; no
 * cache headers.
 */
#ifndef WF_PILOT_UI_STATIC_H
#define WF_PILOT_UI_STATIC_H

#include <stdbool.h>
#include <stddef.h>

#include "pilot/debug.h"

#define WF_UI_MAX_FILE (16u << 20) /* bytes: the largest file served */

/* The UI folder into out (cap bytes): flag when not NULL/empty, else env when not NULL/empty,
 * else <exe dir>/../ui when that is a folder, else <exe dir>/../share/weft/ui when that is a
 * folder, else <exe dir>/../ui (reported missing when served). exe: the program's path (NULL:
 * the running program's, uv_exepath). Returns out. */
const char *wf_ui_dir_resolve(const char *flag, const char *env, const char *exe, char *out,
                              size_t cap);

/* Whether rel (the path after "/ui/") may be served: see the header comment. */
bool wf_ui_path_safe(const char *rel);

/* The Content-Type for a file name by its extension (html, js, mjs, css, json, svg, png, map,
 * ico, txt, woff2); application/octet-stream otherwise. A static string. */
const char *wf_ui_content_type(const char *name);

/* What keeps the view from being served from dir, as one line into buf (cap bytes), or NULL
 * when dir is a folder holding node_modules (an empty node_modules is fine). origin: how dir
 * was given ("--uiDir", "$WEFT_UI_DIR"), NULL for the default folder: a missing folder given
 * explicitly is "<origin> <dir>: no such folder."; the default one, or a missing
 * node_modules, advises scripts/setup; a file (not a folder) is "<origin> <dir>: not a
 * folder". Returns buf or NULL. */
const char *wf_ui_dir_problem(const char *dir, const char *origin, char *buf, size_t cap);

/* Answers GET path ("/ui", "/ui/" or "/ui/<rel>") from the UI folder dir (NULL: answered as a
 * missing folder; origin as wf_ui_dir_problem). r->body must be initialised by the caller,
 * r->location NULL. */
void wf_ui_static_serve(const char *dir, const char *origin, const char *path,
                        wf_debug_reply *r);

#endif
