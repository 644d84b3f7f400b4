/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Repeated keys in a JSON text.  json-c keeps the last value of a key an
 * object gives twice, so {"cpu": 1, "cpu": -1} reads as whatever came last
 * and a check of the first value checks nothing; readers of untrusted
 * documents (bm's request bodies, sim's trace records) refuse them
 * instead.  json-c says nothing of it, so the text is scanned again.
 */
#pragma once

#include <glib.h>

/*
 * Look for a key given twice in one object of @text (@len bytes, a
 * document json-c has parsed, so well formed), in objects nested at most
 * @max_depth deep (1: the top-level object only; G_MAXUINT: all).  Keys
 * are compared as json-c stores them: escapes decoded (a lone UTF-16
 * surrogate is U+FFFD), "id", 'id' and "\u0069d" the same key.  Returns
 * true with *@key (g_malloc'd, the key decoded) on the first repeated
 * key, false when there is none.
 */
gboolean qt_json_repeated_key(const char *text, size_t len, unsigned max_depth, char **key);
