// SPDX-License-Identifier: Apache-2.0
/* JSON string output (see json-str.h). */
#include "config.h"

#include "json-str.h"

void qt_json_append_str(GString *out, const char *s)
{
	g_autofree char *u = g_utf8_make_valid(s ? s : "", -1);

	g_string_append_c(out, '"');
	for (const unsigned char *c = (const unsigned char *)u; *c; c++) {
		if (*c == '"' || *c == '\\')
			g_string_append_printf(out, "\\%c", *c);
		else if (*c < 0x20)
			g_string_append_printf(out, "\\u%04x", *c);
		else
			g_string_append_c(out, (char)*c);
	}
	g_string_append_c(out, '"');
}
