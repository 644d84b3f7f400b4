/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Value syntaxes the autoscaler reads: Kubernetes resource quantities
 * ("500m", "2", "1Gi", "1e9", "1.5G"), Go durations as Cluster Autoscaler's
 * flags take them ("10m", "1h30m", "90s", "0"), and RFC 3339 times.  Pure
 * string functions, shared by the JSON reader, the options and the tests.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/*
 * Quantities each fit in 63 bits, but their sums (a pod's containers, a
 * cluster's nodes, upcoming nodes times a template) need not: they
 * saturate at INT64_MAX (INT64_MIN) instead of wrapping.
 */

/* *@acc += @v, saturating; true when it saturated. */
static inline bool as_add_saturating(int64_t *acc, int64_t v)
{
	if (__builtin_add_overflow(*acc, v, acc)) {
		*acc = v > 0 ? INT64_MAX : INT64_MIN;
		return true;
	}
	return false;
}

/* @a + @b, saturating. */
static inline int64_t as_sat_add(int64_t a, int64_t b)
{
	as_add_saturating(&a, b);
	return a;
}

/* @a * @b, saturating. */
static inline int64_t as_sat_mul(int64_t a, int64_t b)
{
	int64_t s;

	if (__builtin_mul_overflow(a, b, &s))
		return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
	return s;
}

/*
 * Parse a Kubernetes quantity and return it scaled by 10^@milli_digits
 * (3 for cpu in millicores, 0 for bytes and counts), rounded up as
 * Quantity.MilliValue() and Value() round.  Accepted: an optional sign,
 * digits with an optional fraction, then nothing, a binary suffix
 * (Ki Mi Gi Ti Pi Ei), a decimal suffix (n u m k M G T P E) or an exponent
 * (e3, E-2).  -EINVAL for bad syntax, -ERANGE when the result does not fit
 * in 63 bits.  *out is written only on success.
 */
int as_quantity_parse(const char *s, int milli_digits, int64_t *out);

/*
 * Parse a Go duration into milliseconds: a sequence of decimal numbers with
 * a unit each (ns, us, µs, ms, s, m, h), like "1h30m" or "1.5s"; "0" alone
 * is allowed.  Negative durations are refused; parts below a millisecond
 * are truncated.  -EINVAL for bad syntax, -ERANGE on overflow.
 */
int as_duration_parse(const char *s, int64_t *out_ms);

/* Format @ms as Go does ("1h30m0s", "10m0s", "0s", "1.5s"), g_malloc'd. */
char *as_duration_format(int64_t ms);

/* RFC 3339 time -> milliseconds since the epoch.  -EINVAL if malformed. */
int as_time_parse(const char *s, int64_t *out_ms);
/* Milliseconds since the epoch -> "2024-01-02T03:04:05Z" (or with .mmm), g_malloc'd. */
char *as_time_format(int64_t ms);
