/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * tljmp.h - include first (before any system header) in a test whose signal
 * handler leaves with siglongjmp.
 *
 * _FORTIFY_SOURCE turns siglongjmp into __longjmp_chk, which gcc 12's
 * ThreadSanitizer does not intercept: the jump then bypasses the runtime,
 * which goes on believing the thread is inside the handler (and reports the
 * next malloc, or fopen, as "signal-unsafe call inside of a signal") and
 * keeps the handler's frames on its shadow stack.  In a ThreadSanitizer
 * build the test is compiled without it, so that the runtime sees the jump;
 * every other build keeps the fortified one.
 */
#ifndef SECRETMEM_TLJMP_H
#define SECRETMEM_TLJMP_H

#if defined(__SANITIZE_THREAD__)
#undef _FORTIFY_SOURCE
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#undef _FORTIFY_SOURCE
#endif
#endif

#endif
