/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * adopt.c - adopted ranges: memory a program locked itself (mlock, mlock2,
 * mmap with MAP_LOCKED), made secret memory at the same address with its
 * contents kept, and the program's later calls on it kept true (heap mode:
 * heap/mmcalls.c calls in here; see secretmem-heap(7), "Locked memory").
 *
 * What is adopted: private anonymous readable memory that is not the stack
 * or the signal stack the caller runs on, not the brk heap, not executable.  Each adoption makes one new
 * secret memory file for a contiguous run of such mappings, copies the run
 * into it, and moves it over the run with one mremap (the old pages go
 * with it), then gives each page back the protection it had.  Anything else
 * in the range is locked as the kernel would (file mappings, shared memory,
 * stacks); secret memory in it (heap blocks, adopted ranges) is left as it
 * is, since the kernel keeps it locked already.
 *
 * Each adopted range is a struct region (not counted in the library's
 * totals) on the region list, so fork.c gives a child its copy as for the
 * heap; its per-page protections are recorded here (the program's mprotect
 * passes through sm_adopt_protected), read during fork's copy and set
 * again in the child.  Records change only under the region list lock,
 * which fork's prepare handler holds; their storage is this file's own
 * anonymous memory, never malloc (the caller may be inside the allocator's
 * path) and never the allocator's metadata (its lock is taken before the
 * list lock by fork).
 *
 * A record outlives its mapping when something unmaps the range without
 * passing through the module (glibc's own munmap of a block it freed, a
 * raw system call), and its protections go stale when the kernel changes
 * them alone (a raw mprotect or pkey_mprotect, an mprotect that failed
 * half-way): fork's prepare handler checks every record against
 * /proc/self/maps first, forgets what is no longer secret memory and takes
 * the kernel's protections.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "internal.h"

#define INLINE_PAGES 64 /* protections kept in the record up to 256 KiB */
#define MAX_SEGS 128    /* mappings one call may cover */
#define POOL_BYTES ((size_t)64 << 10)
/* A page's byte in a record: its PROT_* bits, and whether the program holds
 * it locked (mlock'ed, not munlock'ed since: MADV_DONTNEED is then EINVAL,
 * as the kernel says for locked memory). */
#define PAGE_LOCKED 0x80
#define PROT_OF(b) ((b) & (PROT_READ | PROT_WRITE | PROT_EXEC))

struct adopted {
	struct region reg;      /* data/size: the range; prot: per page */
	struct adopted *next;   /* records, by address; or the free list */
	const char *by;         /* the object that locked it (for --report) */
	unsigned char *ext;     /* mapped protection array, or NULL */
	size_t ext_len;
	unsigned char inl[INLINE_PAGES];
};

static struct adopted *records; /* by address, under the list lock */
static struct adopted *pool_free;
static size_t rec_count, rec_bytes;
_Atomic size_t sm_adopt_count;
static char maps_buf[8192]; /* under the list lock */

/* ---- records --------------------------------------------------------------- */

static struct adopted *rec_new(void)
{
	if (!pool_free) {
		void *blk;
		if (os_map_anon(POOL_BYTES, &blk))
			return NULL;
		struct adopted *v = blk;
		for (size_t i = 0; i < POOL_BYTES / sizeof(*v); i++) {
			v[i].next = pool_free;
			pool_free = &v[i];
		}
	}
	struct adopted *a = pool_free;
	pool_free = a->next;
	memset(a, 0, sizeof(*a));
	return a;
}

static void rec_put(struct adopted *a)
{
	if (a->ext)
		os_unmap(a->ext, a->ext_len);
	a->ext = NULL;
	a->next = pool_free;
	pool_free = a;
}

static size_t page_count(size_t len)
{
	return len / os_page_size();
}

/* Room for the protection of npages pages; 0 or -ENOMEM. */
static int rec_prot(struct adopted *a, size_t npages)
{
	if (npages <= INLINE_PAGES) {
		a->reg.prot = a->inl;
		return 0;
	}
	size_t ps = os_page_size(), len = (npages + ps - 1) & ~(ps - 1);
	void *p;
	if (os_map_anon(len, &p))
		return -ENOMEM;
	a->ext = p;
	a->ext_len = len;
	a->reg.prot = p;
	return 0;
}

static void rec_link(struct adopted *a)
{
	struct adopted **pp = &records;

	while (*pp && (*pp)->reg.data < a->reg.data)
		pp = &(*pp)->next;
	a->next = *pp;
	*pp = a;
	region_link_locked(&a->reg);
	rec_count++;
	rec_bytes += a->reg.size;
	atomic_store(&sm_adopt_count, rec_count);
}

static void rec_unlink(struct adopted *a)
{
	struct adopted **pp = &records;

	while (*pp != a)
		pp = &(*pp)->next;
	*pp = a->next;
	region_unlink_locked(&a->reg);
	rec_count--;
	rec_bytes -= a->reg.size;
	atomic_store(&sm_adopt_count, rec_count);
}

/* The fork advice of a record, for rec_add. */
#define FORK_WIPE 1
#define FORK_DONT 2
static int fork_bits(const struct adopted *a)
{
	return (a->reg.wipe ? FORK_WIPE : 0) | (a->reg.dontfork ? FORK_DONT : 0);
}

/* Point a record at [lo, lo + its size). */
static void rec_place(struct adopted *a, uintptr_t lo)
{
	a->reg.base = lo;
	a->reg.data = (unsigned char *)lo;
}

/* A record for [lo, lo+len), not yet on the list (rec_link; rec_put to
 * drop it): made before the memory changes, so that no memory can become
 * secret without its record.  prot: each page's byte, or NULL for
 * PROT_READ|PROT_WRITE, locked, throughout (the caller may fill it in
 * later); fork: FORK_* bits.  NULL when there is no memory for it. */
static struct adopted *rec_make(uintptr_t lo, size_t len, const unsigned char *prot, int fork, const char *by)
{
	struct adopted *a = rec_new();
	size_t n = page_count(len);

	if (!a)
		return NULL;
	if (rec_prot(a, n)) {
		rec_put(a);
		return NULL;
	}
	if (prot)
		memcpy(a->reg.prot, prot, n);
	else
		memset(a->reg.prot, PROT_READ | PROT_WRITE | PAGE_LOCKED, n);
	a->reg.base = lo;
	a->reg.total = len;
	a->reg.data = (unsigned char *)lo;
	a->reg.size = len;
	a->reg.faulted = len;
	a->reg.backend = SECRETMEM_BACKEND_SECRET;
	a->reg.access = SECRETMEM_READWRITE;
	a->reg.adopted = 1;
	a->reg.wipe = (fork & FORK_WIPE) != 0;
	a->reg.dontfork = (fork & FORK_DONT) != 0;
	a->by = by;
	return a;
}

static int rec_add(uintptr_t lo, size_t len, const unsigned char *prot, int fork, const char *by)
{
	struct adopted *a = rec_make(lo, len, prot, fork, by);

	if (!a)
		return -ENOMEM;
	rec_link(a);
	return 0;
}

static uintptr_t rec_lo(const struct adopted *a)
{
	return (uintptr_t)a->reg.data;
}

static uintptr_t rec_hi(const struct adopted *a)
{
	return (uintptr_t)a->reg.data + a->reg.size;
}

/* Forget [lo, hi) of every record (no longer secret memory of ours, or
 * about to be replaced).  0, or -ENOMEM when the record of a part above hi
 * could not be made: that part is then forgotten too (never a record of
 * memory that is not secret: a child lacks it rather than fork failing). */
static int carve(uintptr_t lo, uintptr_t hi)
{
	size_t ps = os_page_size();
	int rc = 0;

	for (struct adopted *a = records, *next; a; a = next) {
		next = a->next;
		uintptr_t alo = rec_lo(a), ahi = rec_hi(a);
		if (ahi <= lo || alo >= hi)
			continue;
		rec_unlink(a);
		/* what is left below lo and above hi */
		if (hi < ahi) {
			size_t k = (hi - alo) / ps;
			if (rec_add(hi, ahi - hi, a->reg.prot + k, fork_bits(a), a->by))
				rc = -ENOMEM;
		}
		if (alo < lo) {
			a->reg.size = a->reg.total = lo - alo;
			a->reg.faulted = a->reg.size;
			rec_link(a);
		} else {
			rec_put(a);
		}
		if (hi < ahi)
			next = NULL; /* records are by address: nothing further */
	}
	return rc;
}

/* The record's byte of page p (NULL: not recorded). */
static unsigned char *page_of(uintptr_t p)
{
	for (struct adopted *a = records; a && rec_lo(a) <= p; a = a->next)
		if (p < rec_hi(a))
			return &a->reg.prot[(p - rec_lo(a)) / os_page_size()];
	return NULL;
}

/* The protection the record of page p holds (-1: not recorded). */
static int prot_of(uintptr_t p)
{
	unsigned char *b = page_of(p);

	return b ? PROT_OF(*b) : -1;
}

/* The program locked (on) or unlocked pages [lo, hi) of adopted ranges. */
static void set_locked(uintptr_t lo, uintptr_t hi, int on)
{
	for (uintptr_t p = lo; p < hi; p += os_page_size()) {
		unsigned char *b = page_of(p);
		if (b)
			*b = (unsigned char)(on ? *b | PAGE_LOCKED : *b & ~PAGE_LOCKED);
	}
}

static int any_locked(uintptr_t lo, uintptr_t hi)
{
	for (uintptr_t p = lo; p < hi; p += os_page_size()) {
		unsigned char *b = page_of(p);
		if (b && (*b & PAGE_LOCKED))
			return 1;
	}
	return 0;
}

/* Whether records cover all of [lo, hi), without a hole. */
static int holding_all(uintptr_t lo, uintptr_t hi)
{
	uintptr_t at = lo;

	for (struct adopted *a = records; a && rec_lo(a) <= at && at < hi; a = a->next)
		if (rec_hi(a) > at)
			at = rec_hi(a);
	return at >= hi && lo < hi;
}

/* ---- what the range is ------------------------------------------------------- */

/* SEG_SECRET: secret memory of this library (heap, adopted ranges);
 * another memfd_secret mapping of the program's own is SEG_OTHER. */
enum { SEG_ANON, SEG_SECRET, SEG_OTHER };

struct seg {
	uintptr_t lo, hi;
	int kind, prot;
};

struct classify {
	uintptr_t lo, hi, next, sp, alt_lo, alt_hi;
	struct seg *v;
	int n, gap, full;
};

static int classify_line(const struct sm_mapline *m, void *arg)
{
	struct classify *c = arg;

	if (m->hi <= c->lo)
		return 0;
	if (m->lo >= c->hi)
		return 1;
	if (m->lo > c->next)
		c->gap = 1;
	if (c->n == MAX_SEGS) {
		c->full = 1;
		return 1;
	}
	struct seg *s = &c->v[c->n++];
	s->lo = m->lo > c->lo ? m->lo : c->lo;
	s->hi = m->hi < c->hi ? m->hi : c->hi;
	s->prot = m->prot;
	if (sm_mapline_secret(m))
		s->kind = page_of(s->lo) || sm_in_our_memory((void *)s->lo) ? SEG_SECRET : SEG_OTHER;
	else if (!m->shared && m->inode == 0 && (m->path[0] == '\0' || strncmp(m->path, "[anon:", 6) == 0) &&
		 (m->prot & PROT_READ) && !(m->prot & PROT_EXEC) && !(c->sp >= m->lo && c->sp < m->hi) &&
		 !(c->alt_lo < m->hi && m->lo < c->alt_hi))
		s->kind = SEG_ANON;
	else
		s->kind = SEG_OTHER; /* files, shared memory, stacks, [heap], PROT_NONE */
	c->next = m->hi;
	return 0;
}

/* The mapped parts of [lo, hi) into v: their count, at most MAX_SEGS (past
 * that the caller goes on from the last one's end), and in *holes whether
 * some part up to there is not mapped; or the error of reading
 * /proc/self/maps. */
static int classify(uintptr_t lo, uintptr_t hi, struct seg *v, int *holes)
{
	struct classify c = { .lo = lo, .hi = hi, .next = lo, .v = v };
	volatile char here = 0;

	stack_t alt;

	c.sp = (uintptr_t)&here;
	/* this thread's signal stack too: a handler on it may fork */
	if (syscall(SYS_sigaltstack, NULL, &alt) == 0 && !(alt.ss_flags & SS_DISABLE)) {
		c.alt_lo = (uintptr_t)alt.ss_sp;
		c.alt_hi = c.alt_lo + alt.ss_size;
	}
	int rc = sm_maps_walk(maps_buf, sizeof(maps_buf), classify_line, &c);
	if (rc < 0)
		return rc;
	*holes = c.gap || (!c.full && c.next < hi);
	return c.n;
}

/* ---- adoption ------------------------------------------------------------------ */

/* Give [lo, hi) of v[from..to) (their protections) to the new mapping. */
static void set_prots(const struct seg *v, int from, int to)
{
	for (int i = from; i < to; i++)
		if (v[i].prot != (PROT_READ | PROT_WRITE))
			os_protect((void *)v[i].lo, v[i].hi - v[i].lo, v[i].prot);
}

/*
 * Make the anonymous mappings v[from..to) (contiguous) secret memory.
 * fresh: they were just mapped (all zero): nothing to copy.  0 or -errno
 * (-ENOSYS/-EPERM: no secret memory here; -EAGAIN/-ENOMEM: the memory-lock
 * limit or memory; -EMFILE).  On failure the range is as it was.
 */
static int adopt_run(const struct seg *v, int from, int to, int fresh, const char *by)
{
	uintptr_t lo = v[from].lo, hi = v[to - 1].hi;
	size_t len = hi - lo, ps = os_page_size();
	void *tmp;
	int rc;

	/* the record first: without memory for it nothing is done */
	struct adopted *a = rec_make(lo, len, NULL, 0, by);
	if (!a)
		return -ENOMEM;
	for (int i = from; i < to; i++)
		memset(a->reg.prot + (v[i].lo - lo) / ps, v[i].prot | PAGE_LOCKED, (v[i].hi - v[i].lo) / ps);

	int fd = sm_memfd_secret();
	if (fd < 0) {
		rc = fd == -EACCES ? -EPERM : fd;
		goto out;
	}
	rc = os_truncate(fd, len);
	if (!rc)
		rc = os_map_shared(len, fd, &tmp);
	sm_close(fd);
	if (rc)
		goto out;
	/* no child of a fork from now on inherits it (fork's handlers wait
	 * for the list lock; a raw fork's child drops it) */
	rc = os_advise_new(tmp, len, MADV_DONTFORK);
	if (!rc)
		rc = os_fault_in_secret(tmp, len);
	if (rc) {
		os_unmap(tmp, len);
		goto out;
	}
	/* (the program's munmap of the range waits: sm_adopt_hold) */
	for (int i = from; i < to && !fresh; i++) {
		size_t off = v[i].lo - lo, l = v[i].hi - v[i].lo;
		sm_copy((unsigned char *)tmp + off, (const void *)v[i].lo, l);
	}
	rc = os_remap_fixed(tmp, len, (void *)lo);
	if (rc) {
		explicit_bzero(tmp, len);
		os_unmap(tmp, len);
		goto out;
	}
	set_prots(v, from, to);
	carve(lo, hi); /* stale records of memory that was not ours any more */
	rec_link(a);
	return 0;
out:
	rec_put(a);
	return rc;
}

static uintptr_t page_down(uintptr_t a)
{
	return a & ~(uintptr_t)(os_page_size() - 1);
}

static int round_range(const void *addr, size_t len, uintptr_t *lo, uintptr_t *hi)
{
	uintptr_t a = (uintptr_t)addr, ps = os_page_size();

	if (a > UINTPTR_MAX - ps || len > UINTPTR_MAX - ps - a)
		return -ENOMEM;
	*lo = page_down(a);
	*hi = (a + len + ps - 1) & ~(ps - 1);
	return 0;
}

static int sys_lock(uintptr_t lo, uintptr_t hi, int flags)
{
	return os_pass_mlock((const void *)lo, hi - lo, flags);
}

static _Atomic int last_refusal;

/* mlock/munlock from a failure to read the maps on (each_mapping) */
#define NO_MAPS 1

/*
 * The mappings of [lo, hi) in turn, MAX_SEGS at a time, as the kernel's
 * mlock and munlock go: fn(v, i, j, arg) on each mapping, or on each run
 * v[i..j) of anonymous ones together; the first error ends it; so does an
 * unmapped page, with -ENOMEM, after the mappings before it.  NO_MAPS, with
 * *at where it stopped, when the maps could not be read (the open-file
 * limit).
 */
static int each_mapping(uintptr_t lo, uintptr_t hi, int (*fn)(const struct seg *, int, int, void *), void *arg,
			uintptr_t *at)
{
	struct seg v[MAX_SEGS];

	for (*at = lo; *at < hi;) {
		int holes, n = classify(*at, hi, v, &holes); /* (the holes found below) */
		if (n < 0)
			return NO_MAPS;
		for (int i = 0, j; i < n; i = j) {
			if (v[i].lo != (i ? v[i - 1].hi : *at))
				return -ENOMEM;
			j = i + 1;
			while (v[i].kind == SEG_ANON && j < n && v[j].kind == SEG_ANON && v[j].lo == v[j - 1].hi)
				j++;
			int rc = fn(v, i, j, arg);
			if (rc)
				return rc;
		}
		if (n == 0)
			return -ENOMEM;
		*at = v[n - 1].hi;
		if (n < MAX_SEGS && *at < hi)
			return -ENOMEM;
	}
	return 0;
}

struct lock_arg {
	int flags, fresh;
	const char *by;
	int err; /* the kernel's ENOMEM for a PROT_NONE part */
};

static int lock_part(const struct seg *v, int i, int j, void *arg)
{
	struct lock_arg *l = arg;

	if (v[i].kind == SEG_SECRET) { /* locked by the kernel already */
		set_locked(v[i].lo, v[i].hi, 1);
		return 0;
	}
	if (v[i].kind == SEG_ANON) {
		int arc = adopt_run(v, i, j, l->fresh, l->by);
		if (arc == 0)
			return 0;
		atomic_store(&last_refusal, arc);
	}
	/* PROT_NONE: the kernel locks it but cannot fault it in, and its
	 * ENOMEM for that comes after it locked every mapping of the range.
	 * Locked here without the fault-in, so that an ENOMEM of the limit
	 * (nothing locked) still ends the walk, which then goes on as the
	 * kernel's does; the kernel's ENOMEM is the answer at the end */
	if (!(v[i].prot & (PROT_READ | PROT_WRITE | PROT_EXEC))) {
		int rc = sys_lock(v[i].lo, v[j - 1].hi, l->flags | MLOCK_ONFAULT);
		if (rc == 0 && !(l->flags & MLOCK_ONFAULT) && !l->err)
			l->err = -ENOMEM;
		return rc;
	}
	/* not ours to make secret, or it could not be: the kernel's lock */
	return sys_lock(v[i].lo, v[j - 1].hi, l->flags);
}

int sm_adopt_lock(const void *addr, size_t len, int flags, int fresh, const char *by)
{
	struct lock_arg l = { flags, fresh, by, 0 };
	uintptr_t lo, hi, at;
	int saved = errno;

	/* what the kernel refuses (an overflow, unknown flags) or does not
	 * need (nothing to lock) goes to it as it is */
	if (round_range(addr, len, &lo, &hi) || lo == hi || (flags & ~MLOCK_ONFAULT)) {
		return os_pass_mlock(addr, len, flags);
	}
	int cancel = sm_cancel_off();
	region_fork_lock();
	/* the maps, even where records cover the range: a record may be
	 * stale (a raw munmap, then a new mapping at its place) */
	int rc = each_mapping(lo, hi, lock_part, &l, &at);
	if (rc == NO_MAPS && holding_all(at, hi)) {
		/* no way to look: the records say it is adopted already, and
		 * the kernel would refuse it */
		set_locked(at, hi, 1);
		rc = 0;
	} else if (rc == NO_MAPS) {
		/* no way to tell what it is: the kernel's lock (and a warning) */
		rc = sys_lock(at, hi, flags);
		atomic_store(&last_refusal, -EMFILE);
	}
	if (rc == 0)
		rc = l.err;
	region_fork_unlock();
	sm_cancel_restore(cancel);
	errno = saved;
	return rc;
}

int sm_adopt_last_refusal(void)
{
	return atomic_exchange(&last_refusal, 0);
}

static int unlock_part(const struct seg *v, int i, int j, void *arg)
{
	(void)arg;
	if (v[i].kind == SEG_SECRET) { /* stays secret, and locked */
		set_locked(v[i].lo, v[i].hi, 0);
		return 0;
	}
	return os_pass_munlock((const void *)v[i].lo, v[j - 1].hi - v[i].lo);
}

int sm_adopt_unlock(const void *addr, size_t len)
{
	uintptr_t lo, hi, at;
	int saved = errno;

	if (round_range(addr, len, &lo, &hi) || lo == hi) {
		return os_pass_munlock(addr, len);
	}
	int cancel = sm_cancel_off();
	region_fork_lock();
	int rc = each_mapping(lo, hi, unlock_part, NULL, &at); /* records may be stale: see sm_adopt_lock */
	if (rc == NO_MAPS && holding_all(at, hi)) {
		set_locked(at, hi, 0); /* no way to look: the records */
		rc = 0;
	} else if (rc == NO_MAPS) {
		rc = os_pass_munlock((const void *)at, hi - at);
	}
	region_fork_unlock();
	sm_cancel_restore(cancel);
	errno = saved;
	return rc;
}

/* ---- the program's later calls -------------------------------------------------- */

static int touches(uintptr_t lo, uintptr_t hi);

static int any(void)
{
	return atomic_load_explicit(&sm_adopt_count, memory_order_relaxed) != 0;
}

int sm_adopt_hold(void)
{
	/* always, even before the first adoption: an munmap of a range that
	 * another thread's mlock is copying waits for the copy */
	int cancel = sm_cancel_off();
	region_fork_lock();
	return cancel | 2;
}

void sm_adopt_unhold(int held)
{
	if (!held)
		return;
	region_fork_unlock();
	sm_cancel_restore(held & 1);
}

void sm_adopt_unmapped(const void *addr, size_t len)
{
	uintptr_t lo, hi;

	if (!any() || round_range(addr, len, &lo, &hi))
		return;
	carve(lo, hi);
}

void sm_adopt_protected(const void *addr, size_t len, int prot)
{
	uintptr_t lo, hi;
	size_t ps = os_page_size();

	if (!any() || round_range(addr, len, &lo, &hi))
		return;
	for (struct adopted *a = records; a && rec_lo(a) < hi; a = a->next) {
		uintptr_t s = rec_lo(a) > lo ? rec_lo(a) : lo, e = rec_hi(a) < hi ? rec_hi(a) : hi;
		for (uintptr_t p = s; p < e; p += ps) {
			unsigned char *b = &a->reg.prot[(p - rec_lo(a)) / ps];
			*b = (unsigned char)((*b & PAGE_LOCKED) | PROT_OF(prot));
		}
	}
}

/* Advice that only tunes what the kernel does: ignored where the kernel
 * refuses it for secret memory. */
static int is_hint(int advice)
{
	switch (advice) {
	case MADV_NORMAL: case MADV_RANDOM: case MADV_SEQUENTIAL: case MADV_WILLNEED:
	case MADV_HUGEPAGE: case MADV_NOHUGEPAGE: case MADV_MERGEABLE: case MADV_UNMERGEABLE:
	case MADV_DONTDUMP: case MADV_DODUMP:
#ifdef MADV_COLD
	case MADV_COLD: case MADV_PAGEOUT:
#endif
#ifdef MADV_POPULATE_READ
	case MADV_POPULATE_READ: case MADV_POPULATE_WRITE:
#endif
		return 1;
	default:
		return 0;
	}
}

/* Secret pages [lo, hi) read as zero from now on, as anonymous memory does
 * after MADV_DONTNEED or MADV_FREE. */
static int zero_pages(uintptr_t lo, uintptr_t hi)
{
	size_t ps = os_page_size();

	for (uintptr_t p = lo; p < hi; p += ps) {
		int prot = prot_of(p);
		if (prot >= 0 && prot != (PROT_READ | PROT_WRITE) && os_protect((void *)p, ps, PROT_READ | PROT_WRITE))
			return -EFAULT;
		if (prot < 0 && !sm_in_our_memory((void *)p))
			return -EINVAL; /* secret memory that is not the library's */
		explicit_bzero((void *)p, ps);
		if (prot >= 0 && prot != (PROT_READ | PROT_WRITE))
			os_protect((void *)p, ps, prot);
	}
	return 0;
}

/* The fork advice of the records [lo, hi) touches (per record, not per
 * page). */
static void set_fork_advice(uintptr_t lo, uintptr_t hi, int advice)
{
	for (struct adopted *a = records; a && rec_lo(a) < hi; a = a->next) {
		if (rec_hi(a) <= lo)
			continue;
		if (advice == MADV_WIPEONFORK || advice == MADV_KEEPONFORK)
			a->reg.wipe = advice == MADV_WIPEONFORK;
		else
			a->reg.dontfork = advice == MADV_DONTFORK;
	}
}

static int fork_advice(int advice)
{
	return advice == MADV_WIPEONFORK || advice == MADV_KEEPONFORK || advice == MADV_DONTFORK ||
	       advice == MADV_DOFORK;
}

#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24
#endif

/* advice on v[i], secret memory of ours */
static int advise_secret(const struct seg *s, int advice)
{
	switch (advice) {
	case MADV_DONTNEED: case MADV_FREE:
		/* the kernel refuses both for locked memory */
		return any_locked(s->lo, s->hi) ? -EINVAL : zero_pages(s->lo, s->hi);
	case MADV_DONTNEED_LOCKED:
		return zero_pages(s->lo, s->hi);
	case MADV_WIPEONFORK: case MADV_KEEPONFORK: case MADV_DONTFORK: case MADV_DOFORK:
		/* never to the kernel: its DOFORK would share the pages */
		set_fork_advice(s->lo, s->hi, advice);
		return 0;
#ifdef MADV_COLD
	case MADV_COLD: case MADV_PAGEOUT:
		/* the kernel's answer for locked private memory, else done */
		return any_locked(s->lo, s->hi) ? -EINVAL : 0;
#endif
	default: {
		int rc = os_pass_madvise((void *)s->lo, s->hi - s->lo, advice);
		return rc == -EINVAL && is_hint(advice) ? 0 : rc;
	}
	}
}

/* Whether [lo, hi) may hold secret memory of ours: a record, or a granule
 * of the heap's. */
static int ours_in(uintptr_t lo, uintptr_t hi)
{
	return touches(lo, hi) || sm_radix_any(lo, hi);
}

int sm_adopt_advise(void *addr, size_t len, int advice)
{
	struct seg v[MAX_SEGS];
	uintptr_t lo, hi;
	int saved = errno, rc = round_range(addr, len, &lo, &hi), holes = 0;

	/* nothing of ours is there: the kernel's answer (the fork advice is
	 * always looked at: the kernel's DOFORK would share secret pages) */
	if (rc || ((uintptr_t)addr & (os_page_size() - 1)) || lo == hi ||
	    (!fork_advice(advice) && !any() && !sm_in_our_memory(addr) && !sm_in_our_memory((void *)(hi - 1))))
		return os_pass_madvise(addr, len, advice);
	/* a hint the kernel takes for the whole range needs no more */
	if (is_hint(advice) && os_pass_madvise(addr, len, advice) == 0)
		return 0;
	int cancel = sm_cancel_off();
	region_fork_lock();
	/* as the kernel does: each mapping in turn, the first error ends it;
	 * a range with unmapped parts ends with -ENOMEM */
	for (uintptr_t at = lo; at < hi && !rc;) {
		int h, n = classify(at, hi, v, &h);
		if (n < 0) {
			/* no way to look (the open-file limit): never the
			 * kernel's fork advice where secret memory of ours may
			 * be, whose DOFORK would share it with a child */
			rc = fork_advice(advice) && ours_in(at, hi) ? -EAGAIN
								    : os_pass_madvise((void *)at, hi - at, advice);
			break;
		}
		holes |= h;
		for (int i = 0; i < n && !rc; i++)
			rc = v[i].kind == SEG_SECRET ? advise_secret(&v[i], advice)
						     : os_pass_madvise((void *)v[i].lo, v[i].hi - v[i].lo, advice);
		at = n == MAX_SEGS ? v[n - 1].hi : hi;
	}
	if (!rc && holes)
		rc = -ENOMEM;
	region_fork_unlock();
	sm_cancel_restore(cancel);
	errno = saved;
	return rc;
}

/* The record holding all of [lo, hi), or NULL. */
static struct adopted *holding(uintptr_t lo, uintptr_t hi)
{
	for (struct adopted *a = records; a && rec_lo(a) <= lo; a = a->next)
		if (hi <= rec_hi(a))
			return a;
	return NULL;
}

static int touches(uintptr_t lo, uintptr_t hi)
{
	for (struct adopted *a = records; a && rec_lo(a) < hi; a = a->next)
		if (rec_hi(a) > lo)
			return 1;
	return 0;
}

/* Whether records cover [lo, hi) as the kernel's one mapping would: every
 * page with the first one's protection and lock, every record with its
 * fork advice (neighbours locked alike, which the kernel merges). */
static int one_mapping(uintptr_t lo, uintptr_t hi)
{
	size_t ps = os_page_size();

	if (!holding_all(lo, hi))
		return 0;
	int page = *page_of(lo), fork = fork_bits(holding(lo, lo + ps));
	for (uintptr_t p = lo; p < hi; p += ps)
		if (*page_of(p) != page)
			return 0;
	for (struct adopted *b = records; b && rec_lo(b) < hi; b = b->next)
		if (rec_hi(b) > lo && fork_bits(b) != fork)
			return 0;
	return 1;
}

/*
 * mremap of an adopted range that grows it, or keeps the old range
 * (MREMAP_DONTUNMAP): a new secret mapping of new_len at the destination,
 * the old bytes copied in, the rest zero, all with the old range's
 * protection (as the kernel extends a mapping).  Neighbouring records go
 * as one when alike, as the kernel's merged mapping would.  For the time of
 * the copy both sizes are charged against the memory-lock limit.
 */
static int grow(struct adopted *a, uintptr_t lo, size_t old_len, size_t new_len, int flags, uintptr_t to,
		uintptr_t *out)
{
	size_t ps = os_page_size();
	int page = *page_of(lo), prot = PROT_OF(page), wipe = fork_bits(a);
	const char *by = a->by;
	uintptr_t dest;
	void *tmp, *res;
	int rc;

	if (!one_mapping(lo, lo + old_len))
		return -EFAULT; /* the kernel refuses to grow more than one */
	/* the new record first; the new part locked as the old was */
	struct adopted *nr = rec_make(0, new_len, NULL, wipe, by);
	if (!nr)
		return -ENOMEM;
	memset(nr->reg.prot, page, new_len / ps);
	if (flags & MREMAP_FIXED)
		dest = to;
	else if (!(flags & MREMAP_DONTUNMAP) && os_map_none_noreplace((void *)(lo + old_len), new_len - old_len) == 0)
		dest = lo; /* room to grow where it is (now reserved) */
	else if ((flags & MREMAP_MAYMOVE) && os_reserve(new_len, ps, &res) == 0)
		dest = (uintptr_t)res;
	else {
		rec_put(nr);
		return -ENOMEM;
	}

	int fd = sm_memfd_secret();
	rc = fd < 0 ? -ENOMEM : os_truncate(fd, new_len);
	if (!rc)
		rc = os_map_shared(new_len, fd, &tmp);
	if (fd >= 0)
		sm_close(fd);
	if (!rc && ((rc = os_advise_new(tmp, new_len, MADV_DONTFORK)) != 0 || (rc = os_fault_in_secret(tmp, new_len)) != 0))
		os_unmap(tmp, new_len); /* the mark refused (a filter came: callgate.c), or the fault-in */
	if (rc) {
		if (dest == lo)
			os_unmap((void *)(lo + old_len), new_len - old_len);
		else if (!(flags & MREMAP_FIXED))
			os_unmap((void *)dest, new_len);
		rec_put(nr);
		/* the kernel's answer when a locked mapping cannot grow */
		return -EAGAIN;
	}
	if (!(prot & PROT_READ))
		os_protect((void *)lo, old_len, PROT_READ);
	sm_copy(tmp, (const void *)lo, old_len);
	if (!(prot & PROT_READ))
		os_protect((void *)lo, old_len, prot);
	if ((rc = os_remap_fixed(tmp, new_len, (void *)dest)) != 0) {
		explicit_bzero(tmp, old_len);
		os_unmap(tmp, new_len);
		rec_put(nr);
		return rc;
	}
	if (prot != (PROT_READ | PROT_WRITE))
		os_protect((void *)dest, new_len, prot);
	carve(dest, dest + new_len);
	if (dest != lo) {
		if (flags & MREMAP_DONTUNMAP) {
			/* the old range stays, empty and unlocked: zeros, as
			 * anonymous memory */
			set_locked(lo, lo + old_len, 0);
			if (!(prot & PROT_WRITE))
				os_protect((void *)lo, old_len, PROT_READ | PROT_WRITE);
			explicit_bzero((void *)lo, old_len);
			if (!(prot & PROT_WRITE))
				os_protect((void *)lo, old_len, prot);
		} else {
			carve(lo, lo + old_len);
			os_unmap((void *)lo, old_len);
		}
	}
	rec_place(nr, dest);
	rec_link(nr);
	*out = dest;
	return 0;
}

/*
 * A move of [lo, lo+len) to `to`, the same size (MREMAP_FIXED): the
 * kernel's own mremap, which moves several mappings at once since Linux
 * 6.17 (EFAULT before), and so charges nothing; the records of what moves
 * are made first and take their place once it has moved.
 */
static int move(uintptr_t lo, size_t len, int flags, uintptr_t to, uintptr_t *out)
{
	size_t ps = os_page_size();
	struct adopted *made = NULL, **tail = &made;
	int rc = 0;
	void *r;

	for (struct adopted *a = records; a && rec_lo(a) < lo + len && !rc; a = a->next) {
		if (rec_hi(a) <= lo)
			continue;
		uintptr_t s = rec_lo(a) > lo ? rec_lo(a) : lo, e = rec_hi(a) < lo + len ? rec_hi(a) : lo + len;
		struct adopted *nr = rec_make(to + (s - lo), e - s, a->reg.prot + (s - rec_lo(a)) / ps, fork_bits(a), a->by);
		if (!nr) {
			rc = -ENOMEM;
			break;
		}
		nr->next = NULL;
		*tail = nr;
		tail = &nr->next;
	}
	if (!rc)
		rc = os_pass_mremap((void *)lo, len, len, flags, (void *)to, &r);
	if (!rc) {
		carve(lo, lo + len);
		carve(to, to + len); /* what the move replaced */
	}
	for (struct adopted *a = made, *next; a; a = next) {
		next = a->next;
		if (rc)
			rec_put(a);
		else
			rec_link(a);
	}
	if (!rc)
		*out = to;
	return rc;
}

int sm_adopt_remap(void *old, size_t old_len, size_t new_len, int flags, void *to, void **out)
{
	uintptr_t lo = (uintptr_t)old, ps = os_page_size(), t = (uintptr_t)to;
	int saved = errno, rc = 0;

	if (!any())
		return 1;
	/* what the kernel refuses whatever the memory is: its answer */
	if ((flags & ~(MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP)) ||
	    ((flags & (MREMAP_FIXED | MREMAP_DONTUNMAP)) && !(flags & MREMAP_MAYMOVE)) ||
	    ((flags & MREMAP_DONTUNMAP) && old_len != new_len))
		return 1;
	old_len = (old_len + ps - 1) & ~(ps - 1);
	new_len = (new_len + ps - 1) & ~(ps - 1);
	int cancel = sm_cancel_off();
	region_fork_lock();
	if ((lo & (ps - 1)) || !touches(lo, lo + (old_len ? old_len : ps))) {
		rc = 1; /* not ours: the kernel's call */
		goto done;
	}
	/* the kernel looks at the destination before the mappings */
	if ((flags & MREMAP_FIXED) && ((t & (ps - 1)) || (t < lo + old_len && lo < t + new_len))) {
		rc = -EINVAL;
		goto done;
	}
	if (old_len == 0 || new_len == 0) {
		rc = -EINVAL; /* a second mapping of private memory: refused */
		goto done;
	}
	uintptr_t dest;
	if (new_len <= old_len && !(flags & (MREMAP_FIXED | MREMAP_DONTUNMAP)) && !page_of(lo)) {
		/* a shrink from memory that is not ours (or from no mapping:
		 * EFAULT): the kernel's call, then what it unmapped */
		void *r;
		rc = os_pass_mremap(old, old_len, new_len, flags, to, &r);
		if (!rc) {
			carve(lo + new_len, lo + old_len);
			*out = r;
		}
		goto done;
	}
	if (new_len <= old_len && !(flags & (MREMAP_FIXED | MREMAP_DONTUNMAP))) {
		/* shrink: the kernel unmaps the end, whatever mappings the
		 * range spans */
		if (new_len < old_len)
			rc = os_pass_munmap((void *)(lo + new_len), old_len - new_len);
		if (!rc) {
			carve(lo + new_len, lo + old_len);
			*out = old;
		}
		goto done;
	}
	if ((flags & MREMAP_FIXED) && !(flags & MREMAP_DONTUNMAP) && new_len < old_len && !touches(lo, lo + new_len)) {
		/* a shrinking move of what is not ours: the kernel's, then
		 * what it cut off is forgotten */
		void *r;
		rc = os_pass_mremap(old, old_len, new_len, flags, to, &r);
		if (!rc) {
			carve(lo, lo + old_len);
			carve(t, t + new_len);
			*out = r;
		}
		goto done;
	}
	if ((flags & MREMAP_FIXED) && !(flags & MREMAP_DONTUNMAP) && new_len <= old_len) {
		/* a move; shrinking, the kept part must be one mapping (the
		 * kernel checks before it cuts off the rest, whatever that is) */
		if (new_len < old_len && !one_mapping(lo, lo + new_len))
			rc = -EFAULT;
		else if (new_len < old_len && (rc = os_pass_munmap((void *)(lo + new_len), old_len - new_len)) == 0)
			carve(lo + new_len, lo + old_len);
		if (!rc)
			rc = move(lo, new_len, flags, t, &dest);
		if (!rc)
			*out = (void *)dest;
		goto done;
	}
	/* it grows, or stays (MREMAP_DONTUNMAP): one mapping of ours */
	if (!holding_all(lo, lo + old_len)) {
		rc = -EFAULT; /* part of it is not adopted memory */
		goto done;
	}
	rc = grow(holding(lo, lo + ps), lo, old_len, new_len, flags, t, &dest);
	if (!rc)
		*out = (void *)dest;
done:
	region_fork_unlock();
	sm_cancel_restore(cancel);
	errno = saved;
	return rc;
}

/*
 * [lo, hi) of a record back to ordinary private memory (same contents and
 * protections): the memory returns to an allocator that manages it with
 * calls the module does not see (glibc's free and realloc).  The bytes of
 * [dlo, dhi) are dead (a block being freed): they come back zero, never
 * copied out of secret memory.
 */
static void release_part(struct adopted *a, uintptr_t lo, uintptr_t hi, uintptr_t dlo, uintptr_t dhi)
{
	size_t ps = os_page_size(), len = hi - lo;
	void *tmp;

	if (os_map_anon(len, &tmp))
		return; /* it stays secret, and recorded */
	for (uintptr_t p = lo; p < hi; p += ps) {
		if (p >= dlo && p + ps <= dhi)
			continue; /* the fresh page's zeros */
		int prot = PROT_OF(a->reg.prot[(p - rec_lo(a)) / ps]);
		if (!(prot & PROT_READ))
			os_protect((void *)p, ps, PROT_READ);
		sm_copy((unsigned char *)tmp + (p - lo), (const void *)p, ps);
		if (!(prot & PROT_READ))
			os_protect((void *)p, ps, prot);
		uintptr_t zs = p > dlo ? p : dlo, ze = p + ps < dhi ? p + ps : dhi;
		if (zs < ze) /* the dead part of a page copied for the rest */
			explicit_bzero((unsigned char *)tmp + (zs - lo), ze - zs);
	}
	unsigned char *prot = a->reg.prot + (lo - rec_lo(a)) / ps;
	if (os_remap_fixed(tmp, len, (void *)lo)) {
		explicit_bzero(tmp, len);
		os_unmap(tmp, len);
		return;
	}
	for (size_t i = 0; i < len / ps; i++)
		if (PROT_OF(prot[i]) != (PROT_READ | PROT_WRITE))
			os_protect((void *)(lo + i * ps), ps, PROT_OF(prot[i]));
	carve(lo, hi);
}

void sm_adopt_release(const void *addr, size_t len, const void *dead, size_t dead_len)
{
	size_t ps = os_page_size();
	uintptr_t lo = ((uintptr_t)addr + ps - 1) & ~(uintptr_t)(ps - 1), hi = page_down((uintptr_t)addr + len);
	uintptr_t dlo = (uintptr_t)dead, dhi = dlo + dead_len;

	if (!any() || lo >= hi)
		return;
	int cancel = sm_cancel_off();
	region_fork_lock();
	for (struct adopted *a = records, *next; a && rec_lo(a) < hi; a = next) {
		next = a->next;
		uintptr_t s = rec_lo(a) > lo ? rec_lo(a) : lo, e = rec_hi(a) < hi ? rec_hi(a) : hi;
		if (s < e)
			release_part(a, s, e, dlo, dhi);
	}
	region_fork_unlock();
	sm_cancel_restore(cancel);
}

int sm_adopt_locked(const void *addr, size_t len, const char **by)
{
	size_t ps = os_page_size();
	uintptr_t lo = page_down((uintptr_t)addr), hi = page_down((uintptr_t)addr + len + ps - 1);
	int all = 0;

	if (!any() || lo >= hi)
		return 0;
	int cancel = sm_cancel_off();
	region_fork_lock();
	if (holding_all(lo, hi)) {
		all = 1;
		for (uintptr_t p = lo; all && p < hi; p += ps) {
			const unsigned char *b = page_of(p);
			all = b && (*b & PAGE_LOCKED);
		}
		const struct adopted *a = all && by ? holding(lo, lo + ps) : NULL;
		if (a)
			*by = a->by;
	}
	region_fork_unlock();
	sm_cancel_restore(cancel);
	return all;
}

/* ---- figures ---------------------------------------------------------------------- */

void sm_adopt_totals(size_t *ranges, size_t *bytes)
{
	region_fork_lock();
	*ranges = rec_count;
	*bytes = rec_bytes;
	region_fork_unlock();
}

void sm_adopt_each(void (*fn)(const void *addr, size_t len, const char *by, void *arg), void *arg)
{
	region_fork_lock();
	for (struct adopted *a = records; a; a = a->next)
		fn(a->reg.data, a->reg.size, a->by, arg);
	region_fork_unlock();
}

/* ---- fork (fork.c, with the list lock held) ------------------------------------- */

#define PRUNE_GAPS 64
struct prune {
	struct adopted *cur;
	uintptr_t covered; /* of cur: secret memory up to here */
	uintptr_t gap[PRUNE_GAPS][2];
	int ngaps, full;
};

static void prune_gap(struct prune *p, uintptr_t lo, uintptr_t hi)
{
	if (lo >= hi)
		return;
	if (p->ngaps == PRUNE_GAPS) {
		p->full = 1; /* the rest in another pass */
		return;
	}
	p->gap[p->ngaps][0] = lo;
	p->gap[p->ngaps][1] = hi;
	p->ngaps++;
}

/* The protection the kernel holds for [lo, hi) of a, into its record (a
 * raw mprotect, pkey_mprotect, an mprotect that failed half-way). */
static void prune_prot(struct adopted *a, uintptr_t lo, uintptr_t hi, int prot)
{
	size_t ps = os_page_size();

	for (uintptr_t p = lo; p < hi; p += ps) {
		unsigned char *b = &a->reg.prot[(p - rec_lo(a)) / ps];
		*b = (unsigned char)((*b & PAGE_LOCKED) | prot);
	}
}

static int prune_line(const struct sm_mapline *m, void *arg)
{
	struct prune *p = arg;

	while (p->cur && m->hi > p->covered && !p->full) {
		struct adopted *a = p->cur;
		if (m->lo >= rec_hi(a)) { /* a's end is not covered */
			prune_gap(p, p->covered, rec_hi(a));
			p->cur = a->next;
			p->covered = p->cur ? rec_lo(p->cur) : 0;
			continue;
		}
		if (m->lo > p->covered)
			prune_gap(p, p->covered, m->lo);
		uintptr_t s = m->lo > p->covered ? m->lo : p->covered;
		uintptr_t e = m->hi < rec_hi(a) ? m->hi : rec_hi(a);
		if (!sm_mapline_secret(m))
			prune_gap(p, s, e);
		else
			prune_prot(a, s, e, m->prot);
		p->covered = e;
		if (e == rec_hi(a)) {
			p->cur = a->next;
			p->covered = p->cur ? rec_lo(p->cur) : 0;
		} else {
			break;
		}
	}
	return p->cur && !p->full ? 0 : 1;
}

void sm_adopt_resync(void)
{
	sm_adopt_fork_prune();
}

void sm_adopt_fork_prune(void)
{
	static struct prune p;

	do {
		if (!records)
			return;
		p.cur = records;
		p.covered = rec_lo(records);
		p.ngaps = 0;
		p.full = 0;
		if (sm_maps_walk(maps_buf, sizeof(maps_buf), prune_line, &p) < 0)
			return;
		for (struct adopted *a = p.cur; a && !p.full; a = a->next) /* past the last line */
			prune_gap(&p, a == p.cur ? p.covered : rec_lo(a), rec_hi(a));
		for (int i = 0; i < p.ngaps; i++)
			carve(p.gap[i][0], p.gap[i][1]);
	} while (p.full); /* every pass forgets PRUNE_GAPS gaps */
}

/* Runs of r's pages whose protection lacks PROT_READ: made readable for the
 * copy (on) or given their protection back. */
void sm_adopt_fork_readable(const struct region *r, int on)
{
	size_t ps = os_page_size(), n = r->size / ps;

	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		int prot = PROT_OF(r->prot[i]);
		while (j < n && PROT_OF(r->prot[j]) == prot)
			j++;
		if (!(prot & PROT_READ))
			os_protect(r->data + i * ps, (j - i) * ps, on ? PROT_READ : prot);
		i = j;
	}
}

int sm_adopt_fork_apply(const struct region *r)
{
	size_t ps = os_page_size(), n = r->size / ps;

	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		int prot = PROT_OF(r->prot[i]);
		while (j < n && PROT_OF(r->prot[j]) == prot)
			j++;
		if (prot != (PROT_READ | PROT_WRITE) && os_protect(r->data + i * ps, (j - i) * ps, prot))
			return -EFAULT;
		i = j;
	}
	return 0;
}
