/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_core_abi - the shared library exports exactly the functions that the
 * public header declares (no internal symbol leaks, none is missing), every
 * one under its version node (SECRETMEM_1.0 for the 1.0.0 API, SECRETMEM_1.1
 * for what 1.1.0 added, which inherits 1.0), with soname libsecretmem.so.1;
 * and the header compiles as C++.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "tlib.h"

#define MAXSYM 128

/* Copy a name into a fixed slot; names longer than the slot are a failure. */
static void put(char *dst, size_t cap, const char *src)
{
	size_t len = strlen(src);

	TL_CHECK(len < cap, "name too long: %s", src);
	memcpy(dst, src, len + 1);
}

static int read_lines(const char *cmd, char names[][64], int max)
{
	FILE *p = popen(cmd, "r");
	char line[256];
	int n = 0;

	if (!p)
		TL_FAIL("popen %s: %s", cmd, strerror(errno));
	while (fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\n")] = '\0';
		if (!line[0])
			continue;
		TL_CHECK(n < max, "too many lines from %s", cmd);
		put(names[n++], 64, line);
	}
	TL_CHECK(pclose(p) == 0, "%s failed", cmd);
	return n;
}

/* The functions added in 1.1.0; every other one must stay in SECRETMEM_1.0. */
static const char *const added_1_1[] = { "secretmem_memzero", "secretmem_memeq", "secretmem_version" };

static const char *node_of(const char *name)
{
	for (size_t i = 0; i < sizeof(added_1_1) / sizeof(added_1_1[0]); i++)
		if (strcmp(name, added_1_1[i]) == 0)
			return "@@SECRETMEM_1.1";
	return "@@SECRETMEM_1.0";
}

static int find(char names[][64], int n, const char *s)
{
	for (int i = 0; i < n; i++)
		if (strcmp(names[i], s) == 0)
			return 1;
	return 0;
}

int main(void)
{
	static char header[MAXSYM][64], exported[MAXSYM][64];
	char cmd[1024];
	const char *so = tl_build_path("libsecretmem.so");

	if (access("/usr/bin/nm", X_OK) != 0)
		tl_skip("nm (binutils) is not installed");
	/* every function declared in the header: "name(" at the start of a
	 * declaration line, after the return type */
	int nh = read_lines("grep -oE '^[a-z_ ]+[ *]+(secretmem_[a-z_]+)\\(' include/secretmem.h"
			    " | grep -oE 'secretmem_[a-z_]+\\(' | tr -d '(' | sort -u", header, MAXSYM);
	snprintf(cmd, sizeof(cmd), "nm -D --defined-only %s | awk '$2 == \"T\" {print $3}' | sort -u", so);
	int ne = read_lines(cmd, exported, MAXSYM);
	TL_CHECK(nh >= 20, "only %d functions found in the header", nh);
	for (int i = 0; i < ne; i++) {
		char base[64];
		put(base, sizeof(base), exported[i]);
		char *at = strchr(base, '@');
		TL_CHECK(at, "%s has no default version node", exported[i]);
		*at = '\0';
		TL_CHECK(strcmp(at + 1, node_of(base) + 1) == 0, "%s@%s: want %s", base, at + 1, node_of(base));
		TL_CHECK(find(header, nh, base), "%s is exported but not in the header", base);
	}
	for (int i = 0; i < nh; i++) {
		char versioned[80];
		put(versioned, sizeof(versioned) - 16, header[i]);
		strcat(versioned, node_of(header[i]));
		TL_CHECK(find(exported, ne, versioned), "%s is declared but not exported", header[i]);
	}
	printf("%d functions declared, %d exported, each under its version node\n", nh, ne);
	snprintf(cmd, sizeof(cmd), "readelf -V %s | grep -q 'Parent 1: SECRETMEM_1.0'", so);
	TL_CHECK(system(cmd) == 0, "version node SECRETMEM_1.1 does not inherit SECRETMEM_1.0");

	snprintf(cmd, sizeof(cmd), "readelf -d %s | grep -q 'Library soname: \\[libsecretmem.so.1\\]'", so);
	TL_CHECK(system(cmd) == 0, "soname is not libsecretmem.so.1");

	if (access("/usr/bin/g++", X_OK) == 0) {
		TL_CHECK(system("printf '#include <secretmem.h>\\nint main() { return secretmem_owns(nullptr); }\\n'"
				" | g++ -std=c++11 -Wall -Wextra -Werror -Iinclude -x c++ -fsyntax-only -") == 0,
			 "the header does not compile as C++");
		printf("the header compiles as C++11\n");
	} else {
		printf("g++ not installed: C++ check not run\n");
	}
	return 0;
}
