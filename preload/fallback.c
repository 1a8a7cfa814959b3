/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * fallback.c - secret memory for OpenSSL, and what to do when it says no.
 *
 * A failed secretmem_malloc() has three possible meanings, and only one of
 * them may change how later allocations are served:
 *   1. the request itself is impossible (SIZE_MAX, an overflowed size):
 *      nothing changes, no warning - OpenSSL fails such a request too;
 *   2. the request is larger than what secret memory has left, but a page
 *      can still be had: this block goes to ordinary memory (one warning
 *      with the figures), the next request tries secret memory as before;
 *   3. secret memory refuses even a page (the memory-lock limit, a memory
 *      cgroup, the kernel, no free file descriptor): one warning stating the
 *      cause and the figures, and later requests go straight to ordinary
 *      memory - a failing attempt costs a handful of system calls and a
 *      child process - until secret memory can be available again: a secret
 *      block was freed, or RLIMIT_MEMLOCK changed, or (the cause was no free
 *      file descriptor) a descriptor is free again, which one eventfd(2)
 *      per request tells.
 * Under SECRETMEM_REQUIRE=1 no such block goes to ordinary memory: in
 * cases 2 and 3 the allocation fails instead (pl_ordinary_allowed), as a
 * malloc does under heap mode.
 * The cause is the one the library recorded for the failure
 * (secretmem_stats().last_failure); the figures come from
 * getrlimit(RLIMIT_MEMLOCK), the process's CAP_IPC_LOCK (capget) and
 * secretmem_stats().  Without a recorded cause it is inferred from them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "secretmem.h"
#include "preload.h"

static int backend_checked;
static int degraded;            /* case 3 above                          */
static int degraded_fds;        /* ... for want of a file descriptor     */
static unsigned long free_gen;  /* secret frees while degraded           */
static unsigned long degraded_gen;
static rlim_t degraded_limit;
static int warned; /* one warning per process: the first refusal, with its cause */

unsigned long pl_count[4]; /* report: secure secret/ordinary, all secret/ordinary */
extern int pl_report_wanted;

static void count(int secure_heap, int ordinary)
{
	if (__builtin_expect(pl_report_wanted, 0))
		__atomic_add_fetch(&pl_count[(secure_heap ? 0 : 2) + (ordinary ? 1 : 0)], 1, __ATOMIC_RELAXED);
}

/* SECRETMEM_REQUIRE=1 in force: read from the environment by the module's
 * own copy of the library (a program's secretmem_set_require sets its own
 * libsecretmem's). */
static int required(void)
{
	return secretmem_get_option(SECRETMEM_OPT_REQUIRE) == 1;
}

int pl_ordinary_allowed(int secure_heap)
{
	if (required())
		return 0;
	count(secure_heap, 1);
	return 1;
}

void pl_secret_freed(void)
{
	if (__builtin_expect(__atomic_load_n(&degraded, __ATOMIC_RELAXED), 0))
		__atomic_add_fetch(&free_gen, 1, __ATOMIC_RELAXED);
}

static void check_backend(void)
{
	if (__atomic_exchange_n(&backend_checked, 1, __ATOMIC_ACQ_REL))
		return;
	if (secretmem_default_backend() == SECRETMEM_BACKEND_FALLBACK)
		pl_warn("memfd_secret(2) is not usable here; OpenSSL's memory is locked "
			"ordinary memory (kept out of swap and core dumps, but readable by root)");
}

static rlim_t memlock_soft(void)
{
	struct rlimit rl;

	return getrlimit(RLIMIT_MEMLOCK, &rl) == 0 ? rl.rlim_cur : RLIM_INFINITY;
}

/* 1 if the process holds CAP_IPC_LOCK in its effective set. */
static int have_ipc_lock(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data) != 0)
		return 0;
	return (data[CAP_IPC_LOCK / 32].effective >> (CAP_IPC_LOCK % 32)) & 1;
}

/* 0 if the process's descriptor table is full (a memfd_secret(2) call
 * would fail with EMFILE), else 1: an eventfd made and closed.  Not a dup
 * of one of the program's descriptors: closing that would release the
 * program's record locks on its file (fcntl(2)).  Any other error cannot
 * tell, and secret memory is tried.  The system-wide file table (ENFILE)
 * is not seen: when that is full, every request tries. */
static int fd_free(void)
{
	int saved = errno, fd = eventfd(0, EFD_CLOEXEC);
	int full = fd < 0 && errno == EMFILE;

	if (fd >= 0)
		close(fd);
	errno = saved;
	return !full;
}

static rlim_t nofile_soft(void)
{
	struct rlimit rl;

	return getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur : RLIM_INFINITY;
}

/* err says secret memory is not usable at all: SECRETMEM_REQUIRE=1 forbids
 * the library's fallback, which would have served otherwise. */
static int unusable(int err)
{
	return err == EPERM || err == ENOSYS;
}

/* The cause of the failure (st: secretmem_stats() right after it), with its
 * figures: the one the library recorded, or, without one, inferred from the
 * memory-lock limit and CAP_IPC_LOCK. */
static void describe(char *out, size_t len, size_t num, int err, int used_up, const struct secretmem_stats *st)
{
	struct rlimit as;
	rlim_t lim = memlock_soft();
	int cap = have_ipc_lock();
	int cause = (int)st->last_failure;

	if (cause != SECRETMEM_FAILURE_MEMLOCK && cause != SECRETMEM_FAILURE_NOMEM && cause != SECRETMEM_FAILURE_FDS)
		cause = SECRETMEM_FAILURE_NONE; /* none recorded: infer */
	if (unusable(err))
		snprintf(out, len,
			 "secret memory refused %zu bytes: memfd_secret(2) is not usable here (%s: %s) and "
			 "SECRETMEM_REQUIRE=1 forbids the library's locked fallback memory",
			 num, strerror(err),
			 err == ENOSYS ? "not in this kernel, or a seccomp filter answers ENOSYS"
				       : "a seccomp filter or a security module refuses it");
	else if (cause == SECRETMEM_FAILURE_FDS)
		snprintf(out, len,
			 "secret memory refused %zu bytes: no free file descriptor for memfd_secret(2) (all "
			 "RLIMIT_NOFILE = %llu descriptors of the process are open, or the system's file table is "
			 "full); this process has %zu bytes of secret memory mapped",
			 num, (unsigned long long)nofile_soft(), st->bytes_mapped);
	else if (cause == SECRETMEM_FAILURE_MEMLOCK || (cause == SECRETMEM_FAILURE_NONE && !cap && lim != RLIM_INFINITY))
		snprintf(out, len,
			 "secret memory refused %zu bytes: the memory-lock limit RLIMIT_MEMLOCK = %llu bytes "
			 "%s (%llu bytes locked by this process, %zu of them secret memory; "
			 "%s)",
			 num, (unsigned long long)lim, used_up ? "is used up" : "leaves too little for this block",
			 (unsigned long long)(st->memlock_left <= lim ? lim - st->memlock_left : lim),
			 st->bytes_mapped, cap ? "the process has CAP_IPC_LOCK" : "no CAP_IPC_LOCK");
	else {
		char why[80];

		if (cap)
			snprintf(why, sizeof(why), "the process has CAP_IPC_LOCK");
		else if (lim == RLIM_INFINITY)
			snprintf(why, sizeof(why), "RLIMIT_MEMLOCK is unlimited");
		else
			snprintf(why, sizeof(why), "RLIMIT_MEMLOCK = %llu bytes leaves room for it",
				 (unsigned long long)lim);
		if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY)
			snprintf(out, len,
				 "secret memory refused %zu bytes (%s), not because of the memory-lock limit "
				 "(%s): the kernel refused the mapping (address-space limit RLIMIT_AS = %llu bytes, "
				 "or no free memory); this process has %zu bytes of secret memory mapped",
				 num, strerror(err), why, (unsigned long long)as.rlim_cur, st->bytes_mapped);
		else
			snprintf(out, len,
				 "secret memory refused %zu bytes (%s), not because of the memory-lock limit "
				 "(%s): the kernel or a memory cgroup refused the pages; this process has %zu "
				 "bytes of secret memory mapped",
				 num, strerror(err), why, st->bytes_mapped);
	}
}

/* One page from secret memory right now?  Proves that memory is left. */
static int page_available(void)
{
	void *q = secretmem_malloc((size_t)sysconf(_SC_PAGESIZE));

	if (!q)
		return 0;
	secretmem_free(q);
	return 1;
}

void *pl_secret_malloc(size_t num, int secure_heap)
{
	struct secretmem_stats st;
	char msg[640], cause[400];
	void *p;
	int err, fds;

	if (__builtin_expect(!__atomic_load_n(&backend_checked, __ATOMIC_RELAXED), 0))
		check_backend();
	if (__builtin_expect(__atomic_load_n(&degraded, __ATOMIC_RELAXED), 0)) {
		/* Nothing freed, the same limit and (refused for want of a
		 * descriptor) still none free: secret memory would refuse. */
		if (__atomic_load_n(&free_gen, __ATOMIC_RELAXED) == __atomic_load_n(&degraded_gen, __ATOMIC_RELAXED) &&
		    memlock_soft() == degraded_limit && !(__atomic_load_n(&degraded_fds, __ATOMIC_RELAXED) && fd_free())) {
			errno = ENOMEM;
			return NULL;
		}
	}
	p = secretmem_malloc(num);
	if (__builtin_expect(p != NULL, 1)) {
		if (__builtin_expect(__atomic_load_n(&degraded, __ATOMIC_RELAXED), 0))
			__atomic_store_n(&degraded, 0, __ATOMIC_RELAXED);
		count(secure_heap, 0);
		return p;
	}
	err = errno;
	if (num > PTRDIFF_MAX) { /* 1: impossible anywhere */
		errno = err;
		return NULL;
	}
	/* the cause the library recorded for this failure, before
	 * page_available() can record another */
	memset(&st, 0, sizeof(st));
	secretmem_stats(&st);
	fds = st.last_failure == SECRETMEM_FAILURE_FDS;
	if (num > (size_t)sysconf(_SC_PAGESIZE) && page_available()) { /* 2 */
		if (!__atomic_exchange_n(&warned, 1, __ATOMIC_ACQ_REL)) {
			describe(cause, sizeof(cause), num, err, 0, &st);
			snprintf(msg, sizeof(msg), "%s; %s, smaller ones still get secret memory", cause,
				 required() ? "SECRETMEM_REQUIRE=1: this allocation fails"
					    : "this block uses ordinary memory");
			pl_warn(msg);
		}
		errno = err;
		return NULL;
	}
	/* 3: secret memory is refused. */
	__atomic_store_n(&degraded_gen, __atomic_load_n(&free_gen, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
	degraded_limit = memlock_soft();
	__atomic_store_n(&degraded_fds, fds, __ATOMIC_RELAXED);
	__atomic_store_n(&degraded, 1, __ATOMIC_RELAXED);
	if (!__atomic_exchange_n(&warned, 1, __ATOMIC_ACQ_REL)) {
		describe(cause, sizeof(cause), num, err, 1, &st);
		snprintf(msg, sizeof(msg), "%s; %s%s", cause,
			 !required()	? "OpenSSL allocations use ordinary memory"
			 : unusable(err) ? "so OpenSSL allocations fail" /* the cause names REQUIRE */
					 : "under SECRETMEM_REQUIRE=1 OpenSSL allocations fail",
			 unusable(err) ? (required() ? " instead of using ordinary memory"
						     : ", neither locked nor kept out of core dumps")
			 : fds	       ? " until a file descriptor is free or secret memory is freed"
				       : " until secret memory is freed or the limit is raised");
		pl_warn(msg);
	}
	errno = err;
	return NULL;
}
