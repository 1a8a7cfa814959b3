/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_py_fork - Secrets across os.fork() and multiprocessing under each fork
 * policy (copy, share, drop; by SECRETMEM_FORK and set at run time): the
 * child exits cleanly through the interpreter's teardown whatever Secrets
 * exist, the parent's secrets stay intact (under share the child's close
 * does not zeroize them), a dropped Secret refuses view() and a view from
 * before the fork kills the child; multiprocessing's fork method passes a
 * Secret per the policy, spawn and forkserver refuse to pickle it, a pipe
 * (os.write, os.readv) hands it over under all three
 * (python/tests/test_fork.py).
 */
#include <stddef.h>
#include "pyrun.h"

int main(void)
{
	static const char *const modules[] = { "test_fork", NULL };

	pyrun_unittest(modules);
}
