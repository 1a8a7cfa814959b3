/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_py_binding - the Python binding (python/secretmem) under Debian's
 * python3: every C function declared with its types, the library found in
 * the build tree or through SECRETMEM_LIBRARY, Secret round trips (views,
 * readinto, constant-time equality), zero at birth and on close, close()
 * refused while views live, errors as OSError with the C errno, protect()
 * modes holding (SIGSEGV in a child), strict arguments, docstrings and
 * annotations, the CPython check, and the wheel and `pip install ./python`
 * into a venv offline, typed for mypy through py.typed
 * (python/tests/test_binding.py, test_protect.py, test_args.py,
 * test_install.py).
 */
#include <stddef.h>
#include "pyrun.h"

int main(void)
{
	static const char *const modules[] = { "test_binding", "test_protect", "test_args", "test_install", NULL };

	pyrun_unittest(modules);
}
