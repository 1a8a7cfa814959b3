/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * cases.h - shared by the conformance cases of `secretmem check` (cases.c,
 * cases_access.c).  A case runs in a child process, checks one documented
 * behaviour of memfd_secret(2) and reports with case_pass/case_fail/
 * case_skip, which fill the result and return the verdict.
 */
#ifndef SECRETMEM_CASES_H
#define SECRETMEM_CASES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "cli.h"

/* Seeds of the patterns written into secret and ordinary pages. */
#define SEED_SECRET 0x5ec2e7a11ce5eedULL
#define SEED_PLAIN 0x0bd1a2f00dULL

/* The name of errno, for reasons. */
#define ENAME() cli_errno_name(errno)

__attribute__((format(printf, 2, 3)))
int case_pass(struct case_result *r, const char *fmt, ...);
__attribute__((format(printf, 2, 3)))
int case_fail(struct case_result *r, const char *fmt, ...);
__attribute__((format(printf, 2, 3)))
int case_skip(struct case_result *r, const char *fmt, ...);

/* fork() a helper that dies with its parent and never dumps core. */
pid_t case_spawn(void);
/* Pseudo-random bytes written straight into p (never staged elsewhere). */
void case_fill(unsigned char *p, size_t n, uint64_t seed);
/* size bytes of ordinary private anonymous memory; NULL on failure. */
unsigned char *case_plain_map(size_t size);

/* A secretmem fd (or the fake kernel's) of size bytes (0: unsized); -errno. */
int case_secret_fd(size_t size, unsigned int flags);
/* Drops CAP_IPC_LOCK from every set (and the bounding set if allowed). */
int case_drop_cap_ipc_lock(void);
/* Reports a fact of the kernel: neither pass nor fail. */
__attribute__((format(printf, 2, 3)))
int case_info(struct case_result *r, const char *fmt, ...);
/* A child that holds a secret mapping of one page (filled with SEED_SECRET)
 * and, if keep_fd, its fd open; see cases_fd.c. */
struct holder_child {
	pid_t pid;
	int fd;                 /* the fd number in the child               */
	int fd_open;            /* whether the child keeps it open          */
	unsigned char *secret;  /* the same address in the child */
};
int case_holder_start(struct holder_child *h, int keep_fd, struct case_result *r);
void case_holder_stop(struct holder_child *h);

/* cases_access.c */
void cases_access_init(size_t page_size);
int case_proc_mem(struct case_result *r);
int case_process_vm_readv(struct case_result *r);
int case_ptrace(struct case_result *r);
int case_o_direct(struct case_result *r);
int case_vmsplice(struct case_result *r);
int case_write(struct case_result *r);
int case_coredump(struct case_result *r);

/* cases_fd.c */
int case_reopen(struct case_result *r);
int case_pidfd_getfd(struct case_result *r);
int case_no_fd(struct case_result *r);
/* cases_limit.c */
int case_memlock_selftest(struct case_result *r);
int case_memlock_touch(struct case_result *r);
/* cases_mm.c */
void cases_mm_init(size_t page_size);
int case_vmsplice_remap(struct case_result *r);
int case_io_uring(struct case_result *r);
int case_userfaultfd(struct case_result *r);
int case_mremap(struct case_result *r);
int case_madvise(struct case_result *r);
int case_pagemap(struct case_result *r);
int case_memcg(struct case_result *r);

#endif
