// SPDX-License-Identifier: Apache-2.0
/*
 * Quantity, duration and time syntaxes (units.h).  Quantities are computed
 * exactly in 128-bit integers: the mantissa's digits, a power of ten from
 * the suffix or exponent and the fraction, and a power of two from a binary
 * suffix, then one ceiling division, so "0.1" cpu is exactly 100m and
 * "1.5Gi" exactly 1610612736 bytes, as Kubernetes computes them.
 */
#include "config.h"

#include <errno.h>
#include <glib.h>
#include <stdbool.h>
#include <string.h>

#include "units.h"

#define MAX_DIGITS 20 /* with a 2^60 suffix still inside 127 bits */

static const struct {
	const char *suffix;
	int exp10;
	int exp2;
} suffixes[] = {
	{"Ki", 0, 10}, {"Mi", 0, 20}, {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60},
	{"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},  {"", 0, 0},    {"k", 3, 0},   {"M", 6, 0},
	{"G", 9, 0},   {"T", 12, 0},  {"P", 15, 0},  {"E", 18, 0},
};

typedef __int128 i128;
#define I128_LIMIT ((i128)1 << 100)

int as_quantity_parse(const char *s, int milli_digits, int64_t *out)
{
	const char *p = s;
	bool neg = false, any = false;
	i128 mant = 0;
	int ndigits = 0, exp10 = milli_digits, exp2 = 0;

	if (!s)
		return -EINVAL;
	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	for (; g_ascii_isdigit(*p); p++, any = true) {
		if (mant == 0 && *p == '0')
			continue;
		if (++ndigits > MAX_DIGITS)
			return -ERANGE;
		mant = mant * 10 + (*p - '0');
	}
	if (*p == '.') {
		p++;
		for (; g_ascii_isdigit(*p); p++, any = true) {
			if (mant != 0 || *p != '0')
				if (++ndigits > MAX_DIGITS)
					return -ERANGE;
			mant = mant * 10 + (*p - '0');
			exp10--;
		}
	}
	if (!any)
		return -EINVAL;
	/* "1E" is exa and "1Ei" exbi: an exponent needs a digit after the e. */
	if ((*p == 'e' || *p == 'E') &&
	    (g_ascii_isdigit(p[1]) || ((p[1] == '+' || p[1] == '-') && g_ascii_isdigit(p[2])))) {
		const char *q = p + 1;
		bool eneg = false;
		int e = 0;

		if (*q == '+' || *q == '-')
			eneg = *q++ == '-';
		if (!g_ascii_isdigit(*q))
			return -EINVAL;
		for (; g_ascii_isdigit(*q); q++) {
			e = e * 10 + (*q - '0');
			if (e > 1000)
				return -ERANGE;
		}
		if (*q)
			return -EINVAL;
		exp10 += eneg ? -e : e;
	} else {
		bool found = false;

		for (size_t i = 0; i < G_N_ELEMENTS(suffixes); i++) {
			if (strcmp(p, suffixes[i].suffix) == 0) {
				exp10 += suffixes[i].exp10;
				exp2 = suffixes[i].exp2;
				found = true;
				break;
			}
		}
		if (!found)
			return -EINVAL;
	}
	if (mant != 0) {
		for (int i = 0; i < exp2; i++)
			mant *= 2;
		for (; exp10 > 0; exp10--) {
			if (mant > INT64_MAX)
				return -ERANGE;
			mant *= 10;
		}
		if (exp10 < 0) {
			i128 div = 1;

			for (; exp10 < 0 && div < I128_LIMIT; exp10++)
				div *= 10;
			if (exp10 < 0) /* smaller than any representable unit: 1 when rounded up */
				mant = 1;
			else
				mant = (mant + div - 1) / div;
		}
	}
	if (mant > INT64_MAX)
		return -ERANGE;
	*out = neg ? -(int64_t)mant : (int64_t)mant;
	return 0;
}

static const struct {
	const char *unit;
	int64_t ns;
} dur_units[] = {
	{"ns", 1}, {"us", 1000}, {"\xc2\xb5s", 1000}, {"\xce\xbcs", 1000}, {"ms", 1000000},
	{"s", 1000000000LL}, {"m", 60000000000LL}, {"h", 3600000000000LL},
};

int as_duration_parse(const char *s, int64_t *out_ms)
{
	const char *p = s;
	i128 total_ns = 0;

	if (!s || !*s)
		return -EINVAL;
	if (*p == '-')
		return -ERANGE;
	if (*p == '+')
		p++;
	if (strcmp(p, "0") == 0) {
		*out_ms = 0;
		return 0;
	}
	if (!*p)
		return -EINVAL;
	while (*p) {
		i128 whole = 0, frac = 0, scale = 1;
		bool any = false;
		size_t best = 0;
		int64_t unit_ns = 0;

		for (; g_ascii_isdigit(*p); p++, any = true) {
			whole = whole * 10 + (*p - '0');
			if (whole > I128_LIMIT)
				return -ERANGE;
		}
		if (*p == '.') {
			p++;
			for (; g_ascii_isdigit(*p); p++, any = true) {
				if (scale < I128_LIMIT / 10) {
					frac = frac * 10 + (*p - '0');
					scale *= 10;
				}
			}
		}
		if (!any)
			return -EINVAL;
		for (size_t i = 0; i < G_N_ELEMENTS(dur_units); i++) {
			size_t len = strlen(dur_units[i].unit);

			if (strncmp(p, dur_units[i].unit, len) == 0 && len > best) {
				/* "m" must not swallow the "m" of "ms" */
				best = len;
				unit_ns = dur_units[i].ns;
			}
		}
		if (!best)
			return -EINVAL;
		p += best;
		total_ns += whole * unit_ns + frac * unit_ns / scale;
		if (total_ns > (i128)INT64_MAX)
			return -ERANGE;
	}
	*out_ms = (int64_t)(total_ns / 1000000);
	return 0;
}

char *as_duration_format(int64_t ms)
{
	GString *s = g_string_new(NULL);
	int64_t h = ms / 3600000, m = ms / 60000 % 60, sec = ms / 1000 % 60, frac = ms % 1000;

	if (ms == 0) {
		g_string_free(s, TRUE);
		return g_strdup("0s");
	}
	if (ms < 1000) {
		g_string_append_printf(s, "%" G_GINT64_FORMAT "ms", ms);
		return g_string_free(s, FALSE);
	}
	if (h)
		g_string_append_printf(s, "%" G_GINT64_FORMAT "h", h);
	if (h || m)
		g_string_append_printf(s, "%" G_GINT64_FORMAT "m", m);
	g_string_append_printf(s, "%" G_GINT64_FORMAT, sec);
	if (frac) {
		g_string_append_printf(s, ".%03" G_GINT64_FORMAT, frac);
		while (s->str[s->len - 1] == '0')
			g_string_truncate(s, s->len - 1);
	}
	g_string_append_c(s, 's');
	return g_string_free(s, FALSE);
}

int as_time_parse(const char *s, int64_t *out_ms)
{
	g_autoptr(GTimeZone) utc = g_time_zone_new_utc();
	g_autoptr(GDateTime) dt = NULL;

	/* RFC 3339 needs the date, the 'T' and an offset; ISO 8601 allows more. */
	if (!s || strlen(s) < 20 || (s[10] != 'T' && s[10] != 't'))
		return -EINVAL;
	dt = g_date_time_new_from_iso8601(s, utc);
	if (!dt)
		return -EINVAL;
	*out_ms = g_date_time_to_unix(dt) * 1000 + g_date_time_get_microsecond(dt) / 1000;
	return 0;
}

char *as_time_format(int64_t ms)
{
	g_autoptr(GDateTime) dt = g_date_time_new_from_unix_utc(ms / 1000 - (ms % 1000 < 0));
	int64_t frac = ((ms % 1000) + 1000) % 1000;

	if (!dt)
		return g_strdup("invalid");
	if (frac)
		return g_strdup_printf("%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", g_date_time_get_year(dt),
				       g_date_time_get_month(dt), g_date_time_get_day_of_month(dt),
				       g_date_time_get_hour(dt), g_date_time_get_minute(dt),
				       g_date_time_get_second(dt), (int)frac);
	return g_date_time_format(dt, "%Y-%m-%dT%H:%M:%SZ");
}
