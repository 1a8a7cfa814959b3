/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * tlib.h - helpers shared by the test programs.
 *
 * A test is a program: exit 0 pass, 1 fail, 77 skip (the last line printed
 * says why).  Security properties are checked from outside: a second process
 * reads our memory, a child runs under a seccomp filter or without
 * CAP_IPC_LOCK, a child dumps core.
 */
#ifndef SECRETMEM_TLIB_H
#define SECRETMEM_TLIB_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

/* Defined in a build with AddressSanitizer, ThreadSanitizer or
 * MemorySanitizer (gcc's macros, clang's __has_feature). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TL_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define TL_SANITIZED 1
#endif
#endif

/* Defined in a build with ThreadSanitizer (whose runtime runs a thread of
 * its own: the process is never single-threaded). */
#if defined(__SANITIZE_THREAD__)
#define TL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TL_TSAN 1
#endif
#endif

#define TL_PASS 0
#define TL_FAILED 1
#define TL_SKIP 77

#define TL_FAIL(...)                                                    \
	do {                                                            \
		fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);    \
		fprintf(stderr, __VA_ARGS__);                           \
		fputc('\n', stderr);                                    \
		exit(TL_FAILED);                                        \
	} while (0)

#define TL_CHECK(cond, ...)                                             \
	do {                                                            \
		if (!(cond)) {                                          \
			fprintf(stderr, "check failed: %s\n", #cond);   \
			TL_FAIL(__VA_ARGS__);                           \
		}                                                       \
	} while (0)

/* Skip for a reason that is not the kernel's (e.g. no hibernation here). */
__attribute__((noreturn)) void tl_skip(const char *reason);
/*
 * Skip because the kernel lacks memfd_secret; a failure instead when
 * SECRETMEM_TEST_REQUIRE_KERNEL=1 (CI machines have the feature).
 */
__attribute__((noreturn)) void tl_skip_kernel(const char *reason);
/* Run a shell test (test/x.sh, from the source tree): replaces this process
 * with /bin/sh, so the script's exit status (0, 1, 77) is the test's. */
int tl_run_script(const char *path);
/* Skip ("needs root: <why>") unless running as root; CI runs as root. */
void tl_need_root(const char *why);
/* tl_skip_kernel() unless secretmem_supported() == 0. */
void tl_need_secretmem(void);
/* 1 when running under valgrind (SECRETMEM_UNDER_VALGRIND=1). */
int tl_under_valgrind(void);

/*
 * Run fn(arg) in a forked child; its return value is the exit code.
 * Returns the raw wait status.  With out/outlen non-NULL, the child's
 * stderr and stdout are captured into out (NUL-terminated).
 */
int tl_run_child(int (*fn)(void *), void *arg, char *out, size_t outlen);
/*
 * The threads a fork child of this process has, counted in the child: 1,
 * but 2 in a ThreadSanitizer build, whose runtime starts a thread of its own
 * in every fork child (and at a process's first pthread_create); -1 on
 * error.  A case that needs a single-threaded process runs, where this is
 * not 1, in a fresh one (tl_run_self).
 */
int tl_fork_child_threads(void);
/* Human text for a wait status ("exit 3", "signal 11"). */
const char *tl_status_str(int status);

/* A second thread of the process that only waits: tl_idle_start starts it
 * (0 or -errno from pthread_create), tl_idle_stop ends and joins it.  One
 * at a time. */
int tl_idle_start(pthread_t *t);
void tl_idle_stop(pthread_t t);

/* n threads that malloc and free blocks (32 at a time, up to 3000 bytes)
 * until tl_churn_stop, which joins them.  One group at a time. */
void tl_churn_start(pthread_t *t, int n);
void tl_churn_stop(pthread_t *t, int n);

/* Drop CAP_IPC_LOCK from every capability set (effective, permitted,
 * inheritable, bounding); returns 0 or -errno. */
int tl_drop_cap_ipc_lock(void);
/* Set RLIMIT_MEMLOCK soft and hard; returns 0 or -errno. */
int tl_set_memlock(size_t bytes);

/* Install a seccomp filter: syscall nr returns -err (action ERRNO), or with
 * err == 0 kills the process (SECCOMP_RET_KILL_PROCESS).  0 or -errno. */
int tl_seccomp_block(long nr, int err);
/* The same with any filter action (SECCOMP_RET_TRAP, _KILL_THREAD, ...). */
int tl_seccomp_action(long nr, unsigned int action);

/* Read len bytes at addr of process pid: /proc/PID/mem, process_vm_readv,
 * ptrace PEEKDATA (attaches and detaches).  Each returns 0 or -errno. */
int tl_read_proc_mem(pid_t pid, const void *addr, void *buf, size_t len);
int tl_read_vm(pid_t pid, const void *addr, void *buf, size_t len);
int tl_read_ptrace(pid_t pid, const void *addr, long *word);

/* Open file descriptors of this process (counting /proc/self/fd). */
int tl_count_fds(void);

/* Deterministic pattern from a seed; check returns 1 when it matches. */
void tl_fill(void *p, size_t len, uint64_t seed);
int tl_check(const void *p, size_t len, uint64_t seed);
/* 1 if needle occurs in hay. */
int tl_contains(const void *hay, size_t haylen, const void *needle, size_t nlen);

/* Path of a built artifact: $SECRETMEM_BUILD/name (default build/). */
const char *tl_build_path(const char *name);

/* ---- added for the core tests (h1) ------------------------------------ */

/* Reset sig to SIG_DFL with the raw system call, so that a sanitizer's
 * handler cannot turn the signal into an exit code. */
void tl_signal_default(int sig);

/* Lines of /proc/self/maps (the number of mappings); -errno on error. */
int tl_maps_count(void);
/* The lines of it that are secret memory and the guard pages touching them. */
int tl_maps_count_secret(void);
/* The /proc/self/maps line of the mapping containing addr, without the
 * newline; 0, or -ENOENT when addr is not mapped. */
int tl_maps_line(const void *addr, char *line, size_t len);
/* 1 if the VmFlags of the mapping containing addr (/proc/self/smaps) list
 * flag (two letters, e.g. "dd", "lo"), 0 if not, -errno on error. */
int tl_has_vmflag(const void *addr, const char *flag);

/*
 * Run fn(arg) in a child that must dump core: RLIMIT_CORE unlimited, every
 * mapping type in /proc/self/coredump_filter, SIGABRT/SIGSEGV at their
 * default action, and /proc/sys/kernel/core_pattern pointed at a fresh
 * directory under /tmp.  fn fills memory and abort()s.  The old core_pattern
 * is restored before this returns (and on exit() or SIGTERM/SIGINT in the
 * meantime); tests running at the same time are serialized with a lock file.
 * Returns 0 with the core's path in path and the wait status in *status;
 * -errno (with a reason in why) when core_pattern cannot be set here (the
 * caller skips); -ENOENT when the child left no core (the caller fails).
 * Remove the file with tl_core_remove().
 */
int tl_core_dump(int (*fn)(void *), void *arg, char *path, size_t pathlen, int *status,
		 char *why, size_t whylen);
/* Remove a core file made by tl_core_dump() and its directory. */
void tl_core_remove(const char *path);
/* 1 if the file contains needle, 0 if not, -errno on error.  Reads only the
 * data parts of sparse files (SEEK_DATA), in chunks. */
int tl_file_contains(const char *path, const void *needle, size_t nlen);

/* ---- added for the allocator tests (h7) ------------------------------- */

/*
 * Make len bytes at p accessible again for a test that inspects or writes
 * freed memory on purpose (unpoisons under AddressSanitizer, marks defined
 * under valgrind); a no-op otherwise.
 */
void tl_unpoison(const void *p, size_t len);
/* Core dumps off (RLIMIT_CORE 0), for a child that dies on purpose. */
void tl_no_core(void);
/* 1 if text contains line as a whole line (between newlines or the ends). */
int tl_has_line(const char *text, const char *line);
/*
 * Run fn(arg) in a child (no core dump, SIGABRT at its default action),
 * capturing its output; fail the test (with name, the status and the output)
 * unless it dies of SIGABRT with the exact line on stderr.
 */
void tl_expect_fatal(const char *name, int (*fn)(void *), void *arg, const char *line);
/*
 * Run this test program again as "self arg" with extra environment entries
 * ("NAME=value", NULL-terminated list), capturing stdout and stderr into out
 * (NUL-terminated).  self is argv[0].  Returns the raw wait status.
 */
int tl_run_self(const char *self, const char *arg, const char *const *env, char *out, size_t outlen);
/* RLIMIT_MEMLOCK to memlock bytes for the user a child is about to become:
 * as root soft and hard limit, else the soft one (at most the hard one);
 * 0 or -1. */
int tl_user_memlock(size_t memlock);
/* The same as an ordinary user: run as root, the child becomes uid and gid
 * 65534 (no capability left, so no CAP_IPC_LOCK) with RLIMIT_MEMLOCK set to
 * memlock bytes; run as another user, it keeps its uid and sets the soft
 * limit (at most the hard one).  The child exits 77 with the reason when
 * that user cannot run self. */
int tl_run_self_user(const char *self, const char *arg, const char *const *env, size_t memlock, char *out,
		     size_t outlen);
/* 1 if a line of /proc/self/maps contains s, 0 if not. */
int tl_maps_has(const char *s);

/* Remove every file (not starting with a dot) of directory dir, keep dir. */
void tl_empty_dir(const char *dir);

/* End a forked child with rc; under valgrind through exec, so that memcheck
 * does not report the blocks of the parent's other threads as leaks (a
 * memcheck error in the child makes the status 99). */
__attribute__((noreturn)) void tl_child_exit(int rc);

#endif
