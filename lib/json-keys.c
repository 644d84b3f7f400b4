// SPDX-License-Identifier: Apache-2.0
/*
 * Repeated keys in a JSON text (json-keys.h): one pass over the text with
 * a stack of the open arrays and objects, the keys of each open object in
 * a set.  The text has been parsed by json-c already, so it is well
 * formed and the scan need not check it; strings may be 'single-quoted',
 * which json-c takes outside its strict mode.
 */
#include "config.h"

#include <string.h>

#include "json-keys.h"

static int hex4(const char *p)
{
	int v = 0;

	for (int i = 0; i < 4; i++) {
		int d = g_ascii_xdigit_value(p[i]);

		if (d < 0)
			return -1;
		v = v * 16 + d;
	}
	return v;
}

/*
 * Decode the string whose opening quote is at text[*i]; *i ends on its
 * closing quote.  As json-c decodes: \uD800-\uDBFF followed by
 * \uDC00-\uDFFF is one character, any other surrogate is U+FFFD.
 */
static void decode(const char *text, size_t len, size_t *i, GString *out)
{
	char q = text[*i];
	size_t j = *i + 1;

	g_string_truncate(out, 0);
	while (j < len && text[j] != q) {
		int u, lo;

		if (text[j] != '\\') {
			g_string_append_c(out, text[j++]);
			continue;
		}
		if (j + 1 >= len)
			break;
		switch (text[j + 1]) {
		case 'b':
			g_string_append_c(out, '\b');
			break;
		case 'f':
			g_string_append_c(out, '\f');
			break;
		case 'n':
			g_string_append_c(out, '\n');
			break;
		case 'r':
			g_string_append_c(out, '\r');
			break;
		case 't':
			g_string_append_c(out, '\t');
			break;
		case 'u':
			u = j + 6 <= len ? hex4(text + j + 2) : -1;
			if (u < 0) {
				j += 2;
				continue;
			}
			j += 6;
			if (u >= 0xD800 && u <= 0xDBFF && j + 6 <= len && text[j] == '\\' &&
			    text[j + 1] == 'u' && (lo = hex4(text + j + 2)) >= 0xDC00 && lo <= 0xDFFF) {
				u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
				j += 6;
			} else if (u >= 0xD800 && u <= 0xDFFF) {
				u = 0xFFFD;
			}
			g_string_append_unichar(out, (gunichar)u);
			continue;
		default: /* " \ / and, in a single-quoted string, ' */
			g_string_append_c(out, text[j + 1]);
			break;
		}
		j += 2;
	}
	*i = j;
}

/* Close the innermost open array or object. */
static void pop(GPtrArray *stack)
{
	GHashTable *keys;

	if (stack->len == 0)
		return;
	keys = g_ptr_array_steal_index(stack, stack->len - 1);
	if (keys)
		g_hash_table_unref(keys);
}

gboolean qt_json_repeated_key(const char *text, size_t len, unsigned max_depth, char **key)
{
	/* One entry per open array (NULL) or object (its keys; NULL when deeper than @max_depth). */
	GPtrArray *stack = g_ptr_array_new();
	g_autoptr(GString) s = g_string_new(NULL);
	gboolean found = FALSE;

	for (size_t i = 0; i < len && !found; i++) {
		GHashTable *keys;
		size_t j;

		switch (text[i]) {
		case '{':
			g_ptr_array_add(stack, stack->len < max_depth
						       ? g_hash_table_new_full(g_str_hash, g_str_equal,
									       g_free, NULL)
						       : NULL);
			break;
		case '[':
			g_ptr_array_add(stack, NULL);
			break;
		case '}':
		case ']':
			pop(stack);
			break;
		case '"':
		case '\'':
			decode(text, len, &i, s);
			keys = stack->len > 0 ? stack->pdata[stack->len - 1] : NULL;
			for (j = i + 1; j < len && g_ascii_isspace(text[j]); j++)
				;
			/* A key is a string followed by ':' in an object; values are not. */
			if (keys && j < len && text[j] == ':' &&
			    !g_hash_table_add(keys, g_strndup(s->str, s->len))) {
				*key = g_strndup(s->str, s->len);
				found = TRUE;
			}
			break;
		default:
			break;
		}
	}
	while (stack->len > 0)
		pop(stack);
	g_ptr_array_unref(stack);
	return found;
}
