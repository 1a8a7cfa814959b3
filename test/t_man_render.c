/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_man_render.c - the man pages render with spaces between words:
 * test/man_lint.awk finds no alternating-font macro (.BR, .BI ...) that
 * would run words together in any page, and, where man(1) is installed,
 * the two places that did ("secretmem-heap(7).Abuildwithout..." in
 * secretmem(1), "[SECRETMEM_OPENSSL=mode]program[args...]" in
 * secretmem-preload(7)) render with their spaces.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "tlib.h"

/* 1 if `man -l page` (plain text, one space between words) has text. */
static int renders(const char *page, const char *text)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "MANWIDTH=200 man -l '%s' 2>/dev/null | col -b | tr -s ' ' | grep -qF -- '%s'",
		 page, text);
	int st = system(cmd);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int main(void)
{
	int st = system("out=$(awk -f test/man_lint.awk man/man*/*.[0-9]) || exit 2; "
			"[ -z \"$out\" ] || { echo \"$out\"; exit 1; }");
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "man_lint.awk: words run together (above), or awk failed");
	if (system("command -v man >/dev/null && command -v col >/dev/null") != 0)
		tl_skip("man(1) or col(1) not installed: the rendering is not checked");
	TL_CHECK(renders("man/man1/secretmem.1", "secretmem-heap(7). A build without the module exits with status 69."),
		 "secretmem(1): the sentence after secretmem-heap(7) runs together");
	TL_CHECK(renders("man/man7/secretmem-preload.7",
			 "LD_PRELOAD=/path/to/libsecretmem-preload.so [SECRETMEM_OPENSSL=mode] program [args...]"),
		 "secretmem-preload(7): the SYNOPSIS runs together");
	TL_CHECK(renders("man/man7/secretmem-heap.7", "LD_PRELOAD=/path/to/libsecretmem-heap.so program [args...]"),
		 "secretmem-heap(7): the SYNOPSIS runs together");
	printf("the man pages render with their spaces\n");
	return TL_PASS;
}
