/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_py_getpass - secretmem.getpass(): through a pseudo-terminal the prompt
 * shows, the typed password is not echoed, echo is on again afterwards
 * (also after Ctrl-C, which leaves no allocation); a non-terminal stdin is
 * read to the newline and no further, EOF and max_len hold; and a root scan
 * of the child after it read a password (typed through the pty, or on a
 * pipe) finds no fragment of it, the Secret's page refused, while the same
 * scan finds getpass.getpass()'s copy (the control)
 * (python/tests/test_getpass.py).
 */
#include <stddef.h>
#include "pyrun.h"

int main(void)
{
	static const char *const modules[] = { "test_getpass", NULL };

	pyrun_unittest(modules);
}
