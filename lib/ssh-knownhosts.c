// SPDX-License-Identifier: Apache-2.0
/*
 * known_hosts matching (see ssh-knownhosts.h).  Each line is
 *
 *   [@MARKER] PATTERNS KEYTYPE BASE64KEY [COMMENT]
 *
 * A line we cannot read is skipped on its own, as ssh(1) does: one odd line
 * (a key type from a newer OpenSSH, a certificate authority) must not lock
 * the user out of every host in the file.  Matching is ASCII
 * case-insensitive because ssh(1) lower-cases the name before looking it up
 * and ssh-keygen -H hashes the lower-case name.
 */
#include "config.h"

#include <stdbool.h>
#include <string.h>

#include "ssh-knownhosts.h"

#define SHA1_LEN 20

char *qt_ssh_known_hosts_name(const char *host, uint16_t port)
{
	g_autofree char *lower = g_ascii_strdown(host, -1);

	if (port == 22)
		return g_steal_pointer(&lower);
	return g_strdup_printf("[%s]:%u", lower, port);
}

/* Glob with '*' and '?', both strings already lower case. */
static gboolean glob_match(const char *pat, const char *s)
{
	const char *star = NULL, *resume = NULL;

	while (*s) {
		if (*pat == '*') {
			star = pat++;
			resume = s;
		} else if (*pat == '?' || *pat == *s) {
			pat++;
			s++;
		} else if (star) {
			pat = star + 1;
			s = ++resume;
		} else {
			return FALSE;
		}
	}
	while (*pat == '*')
		pat++;
	return *pat == '\0';
}

/* |1|SALT|HASH: HMAC-SHA1 keyed with the salt over the name. */
static gboolean hashed_match(const char *field, const char *name)
{
	g_auto(GStrv) parts = g_strsplit(field + 3, "|", 3);
	g_autofree guchar *salt = NULL, *hash = NULL;
	guint8 digest[SHA1_LEN];
	gsize salt_len, hash_len, dlen = sizeof(digest);
	GHmac *h;

	if (g_strv_length(parts) != 2 || !*parts[0] || !*parts[1])
		return FALSE;
	salt = g_base64_decode(parts[0], &salt_len);
	hash = g_base64_decode(parts[1], &hash_len);
	if (salt_len == 0 || hash_len != SHA1_LEN)
		return FALSE;
	h = g_hmac_new(G_CHECKSUM_SHA1, salt, salt_len);
	g_hmac_update(h, (const guchar *)name, (gssize)strlen(name));
	g_hmac_get_digest(h, digest, &dlen);
	g_hmac_unref(h);
	return memcmp(digest, hash, SHA1_LEN) == 0;
}

/* Does the PATTERNS field name @name (lower case)?  A matching '!' pattern vetoes. */
static gboolean hosts_match(const char *field, const char *name)
{
	g_autofree char *lower = NULL;
	g_auto(GStrv) pats = NULL;
	gboolean hit = FALSE;

	if (g_str_has_prefix(field, "|1|"))
		return hashed_match(field, name);
	lower = g_ascii_strdown(field, -1);
	pats = g_strsplit(lower, ",", -1);
	for (char **p = pats; *p; p++) {
		if (**p == '!') {
			if (glob_match(*p + 1, name))
				return FALSE;
		} else if (**p && glob_match(*p, name)) {
			hit = TRUE;
		}
	}
	return hit;
}

struct kh_line {
	char *marker; /* "@revoked", or NULL */
	char *hosts;
	char *type;
	char *key; /* base64 */
};

/* Split one line; FALSE for blanks, comments and lines we cannot use. */
static gboolean kh_parse(const char *line, struct kh_line *out)
{
	g_auto(GStrv) f = g_strsplit_set(line, " \t\r", -1);
	char *w[4];
	unsigned n = 0;

	for (char **p = f; *p && n < G_N_ELEMENTS(w); p++)
		if (**p)
			w[n++] = *p;
	if (n == 0 || w[0][0] == '#')
		return FALSE;
	memset(out, 0, sizeof(*out));
	if (w[0][0] == '@') {
		/* Certificates are not supported: an @cert-authority line grants nothing. */
		if (strcmp(w[0], "@revoked") != 0 || n < 4)
			return FALSE;
		out->marker = g_strdup(w[0]);
		memmove(w, w + 1, 3 * sizeof(w[0]));
		n--;
	}
	if (n < 3)
		return FALSE;
	out->hosts = g_strdup(w[0]);
	out->type = g_strdup(w[1]);
	out->key = g_strdup(w[2]);
	return TRUE;
}

static void kh_clear(struct kh_line *l)
{
	g_free(l->marker);
	g_free(l->hosts);
	g_free(l->type);
	g_free(l->key);
}

static gboolean key_equal(const char *b64, const void *blob, size_t len)
{
	gsize n;
	g_autofree guchar *k = g_base64_decode(b64, &n);

	return n == len && memcmp(k, blob, len) == 0;
}

char *qt_ssh_key_type(const void *blob, size_t len)
{
	const guchar *p = blob;
	uint32_t n;

	if (len < 4)
		return NULL;
	n = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	if (n == 0 || n > 64 || n > len - 4)
		return NULL;
	for (uint32_t i = 0; i < n; i++)
		if (!g_ascii_isgraph(p[4 + i]))
			return NULL;
	return g_strndup((const char *)p + 4, n);
}

char *qt_ssh_key_fingerprint(const void *blob, size_t len)
{
	guint8 digest[32];
	gsize dlen = sizeof(digest);
	GChecksum *c = g_checksum_new(G_CHECKSUM_SHA256);
	g_autofree char *b64 = NULL;
	char *eq;

	g_checksum_update(c, blob, (gssize)len);
	g_checksum_get_digest(c, digest, &dlen);
	g_checksum_free(c);
	b64 = g_base64_encode(digest, dlen);
	eq = strchr(b64, '=');
	if (eq)
		*eq = '\0';
	return g_strconcat("SHA256:", b64, NULL);
}

enum qt_ssh_hostkey_status qt_ssh_known_hosts_check(const char *text, const char *host,
						    uint16_t port, const void *blob, size_t len,
						    unsigned *line)
{
	g_autofree char *name = qt_ssh_known_hosts_name(host, port);
	g_autofree char *type = qt_ssh_key_type(blob, len);
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	unsigned match = 0, mismatch = 0, revoked = 0;

	if (!type)
		goto out;
	for (unsigned i = 0; lines[i]; i++) {
		struct kh_line l;

		if (!kh_parse(lines[i], &l))
			continue;
		if (hosts_match(l.hosts, name)) {
			bool same = strcmp(l.type, type) == 0 && key_equal(l.key, blob, len);

			if (l.marker && same && !revoked)
				revoked = i + 1;
			else if (!l.marker && same && !match)
				match = i + 1;
			else if (!l.marker && !same && strcmp(l.type, type) == 0 && !mismatch)
				mismatch = i + 1;
		}
		kh_clear(&l);
	}
out:
	if (line)
		*line = revoked ? revoked : match ? match : mismatch;
	if (revoked)
		return QT_SSH_HOSTKEY_REVOKED;
	if (match)
		return QT_SSH_HOSTKEY_MATCH;
	if (mismatch)
		return QT_SSH_HOSTKEY_MISMATCH;
	return QT_SSH_HOSTKEY_NOTFOUND;
}

static gboolean array_has(const GPtrArray *a, const char *s)
{
	for (guint i = 0; i < a->len; i++)
		if (strcmp(g_ptr_array_index(a, i), s) == 0)
			return TRUE;
	return FALSE;
}

char **qt_ssh_known_hosts_types(const char *text, const char *host, uint16_t port)
{
	g_autofree char *name = qt_ssh_known_hosts_name(host, port);
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	GPtrArray *types = g_ptr_array_new();

	for (unsigned i = 0; lines[i]; i++) {
		struct kh_line l;

		if (!kh_parse(lines[i], &l))
			continue;
		if (!l.marker && hosts_match(l.hosts, name) && !array_has(types, l.type))
			g_ptr_array_add(types, g_steal_pointer(&l.type));
		kh_clear(&l);
	}
	g_ptr_array_add(types, NULL);
	return (char **)g_ptr_array_free(types, FALSE);
}
