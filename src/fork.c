/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * fork.c - what a child gets of the parent's secret memory, in one place;
 * and the rule that no thread cancellation acts while a library lock is held.
 *
 * The rules:
 *
 * 1. Pages of the secret backend are MADV_DONTFORK from the moment they are
 *    mapped (region.c).  A child made by any path - fork(), glibc's _Fork(),
 *    a raw clone() without CLONE_VM - has nothing mapped there: touching the
 *    parent's secrets faults.  No code in a child can write the parent's
 *    pages, whether or not our handlers run and whatever order other
 *    pthread_atfork handlers were registered in.
 *
 * 2. copy (default): the prepare handler, in the parent with every library
 *    lock held, makes one new secret memory file and fills it with what each
 *    secret region holds (for allocator chunks only up to the highest page
 *    in use, for free cached large blocks nothing), through a window mapped
 *    a piece at a time (as large as the memory-lock limit leaves free), so
 *    the parent never needs more locked memory than its own secrets and one
 *    window.  The file's descriptor is
 *    the one thing that crosses fork(): the child's handler maps the file
 *    (against the child's own memory-lock limit), moves each copy onto its
 *    region's address and closes the descriptor; the parent's handler closes
 *    its own.  No pipe, no waiting: fork() returns when the copy exists, and
 *    nothing the parent writes after it reaches the child.  If the copy
 *    cannot be made (no descriptor left, memory-lock limit, no memory) the
 *    child gets no secret memory at all (as under drop) and says so on
 *    stderr - or, after sm_fork_set_strict() (heap mode), exits at once in
 *    its handler, and the heap module's fork() reaps it and fails.
 *
 * 3. share: the prepare handler clears MADV_DONTFORK of every secret
 *    mapping (MADV_DOFORK), both handlers set it again after fork(): only a
 *    fork() with our handlers shares.
 *
 * 4. drop: the child maps inaccessible memory at every region's address.
 *
 * 5. Fallback-backend pages are private anonymous memory: copy-on-write in
 *    every child.  copy re-locks them in the child (mlock is not inherited),
 *    drop maps inaccessible memory over them, share leaves them private.
 *
 * 6. Cancellation is off from the prepare handler until the parent's or the
 *    child's handler (it covers the other libraries' handlers that run in
 *    between, while our locks are held), and in the allocator's paths that
 *    take locks and may create or fault in memory (the slab layer).
 *
 * The memfd_secret call goes through sm_memfd_secret(), the one function
 * regions and chunks create secret memory with.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "annotate.h"
#include "slab.h"

/* ---- cancellation ---------------------------------------------------------- */

int sm_cancel_off(void)
{
	int old = PTHREAD_CANCEL_ENABLE;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	return old;
}

void sm_cancel_restore(int old)
{
	int ignored;

	pthread_setcancelstate(old, &ignored);
}

/* ---- state of one fork (prepare -> parent / child; under every lock) ------- */

static int fork_policy;       /* enum secretmem_fork_policy, read once in prepare */
static int fork_cancel;       /* cancellation state before prepare */
static int copy_fd = -1;      /* copy: the new file, open across fork() only */
static size_t copy_len;
static int copy_error;        /* copy: -errno why it could not be made, or 0 */
static int fork_strict;       /* a copy that cannot be made ends the child at
				 * once (sm_fork_set_strict: heap mode) */
/* the calling thread's last fork(): why the copy failed (or 0), and its size */
static __thread int last_error;
static __thread size_t last_need;

/*
 * The parent fills the copy through a window mapped a piece at a time, so
 * that it never needs the copy and its own secrets mapped at once: under
 * the memory-lock limit (mmap-time charging) fork() needs the parent's live
 * secret memory plus one window (two for a no-access region, read through a
 * second mapping).  The window is what the limit leaves free, at least
 * COPY_WINDOW, at most the copy (all of it without a limit: one mapping per
 * region, as cheap as mapping the whole copy), halved down to a page while
 * the limit refuses it.  The child maps the whole file itself, against its
 * own limit: its inherited secret mappings are gone (MADV_DONTFORK) and the
 * kernel does not carry locked memory into a child.  (A 256 KiB window for
 * every size cost fork() 8-11 % more per MiB than one mapping: a munmap,
 * with its TLB flush, per window.)
 */
#define COPY_WINDOW ((size_t)256 << 10)
/*
 * The room the allocator leaves under the memory-lock limit for that window
 * (sm_fork_room; its chunks stop short of it): 64 KiB, or a sixteenth of a
 * smaller limit (at least a page), so that a process that filled its limit
 * with secrets can still fork.
 */
#define COPY_ROOM ((size_t)64 << 10)

static int is_secret(const struct region *r)
{
	return !r->dropped && r->backend == SECRETMEM_BACKEND_SECRET;
}

/*
 * Bytes from r->data that the child's copy holds.  The child computes it
 * again from its copy of the metadata: with every lock held only a live
 * large block can change (to free, never back), so the child's figure is at
 * most the parent's.
 */
static size_t keep_of(const struct region *r)
{
	if (r->wipe || r->dontfork)
		return 0; /* MADV_WIPEONFORK / DONTFORK (adopt.c): zeros / nothing */
	size_t k = sm_slab_fork_keep(r);

	return k < r->faulted ? k : r->faulted;
}

/*
 * Copy whole pages word by word.  Not memcpy: under AddressSanitizer the
 * allocator keeps its free slots poisoned, and the copy must read them too;
 * volatile keeps the compiler from turning the loop into a memcpy call (or
 * vector code).  Other threads of the parent may write their own blocks
 * meanwhile: the child sees them as at some moment before fork(), as any
 * fork of a running program does (ThreadSanitizer would call it a race).
 */
#if defined(__clang__) || defined(__GNUC__)
__attribute__((no_sanitize_address, no_sanitize_thread))
#endif
static void copy_pages(void *dst, const void *src, size_t len)
{
	volatile uint64_t *d = dst;
	const volatile uint64_t *s = src;

	for (size_t i = 0; i < len / sizeof(uint64_t); i++)
		d[i] = s[i];
}

/* Whether a page is all zero, read word by word as copy_pages reads (no
 * vector register ever holds a secret; ASan's poisoned free slots too). */
#if defined(__clang__) || defined(__GNUC__)
__attribute__((no_sanitize_address, no_sanitize_thread))
#endif
static int page_is_zero(const void *p, size_t len)
{
	const volatile uint64_t *s = p;

	for (size_t i = 0; i < len / sizeof(uint64_t); i++)
		if (s[i])
			return 0;
	return 1;
}

/* Whether page pg of region r (src: its bytes) goes into the copy: not the
 * guard page of an allocator run (inaccessible; the child sets it again),
 * and not all zero (freed blocks are zeroed: the copy's page stays a hole,
 * which reads as zero and costs the child nothing until it is touched; or,
 * where the copy is faulted in whole, the zero page it already is). */
static int page_to_copy(const struct region *r, size_t pg, const unsigned char *src, size_t ps)
{
	return !sm_slab_fork_guard(r, pg) && !page_is_zero(src, ps);
}

/* One window of copy_region: where the region's bytes and the copy are. */
struct piece_copy {
	const struct region *r;
	size_t at;                /* the window's offset in the region      */
	unsigned char *dst;       /* the window                             */
	const unsigned char *src; /* the region's bytes there (or a duplicate) */
	unsigned char *data;      /* the region's own address there         */
	int faulted;              /* the window is faulted in already        */
	int rc;
};

/* os_each_resident: the pages [p, p+n) of the region hold memory: fault in
 * and copy each run of them that page_to_copy takes. */
static void copy_piece(void *arg, unsigned char *p, size_t n)
{
	struct piece_copy *pc = arg;
	size_t ps = os_page_size(), o = (size_t)(p - pc->data), end = o + n;

	while (o < end && !pc->rc) {
		if (!page_to_copy(pc->r, (pc->at + o) / ps, pc->src + o, ps)) {
			o += ps;
			continue;
		}
		size_t e = o + ps;
		while (e < end && page_to_copy(pc->r, (pc->at + e) / ps, pc->src + e, ps))
			e += ps;
		if (!pc->faulted)
			pc->rc = os_fault_in_secret(pc->dst + o, e - o);
		if (!pc->rc)
			copy_pages(pc->dst + o, pc->src + o, e - o);
		o = e;
	}
}

/*
 * The window lives at one address for the fork, reserved (PROT_NONE,
 * MADV_DONTFORK) before any piece is mapped there: between the mmap of a
 * piece and its MADV_DONTFORK a raw fork by another thread can still
 * inherit it, and such a child's first allocator call unmaps a secret
 * mapping it finds in [window_base, window_base + window_len)
 * (sm_fork_raw_child_reset).  No child inherits the reservation.
 */
static unsigned char *window_base;
static size_t window_len;
/* [window_base, window_base + window_lost) is not ours any more: another
 * thread mapped there in the moment a refused piece left it free
 * (os_map_shared_in); the copy stops, and only the rest is unmapped */
static size_t window_lost;

/* prepare_copy: the window's reservation of len bytes. */
static int reserve_window(size_t len)
{
	void *p;
	int rc = os_reserve(len, os_page_size(), &p);

	if (rc)
		return rc;
	if ((rc = os_advise_new(p, len, MADV_DONTFORK))) {
		os_unmap(p, len); /* refused: a filter came (callgate.c) */
		return rc;
	}
	window_len = len;
	window_base = p;
	return 0;
}

/* Map the file's bytes [off, off + *len) at window_base, halving *len down
 * to a page while the memory-lock limit (or memory) refuses the mapping. */
static int map_window(int fd, size_t off, size_t *len)
{
	size_t ps = os_page_size();

	for (;;) {
		int rc = os_map_shared_in(window_base, *len, fd, off);
		if (rc == -EADDRNOTAVAIL) {
			window_lost = *len;
			return -ENOMEM;
		}
		if (rc) /* reserved again, as a new mapping: kept from children too */
			os_advise(window_base, *len, MADV_DONTFORK);
		if ((rc != -EAGAIN && rc != -ENOMEM) || *len <= ps)
			return rc;
		*len = (*len / 2 + ps - 1) & ~(ps - 1);
	}
}

/* The window's reservation unmapped (what is still ours of it). */
static void release_window(void)
{
	os_unmap(window_base + window_lost, window_len - window_lost);
	window_base = NULL;
	window_lost = 0;
}

/* A piece's pages back to an inaccessible reservation. */
static void unmap_window(size_t len)
{
	if (os_map_none_fixed(window_base, len) == 0)
		os_advise(window_base, len, MADV_DONTFORK);
}

/* Fill the file's bytes [off, off + r->size) with r's pages, a window at a
 * time (*window: its size, kept smaller once the limit refused it). */
static int copy_region(struct region *r, int fd, size_t off, size_t *window)
{
	size_t keep = keep_of(r), done = 0;
	int rc = 0, mmap_charged = sm_fault_regime() == SM_REGIME_MMAP;

	if (r->prot && keep) /* an adopted range's inaccessible pages */
		sm_adopt_fork_readable(r, 1);
	while (done < keep && !rc) {
		size_t want = keep - done < *window ? keep - done : *window, len = want;
		void *dup = NULL;
		rc = map_window(fd, off + done, &len);
		if (rc)
			break;
		unsigned char *dst = window_base;
		if (len < want)
			*window = len;
		/* a raw fork by another thread meanwhile must not inherit it */
		rc = os_advise_new(dst, len, MADV_DONTFORK);
		/* unless the kernel charges secret memory at mmap time (the
		 * child's mmap of the copy takes the charge of every page),
		 * every page of the copy is faulted in here, from the kernel
		 * side, so that the child never touches a hole it could be
		 * refused (SIGBUS): region.c's promise */
		if (!rc && !mmap_charged)
			rc = os_fault_in_secret(dst, len);
		const unsigned char *src = r->data + done;
		if (!rc && r->access == SECRETMEM_NOACCESS) {
			/* read a second mapping of the pages: the region's own
			 * protection is the program's (region_protect waits for
			 * the list lock, which prepare holds, so it cannot change
			 * during the copy); the duplicate keeps MADV_DONTFORK */
			rc = os_map_dup(r->data + done, len, &dup);
			if (!rc)
				rc = os_protect(dup, len, PROT_READ);
			src = dup;
		}
		if (!rc) {
			struct piece_copy pc = { r, done, dst, src, r->data + done, !mmap_charged, 0 };
			/* only the pages that hold memory: the others are
			 * zero, and stay holes in the copy as in the region
			 * (a lazy region's untouched pages, region.c); and
			 * of those, only the ones that are not all zero */
			os_each_resident(r->data + done, len, copy_piece, &pc);
			rc = pc.rc;
		}
		if (dup)
			os_unmap(dup, len);
		unmap_window(len);
		done += len;
	}
	if (r->prot && keep)
		sm_adopt_fork_readable(r, 0);
	return rc;
}

/* copy, in prepare: one new file holding every secret region's copy, left
 * open (copy_fd) for the child to map; no mapping of it is left behind. */
static int prepare_copy(void)
{
	size_t total = 0, off = 0, window, limit, locked, ps = os_page_size();
	struct region *r;
	int unlimited;

	sm_adopt_fork_prune();
	for (r = region_fork_next(NULL); r; r = region_fork_next(r))
		if (is_secret(r))
			total += r->size;
	copy_len = total;
	if (!total)
		return 0;
	if (sm_secret_new_is_off())
		return -EPERM; /* a filter would stop the calls below */
	sm_memlock_figures(&unlimited, &limit, &locked);
	window = unlimited ? total : limit > locked ? limit - locked : 0;
	window = window > total ? total : window < COPY_WINDOW ? COPY_WINDOW : window;
	window = (window + ps - 1) & ~(ps - 1);
	int rc = reserve_window(window);
	if (rc)
		return rc;
	int fd = sm_memfd_secret();
	if (fd < 0) {
		release_window();
		return fd;
	}
	copy_fd = fd; /* from now on: a raw child made meanwhile closes it */
	rc = os_truncate(fd, total);
	for (r = region_fork_next(NULL); r && !rc; r = region_fork_next(r)) {
		if (!is_secret(r))
			continue;
		rc = copy_region(r, fd, off, &window);
		off += r->size;
	}
	release_window();
	if (rc) {
		copy_fd = -1;
		sm_close(fd);
	}
	return rc;
}

size_t sm_fork_room(size_t limit)
{
	size_t ps = os_page_size(), room = limit / 16 < COPY_ROOM ? limit / 16 : COPY_ROOM;

	if (sm_option(SECRETMEM_OPT_FORK) != SECRETMEM_FORK_COPY)
		return 0;
	room &= ~(ps - 1);
	return room < ps ? ps : room;
}

/* The heap module's fork() on this thread: it reaps a child whose copy
 * failed, and says so (hfork.c).  A fork another function of the C library
 * makes (daemon, forkpty) has no one to: its child says why it ends. */
static __thread int fork_reaped;

void sm_fork_reaped(int on)
{
	fork_reaped = on;
}

const char *sm_fork_error_text(int err)
{
	return err == -EMFILE || err == -ENFILE ? "no free file descriptor"
	       : err == -ENOSYS || err == -EPERM ? "secret memory refused"
	       : "memory-lock limit or out of memory";
}

void sm_fork_set_strict(void)
{
	fork_strict = 1;
}

int sm_fork_last_error(size_t *need)
{
	*need = last_need;
	return last_error;
}

static void fork_prepare(void)
{
	int saved = errno, cancel = sm_cancel_off();

	/* a raw child (_Fork, clone) that forks before it allocates: its heap
	 * is reset first, as at its first allocation (rawchild.c); the
	 * parent's regions it does not have are not copied */
	sm_gate_check();
	sm_alloc_fork_lock();
	sm_slab_fork_prepare();
	region_fork_lock();
	sm_newfile_lock(); /* no secret file half made (syscall.c) */
	/* the fork's state is written only with every lock held */
	fork_cancel = cancel;
	sm_gate_fork_begin();
	fork_policy = (int)sm_option(SECRETMEM_OPT_FORK);
	copy_fd = -1;
	copy_len = 0;
	copy_error = 0;
	if (fork_policy == SECRETMEM_FORK_COPY) {
		copy_error = prepare_copy();
	} else if (fork_policy == SECRETMEM_FORK_SHARE) {
		for (struct region *r = region_fork_next(NULL); r; r = region_fork_next(r))
			if (is_secret(r))
				os_advise(r->data, r->size, MADV_DOFORK);
	}
	errno = saved;
}

static void fork_parent(void)
{
	int saved = errno;

	if (copy_fd >= 0)
		sm_close(copy_fd);
	copy_fd = -1;
	last_error = copy_error;
	last_need = copy_len;
	sm_gate_fork_end();
	if (fork_policy == SECRETMEM_FORK_SHARE)
		for (struct region *r = region_fork_next(NULL); r; r = region_fork_next(r))
			if (is_secret(r))
				os_advise(r->data, r->size, MADV_DONTFORK);
	sm_newfile_unlock();
	region_fork_unlock();
	sm_slab_fork_parent();
	sm_alloc_fork_unlock();
	sm_cancel_restore(fork_cancel);
	errno = saved;
}

/*
 * In the child, the range of a secret region is empty (MADV_DONTFORK).
 * Reserve it, never replacing a mapping: something else there means code
 * that ran in the child before this handler (another pthread_atfork child
 * handler) mapped memory at the address of a secret, where the program's
 * pointers lead.  Neither a copy nor an inaccessible range can be put
 * there without destroying that mapping.
 */
static void reserve_in_child(struct region *r)
{
	int rc = os_map_none_noreplace(r->data, r->size);

	if (rc == -EEXIST)
		sm_fatal("fork: the child mapped memory at the address of a secret before the library's fork handler ran");
	if (rc)
		sm_fatal("fork: cannot reserve the address of a secret in the child");
}

static int raw_reset; /* sm_fork_raw_child_reset is running */

/*
 * Copy and drop, first thing in the child: every secret region's address
 * reserved, before anything (the copy's own mapping included) can be
 * placed there.  In a raw child a secret region may still hold the parent's
 * pages (one made while share's handlers had cleared MADV_DONTFORK): they
 * are replaced, never kept.
 */
static void reserve_secret_regions(void)
{
	for (struct region *r = region_fork_next(NULL); r; r = region_fork_next(r)) {
		if (!is_secret(r))
			continue;
		if (raw_reset)
			os_map_none_fixed(r->data, r->size);
		else
			reserve_in_child(r);
	}
}

/* Drop, after reserve_secret_regions: the fallback region's private pages
 * go too; the addresses stay reserved, so a stale pointer faults. */
static void drop_region(struct region *r)
{
	if (r->backend != SECRETMEM_BACKEND_SECRET)
		os_map_none_fixed(r->data, r->size);
	r->dropped = 1;
	r->faulted = 0;
}

static void fork_child(void)
{
	int saved = errno, policy = fork_policy, failed = 0;
	size_t off = 0;
	unsigned char *copy_map = NULL;

	sm_memfd_after_fork();
	sm_calls_child();
	window_base = NULL; /* MADV_DONTFORK: not in any child */
	window_lost = 0;

	if (policy != SECRETMEM_FORK_SHARE)
		reserve_secret_regions();
	if (policy == SECRETMEM_FORK_COPY && copy_fd >= 0) {
		void *map;
		int rc = os_map_shared(copy_len, copy_fd, &map);
		if (rc)
			copy_error = rc;
		else
			copy_map = map;
	}
	if (copy_fd >= 0)
		syscall(SYS_close, copy_fd);
	copy_fd = -1;
	const char *why = sm_fork_error_text(copy_error);
	if (policy == SECRETMEM_FORK_COPY && copy_error && fork_strict) {
		/* the parent's fork() reaps this child and fails (heap mode):
		 * no program code runs with a heap it does not have */
		if (!fork_reaped)
			sm_warn("fork: no copy of the heap for a child that a C library function made (daemon, "
				"forkpty...: ", why, "): the child ends with status 127 before it runs");
		syscall(SYS_exit_group, 127);
	}
	if (policy == SECRETMEM_FORK_COPY && copy_error) {
		sm_warn("fork: could not copy secret memory into the child (", why, "); its secrets are dropped");
		policy = SECRETMEM_FORK_DROP;
	}
	for (struct region *r = region_fork_next(NULL); r; r = region_fork_next(r)) {
		if (r->dropped)
			continue;
		if (policy == SECRETMEM_FORK_DROP) {
			drop_region(r);
			continue;
		}
		if (r->backend != SECRETMEM_BACKEND_SECRET) {
			/* private memory is already copy-on-write; only the lock
			 * is not inherited */
			if (policy == SECRETMEM_FORK_COPY && r->faulted && os_lock_resident(r->data, r->faulted))
				sm_warn("fork: could not lock the child's copy of a fallback region", NULL, NULL);
			continue;
		}
		if (policy == SECRETMEM_FORK_SHARE) {
			os_advise(r->data, r->size, MADV_DONTFORK);
			continue;
		}
		size_t keep = keep_of(r);
		if (r->dontfork) { /* an adopted range the program kept from children */
			os_unmap(r->data, r->size);
			r->dropped = 1;
			r->faulted = 0;
			off += r->size;
			continue;
		}
		if (os_remap_fixed(copy_map + off, r->size, r->data) == 0 &&
		    os_advise(r->data, r->size, MADV_DONTFORK) == 0 &&
		    (r->access == SECRETMEM_READWRITE ||
		     os_protect(r->data, r->size, r->access == SECRETMEM_READONLY ? PROT_READ : PROT_NONE) == 0) &&
		    (!r->prot || sm_adopt_fork_apply(r) == 0)) {
			/* the pages past the copy are not faulted in any more:
			 * accessible to the fault-in's read(), as new pages are
			 * (an adopted range's are the program's: all its own) */
			SM_SHOW(r->data + keep, r->faulted - keep);
			r->faulted = r->adopted ? r->size : keep;
		} else {
			/* the range is ours: make it inaccessible again */
			sm_warn("fork: could not move a copy of secret memory into place; the child's secrets are dropped", NULL, NULL);
			os_map_none_fixed(r->data, r->size);
			r->dropped = 1;
			r->faulted = 0;
			failed++;
		}
		off += r->size;
	}
	if (copy_map) /* what was not moved (nothing, unless a move failed) */
		os_unmap(copy_map, copy_len);
	sm_gate_fork_end();
	sm_newfile_unlock(); /* taken by the prepare handler (or the raw reset) */
	region_fork_unlock();
	/* a region whose copy failed was dropped: the heap cannot trust its
	 * chunks any more, so it starts empty as with the drop policy */
	int empty = policy == SECRETMEM_FORK_DROP || failed;
	if (policy == SECRETMEM_FORK_SHARE && !empty) {
		sm_slab_fork_recount();
		sm_slab_fork_parent(); /* just unlock: the pages are the parent's too */
	} else
		sm_slab_fork_child(empty);
	if (empty)
		sm_alloc_fork_child_empty();
	sm_alloc_fork_unlock();
	sm_cancel_restore(fork_cancel);
	errno = saved;
}

/*
 * In a raw child: a window of the parent's copy, inherited when the raw
 * fork came between the window's mmap and its MADV_DONTFORK, is unmapped.
 * Only a secret memory mapping at window_base is: the address is free in
 * every other child, and the program may have mapped something there
 * since.  Raw system calls; without /proc nothing is unmapped.
 */
static int drop_window_line(const struct sm_mapline *m, void *arg)
{
	(void)arg;
	/* not the lost part: another thread's mapping may be there (map_window) */
	uintptr_t w = (uintptr_t)window_base + window_lost;

	if (m->lo >= w && m->hi <= (uintptr_t)window_base + window_len && sm_mapline_secret(m))
		os_unmap((void *)m->lo, m->hi - m->lo);
	return 0;
}

static void drop_inherited_window(void)
{
	static char buf[8192];

	if (window_base)
		sm_maps_walk(buf, sizeof(buf), drop_window_line, NULL);
}

void sm_fork_raw_child_reset(void)
{
	int saved = errno, cancel = sm_cancel_off();

	/* the holders of the locks may be threads this child does not have */
	sm_alloc_fork_reinit();
	sm_slab_fork_reinit();
	region_fork_reinit();
	sm_newfile_reinit();
	sm_alloc_fork_lock();
	sm_slab_fork_prepare();
	region_fork_lock();
	sm_newfile_lock();
	fork_cancel = cancel;
	/* a copy that the parent was making for fork()'s child */
	if (copy_fd >= 0)
		syscall(SYS_close, copy_fd);
	copy_fd = -1;
	copy_error = 0;
	drop_inherited_window();
	fork_policy = SECRETMEM_FORK_DROP;
	raw_reset = 1;
	fork_child();
	raw_reset = 0;
	errno = saved;
}

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void install_fork_handlers(void)
{
	sm_option(SECRETMEM_OPT_FORK); /* read the environment outside fork */
	sm_gate_init();
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

void sm_fork_handlers_install(void)
{
	pthread_once(&fork_once, install_fork_handlers);
}
