/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * lockrig.h - the rig of the proofs that heap mode covers the memory that
 * libraries lock themselves (issue 29; test/t_heap_lock_*).  A helper of
 * ours (test/helpers/lock_*, see test/helpers/lockkeys.h for what it does
 * and prints) keeps the test's random keys in a library's locked memory;
 * lr_prove() runs it plain and in heap mode, as root and as an ordinary
 * user (uid 65534 under a memory-lock limit of LR_MEMLOCK), compares what
 * it prints, and scans it through /proc/PID/mem.
 */
#ifndef SECRETMEM_LOCKRIG_H
#define SECRETMEM_LOCKRIG_H

#include <stddef.h>
#include <sys/types.h>
#include "helpers/lockkeys.h"

/* the ordinary user's memory-lock limit: `ulimit -l 8192` */
#define LR_MEMLOCK ((size_t)8 << 20)
#define LR_MAX_KEYS 4

struct lr_case {
	const char *test;    /* "t_heap_lock_sodium"                      */
	const char *helper;  /* "lock_sodium": build/test/helpers/NAME     */
	int nkeys;
	/* a name per key: the scan's needle group ("a", "mpi", ...) */
	const char *name[LR_MAX_KEYS];
	/* 1: a big number the library keeps in limbs: searched in both byte
	 * orders, and its first byte gets its top bit set, so that the
	 * number has a fixed bit length */
	int bignum[LR_MAX_KEYS];
	/* what the helper prints (once mode) before the keys' checksums (its
	 * library calls' results) and after them (the release) */
	const char *loaded, *finished;
};

/*
 * The proof: fresh random keys; a plain run must print exactly the
 * expected text, as root and as uid 65534; a root scan of a waiting plain
 * run (root and uid 65534), and of its fork child that kept its copy, must
 * find every key outside the stack (the control: the scan sees the
 * library's locked memory).  Then (skipped with
 * heap_need_module's reason when the module cannot be tested) heap mode:
 * the same text, as root and as uid 65534, and no copy of any key outside
 * the stack.  As non-root the scans are skipped ("needs root") after the
 * output checks.  Fails the test, or returns after printing the figures.
 */
void lr_prove(const struct lr_case *c);

/* Absolute path of build/test/helpers/NAME; skips the test without it. */
const char *lr_helper(const char *name);
/*
 * Run helper KEYFILE MODE (mode "once" or "wait") plain or with the heap
 * module, stdout and stderr to log; memlock > 0: as an ordinary user (as
 * root: uid/gid 65534, which reads the helper, module and key file staged
 * in rig_tmpdir()) with RLIMIT_MEMLOCK memlock.  The helper dies with this
 * process (PR_SET_PDEATHSIG).  Returns its pid.
 */
pid_t lr_spawn(const char *helper, const char *keyfile, const char *mode, int heap, size_t memlock,
	       const char *log);
/* Wait for pid (a child) at most ms; its wait status, -1 on timeout. */
int lr_wait(pid_t pid, int ms);
/* Wait until log has a line "ready"; fails the test (with the log) when
 * pid ends or 30 s pass first. */
void lr_wait_ready(pid_t pid, const char *log);
/* Kill and reap pid. */
void lr_kill(pid_t pid);
/* The whole file into buf (NUL-terminated); its length, -1 on error. */
long lr_read_file(const char *path, char *buf, size_t len);

#endif
