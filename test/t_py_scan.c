/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_py_scan - a root scan (/proc/PID/mem) of a Python process finds a value
 * held in bytes, one read through a buffered file and one that passed
 * through a bytes object already freed, but not a secret read into a
 * secretmem.Secret with readinto from an unbuffered file
 * (python/tests/test_scan.py).
 */
#include <stddef.h>
#include "pyrun.h"

int main(void)
{
	static const char *const modules[] = { "test_scan", NULL };

	pyrun_unittest(modules);
}
