/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * region.c - secret regions: page-granular mappings of secret memory between
 * inaccessible guard pages, with two backends:
 *   secret    memfd_secret(2), mapped MAP_SHARED; the fd is closed at once
 *   fallback  private anonymous memory, mlock(2)ed and MADV_DONTDUMP
 *
 * Layout of a region inside its reservation (an anonymous PROT_NONE mapping,
 * which costs no memory, and no locked-memory budget either unless the
 * program called mlockall(MCL_FUTURE)), base aligned as asked:
 *
 *   base          data            data+size  base+total
 *   | guard page  | usable pages   | guard page |
 *
 * The reservation is exactly that long: under mlockall(MCL_FUTURE) the
 * kernel charges every new mapping, PROT_NONE too, against the limit.  The
 * rest of an aligned granule stays free address space (the allocator's
 * radix map checks bounds, so a foreign mapping there is never taken for
 * ours).
 *
 * Where a page's memory-lock charge could be refused at its first touch,
 * this layer faults it in before anyone touches it (os_fault_in_secret /
 * mlock), so the refusal is an error here and never a SIGBUS later: from the
 * kernel side (a read from /dev/zero), or by a user-space touch where the
 * kernel is known to charge secret memory at mmap time (sm_fault_regime).
 * In that regime the mmap took the charge, and a region made REGION_LAZY
 * (the allocator's chunks and large blocks) leaves each page to fault at its
 * first touch, as anonymous memory does: a page the program never touches
 * costs nothing.  Zeroing (region_zero, region_destroy) and fork's copy
 * then skip the pages that hold no memory yet (mincore): they read as zero.
 *
 * Every live region is on one list so that a fork can apply the policy to
 * its pages (see fork.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "internal.h"

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct region list_head = { .next = &list_head, .prev = &list_head };
static size_t list_count, list_bytes;
static size_t secret_bytes, fallback_bytes; /* under list_lock */
_Atomic size_t sm_fallback_regions;
/* The heap module's figures page (heap/heap.c): told of every change of the
 * totals, under the list lock; NULL elsewhere. */
void (*sm_region_observer)(size_t secret, size_t fallback);

static void list_add(struct region *r)
{
	pthread_mutex_lock(&list_lock);
	region_link_locked(r);
	list_count++;
	list_bytes += r->size;
	if (r->tally_count) {
		atomic_fetch_add(r->tally_count, 1);
		atomic_fetch_add(r->tally_bytes, r->size);
	}
	if (r->backend == SECRETMEM_BACKEND_FALLBACK) {
		fallback_bytes += r->size;
		atomic_fetch_add(&sm_fallback_regions, 1);
		sm_gate_update();
	} else {
		secret_bytes += r->size;
	}
	if (sm_region_observer)
		sm_region_observer(secret_bytes, fallback_bytes);
	pthread_mutex_unlock(&list_lock);
}

static void list_del(struct region *r)
{
	pthread_mutex_lock(&list_lock);
	region_unlink_locked(r);
	list_count--;
	list_bytes -= r->size;
	if (r->tally_count) {
		atomic_fetch_sub(r->tally_count, 1);
		atomic_fetch_sub(r->tally_bytes, r->size);
	}
	if (r->backend == SECRETMEM_BACKEND_FALLBACK) {
		fallback_bytes -= r->size;
		atomic_fetch_sub(&sm_fallback_regions, 1);
		sm_gate_update();
	} else {
		secret_bytes -= r->size;
	}
	if (sm_region_observer)
		sm_region_observer(secret_bytes, fallback_bytes);
	pthread_mutex_unlock(&list_lock);
}

void region_totals(size_t *count, size_t *bytes)
{
	pthread_mutex_lock(&list_lock);
	*count = list_count;
	*bytes = list_bytes;
	pthread_mutex_unlock(&list_lock);
}

void region_backend_totals(size_t *secret, size_t *fallback)
{
	pthread_mutex_lock(&list_lock);
	*secret = secret_bytes;
	*fallback = fallback_bytes;
	pthread_mutex_unlock(&list_lock);
}

/* ENOSYS and EPERM say that secret memory is refused here; anything else
 * (no fd, no memory, no child process for the call) is transient and says
 * nothing about it: never a reason to use the fallback. */
static int is_refusal(int err)
{
	return err == -ENOSYS || err == -EPERM;
}

int region_default_backend(void)
{
	int rc = secretmem_supported();

	if (!is_refusal(rc))
		return SECRETMEM_BACKEND_SECRET;
	return sm_option(SECRETMEM_OPT_REQUIRE) ? SECRETMEM_BACKEND_NONE : SECRETMEM_BACKEND_FALLBACK;
}

/* ---- failure causes ------------------------------------------------------ */

static atomic_int last_cause;
static atomic_size_t last_bytes;
static atomic_int hinted;

__thread int sm_failure_quiet __attribute__((tls_model("initial-exec")));

void sm_failure_note(int cause, size_t bytes)
{
	if (sm_failure_quiet)
		return;
	atomic_store(&last_bytes, bytes);
	atomic_store(&last_cause, cause);
}

int sm_failure_last(size_t *bytes)
{
	*bytes = atomic_load(&last_bytes);
	return atomic_load(&last_cause);
}

static char *append(char *p, const char *end, const char *s)
{
	while (*s && p < end)
		*p++ = *s++;
	return p;
}

void sm_failure_hint(void)
{
	size_t bytes, limit, locked;
	int unlimited;
	char num[24], line[400], *p = line, *end = line + sizeof(line) - 1;

	if (sm_failure_quiet || sm_failure_last(&bytes) != SECRETMEM_FAILURE_MEMLOCK || atomic_exchange(&hinted, 1))
		return;
	sm_memlock_figures(&unlimited, &limit, &locked);
	p = append(p, end, "the memory-lock limit refused ");
	p = append(p, end, sm_utoa(bytes, num));
	p = append(p, end, " bytes of secret memory (RLIMIT_MEMLOCK ");
	p = append(p, end, unlimited ? "unlimited" : sm_utoa(limit, num));
	p = append(p, end, " bytes, ");
	p = append(p, end, sm_utoa(locked, num));
	p = append(p, end, " bytes locked by this process); raise it with ulimit -l or LimitMEMLOCK=");
	*p = '\0';
	sm_warn(line, NULL, NULL);
}

void sm_failure_hint_off(void)
{
	atomic_store(&hinted, 1);
}

/* Why a mapping of bytes failed with err: a seccomp filter once the call
 * gate refuses new secret memory (callgate.c), else the memory-lock limit
 * when one applies and err is its errno or the figures show it is reached. */
static int nomem_cause(int err, size_t bytes)
{
	size_t limit, locked;
	int unlimited;

	if (sm_secret_new_is_off())
		return SECRETMEM_FAILURE_SANDBOX;
	sm_memlock_figures(&unlimited, &limit, &locked);
	if (unlimited)
		return SECRETMEM_FAILURE_NOMEM;
	if (err == -EAGAIN || err == -EFAULT || err == -EPERM || locked >= limit || bytes > limit - locked)
		return SECRETMEM_FAILURE_MEMLOCK;
	return SECRETMEM_FAILURE_NOMEM;
}

static int refusal_cause(int err)
{
	switch (err) {
	case -ENOSYS: return SECRETMEM_FAILURE_NOSYS;
	case -EPERM: return SECRETMEM_FAILURE_SANDBOX;
	case -EMFILE: case -ENFILE: return SECRETMEM_FAILURE_FDS;
	default: return SECRETMEM_FAILURE_NOMEM;
	}
}

/* Secret memory worked in this process; the warning when it stops.  The
 * program may have seen it work through secretmem_supported() alone, before
 * it installed its sandbox: that counts too. */
static atomic_int secret_worked, fallback_warned;

static void warn_fallback(int err)
{
	if (!(atomic_load(&secret_worked) || sm_probe_said_secret()) || atomic_exchange(&fallback_warned, 1))
		return;
	sm_warn("secret memory became unavailable after first use (memfd_secret: ",
		err == -ENOSYS ? "ENOSYS" : "EPERM, a seccomp filter or LSM",
		"); new memory uses the fallback backend, which root can read (SECRETMEM_REQUIRE=1 forbids it)");
}

/* Map the data part of the reservation with the secret backend. */
/* *lost: the data range is not ours any more (os_map_shared_in). */
static int map_secret(struct region *r, int *lost)
{
	/*
	 * From the file's creation to its close and the mapping's
	 * MADV_DONTFORK, under the new-file lock, which fork's prepare handler
	 * holds: a fork in another thread meanwhile would give its child the
	 * descriptor (open until the close) and the mapping, the parent's
	 * live secret pages.  Cancellation off: nothing here may leave the
	 * lock held.
	 */
	int cancel = sm_cancel_off();
	sm_newfile_lock();
	int fd = sm_memfd_secret(), rc = fd;

	if (fd >= 0) {
		rc = os_truncate(fd, r->size);
		if (!rc)
			rc = os_map_shared_in(r->data, r->size, fd, 0);
		*lost = rc == -EADDRNOTAVAIL;
		/* never in a child unless fork.c puts it there (see fork.c) */
		if (!rc && (rc = os_advise_new(r->data, r->size, MADV_DONTFORK)) != 0)
			os_map_none_fixed(r->data, r->size); /* not left for a child */
		sm_close(fd); /* the mapping keeps the file alive */
	}
	sm_newfile_unlock();
	sm_cancel_restore(cancel);
	if (fd < 0) {
		if (fd == -EACCES)
			return -EPERM; /* an LSM's refusal */
		/* a refusal or no fd is the caller's answer; anything else (no
		 * child process: EAGAIN, or an odd errno a filter returns) is
		 * a transient failure, reported as no memory */
		if (is_refusal(fd) || fd == -EMFILE || fd == -ENFILE)
			return fd;
		sm_failure_note(SECRETMEM_FAILURE_NOMEM, r->size);
		return -ENOMEM;
	}
	/* the file exists, so secret memory is available: whatever refused
	 * the size or the map (EAGAIN at the memory-lock limit on kernels with
	 * mmap-time accounting, ENOMEM, an LSM) leaves us out of memory */
	if (rc) {
		sm_failure_note(nomem_cause(rc, r->size), r->size);
		return -ENOMEM;
	}
	atomic_store_explicit(&secret_worked, 1, memory_order_relaxed);
	return 0;
}

static atomic_int dontdump_warned;

static int map_fallback(struct region *r)
{
	int rc = os_map_anon_fixed(r->data, r->size);

	if (rc) {
		sm_failure_note(SECRETMEM_FAILURE_NOMEM, r->size);
		return -ENOMEM;
	}
	/* one call per advice: OR-ing MADV_* values makes another advice.
	 * Refused (a filter on madvise), the pages would reach a core dump:
	 * not the fallback this backend promises, so no memory */
	if (os_advise(r->data, r->size, MADV_DONTDUMP)) {
		os_map_none_fixed(r->data, r->size);
		if (!atomic_exchange(&dontdump_warned, 1))
			sm_warn("the fallback backend cannot keep memory out of core dumps (madvise(MADV_DONTDUMP) "
				"refused): no fallback memory is made", NULL, NULL);
		sm_failure_note(SECRETMEM_FAILURE_SANDBOX, r->size);
		return -ENOMEM;
	}
	return 0;
}

int region_fault_to(struct region *r, size_t upto)
{
	size_t ps = os_page_size();

	upto = (upto + ps - 1) & ~(ps - 1);
	if (upto > r->size)
		return -EINVAL;
	if (upto <= r->faulted)
		return 0;
	unsigned char *from = r->data + r->faulted;
	size_t len = upto - r->faulted;
	int rc;

	if (r->backend == SECRETMEM_BACKEND_SECRET)
		rc = os_fault_in_secret(from, len);
	else
		rc = os_lock(from, len); /* mlock populates */
	if (rc) {
		/* EFAULT (refused charge), EAGAIN/ENOMEM/EPERM (mlock limit) */
		sm_failure_note(nomem_cause(rc, len), len);
		return -ENOMEM;
	}
	r->faulted = upto;
	return 0;
}

int region_ready_to(struct region *r, size_t upto)
{
	size_t ps = os_page_size();

	if (!r->lazy)
		return region_fault_to(r, upto);
	upto = (upto + ps - 1) & ~(ps - 1);
	if (upto > r->size)
		return -EINVAL;
	if (upto > r->faulted)
		r->faulted = upto;
	return 0;
}

static void zero_piece(void *arg, unsigned char *p, size_t n)
{
	(void)arg;
	explicit_bzero(p, n);
}

void region_zero(const struct region *r, void *p, size_t len)
{
	if (r->lazy)
		os_each_resident(p, len, zero_piece, NULL);
	else
		explicit_bzero(p, len);
}

int region_create(struct region *r, size_t size, size_t align, int fill, int require_secret,
		  const struct region_tally *tally)
{
	size_t ps = os_page_size();
	int rc;

	memset(r, 0, sizeof(*r));
	if (size == 0 || size > SIZE_MAX / 2)
		return -EINVAL;
	if (sm_secret_new_is_off()) {
		/* a filter would stop the calls below: none is made */
		sm_failure_note(SECRETMEM_FAILURE_SANDBOX, size);
		return -EPERM;
	}
	size = (size + ps - 1) & ~(ps - 1);
	/* more than the machine has can only end in the OOM killer (root is
	 * exempt from the memory-lock limit): refuse it here */
	if (size > os_physical_memory()) {
		sm_failure_note(SECRETMEM_FAILURE_NOMEM, size);
		return -ENOMEM;
	}
	if (align < ps)
		align = ps;
	size_t total = size + 2 * ps;

	int backend = SECRETMEM_BACKEND_SECRET;
	int require = require_secret || sm_option(SECRETMEM_OPT_REQUIRE);
	/* 0 or a cached refusal: transient failures are never cached, and
	 * map_secret classifies those of this creation's own call */
	int probe = sm_probe_cached();
	if (probe) {
		sm_failure_note(refusal_cause(probe), size);
		if (require)
			return probe;
		warn_fallback(probe);
		backend = SECRETMEM_BACKEND_FALLBACK;
	}

	void *base;
	rc = os_reserve(total, align, &base);
	if (rc) {
		/* EAGAIN: mlockall(MCL_FUTURE) made the reservation count
		 * against the memory-lock limit, and the limit refused it */
		sm_failure_note(rc == -EAGAIN ? SECRETMEM_FAILURE_MEMLOCK : SECRETMEM_FAILURE_NOMEM, size);
		return -ENOMEM; /* no address space, or a refused mmap */
	}
	r->base = (uintptr_t)base;
	r->total = total;
	r->size = size;
	r->data = (unsigned char *)base + total - ps - size;
	r->access = SECRETMEM_READWRITE;

	int lost = 0;
	if (backend == SECRETMEM_BACKEND_SECRET) {
		rc = map_secret(r, &lost);
		if (rc && rc != -ENOMEM)
			sm_failure_note(refusal_cause(rc), size);
		if (is_refusal(rc) && !require) {
			/* the first creation's own call, or a filter installed
			 * after the probe */
			warn_fallback(rc);
			backend = SECRETMEM_BACKEND_FALLBACK;
			rc = 0;
		}
	}
	if (!rc && backend == SECRETMEM_BACKEND_FALLBACK)
		rc = map_fallback(r);
	r->backend = backend;
	r->lazy = fill == REGION_LAZY && backend == SECRETMEM_BACKEND_SECRET && sm_fault_regime() == SM_REGIME_MMAP;
	if (!rc && fill == REGION_NOW)
		rc = region_fault_to(r, size);
	if (rc) {
		if (lost) { /* only the guard pages are still ours */
			os_unmap(base, (size_t)(r->data - (unsigned char *)base));
			os_unmap(r->data + size, (size_t)((unsigned char *)base + total - (r->data + size)));
		} else {
			os_unmap(base, total);
		}
		memset(r, 0, sizeof(*r));
		return rc;
	}
	if (tally) {
		r->tally_count = tally->count;
		r->tally_bytes = tally->bytes;
	}
	list_add(r);
	return 0;
}

int region_protect(struct region *r, int access)
{
	static const int prot[] = { PROT_NONE, PROT_READ, PROT_READ | PROT_WRITE };

	if (access < SECRETMEM_NOACCESS || access > SECRETMEM_READWRITE)
		return -EINVAL;
	/* under the list lock, which fork's prepare handler holds while it
	 * copies: the pages' protection and r->access change together, never
	 * under the copy's feet */
	pthread_mutex_lock(&list_lock);
	int rc = -EFAULT;
	if (!r->dropped) {
		rc = os_protect(r->data, r->size, prot[access]);
		if (!rc)
			r->access = access;
	}
	pthread_mutex_unlock(&list_lock);
	return rc;
}

int region_destroy(struct region *r)
{
	int rc = 0;

	if (!r->dropped && r->faulted) {
		if (r->access != SECRETMEM_READWRITE)
			rc = os_protect(r->data, r->faulted, PROT_READ | PROT_WRITE);
		/* if the kernel refused write access, the secret backend's pages
		 * are still cleared by the kernel when the file is released */
		if (!rc)
			region_zero(r, r->data, r->faulted);
	}
	/* unlisted once zeroed: a fallback region's private pages reach a
	 * fork child made before, which finds it in its list (and drops or
	 * locks it) */
	list_del(r);
	int urc = os_unmap((void *)r->base, r->total);
	memset(r, 0, sizeof(*r));
	return rc ? rc : urc;
}

/* ---- fork (the policies live in fork.c) -------------------------------- */

void region_fork_lock(void)
{
	pthread_mutex_lock(&list_lock);
}

void region_fork_unlock(void)
{
	pthread_mutex_unlock(&list_lock);
}

void region_fork_reinit(void)
{
	pthread_mutex_init(&list_lock, NULL);
}

struct region *region_fork_next(struct region *r)
{
	r = r ? r->next : list_head.next;
	return r == &list_head ? NULL : r;
}

void region_link_locked(struct region *r)
{
	r->next = list_head.next;
	r->prev = &list_head;
	list_head.next->prev = r;
	list_head.next = r;
}

void region_unlink_locked(struct region *r)
{
	r->prev->next = r->next;
	r->next->prev = r->prev;
	r->next = r->prev = NULL;
}
