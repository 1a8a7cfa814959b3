/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * heaprig.h - helpers of the heap-module tests (t_heap_*): run this test
 * program again under libsecretmem-heap.so, tell where a block lives, read a
 * process's heap figures page.
 */
#ifndef SECRETMEM_HEAPRIG_H
#define SECRETMEM_HEAPRIG_H

#include <stddef.h>
#include <sys/types.h>
#include "../heap/heapstats.h"

/* Absolute path of the built module; skips the test when it is missing or
 * under a sanitizer or valgrind (they replace malloc themselves). */
const char *hr_module(void);
/* tl_run_self(self, arg) with LD_PRELOAD=module (when heap) and the extra
 * environment entries; the raw wait status, output in out. */
int hr_run(const char *self, const char *arg, int heap, const char *const *env, char *out, size_t outlen);
/* hr_run as an ordinary user under a memory-lock limit of memlock bytes
 * (tl_run_self_user); memlock 0: hr_run. */
int hr_run_user(const char *self, const char *arg, int heap, const char *const *env, size_t memlock, char *out,
		size_t outlen);
/* Where p lives: 's' secret memory (/secretmem), 'f' the allocator's locked
 * fallback, 'o' anything else (ordinary memory), '?' unmapped. */
int hr_where(const void *p);
/* This process's locked memory (VmLck in /proc/self/status), in bytes. */
size_t hr_vmlck(void);
/* Set the soft RLIMIT_MEMLOCK to bytes (fails the test when refused). */
void hr_set_soft_memlock(size_t bytes);
/* 1 if this process runs with the heap module active. */
int hr_active(void);
/* The heap figures page of pid (0: this process); 0, or -ENOENT without
 * one, -errno when it cannot be read. */
int hr_stats(pid_t pid, struct sm_heap_stats *st);

#endif
