/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * reach.c - the OpenSSL the module cannot reach, said once and published
 * (secretmem-preload(7), OUT OF REACH).
 *
 * The module works through the dynamic linker: libcrypto's calls of
 * CRYPTO_secure_malloc and friends are relocations the linker binds to the
 * first definition in the lookup order, the module's.  Two things defeat
 * that, and both are said here instead of leaving the keys silently in
 * ordinary memory:
 *  - another object defines CRYPTO_secure_malloc ahead of the module (the
 *    program itself, with OpenSSL linked in and exported, or an earlier
 *    LD_PRELOAD entry): every libcrypto binds to it.  The module is then
 *    inactive - mode off, it installs nothing - and says so once
 *    (pl_reach_winner);
 *  - an object carries its own copy of OpenSSL whose calls never go
 *    through the linker: a libcrypto.a linked into a shared object or
 *    program with its symbols hidden (pip's cryptography wheel, Rust or Go
 *    programs that vendor OpenSSL), or linked with -Bsymbolic.  Such an
 *    object has no relocation against CRYPTO_secure_zalloc or
 *    CRYPTO_secure_malloc; it is recognized by an exported OpenSSL
 *    function, or - its symbols hidden - by importing mlock() (the secure
 *    heap locks its arena) and holding OpenSSL's secure-heap source name
 *    "crypto/mem_sec.c" (OPENSSL_FILE strings) in its read-only data.  One
 *    warning per object names it and suggests heap mode, which covers any
 *    malloc of the process (pl_reach_scan_locked).
 * Both are published on a page of their own (plstats.h), mapped only then,
 * for `secretmem status`, and printed by SECRETMEM_REPORT=1.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "preload.h"
#include "plstats.h"
#include "dynobj.h"

#define MODULE_NAME "libsecretmem-preload.so"
#define MAX_SEEN 1024

static pthread_mutex_t page_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sm_preload_stats *page;
static char inactive[400];
static uintptr_t seen[MAX_SEEN]; /* objects examined, by lowest address */
static int nseen;
static char unreached[SM_PRELOAD_UNREACHED_MAX][200];
static unsigned long nunreached;

/* The page, mapped on first use: NULL when it cannot be (then only the
 * warnings say it).  Call with page_lock held. */
static struct sm_preload_stats *get_page(void)
{
	if (page)
		return page;
	long fd = syscall(SYS_memfd_create, SM_PRELOAD_STATS_NAME, MFD_CLOEXEC);
	long ps = sysconf(_SC_PAGESIZE);

	if (fd < 0 || ps < (long)sizeof(*page))
		return NULL;
	if (syscall(SYS_ftruncate, fd, ps) == 0) {
		void *p = mmap(NULL, (size_t)ps, PROT_READ | PROT_WRITE, MAP_PRIVATE, (int)fd, 0);
		if (p != MAP_FAILED) {
			page = p;
			page->magic = SM_PRELOAD_STATS_MAGIC;
			page->size = sizeof(*page);
			__atomic_store_n(&page->state, SM_PRELOAD_ACTIVE, __ATOMIC_RELEASE);
		}
	}
	syscall(SYS_close, fd);
	return page;
}

/* ---- another definition ahead of the module --------------------------- */

struct walk {
	uintptr_t self;
	int seen_self;
	int found;  /* the first definer is another object, before the module */
	char name[200];
};

static int first_definer(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct walk *w = arg;
	struct sm_dynobj o;

	(void)size;
	if (sm_dyn_open(info, &o) != 0)
		return 0;
	if (w->self >= o.lo && w->self < o.hi) {
		w->seen_self = 1;
		return 1; /* the module comes first: it is the one */
	}
	if (!sm_dyn_defines(&o, "CRYPTO_secure_malloc"))
		return 0;
	w->found = 1;
	if (o.name[0]) {
		snprintf(w->name, sizeof(w->name), "%s", o.name);
	} else {
		ssize_t k = readlink("/proc/self/exe", w->name, sizeof(w->name) - 1);
		w->name[k > 0 ? k : 0] = '\0';
	}
	return 1;
}

/* 1 when LD_PRELOAD or /etc/ld.so.preload names the module. */
static int requested(void)
{
	const char *v = getenv("LD_PRELOAD");
	char buf[4096];

	if (v && strstr(v, MODULE_NAME))
		return 1;
	int fd = open("/etc/ld.so.preload", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return strstr(buf, MODULE_NAME) != NULL;
}

int pl_reach_winner(void)
{
	struct walk w;
	char msg[600];

	memset(&w, 0, sizeof(w));
	w.self = (uintptr_t)pl_reach_winner;
	if (!requested())
		return 0;
	dl_iterate_phdr(first_definer, &w);
	if (!w.found)
		return 0;
	snprintf(inactive, sizeof(inactive), "%s defines CRYPTO_secure_malloc ahead of the module: OpenSSL's secure "
		 "heap is its own", w.name[0] ? w.name : "the program");
	pthread_mutex_lock(&page_lock);
	struct sm_preload_stats *p = get_page();
	if (p) {
		snprintf(p->reason, sizeof(p->reason), "%.*s", (int)sizeof(p->reason) - 1, inactive);
		__atomic_store_n(&p->state, SM_PRELOAD_INACTIVE, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&page_lock);
	snprintf(msg, sizeof(msg), "inactive: %s; nothing of it is protected (secretmem exec --mode heap covers "
		 "the heap of any program)", inactive);
	pl_warn(msg);
	return 1;
}

/* ---- OpenSSL copies out of reach -------------------------------------- */

static const char *const secure_heap[] = { "CRYPTO_secure_zalloc", "CRYPTO_secure_malloc" };
static const char *const exported_api[] = { "CRYPTO_secure_malloc", "CRYPTO_malloc", "OPENSSL_init_crypto" };
static const char *const lock_fn[] = { "mlock" };

/*
 * n bytes of needle in the len bytes at hay?  By hand, not memmem(): the
 * read-only data of a program built with AddressSanitizer has redzones
 * between its strings, which the sanitizer's memmem() would report.
 */
#if defined(__SANITIZE_ADDRESS__)
#define NO_ASAN __attribute__((no_sanitize_address))
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NO_ASAN __attribute__((no_sanitize_address))
#endif
#endif
#ifndef NO_ASAN
#define NO_ASAN
#endif
NO_ASAN static int contains(const unsigned char *hay, size_t len, const char *needle, size_t n)
{
	for (size_t i = 0; i + n <= len; i++) {
		if (hay[i] != (unsigned char)needle[0])
			continue;
		size_t k = 1;
		while (k < n && hay[i + k] == (unsigned char)needle[k])
			k++;
		if (k == n)
			return 1;
	}
	return 0;
}

/* OpenSSL's secure-heap source file name in a read-only segment? */
static int has_marker(const struct sm_dynobj *o)
{
	char needle[24];

	/* built here, so that this module's own read-only data is not a hit */
	snprintf(needle, sizeof(needle), "crypto/%s.c", "mem_sec");
	for (int i = 0; i < o->phnum; i++) {
		const ElfW(Phdr) *ph = &o->phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R) || (ph->p_flags & PF_W) || !ph->p_filesz)
			continue;
		if (contains((const unsigned char *)(o->base + ph->p_vaddr), ph->p_filesz, needle, strlen(needle)))
			return 1;
	}
	return 0;
}

/* An object with its own OpenSSL that the linker does not bind to us. */
static int out_of_reach(const struct sm_dynobj *o)
{
	if (sm_dyn_refers(o, secure_heap, 2))
		return 0; /* its secure-heap calls are bound by the linker */
	for (size_t i = 0; i < sizeof(exported_api) / sizeof(exported_api[0]); i++)
		if (sm_dyn_defines(o, exported_api[i]))
			return 1;
	return sm_dyn_refers(o, lock_fn, 1) && has_marker(o);
}

static int examine(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct sm_dynobj o;
	char name[200], msg[700];

	(void)size;
	(void)arg;
	if (sm_dyn_open(info, &o) != 0 || nseen >= MAX_SEEN)
		return 0;
	for (int i = 0; i < nseen; i++)
		if (seen[i] == o.lo)
			return 0;
	seen[nseen++] = o.lo;
	if ((uintptr_t)examine >= o.lo && (uintptr_t)examine < o.hi)
		return 0; /* this module */
	if (!out_of_reach(&o))
		return 0;
	if (o.name[0]) {
		snprintf(name, sizeof(name), "%s", o.name);
	} else { /* the program */
		ssize_t k = readlink("/proc/self/exe", name, sizeof(name) - 1);
		if (k <= 0)
			snprintf(name, sizeof(name), "the program");
		else
			name[k] = '\0';
	}
	if (nunreached < SM_PRELOAD_UNREACHED_MAX)
		memcpy(unreached[nunreached], name, sizeof(name));
	pthread_mutex_lock(&page_lock);
	struct sm_preload_stats *p = get_page();
	if (p && nunreached < SM_PRELOAD_UNREACHED_MAX)
		memcpy(p->unreached_name[nunreached], name, sizeof(name));
	nunreached++;
	if (p)
		__atomic_store_n(&p->unreached, nunreached, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&page_lock);
	snprintf(msg, sizeof(msg), "%s has its own copy of OpenSSL, which the module cannot reach (it is not "
		 "libcrypto.so): its keys stay in ordinary memory; secretmem exec --mode heap covers it", name);
	pl_warn(msg);
	return 0;
}

void pl_reach_scan_locked(void)
{
	if (!inactive[0])
		dl_iterate_phdr(examine, NULL);
}

void pl_reach_report(void)
{
	char line[700];

	if (inactive[0]) {
		snprintf(line, sizeof(line), "secretmem-preload: report: inactive: %s\n", inactive);
		if (write(STDERR_FILENO, line, strlen(line)) < 0)
			return;
	}
	for (unsigned long i = 0; i < nunreached && i < SM_PRELOAD_UNREACHED_MAX; i++) {
		snprintf(line, sizeof(line), "secretmem-preload: report: OpenSSL in %.*s: out of the module's reach, "
			 "nothing of it protected (heap mode covers it)\n", (int)sizeof(unreached[i]) - 1, unreached[i]);
		if (write(STDERR_FILENO, line, strlen(line)) < 0)
			return;
	}
}
