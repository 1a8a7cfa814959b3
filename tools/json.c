/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * json.c - a small streaming JSON writer for the --json output.
 *
 * Pretty-printed with two-space indentation.  Strings are escaped as RFC 8259
 * requires; bytes that are not valid UTF-8 (a process name can hold any
 * byte) are written as U+FFFD so that the document always parses.
 */
#include <stdio.h>
#include <string.h>
#include "cli.h"

void json_init(struct json *j, FILE *out)
{
	memset(j, 0, sizeof(*j));
	j->out = out;
}

static void indent(struct json *j)
{
	for (int i = 0; i < j->depth; i++)
		fputs("  ", j->out);
}

/* Length of a valid UTF-8 sequence at s (1..4), or 0 if invalid. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned char c = s[0];
	size_t n;
	unsigned int cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		cp = c & 0x1fu;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		cp = c & 0x0fu;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		cp = c & 0x07u;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3fu);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

void json_write_escaped(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', out);
	while (*p) {
		unsigned char c = *p;
		switch (c) {
		case '"':
			fputs("\\\"", out);
			break;
		case '\\':
			fputs("\\\\", out);
			break;
		case '\n':
			fputs("\\n", out);
			break;
		case '\r':
			fputs("\\r", out);
			break;
		case '\t':
			fputs("\\t", out);
			break;
		case '\b':
			fputs("\\b", out);
			break;
		case '\f':
			fputs("\\f", out);
			break;
		default:
			if (c < 0x20 || c == 0x7f) {
				fprintf(out, "\\u%04x", c);
			} else if (c < 0x80) {
				fputc(c, out);
			} else {
				size_t n = utf8_len(p);
				if (n == 0) {
					fputs("\\ufffd", out);
				} else {
					fwrite(p, 1, n, out);
					p += n - 1;
				}
			}
		}
		p++;
	}
	fputc('"', out);
}

/* Separator, newline, indentation and "key": before a value. */
static void member(struct json *j, const char *key)
{
	if (j->depth > 0) {
		fputs(j->count[j->depth] ? ",\n" : "\n", j->out);
		j->count[j->depth]++;
		indent(j);
	}
	if (key) {
		json_write_escaped(j->out, key);
		fputs(": ", j->out);
	}
}

static void open_container(struct json *j, const char *key, char c)
{
	member(j, key);
	fputc(c, j->out);
	if (j->depth + 1 < JSON_MAX_DEPTH)
		j->depth++;
	j->count[j->depth] = 0;
}

static void close_container(struct json *j, char c)
{
	int had = j->count[j->depth];

	if (j->depth > 0)
		j->depth--;
	if (had) {
		fputc('\n', j->out);
		indent(j);
	}
	fputc(c, j->out);
}

void json_object_begin(struct json *j, const char *key)
{
	open_container(j, key, '{');
}

void json_object_end(struct json *j)
{
	close_container(j, '}');
}

void json_array_begin(struct json *j, const char *key)
{
	open_container(j, key, '[');
}

void json_array_end(struct json *j)
{
	close_container(j, ']');
}

void json_string(struct json *j, const char *key, const char *value)
{
	member(j, key);
	if (value)
		json_write_escaped(j->out, value);
	else
		fputs("null", j->out);
}

void json_int(struct json *j, const char *key, long long value)
{
	member(j, key);
	fprintf(j->out, "%lld", value);
}

void json_uint(struct json *j, const char *key, unsigned long long value)
{
	member(j, key);
	fprintf(j->out, "%llu", value);
}

void json_bool(struct json *j, const char *key, int value)
{
	member(j, key);
	fputs(value ? "true" : "false", j->out);
}

void json_null(struct json *j, const char *key)
{
	member(j, key);
	fputs("null", j->out);
}

void json_finish(struct json *j)
{
	fputc('\n', j->out);
	fflush(j->out);
}
