/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Configuration files: GKeyFile ("INI") syntax with typed getters.  Every
 * error names the file, the group and the key, in one line that a user can
 * act on, e.g.
 *     /etc/qtfs/server.conf: [server] max_conns: "lots" is not an integer
 * The file is named after conf.c rather than config.c because autoconf owns
 * config.h.
 *
 * A missing key is not an error: getters return the caller's default.  A
 * present key with a bad value always is.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

struct qt_conf;

/*
 * Load @path.  With @optional, a file that does not exist yields an empty
 * configuration (for default paths such as /etc/qtfs/server.conf); any other
 * failure is an error.  On error returns -errno and sets *@msg to a
 * g_malloc'd one-line description.
 */
int qt_conf_load(const char *path, bool optional, struct qt_conf **out, char **msg);
/* Parse from memory; @name is used in messages. */
int qt_conf_load_data(const char *name, const char *data, struct qt_conf **out, char **msg);
void qt_conf_free(struct qt_conf *c);
typedef struct qt_conf qt_conf; /* for g_autoptr() */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(qt_conf, qt_conf_free)

const char *qt_conf_path(const struct qt_conf *c);
bool qt_conf_has(const struct qt_conf *c, const char *group, const char *key);

/* Each getter: 0 and *out set (to @def when the key is absent), or -EINVAL and *msg. */
int qt_conf_get_string(const struct qt_conf *c, const char *group, const char *key,
		       const char *def, char **out, char **msg);
int qt_conf_get_bool(const struct qt_conf *c, const char *group, const char *key, bool def,
		     bool *out, char **msg);
int qt_conf_get_int(const struct qt_conf *c, const char *group, const char *key, int64_t def,
		    int64_t min, int64_t max, int64_t *out, char **msg);
int qt_conf_get_double(const struct qt_conf *c, const char *group, const char *key, double def,
		       double min, double max, double *out, char **msg);
/* Sizes accept suffixes K, M, G (powers of 1024) and optional "iB"/"B". */
int qt_conf_get_size(const struct qt_conf *c, const char *group, const char *key, uint64_t def,
		     uint64_t max, uint64_t *out, char **msg);
/* Durations accept ms, s, m (or min), h, d suffixes; a bare number is seconds.  Result in ms. */
int qt_conf_get_duration_ms(const struct qt_conf *c, const char *group, const char *key,
			    uint64_t def_ms, uint64_t *out, char **msg);
/* A ';'-separated list; absent yields an empty (not NULL) vector. */
int qt_conf_get_strv(const struct qt_conf *c, const char *group, const char *key, char ***out,
		     char **msg);
/*
 * A ';'-separated list of numeric uids (0 to 4294967294) in a new array of
 * uint32_t; absent yields an empty array.
 */
int qt_conf_get_uids(const struct qt_conf *c, const char *group, const char *key, GArray **out,
		     char **msg);
/* Keys present in @group that are not in @known (NULL-terminated): -EINVAL naming the first. */
int qt_conf_check_keys(const struct qt_conf *c, const char *group, const char *const *known,
		       char **msg);

/* Value parsers shared with command-line parsing.  0 or -EINVAL. */
int qt_parse_size(const char *s, uint64_t *out);
int qt_parse_duration_ms(const char *s, uint64_t *out);
int qt_parse_int(const char *s, int64_t min, int64_t max, int64_t *out);
