/* SPDX-License-Identifier: Apache-2.0 */
/*
 * OpenSSH known_hosts files, read the way ssh(1) reads them: host patterns
 * with '*', '?' and '!' negation, hashed names (|1|SALT|HASH, HMAC-SHA1),
 * "[host]:port" for ports other than 22, @revoked lines, and lines we cannot
 * use (@cert-authority, unknown markers, garbage) skipped one at a time
 * rather than failing the whole file.  libssh2's own reader gives up on the
 * first line it does not understand and falls back from "[host]:port" to
 * the bare host, so ssh.c uses this instead.
 *
 * Pure: everything works on the text of the file and the server's key blob
 * (SSH wire format: string algorithm, then the key), so tests need no server.
 */
#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

enum qt_ssh_hostkey_status {
	QT_SSH_HOSTKEY_MATCH,	 /* a line for the host carries this key */
	QT_SSH_HOSTKEY_MISMATCH, /* the host is listed with another key of the same type */
	QT_SSH_HOSTKEY_NOTFOUND, /* no line for the host has a key of this type */
	QT_SSH_HOSTKEY_REVOKED,	 /* an @revoked line for the host lists this key */
};

/*
 * The name known_hosts uses for @host:@port: "host" for port 22,
 * "[host]:port" otherwise; lower case, IPv6 addresses without brackets of
 * their own.  g_free() it.
 */
char *qt_ssh_known_hosts_name(const char *host, uint16_t port);

/*
 * Check the key @blob/@len offered by @host:@port against @text, the
 * contents of a known_hosts file (NUL-terminated).  *@line, if not NULL, is
 * set to the 1-based line that decided a MATCH, MISMATCH or REVOKED, else 0.
 */
enum qt_ssh_hostkey_status qt_ssh_known_hosts_check(const char *text, const char *host,
						    uint16_t port, const void *blob, size_t len,
						    unsigned *line);

/*
 * The key types ("ssh-ed25519", "ssh-rsa"...) that @text lists for
 * @host:@port, in file order without repeats; NULL-terminated, g_strfreev()
 * it.  Used to prefer those host key algorithms in the key exchange, as
 * ssh(1) does, so that a host known by its ECDSA key is not refused just
 * because the server would rather show its Ed25519 key.
 */
char **qt_ssh_known_hosts_types(const char *text, const char *host, uint16_t port);

/* The algorithm name at the start of a key blob ("ssh-ed25519"), or NULL if malformed. */
char *qt_ssh_key_type(const void *blob, size_t len);
/* "SHA256:..." as ssh-keygen -l prints it.  g_free() it. */
char *qt_ssh_key_fingerprint(const void *blob, size_t len);
