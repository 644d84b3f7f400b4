/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One logging module for every program.  Messages go to stderr; with a TTY
 * they carry a local timestamp and a level word, otherwise they carry a
 * syslog priority prefix ("<3>") that journald and syslog-ng understand and
 * a monotonic-free line that greps well.  Libraries log only at debug level;
 * programs decide what is worth an error (see CONVENTIONS.md).
 *
 * Thread-safe: each message is formatted into one buffer and written with a
 * single write(2).
 */
#pragma once

#include <glib.h>
#include <stdarg.h>

enum qt_log_level {
	QT_LOG_ERR = 3,
	QT_LOG_WARN = 4,
	QT_LOG_NOTICE = 5,
	QT_LOG_INFO = 6,
	QT_LOG_DEBUG = 7,
};

/* @ident is the program name; it is not copied. */
void qt_log_init(const char *ident);
void qt_log_set_level(enum qt_log_level level);
enum qt_log_level qt_log_get_level(void);
/* Each --verbose raises the level by one step from NOTICE. */
void qt_log_verbose(int count);
/* Force the format: 1 = TTY style, 0 = syslog style, -1 = detect (default). */
void qt_log_set_tty(int tty);
/* Parse "err", "warn", "notice", "info", "debug".  0 or -EINVAL. */
int qt_log_level_parse(const char *s, enum qt_log_level *out);

void qt_log(enum qt_log_level level, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
void qt_logv(enum qt_log_level level, const char *fmt, va_list ap) G_GNUC_PRINTF(2, 0);

#define qt_err(...) qt_log(QT_LOG_ERR, __VA_ARGS__)
#define qt_warn(...) qt_log(QT_LOG_WARN, __VA_ARGS__)
#define qt_notice(...) qt_log(QT_LOG_NOTICE, __VA_ARGS__)
#define qt_info(...) qt_log(QT_LOG_INFO, __VA_ARGS__)
#define qt_debug(...)                                           \
	do {                                                    \
		if (qt_log_get_level() >= QT_LOG_DEBUG)         \
			qt_log(QT_LOG_DEBUG, __VA_ARGS__);      \
	} while (0)

/*
 * Append @text, a peer's (a server's error message, say), to @out made fit
 * for one log line: valid UTF-8 (bytes that are not become U+FFFD), control
 * characters as spaces (a newline would start a line that looks like
 * ours), cut at @max bytes on a character boundary with "..." after it.
 */
void qt_log_text_append(GString *out, const char *text, size_t max);
