/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * pyrun.h - run Python unittest modules of python/tests with Debian's
 * /usr/bin/python3 (another python3 may come first in PATH) against the
 * binding in python/ and the library of $SECRETMEM_BUILD.  Used by the
 * t_py_* tests.
 */
#ifndef SECRETMEM_PYRUN_H
#define SECRETMEM_PYRUN_H

#define PYRUN_PYTHON "/usr/bin/python3"

/*
 * Run `python3 -m unittest -v MODULE...` (modules: NULL-terminated) from the
 * top of the tree, echo its output, and exit: 0 when every test passed
 * (skips allowed), 1 on a failure or when no test ran, 77 when python3 is
 * missing, the build is a sanitizer build, or every test was skipped (the
 * last line gives the reason).  Never returns.
 */
__attribute__((noreturn)) void pyrun_unittest(const char *const modules[]);

#endif
