/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_py_wheel - `make wheel` under every CPython 3.8+ found that is not
 * Debian's (pyenv's, /usr/local, /opt, or $SECRETMEM_TEST_PYTHONS) writes
 * the same wheel, which each installs offline (pip --no-index) and runs: a
 * Secret round trip, close() refused under a view, strict sizes, getpass()
 * from a pipe, a fork child under drop; the oldest one also into a venv of
 * its own.  Skips, saying so, when no such Python is found
 * (python/tests/test_wheel.py).
 */
#include <stddef.h>
#include "pyrun.h"

int main(void)
{
	static const char *const modules[] = { "test_wheel", NULL };

	pyrun_unittest(modules);
}
