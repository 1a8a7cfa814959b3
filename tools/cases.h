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

/* cases_access.c */
void cases_access_init(size_t page_size);
int case_proc_mem(struct case_result *r);
int case_process_vm_readv(struct case_result *r);
int case_ptrace(struct case_result *r);
int case_o_direct(struct case_result *r);
int case_vmsplice(struct case_result *r);
int case_write(struct case_result *r);
int case_coredump(struct case_result *r);

#endif
