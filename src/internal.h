/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * internal.h - declarations shared by the layers of libsecretmem.
 *
 * Layers, each calling only the ones above it in this list:
 *   syscall.c  memfd_secret(2) wrapper and support probe
 *   os.c       the only code that calls mmap/mprotect/madvise/ftruncate/mlock/
 *              mincore
 *   maps.c     this process's mappings (/proc/self/maps, raw reads)
 *   region.c   secret regions: guard pages, backends
 *   the slab layer: class.c (size classes), zero.c (zeroing, write-after-
 *              free checks), resident.c (pages of lazy regions that hold
 *              memory), meta.c (metadata memory), radix.c (address ->
 *              owner map, lookup), chunk.c (chunks and their pages), slab.c
 *              (arenas and slabs), run.c (large blocks in chunk pages),
 *              large.c (larger blocks), forkstate.c (its state at fork);
 *              slab.h for the layers above, slabint.h inside it
 *   alloc.c    the allocator API and its fast paths; tcache.c (thread
 *              caches' life), stats.c (secretmem_stats), api.c (regions)
 *   adopt.c    heap mode: memory the program locked, made secret in place
 *   fork.c     the fork policies and the cancellation rule, in one place
 * and two helpers usable from all: options.c, fatal.c.
 *
 * Internal functions return 0 / -errno (pointers through out-parameters) and
 * never touch errno; only the public functions returning pointers set it.
 */
#ifndef SECRETMEM_INTERNAL_H
#define SECRETMEM_INTERNAL_H

#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>
#include "secretmem.h"

#define SM_API __attribute__((visibility("default")))
#define SM_LIKELY(x) __builtin_expect(!!(x), 1)
#define SM_UNLIKELY(x) __builtin_expect(!!(x), 0)

/*
 * glibc's flag (2.32+): the process has had no second thread (pthread_create
 * clears it before the thread exists; it never comes back).  While it is
 * set no other thread can free a block at the same time, so free's
 * double-free checks (slots and runs, alloc.c) need no atomic step (glibc's
 * malloc relies on the same flag), and a memfd_secret call may skip the
 * child only then (syscall.c).  SM_HAVE_SINGLE_THREADED: the flag exists;
 * without it SM_SINGLE_THREADED() is 0 (the free checks are always atomic).
 */
#if defined(__has_include)
#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
#define SM_HAVE_SINGLE_THREADED 1
#define SM_SINGLE_THREADED() (__libc_single_threaded != 0)
#endif
#endif
#ifndef SM_SINGLE_THREADED
#define SM_SINGLE_THREADED() 0
#endif

/* ---- fatal.c ---------------------------------------------------------- */

/* Write "secretmem: fatal: <msg>\n" with write(2), then abort(). */
__attribute__((noreturn, cold)) void sm_fatal(const char *msg);
/* Write "secretmem: warning: <a><b><c>\n" with write(2); NULL parts skipped. */
void sm_warn(const char *a, const char *b, const char *c);
/* Write s to stderr with raw write(2) calls (no cancellation point), unless
 * messages are off, errno left as it was: the writer of sm_fatal, sm_warn
 * and the heap module's warnings. */
void sm_put(const char *s);
/* No more messages on stderr (sm_warn, sm_fatal's line, the heap module's):
 * a seccomp filter would kill the process at their write(2). */
void sm_warnings_off(void);
int sm_warnings_are_off(void);
/* Decimal text of v into buf (at least 24 bytes); returns buf. */
char *sm_utoa(size_t v, char *buf);

/* ---- nosimd.c (built without vector registers) ------------------------ */

/* Copy n bytes; never through a vector register. */
void sm_copy(void *dst, const void *src, size_t n);
/* strnlen without vector registers. */
size_t sm_strnlen(const char *s, size_t n);
/* 1 if len bytes at p are all zero: for freed memory only (it may use
 * vector registers; zero.c). */
int sm_is_zero(const void *p, size_t len);

/* ---- alloc.c ---------------------------------------------------------- */

/*
 * A block of at least size bytes whose start is a multiple of align, and
 * which secretmem_free/realloc/usable_size accept like any other.  align: a
 * power of two (else NULL, EINVAL); any size secretmem_malloc takes.  Above
 * a page of alignment the block is a large block of its own.  Used by the
 * heap module (memalign and friends).
 */
void *sm_alloc_aligned(size_t align, size_t size);
/* For the heap module, in a thread whose TSD destructors have run: retire the
 * thread's cache now (a later malloc makes a new one, to be retired again);
 * free p (a live block, else fatal as secretmem_free) without making one. */
void sm_alloc_thread_done(void);
void sm_free_nocache(void *p);
/* The free of the heap module and of the preload module's mode all: p in
 * memory of this allocator is freed as by secretmem_free (fatal if not live
 * or not a block start, also after a trim gave its pages back), 1; a
 * foreign p: untouched, 0. */
int sm_free_if_ours(void *p);
/* Tests: 1 if the calling thread's record of the chunk of its last free
 * (alloc.c, struct tcache) covers p and still holds, else 0. */
int sm_alloc_free_record_covers(const void *p);
/* Whether p lies in a chunk's pages or a large block's region of this
 * allocator (live or not): an address no other allocator can own. */
int sm_in_our_memory(const void *p);
/* Whether some 2 MiB granule of [lo, hi) belongs to this allocator (a
 * chunk's or a large block's): 0 means none of it is the allocator's. */
int sm_radix_any(uintptr_t lo, uintptr_t hi);

/* ---- options.c -------------------------------------------------------- */

/* Value in force for an enum secretmem_option (env read once, lazily). */
long sm_option(int option);
/* Freeze RESERVE and RELEASE_IDLE (called by the allocator's first use). */
void sm_options_freeze(void);
/* A switch outside the option table (SECRETMEM_REPORT, which the modules
 * read with getenv(), set-ID programs included): 1/0, yes/no, true/false,
 * on/off in any case, as the table's switches; unset or empty 0; an
 * invalid value warns and is 0. */
int sm_env_switch(const char *name);
/* Parse "123", "64k", "2M", "1g" into bytes; -EINVAL on junk or overflow. */
int sm_parse_size(const char *s, size_t *out);

/* ---- syscall.c -------------------------------------------------------- */

/*
 * memfd_secret(O_CLOEXEC) with the fault-injection hook (OS_OP_MEMFD), made
 * so that a seccomp filter cannot kill the caller (always in a short-lived
 * child).  An fd, or -ENOSYS, -EPERM (refused, or the child was killed),
 * -EMFILE, -ENFILE, -ENOMEM, -EAGAIN (no child could be made: transient).
 * A refusal updates the cached probe.
 */
int sm_memfd_secret(void);
/* In a fork child: the memfd_secret helper's stacks are all free again. */
void sm_memfd_after_fork(void);
/*
 * The new-file lock: held from the creation of a secret memory file of the
 * library's own to its close and its mapping's MADV_DONTFORK.  fork's
 * prepare handler takes it last (after every other lock of the library),
 * so no child of a fork in another thread inherits the descriptor, or the
 * mapping, of a file being made.  Nothing is locked while it is held; take
 * it with cancellation off.
 */
void sm_newfile_lock(void);
void sm_newfile_unlock(void);
/* A raw child: the lock's holder may be a thread it does not have. */
void sm_newfile_reinit(void);
/* The cached probe result; 0 when there is none (the caller's own
 * memfd_secret call is then the probe: sm_memfd_secret records a refusal). */
int sm_probe_cached(void);
/* secretmem_supported() once answered 0 in this process. */
int sm_probe_said_secret(void);
/* Seccomp mode (0, 1, 2) and filter count from /proc/self/status, read with
 * raw system calls; -1 in a field that cannot be read.  0 or -errno. */
int sm_seccomp_state(int *mode, long *filters);
/*
 * A seccomp filter is (or may be) in place: sm_seccomp_state or the
 * memfd_secret path read a non-zero Seccomp mode, or the heap module saw
 * the program install one (or find one at start) and said so with
 * sm_filter_seen().  From then on the library makes no mincore(2) call
 * (os_each_resident): no group of systemd's SystemCallFilter= allows it,
 * so a filter that allows memfd_secret kills the process at it.
 */
void sm_filter_seen(void);
int sm_filter_may_exist(void);
/*
 * The heap module read a seccomp filter that the program installs and
 * found that it would kill or trap a call that making secret memory takes
 * (heap/filtercheck.c): from then on no new secret memory is made, with no
 * system call (a new chunk or region, and fork's copy of the heap, fail
 * with -EPERM at once, a refusal by a sandbox); the regions made before
 * keep serving.  Also implies sm_filter_seen().
 */
void sm_secret_new_off(void);
int sm_secret_new_is_off(void);
/*
 * callgate.c: a system call of the library's own that a seccomp filter
 * could kill, as a section - enter, read the flags above, call, leave - so
 * that a filter another thread installs for every thread (TSYNC) never
 * meets it in flight.  A section holds system calls only: no lock, no
 * allocation, no cancellation point.  sm_calls_enter_new(): the same for a
 * call of new secret memory, or -EPERM (no section) once
 * sm_secret_new_is_off().  The installer: sm_install_begin() (waits until
 * no thread is in a section; new sections wait), set the flags, install,
 * sm_install_end(); it takes no lock and allocates nothing in between.
 * sm_calls_child(): fork's child handler.
 */
void sm_calls_enter(void);
int sm_calls_enter_new(void);
void sm_calls_leave(void);
/* close(2) of a descriptor the library opened: raw (close is a
 * cancellation point), and a section. */
void sm_close(int fd);
void sm_install_begin(void);
void sm_install_end(void);
void sm_calls_child(void);
/* VmLck of the process in bytes (0 if unknown); raw read of /proc. */
size_t sm_locked_bytes(void);
/* RLIMIT_MEMLOCK: unlimited (infinite or CAP_IPC_LOCK), the soft limit
 * (SIZE_MAX if infinite) and the locked bytes (read only when limited). */
void sm_memlock_figures(int *unlimited, size_t *limit, size_t *locked);
/*
 * The kernel's memory-lock regime for secret memory, probed once per process
 * in the child of the first memfd_secret call (KERNEL-FACTS.md):
 *   SM_REGIME_MMAP   the mapping is VM_LOCKED, charged at mmap: a page of a
 *                    mapping that exists can be touched from user space
 *   SM_REGIME_FAULT  charged per page at fault time: a user-space touch past
 *                    RLIMIT_MEMLOCK raises SIGBUS, a kernel-side one EFAULT
 *   SM_REGIME_UNKNOWN not probed (yet, or under valgrind), or no answer
 * Only SM_REGIME_MMAP lets new pages be faulted in from user space.
 */
enum { SM_REGIME_UNKNOWN = 0, SM_REGIME_MMAP = 1, SM_REGIME_FAULT = 2 };
int sm_fault_regime(void);
/* Tests (through the static library, not exported by the .so): make
 * sm_fault_regime() return regime from now on; any other value (-1) returns
 * to the probed one.  Returns the previous forced value or -1. */
int sm_fault_regime_force(int regime);
/* Tests: regime probes asked of memfd_secret children so far. */
int sm_fault_regime_probes(void);
/* Tests: memfd_secret calls the library made so far (probes and creations;
 * not the raw secretmem_memfd()). */
int sm_memfd_calls(void);
/* Tests: of those, the calls made in-process (the thread was the process's
 * only one and had no seccomp filter) rather than in a child. */
int sm_memfd_inline_calls(void);

/* ---- os.c ------------------------------------------------------------- */

enum os_op {
	OS_OP_MMAP = 0,   /* every mmap/mremap of the OS layer            */
	OS_OP_MEMFD,      /* memfd_secret(2)                               */
	OS_OP_FTRUNCATE,  /* ftruncate(2) on a secret fd                   */
	OS_OP_FAULT_IN,   /* faulting new pages in (secret: kernel-side read
	                     or user-space touch, fallback: mlock)         */
	OS_OP_COUNT
};

/*
 * Fault injection for tests: the nth call (1 = the next) of op fails with
 * -err; with persist, that call and every later one fail.  nth 0 disarms.
 * Reached by tests through the static library (not exported by the .so).
 */
void sm_inject_fault(int op, long nth, int err, int persist);
/* Calls of op seen since the last sm_inject_fault(op, ...) or process start. */
long sm_inject_count(int op);
/* Internal: returns -err if the injection for op fires now, else 0. */
int os_injected(int op);

size_t os_page_size(void);
/* Physical memory of the machine in bytes (SIZE_MAX if unknown). */
size_t os_physical_memory(void);
/* Anonymous PROT_NONE reservation of len bytes aligned to align (a power of
 * two, >= page size). */
int os_reserve(size_t len, size_t align, void **out);
/* Map fd's bytes [off, off+len) (MAP_SHARED, read-write, off a multiple of
 * the page size) over [addr, addr+len) of the caller's reservation: 0;
 * -errno with the range still reserved; -EADDRNOTAVAIL when the range is
 * not the caller's any more (a refused mapping left a hole, and another
 * thread mapped there: os.c), which it must then neither map nor unmap. */
int os_map_shared_in(void *addr, size_t len, int fd, size_t off);
/* Map fd (MAP_SHARED, read-write) anywhere. */
int os_map_shared(size_t len, int fd, void **out);
/* Private anonymous read-write memory over [addr, addr+len). */
int os_map_anon_fixed(void *addr, size_t len);
/* Put [addr, addr+len) back to an inaccessible reservation. */
int os_map_none_fixed(void *addr, size_t len);
/* Private anonymous read-write memory anywhere (allocator metadata). */
int os_map_anon(size_t len, void **out);
/* Move the mapping at from over to (same length), replacing what is there. */
int os_remap_fixed(void *from, size_t len, void *to);
/* PROT_NONE reservation at exactly [addr, addr+len) unless something is
 * mapped there (-EEXIST); never replaces a mapping. */
int os_map_none_noreplace(void *addr, size_t len);
/* A second mapping of the shared pages at [addr, addr+len), anywhere. */
int os_map_dup(void *addr, size_t len, void **out);
int os_unmap(void *addr, size_t len);
int os_protect(void *addr, size_t len, int prot);
int os_advise(void *addr, size_t len, int advice);
/* os_advise for memory being made (MADV_DONTFORK of a new secret mapping):
 * -EPERM once a seccomp filter stops new secret memory (callgate.c). */
int os_advise_new(void *addr, size_t len, int advice);
int os_truncate(int fd, size_t len);
int os_lock(void *addr, size_t len);
/* Lock [addr, addr+len) as its pages are: those resident now, the others
 * at their first touch (MLOCK_ONFAULT: nothing is faulted in, so pages a
 * guard makes inaccessible are no error).  A fork child's copy of fallback
 * memory: mlock's fault-in of the range stopped at a large block's guard
 * page (ENOMEM). */
int os_lock_resident(void *addr, size_t len);
/*
 * Fault [addr, addr+len) of a fresh (all-zero) secret mapping in.  Unless
 * sm_fault_regime() is SM_REGIME_MMAP: from the kernel side (a read from
 * /dev/zero into it), so that a refused memory-lock charge (fault-time
 * regime) becomes -ENOMEM instead of SIGBUS in user space.  In the mmap-time
 * regime, whose charge was taken by the mmap: one write of 0 per page from
 * user space, which spares the system calls, the kernel's second write of
 * each page and a second exit on the first access.  Both paths pass the
 * OS_OP_FAULT_IN injection.
 */
int os_fault_in_secret(void *addr, size_t len);
/*
 * Call fn(arg, p, n) for each run of [addr, addr+len) whose pages hold a
 * page of memory (mincore: for a secret mapping, a page of its file), the
 * run clipped to [addr, addr+len), in address order.  A page mincore cannot
 * answer for counts as one that does, so a caller that zeroes or copies
 * what fn is given never skips data; under a seccomp filter
 * (sm_filter_may_exist) mincore is not asked and fn gets the whole range.
 * No fault injection: it changes nothing.
 */
void os_each_resident(void *addr, size_t len, void (*fn)(void *arg, unsigned char *p, size_t n), void *arg);
/* Heap mode: the program's own calls, straight to the kernel with its
 * arguments (never through the module's interposers); 0 or -errno.  flags
 * of os_pass_mlock: mlock2's (0: mlock). */
int os_pass_mmap(void *addr, size_t len, int prot, int flags, int fd, long off, void **out);
int os_pass_mremap(void *old, size_t old_len, size_t len, int flags, void *to, void **out);
int os_pass_munmap(void *addr, size_t len);
int os_pass_mprotect(void *addr, size_t len, int prot);
int os_pass_madvise(void *addr, size_t len, int advice);
int os_pass_mlock(const void *addr, size_t len, int flags);
int os_pass_munlock(const void *addr, size_t len);
int os_pass_pkey_mprotect(void *addr, size_t len, int prot, int pkey);
/* Inside libsecretmem-heap.so: 1, set by the module at start-up, so that
 * this layer's own calls go to the kernel and not to the module's. */
extern int sm_os_direct;
/* Tests: pages faulted in by os_fault_in_secret since process start, by
 * user-space touch and from the kernel side. */
void sm_fault_in_counts(size_t *touched, size_t *kernel);

/* ---- maps.c ----------------------------------------------------------- */

/* One line of /proc/self/maps. */
struct sm_mapline {
	uintptr_t lo, hi;   /* [lo, hi) */
	int prot;           /* PROT_READ | PROT_WRITE | PROT_EXEC */
	int shared;         /* 's' */
	int nodev;          /* device 00:xx (no disk's file system) */
	unsigned long inode;
	const char *path;   /* "" for anonymous memory; valid during the call */
};
/*
 * Call fn for each line of /proc/self/maps, in address order, until it
 * returns non-zero (then that value is returned); 0 at the end, -errno when
 * the file cannot be read.  buf (len bytes, 4 KiB at least) is the reading
 * buffer: raw system calls, no allocation.
 */
int sm_maps_walk(char *buf, size_t len, int (*fn)(const struct sm_mapline *m, void *arg), void *arg);
/* 1 if the line is a mapping of secret memory ("/secretmem (deleted)"). */
int sm_mapline_secret(const struct sm_mapline *m);

/* ---- region.c --------------------------------------------------------- */

struct region {
	struct region *next, *prev; /* list of all live regions (fork handling) */
	uintptr_t base;             /* reservation start (guard below data)     */
	size_t total;               /* reservation length                       */
	unsigned char *data;        /* first usable byte, page aligned          */
	size_t size;                /* usable bytes, page multiple              */
	size_t faulted;             /* bytes from data on that are ready: faulted
				       in, or (lazy) left to the first touch */
	int backend;                /* enum secretmem_backend                   */
	int access;                 /* enum secretmem_access                    */
	int dropped;                /* pages removed in a child (fork drop)     */
	int lazy;                   /* ready pages fault at their first touch
				       (REGION_LAZY in the mmap-time regime) */
	/* adopted ranges (adopt.c): a program's locked memory made secret */
	int adopted;                /* 1: not the library's; its own totals     */
	int wipe;                   /* MADV_WIPEONFORK: a child gets zeros      */
	int dontfork;               /* MADV_DONTFORK: a child gets nothing      */
	unsigned char *prot;        /* each page's PROT_* bits (NULL: all read-
				       write); access is then READWRITE      */
	/* the owner's figures this region counts in while it is listed:
	 * changed with the list, under its lock (region_create's tally) */
	_Atomic size_t *tally_count, *tally_bytes;
};

/* An owner's count of regions and their bytes, kept by the region layer:
 * a fork's child (the list lock held across it) finds them agreeing with
 * its list of regions, whatever other threads were doing. */
struct region_tally {
	_Atomic size_t *count, *bytes;
};

/*
 * How a new region's pages come in (region_create's fill):
 *   REGION_NOW    every page faulted in by region_create;
 *   REGION_LAZY   when region_ready_to asks: faulted in then, except with
 *                 the secret backend where the kernel charges the
 *                 memory-lock limit at mmap time (SM_REGIME_MMAP): there it
 *                 only marks pages ready and each faults at its first
 *                 touch, as anonymous memory does (the charge was taken by
 *                 the mmap, so a touch cannot raise SIGBUS for the limit).
 *                 r->lazy says which.
 */
enum { REGION_NOW = 1, REGION_LAZY = 2 };
/*
 * Create a region of size bytes (page multiple) whose data ends one guard
 * page below the end of an align-aligned reservation; everything below the
 * data in the reservation is inaccessible.  fill: see above.
 * require_secret: never fall back.  The region is registered for fork
 * handling, and counted in tally (NULL: in none) while it is.  Returns 0
 * or -ENOMEM, -EINVAL, -ENOSYS, -EPERM, -EMFILE.
 */
int region_create(struct region *r, size_t size, size_t align, int fill, int require_secret,
		  const struct region_tally *tally);
/* Fault in [data, data+upto) if not yet (upto rounded to pages); -ENOMEM. */
int region_fault_to(struct region *r, size_t upto);
/* [data, data+upto) ready for use: marked (r->lazy) or faulted in; -ENOMEM. */
int region_ready_to(struct region *r, size_t upto);
/* Zero [p, p+len) of region r: only the pages that hold memory if r->lazy
 * (the others read as zero and stay untouched). */
void region_zero(const struct region *r, void *p, size_t len);
int region_protect(struct region *r, int access);
/* Zeroize the ready part, unregister, unmap.  Returns 0 or -errno. */
int region_destroy(struct region *r);
/* Backend new regions get now (after the probe and the REQUIRE option). */
int region_default_backend(void);
/*
 * For fork.c: hold the list of regions across a fork, and walk it (NULL
 * gives the first region; NULL at the end).  The pages of the secret
 * backend are MADV_DONTFORK from their creation on (see fork.c).
 */
void region_fork_lock(void);
void region_fork_unlock(void);
/* In a raw child: the list lock initialized again. */
void region_fork_reinit(void);
struct region *region_fork_next(struct region *r);
/* adopt.c, holding the list lock (region_fork_lock): put an adopted range on
 * the list or take it off; its bytes are not in the totals below. */
void region_link_locked(struct region *r);
void region_unlink_locked(struct region *r);
/* Number of registered regions and their mapped bytes. */
void region_totals(size_t *count, size_t *bytes);
/* Mapped bytes of the registered regions by backend. */
void region_backend_totals(size_t *secret, size_t *fallback);
/* Called (when set) with the new totals of region_backend_totals() each time
 * a region is registered or unregistered, under the list lock: the heap
 * module's figures for `secretmem status`.  Must not take locks or allocate. */
extern void (*sm_region_observer)(size_t secret, size_t fallback);
/* Registered regions with the fallback backend (read without a lock). */
extern _Atomic size_t sm_fallback_regions;
/*
 * Failure causes (enum secretmem_failure): the region layer records why it
 * could not give secret memory (then fell back, or failed), with the size
 * asked for.  sm_failure_hint() is called by the public API when it returns
 * an error: at the memory-lock limit it prints one hint with the figures,
 * once per process.
 */
void sm_failure_note(int cause, size_t bytes);
int sm_failure_last(size_t *bytes);
void sm_failure_hint(void);
/* No hint from now on: the heap and preload modules print one warning of
 * their own for a refusal, with its cause and figures. */
void sm_failure_hint_off(void);
/* Non-zero while this thread makes an attempt whose failure is not the
 * caller's (secretmem_realloc's room to grow): nothing is noted or hinted. */
extern __thread int sm_failure_quiet __attribute__((tls_model("initial-exec")));

/* ---- api.c ------------------------------------------------------------ */

/* Live regions of secretmem_region_create() and their usable bytes. */
void sm_api_region_totals(size_t *count, size_t *bytes);

/* ---- tcache.c --------------------------------------------------------- */

/* For fork.c: the thread-cache lock, and the reset of the caches and
 * counters when the child's heap starts empty. */
void sm_alloc_fork_lock(void);
void sm_alloc_fork_unlock(void);
void sm_alloc_fork_child_empty(void);
/* In a raw child: the thread-cache lock initialized again (its holder may
 * be a thread this process does not have). */
void sm_alloc_fork_reinit(void);

/* ---- rawchild.c ------------------------------------------------------- */

/*
 * The gate (rawchild.c): open: malloc's fast path may pop from the thread
 * cache (no fallback region exists, and this process's heap is its own);
 * setup: 0 only in a child that did not run the library's fork handlers.
 * Both live in a MADV_WIPEONFORK page once the allocator started.
 */
struct sm_gate {
	_Atomic int open, setup;
};
/* Published once (release) when the page exists; read with acquire (a
 * plain load on x86-64). */
extern struct sm_gate *_Atomic sm_gate;
static inline struct sm_gate *sm_gate_get(void)
{
	return atomic_load_explicit(&sm_gate, memory_order_acquire);
}
/* At the allocator's start-up: the gate's page. */
void sm_gate_init(void);
/* The count of fallback regions changed (region list lock held), or setup. */
void sm_gate_update(void);
/* fork.c: the prepare handler began (every lock held) / a handler ended it. */
void sm_gate_fork_begin(void);
void sm_gate_fork_end(void);
/* 1 in a child that did not run the library's fork handlers and has not
 * been reset yet. */
int sm_gate_raw_child(void);
/* In the slow paths: reset a raw child's heap before going on. */
void sm_gate_check(void);

/* ---- adopt.c ---------------------------------------------------------- */

/*
 * Heap mode's locked memory (heap/mmcalls.c).  Each call takes the region
 * list lock; 0 or -errno as the kernel's call would give.
 *
 * sm_adopt_lock: the program's mlock (flags 0) or mlock2 (flags) of
 * [addr, addr+len): its private anonymous mappings become secret memory at
 * the same address, contents and protections kept (fresh: just mapped, all
 * zero); secret memory in it stays as it is; the rest, and any part that
 * could not be made secret, is locked by the kernel.  by: the object that
 * asked (for reports; a string that lives as long as the process).
 */
int sm_adopt_lock(const void *addr, size_t len, int flags, int fresh, const char *by);
/* The -errno why an adoption could not be made since the last call (0: none
 * failed), taken: the next call says 0 until another fails. */
int sm_adopt_last_refusal(void);
/* munlock: secret memory stays secret (and locked); the rest is unlocked. */
int sm_adopt_unlock(const void *addr, size_t len);
/*
 * The program's munmap, mprotect, or mmap/mremap over a fixed address: the
 * call and the change of the records are one step for fork (whose copy
 * reads every adopted range) and for an adoption in another thread (which
 * copies the range): sm_adopt_hold() before the call (it takes the list
 * lock; returns what sm_adopt_unhold() needs), sm_adopt_unmapped /
 * sm_adopt_protected after its success (with the lock held),
 * sm_adopt_unhold() last.
 */
int sm_adopt_hold(void);
void sm_adopt_unhold(int held);
void sm_adopt_unmapped(const void *addr, size_t len);
void sm_adopt_protected(const void *addr, size_t len, int prot);
/* After a call that failed half-way (mprotect over a hole: the kernel
 * changed the part before it), the records read again from the kernel,
 * with the lock held (sm_adopt_hold). */
void sm_adopt_resync(void);
/* madvise: on secret memory MADV_DONTNEED and MADV_FREE zero the pages,
 * MADV_WIPEONFORK / KEEPONFORK and MADV_DONTFORK / DOFORK mark adopted
 * ranges (on the heap's own memory they change nothing: its fork policy
 * stays), hints the kernel refuses for secret memory are ignored; the rest
 * goes to the kernel. */
int sm_adopt_advise(void *addr, size_t len, int advice);
/* mremap: 1 when no adopted range is involved (the caller passes the call
 * on), else 0 with the new address in *out, or -errno. */
int sm_adopt_remap(void *old, size_t old_len, size_t new_len, int flags, void *to, void **out);
/* The whole pages of [addr, addr+len) that are adopted go back to ordinary
 * memory, contents kept, but those of [dead, dead+dead_len), which come
 * back zero (NULL, 0: none): before a block of glibc's goes back to it. */
void sm_adopt_release(const void *addr, size_t len, const void *dead, size_t dead_len);
/* 1 if every page of [addr, addr+len) is adopted and held locked by the
 * program; then *by (when not NULL) is the object that locked its first. */
int sm_adopt_locked(const void *addr, size_t len, const char **by);
/* Adopted ranges now, and their bytes; each with the object that asked. */
void sm_adopt_totals(size_t *ranges, size_t *bytes);
void sm_adopt_each(void (*fn)(const void *addr, size_t len, const char *by, void *arg), void *arg);
/* Number of adopted ranges (read without the lock: 0 means none). */
extern _Atomic size_t sm_adopt_count;
/* fork.c, list lock held: forget what is no longer secret memory (unmapped
 * behind the module's back); make r's unreadable pages readable for the
 * copy (on) and back; give a child's copy r's page protections. */
void sm_adopt_fork_prune(void);
void sm_adopt_fork_readable(const struct region *r, int on);
int sm_adopt_fork_apply(const struct region *r);

/* ---- fork.c ----------------------------------------------------------- */

/* Register the library's fork handlers once (idempotent, thread-safe). */
void sm_fork_handlers_install(void);
/* Bytes of the memory-lock limit the allocator's chunks leave free for
 * fork()'s copy window under the copy policy (0 under share and drop). */
size_t sm_fork_room(size_t limit);
/* From now on a child whose copy cannot be made exits in the library's
 * child handler (status 127) instead of running without its secrets (heap
 * mode: its fork() then reaps it and fails). */
void sm_fork_set_strict(void);
/* on: this thread's fork() is heap mode's, which reaps such a child and
 * says why fork() failed; off: the child says why it ends (a fork another
 * function of the C library makes). */
void sm_fork_reaped(int on);
/* Why a fork's copy could not be made, in words, for its -errno. */
const char *sm_fork_error_text(int err);
/* The calling thread's last fork() under the copy policy: 0, or -errno why
 * the copy could not be made; *need: the bytes of secret memory it copies. */
int sm_fork_last_error(size_t *need);
/* In a raw child (rawchild.c): every lock initialized again, and the heap
 * and regions dropped as by the drop policy's child handler. */
void sm_fork_raw_child_reset(void);
/*
 * No cancellation point may act while a library lock is held: code that
 * takes locks and may reach one (open, read, close, write, waitpid) runs
 * between sm_cancel_off() and sm_cancel_restore(old).
 */
int sm_cancel_off(void);
void sm_cancel_restore(int old);

#endif /* SECRETMEM_INTERNAL_H */
