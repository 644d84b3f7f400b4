// SPDX-License-Identifier: Apache-2.0
/*
 * Logging to stderr (see log.h).  The level lives in an atomic so worker
 * threads may read it without a lock; the identity is set once at start-up.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static const char *log_ident = "dpu-offload";
static gint log_level = QT_LOG_NOTICE;
static gint log_tty = -1;

void qt_log_init(const char *ident)
{
	const char *slash;

	if (ident) {
		slash = strrchr(ident, '/');
		log_ident = slash ? slash + 1 : ident;
	}
}

void qt_log_set_level(enum qt_log_level level)
{
	g_atomic_int_set(&log_level, (gint)CLAMP(level, QT_LOG_ERR, QT_LOG_DEBUG));
}

enum qt_log_level qt_log_get_level(void)
{
	return (enum qt_log_level)g_atomic_int_get(&log_level);
}

void qt_log_verbose(int count)
{
	qt_log_set_level((enum qt_log_level)MIN(QT_LOG_NOTICE + count, QT_LOG_DEBUG));
}

void qt_log_set_tty(int tty)
{
	g_atomic_int_set(&log_tty, tty);
}

int qt_log_level_parse(const char *s, enum qt_log_level *out)
{
	static const struct {
		const char *name;
		enum qt_log_level level;
	} names[] = {
		{"err", QT_LOG_ERR},	   {"error", QT_LOG_ERR}, {"warn", QT_LOG_WARN},
		{"warning", QT_LOG_WARN}, {"notice", QT_LOG_NOTICE}, {"info", QT_LOG_INFO},
		{"debug", QT_LOG_DEBUG},
	};

	for (size_t i = 0; s && i < G_N_ELEMENTS(names); i++) {
		if (g_ascii_strcasecmp(s, names[i].name) == 0) {
			*out = names[i].level;
			return 0;
		}
	}
	return -EINVAL;
}

static const char *level_word(enum qt_log_level level)
{
	switch (level) {
	case QT_LOG_ERR: return "error";
	case QT_LOG_WARN: return "warning";
	case QT_LOG_NOTICE: return "notice";
	case QT_LOG_INFO: return "info";
	default: return "debug";
	}
}

void qt_logv(enum qt_log_level level, const char *fmt, va_list ap)
{
	/* Room for two host paths of up to PATH_MAX bytes (a denied link names both). */
	char buf[3 * PATH_MAX];
	size_t n = 0;
	int tty, saved_errno = errno;

	if (level > qt_log_get_level())
		return;
	tty = g_atomic_int_get(&log_tty);
	if (tty < 0)
		tty = isatty(STDERR_FILENO);

	if (tty) {
		struct timespec ts;
		struct tm tm;

		clock_gettime(CLOCK_REALTIME, &ts);
		localtime_r(&ts.tv_sec, &tm);
		n = strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, ".%03ld %s[%d] %s: ", ts.tv_nsec / 1000000L,
				      log_ident, (int)getpid(), level_word(level));
	} else {
		n = (size_t)snprintf(buf, sizeof(buf), "<%d>%s[%d]: ", (int)level, log_ident, (int)getpid());
	}
	if (n < sizeof(buf)) {
		int w = vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);

		if (w > 0)
			n += (size_t)w;
	}
	if (n >= sizeof(buf) - 1) {
		/* Truncated: mark it, so nobody mistakes it for the whole message. */
		n = sizeof(buf) - 5;
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n++] = '\n';
	/* One write per message keeps lines from different threads whole. */
	if (write(STDERR_FILENO, buf, n) < 0) {
		/* Nowhere left to report it. */
	}
	errno = saved_errno;
}

void qt_log(enum qt_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	qt_logv(level, fmt, ap);
	va_end(ap);
}

void qt_log_text_append(GString *out, const char *text, size_t max)
{
	g_autofree char *valid = g_utf8_make_valid(text, -1);
	const char *end = valid + strlen(valid);

	if ((size_t)(end - valid) > max) {
		end = valid + max;
		/* Back to the start of the character the limit falls in. */
		while (end > valid && ((guchar)*end & 0xc0) == 0x80)
			end--;
	}
	for (const char *p = valid; p < end; p = g_utf8_next_char(p)) {
		if (g_unichar_iscntrl(g_utf8_get_char(p)))
			g_string_append_c(out, ' ');
		else
			g_string_append_len(out, p, g_utf8_next_char(p) - p);
	}
	if (*end)
		g_string_append(out, "...");
}
