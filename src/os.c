/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * os.c - the OS layer: the only code in libsecretmem that calls mmap,
 * mremap, munmap, mprotect, madvise, ftruncate, mlock and mincore.  Everything above
 * speaks in pages and regions.  Every function returns 0 or -errno and
 * leaves errno as it found it.
 *
 * Fault injection (tests): each operation class can be told to fail on its
 * nth call, once or from then on, to prove that every failure the kernel can
 * return turns into a clean error above.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <unistd.h>
#include "internal.h"

struct injection {
	atomic_long countdown; /* fires when it reaches 0 after a decrement */
	atomic_long calls;
	atomic_int err;
	atomic_int persist;
	atomic_int fired;
};

static struct injection inject[OS_OP_COUNT];
static atomic_int inject_armed;

void sm_inject_fault(int op, long nth, int err, int persist)
{
	if (op < 0 || op >= OS_OP_COUNT)
		return;
	atomic_store(&inject[op].calls, 0);
	atomic_store(&inject[op].err, err);
	atomic_store(&inject[op].persist, persist);
	atomic_store(&inject[op].fired, 0);
	atomic_store(&inject[op].countdown, nth);
	if (nth > 0)
		atomic_store(&inject_armed, 1);
}

long sm_inject_count(int op)
{
	if (op < 0 || op >= OS_OP_COUNT)
		return 0;
	return atomic_load(&inject[op].calls);
}

int os_injected(int op)
{
	struct injection *in = &inject[op];

	atomic_fetch_add_explicit(&in->calls, 1, memory_order_relaxed);
	if (SM_LIKELY(!atomic_load_explicit(&inject_armed, memory_order_relaxed)))
		return 0;
	if (atomic_load(&in->fired) && atomic_load(&in->persist))
		return -atomic_load(&in->err);
	if (atomic_load(&in->countdown) <= 0)
		return 0;
	if (atomic_fetch_sub(&in->countdown, 1) == 1) {
		atomic_store(&in->fired, 1);
		return -atomic_load(&in->err);
	}
	return 0;
}

/*
 * The calls themselves.  Inside libsecretmem-heap.so the program's mmap,
 * munmap, mremap, mprotect and madvise are the module's own (heap/mmcalls.c:
 * locked memory made secret); there this layer's calls go straight to the
 * kernel (sm_os_direct, set by the module before its first call), never
 * through those.  Everywhere else they are the C library's, which a
 * sanitizer's runtime follows.
 */
int sm_os_direct;

/*
 * Each system call here is one of the call gate's sections (callgate.c):
 * it is not in flight while another thread installs a seccomp filter for
 * every thread.  Those that make new secret memory (a secret file's size
 * and mapping, a copy's second mapping, the mark of new memory
 * (os_advise_new), the fallback's lock, the fault-in of the other regime)
 * are refused with -EPERM at the gate once a filter stops such calls
 * (sm_calls_enter_new); the others (reservations, unmapping, protections,
 * advice on memory the library has: glibc's own calls too) are made.  A long run (a fault-in,
 * a lock) is a section per piece (PIECE), each refused once the filter is
 * in: an install waits for at most a second (callgate.c).
 */
#define PIECE ((size_t)4 << 20)
static void *sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	void *p;

	sm_calls_enter();
	if (sm_os_direct)
		p = (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
	else
		p = mmap(addr, len, prot, flags, fd, off);
	sm_calls_leave();
	if (!p) {
		/* a filter's made-up success (ERRNO(0)): nothing was mapped
		 * (the kernel never maps page 0 for us) */
		errno = EPERM;
		return MAP_FAILED;
	}
	return p;
}

static int sys_munmap(void *addr, size_t len)
{
	sm_calls_enter();
	int rc = sm_os_direct ? (int)syscall(SYS_munmap, addr, len) : munmap(addr, len);
	sm_calls_leave();
	return rc;
}

static void *sys_mremap(void *old, size_t old_len, size_t len, int flags, void *to)
{
	void *p;

	sm_calls_enter();
	if (sm_os_direct)
		p = (void *)syscall(SYS_mremap, old, old_len, len, flags, to);
	else
		p = mremap(old, old_len, len, flags, to);
	sm_calls_leave();
	return p;
}

static int sys_mprotect(void *addr, size_t len, int prot)
{
	sm_calls_enter();
	int rc = sm_os_direct ? (int)syscall(SYS_mprotect, addr, len, prot) : mprotect(addr, len, prot);
	sm_calls_leave();
	return rc;
}

static int sys_madvise(void *addr, size_t len, int advice)
{
	sm_calls_enter();
	int rc = sm_os_direct ? (int)syscall(SYS_madvise, addr, len, advice) : madvise(addr, len, advice);
	sm_calls_leave();
	return rc;
}

static int neg_errno(void)
{
	int e = errno;
	return e ? -e : -EIO;
}

size_t os_page_size(void)
{
	static atomic_size_t cached;
	size_t ps = atomic_load_explicit(&cached, memory_order_relaxed);

	if (SM_UNLIKELY(!ps)) {
		long v = sysconf(_SC_PAGESIZE);
		ps = v > 0 ? (size_t)v : 4096;
		atomic_store(&cached, ps);
	}
	return ps;
}

size_t os_physical_memory(void)
{
	struct sysinfo si;
	int saved = errno;

	if (sm_calls_enter_new())
		return SIZE_MAX; /* no bound from here: the next call refuses */
	int rc = sysinfo(&si);
	sm_calls_leave();
	if (rc != 0) {
		errno = saved;
		return SIZE_MAX;
	}
	unsigned long long total = (unsigned long long)si.totalram * (si.mem_unit ? si.mem_unit : 1);
	return total > SIZE_MAX ? SIZE_MAX : (size_t)total;
}

#define RESERVE_TRIES 8

/* PROT_NONE reservation of exactly [addr, addr+len) if that is free; 0 or
 * -errno (-EEXIST when taken). */
static int reserve_at(uintptr_t addr, size_t len)
{
	void *p = sys_mmap((void *)addr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE,
		       -1, 0);

	if (p == MAP_FAILED)
		return neg_errno();
	if ((uintptr_t)p != addr) { /* a kernel before 4.17 took it as a hint */
		sys_munmap(p, len);
		return -EEXIST;
	}
	return 0;
}

/*
 * An aligned reservation maps exactly len bytes when it can: first where
 * the kernel puts len bytes, if that is aligned, else at the aligned
 * addresses below it (the kernel fills address space from the top down, so
 * the free space lies there), up to RESERVE_TRIES of them, and the one
 * above.  Only then a span of len + align, trimmed.  Under mlockall(MCL_FUTURE) every new mapping, even PROT_NONE,
 * counts against the memory-lock limit at mmap time: a 2 MiB span for a
 * 64 KiB chunk was charged 4 MiB and refused long before the limit.
 */
int os_reserve(size_t len, size_t align, void **out)
{
	int saved = errno, rc = os_injected(OS_OP_MMAP);
	size_t ps = os_page_size();

	if (rc)
		return rc;
	if (align < ps)
		align = ps;
	if (len == 0 || (align & (align - 1)) || len > SIZE_MAX - align)
		return -EINVAL;
	if (align > ps) {
		void *q = sys_mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (q != MAP_FAILED) {
			uintptr_t a = (uintptr_t)q, down = a & ~(uintptr_t)(align - 1), up = down + align;
			if (a == down) {
				errno = saved;
				*out = q;
				return 0;
			}
			sys_munmap(q, len);
			for (int k = 0; k <= RESERVE_TRIES; k++) {
				uintptr_t at = k < RESERVE_TRIES ? down - (uintptr_t)k * align : up;
				if (at > down && k < RESERVE_TRIES)
					break; /* wrapped below 0 */
				if (reserve_at(at, len) == 0) {
					errno = saved;
					*out = (void *)at;
					return 0;
				}
			}
		}
	}
	size_t span = len + (align > ps ? align : 0);
	void *p = sys_mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		rc = neg_errno();
		errno = saved;
		return rc;
	}
	uintptr_t start = (uintptr_t)p, aligned = (start + align - 1) & ~(uintptr_t)(align - 1);
	if (aligned > start)
		sys_munmap(p, aligned - start);
	if (start + span > aligned + len)
		sys_munmap((void *)(aligned + len), start + span - (aligned + len));
	errno = saved;
	*out = (void *)aligned;
	return 0;
}

/* One mmap with the injection hook; the result in *out when out is set. */
static int map_at(void *addr, size_t len, int prot, int flags, int fd, size_t off, void **out)
{
	int saved = errno, rc = os_injected(OS_OP_MMAP);

	if (rc)
		return rc;
	void *p = sys_mmap(addr, len, prot, flags, fd, (off_t)off);
	if (p == MAP_FAILED) {
		rc = neg_errno();
		errno = saved;
		return rc;
	}
	if (out)
		*out = p;
	return 0;
}

static int map(void *addr, size_t len, int prot, int flags, int fd, void **out)
{
	return map_at(addr, len, prot, flags, fd, 0, out);
}

/* A secret file's mapping: new secret memory, refused at the gate once a
 * filter stops it. */
static int map_file(void *addr, size_t len, int flags, int fd, size_t off, void **out)
{
	int rc = sm_calls_enter_new();

	if (rc)
		return rc;
	rc = map_at(addr, len, PROT_READ | PROT_WRITE, MAP_SHARED | flags, fd, off, out);
	sm_calls_leave();
	return rc;
}

/* The first line of /proc/self/maps that reaches [lo, hi): ours if one
 * anonymous inaccessible private mapping covers the range whole. */
struct still_ours {
	uintptr_t lo, hi;
	int ours;
};

static int check_reserved(const struct sm_mapline *m, void *arg)
{
	struct still_ours *w = arg;

	if (m->hi <= w->lo)
		return 0;
	w->ours = m->lo <= w->lo && m->hi >= w->hi && m->prot == 0 && !m->shared && !m->path[0];
	return 1;
}

/*
 * A MAP_FIXED mmap that fails may have unmapped what was there: memfd_secret's
 * mmap refused at the memory-lock limit (EAGAIN) leaves a hole where the
 * caller's reservation was (Linux 6.18, measured).  Another thread's mmap
 * (glibc's for a large block) could land in that hole, and the caller's
 * clean-up, or its next MAP_FIXED try, then destroyed that thread's memory
 * (t_heap_sandbox_tsync: SIGSEGV in glibc's free, 5 runs in 60).  So after
 * a failure the range is reserved again with MAP_FIXED_NOREPLACE, which
 * never replaces a mapping; where something is mapped there, /proc/self/maps
 * tells whether it is still the reservation (the call failed before it
 * unmapped anything) or another thread's.  The mapping itself stays one
 * MAP_FIXED call: unmapping first made the range free for a moment on every
 * call, and other threads' mmaps took it (with a thread mapping and
 * unmapping 256 KiB, 55 and 577 of 2,000 region creations failed in two
 * runs, without any limit; t_core_map_refused holds it).
 */
int os_map_shared_in(void *addr, size_t len, int fd, size_t off)
{
	int saved = errno, rc = sm_calls_enter_new();

	if (rc)
		return rc;
	rc = os_injected(OS_OP_MMAP); /* before anything changes */
	if (!rc) {
		void *p = sys_mmap(addr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, (off_t)off);
		if (p == MAP_FAILED) {
			rc = neg_errno();
			int again = os_map_none_noreplace(addr, len);
			if (again == -EEXIST) {
				char buf[4096];
				struct still_ours w = { (uintptr_t)addr, (uintptr_t)addr + len, 0 };
				if (sm_maps_walk(buf, sizeof(buf), check_reserved, &w) < 0 || !w.ours)
					rc = -EADDRNOTAVAIL; /* another thread's mapping is there */
			} else if (again) {
				rc = -EADDRNOTAVAIL; /* a hole nobody holds: not the caller's either */
			}
		}
	}
	sm_calls_leave();
	errno = saved;
	return rc;
}

int os_map_anon_fixed(void *addr, size_t len)
{
	return map(addr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, NULL);
}

int os_map_none_fixed(void *addr, size_t len)
{
	/* not subject to injection: used on error and teardown paths that
	 * must not fail for a simulated reason */
	int saved = errno;
	void *p = sys_mmap(addr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
	int rc = p == MAP_FAILED ? neg_errno() : 0;

	errno = saved;
	return rc;
}

/*
 * PROT_NONE reservation exactly at [addr, addr+len) if nothing is mapped
 * there: -EEXIST when any of it is taken (never replaces a mapping).  Not
 * subject to injection, like os_map_none_fixed.
 */
int os_map_none_noreplace(void *addr, size_t len)
{
	int saved = errno, rc = 0;
	void *p = sys_mmap(addr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);

	if (p == MAP_FAILED) {
		rc = neg_errno();
	} else if (p != addr) { /* a kernel older than 4.17 took it as a hint */
		sys_munmap(p, len);
		rc = -EEXIST;
	}
	errno = saved;
	return rc;
}

/* A second mapping of the same shared pages as [addr, addr+len), anywhere
 * (mremap with old size 0), with the same protection. */
int os_map_dup(void *addr, size_t len, void **out)
{
	int saved = errno, rc = os_injected(OS_OP_MMAP);

	if (rc || (rc = sm_calls_enter_new())) /* a second mapping of a secret file */
		return rc;
	void *p = sys_mremap(addr, 0, len, MREMAP_MAYMOVE, NULL);
	if (p == MAP_FAILED)
		rc = neg_errno();
	sm_calls_leave();
	errno = saved;
	if (!rc)
		*out = p;
	return rc;
}

int os_map_shared(size_t len, int fd, void **out)
{
	return map_file(NULL, len, 0, fd, 0, out);
}

int os_map_anon(size_t len, void **out)
{
	return map(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, out);
}

int os_remap_fixed(void *from, size_t len, void *to)
{
	int saved = errno, rc = os_injected(OS_OP_MMAP);

	if (rc)
		return rc;
	void *p = sys_mremap(from, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, to);
	if (p == MAP_FAILED) {
		rc = neg_errno();
		errno = saved;
		return rc;
	}
	return 0;
}

int os_unmap(void *addr, size_t len)
{
	int saved = errno, rc = sys_munmap(addr, len) ? neg_errno() : 0;

	errno = saved;
	return rc;
}

int os_protect(void *addr, size_t len, int prot)
{
	int saved = errno, rc = sys_mprotect(addr, len, prot) ? neg_errno() : 0;

	errno = saved;
	return rc;
}

int os_advise(void *addr, size_t len, int advice)
{
	int saved = errno, rc = sys_madvise(addr, len, advice) ? neg_errno() : 0;

	errno = saved;
	return rc;
}

int os_advise_new(void *addr, size_t len, int advice)
{
	int rc = sm_calls_enter_new();

	if (rc)
		return rc;
	rc = os_advise(addr, len, advice);
	sm_calls_leave();
	return rc;
}

int os_truncate(int fd, size_t len)
{
	int saved = errno, rc = os_injected(OS_OP_FTRUNCATE);

	if (rc || (rc = sm_calls_enter_new()))
		return rc;
	rc = ftruncate(fd, (off_t)len) ? neg_errno() : 0;
	if (!rc) {
		/* the size it has: a filter's made-up success (ERRNO(0))
		 * leaves the file empty, and a touch of its mapping would
		 * raise SIGBUS (st zeroed: such an fstat fills nothing) */
		struct stat st;
		memset(&st, 0, sizeof(st));
		if (fstat(fd, &st) != 0 || st.st_size != (off_t)len)
			rc = -EPERM;
	}
	sm_calls_leave();
	errno = saved;
	return rc;
}

int os_lock(void *addr, size_t len)
{
	int saved = errno, rc = os_injected(OS_OP_FAULT_IN);

	if (rc)
		return rc;
	/* the raw call: AddressSanitizer's mlock() interceptor returns 0
	 * without locking anything */
	size_t off = 0;
	for (; off < len && !rc; off += PIECE) {
		if ((rc = sm_calls_enter_new()))
			break;
		rc = syscall(SYS_mlock, (char *)addr + off, len - off < PIECE ? len - off : PIECE) ? neg_errno() : 0;
		sm_calls_leave();
	}
	if (rc && rc != -EPERM && off > PIECE) {
		/* the limit refused a later piece: nothing stays locked, as
		 * after one call (a refusal at the gate leaves it to the
		 * caller, which unmaps: munlock may be what the filter stops) */
		sm_calls_enter();
		syscall(SYS_munlock, addr, off - PIECE);
		sm_calls_leave();
	}
	errno = saved;
	return rc;
}

#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT 1
#endif
#ifndef SYS_mlock2
#define SYS_mlock2 __NR_mlock2
#endif
int os_lock_resident(void *addr, size_t len)
{
	int saved = errno, rc = os_injected(OS_OP_FAULT_IN);

	if (rc || (rc = sm_calls_enter_new()))
		return rc;
	rc = syscall(SYS_mlock2, addr, len, MLOCK_ONFAULT) ? neg_errno() : 0;
	if (rc == -ENOSYS || rc == -EPERM || rc == -EINVAL) {
		/* no mlock2 (before Linux 4.4) or a filter that refuses it:
		 * mlock marks the whole range locked before it faults it in,
		 * so its ENOMEM at a guard page leaves the range locked */
		rc = syscall(SYS_mlock, addr, len) ? neg_errno() : 0;
		if (rc == -ENOMEM)
			rc = 0;
	}
	sm_calls_leave();
	errno = saved;
	return rc;
}

static atomic_size_t fault_touched, fault_kernel;

void sm_fault_in_counts(size_t *touched, size_t *kernel)
{
	*touched = atomic_load(&fault_touched);
	*kernel = atomic_load(&fault_kernel);
}

/* One write of 0 per page: the pages are fresh, so already zero.  Not
 * instrumented: the allocator poisons unused slot memory for
 * AddressSanitizer, and this is the page's first touch, not a use. */
#if defined(__clang__) || defined(__GNUC__)
__attribute__((no_sanitize_address, noinline))
#endif
static void touch_pages(unsigned char *p, size_t len, size_t ps)
{
	for (size_t off = 0; off < len; off += ps)
		*(volatile unsigned char *)(p + off) = 0;
}

int os_fault_in_secret(void *addr, size_t len)
{
	int saved = errno, rc = os_injected(OS_OP_FAULT_IN);
	size_t ps = os_page_size(), pages = (len + ps - 1) / ps;

	if (rc)
		return rc;
	if (sm_fault_regime() == SM_REGIME_MMAP) {
		/* mmap-time regime: the memory-lock charge was taken (or
		 * refused) by the mmap, so this touch cannot raise SIGBUS for
		 * the limit; a memory cgroup's OOM killer acts on a touch and
		 * on a read alike */
		touch_pages(addr, len, ps);
		atomic_fetch_add_explicit(&fault_touched, pages, memory_order_relaxed);
		return 0;
	}
	/*
	 * The kernel writes the zeroes with copy_to_user: a page whose
	 * memory-lock charge is refused (kernels with fault-time accounting)
	 * makes read() fail with EFAULT, where a user-space touch would have
	 * raised SIGBUS.  The fd is opened per call so no fd stays open.
	 * Raw system calls: open, read and close are cancellation points, and
	 * this runs with allocator locks held.  One section of the call gate
	 * (callgate.c), refused once a filter stops new secret memory.
	 */
	if ((rc = sm_calls_enter_new()))
		return rc;
	long fd = syscall(SYS_openat, AT_FDCWD, "/dev/zero", O_RDONLY | O_CLOEXEC);
	sm_calls_leave();
	unsigned char *p = addr;

	/* no /dev/zero (a bare chroot): getrandom also writes from the kernel
	 * side; the random bytes are overwritten below */
	size_t most = fd >= 0 ? PIECE : 4096;
	while (len > 0 && !(rc = sm_calls_enter_new())) {
		size_t step = len > most ? most : len;
		long n = fd >= 0 ? syscall(SYS_read, (int)fd, p, step) : syscall(SYS_getrandom, p, step, 0);
		int e = errno;
		sm_calls_leave();
		if (n < 0 && e == EINTR)
			continue;
		if (n <= 0) {
			rc = -ENOMEM;
			break;
		}
		p += n;
		len -= (size_t)n;
	}
	if (fd >= 0)
		sm_close((int)fd);
	else if (!rc)
		__builtin_memset(addr, 0, (size_t)(p - (unsigned char *)addr));
	if (!rc)
		atomic_fetch_add_explicit(&fault_kernel, pages, memory_order_relaxed);
	errno = saved;
	return rc;
}

#define RESIDENT_BATCH 256 /* pages per mincore call (1 MiB with 4 KiB pages) */

void os_each_resident(void *addr, size_t len, void (*fn)(void *arg, unsigned char *p, size_t n), void *arg)
{
	size_t ps = os_page_size();
	uintptr_t start = (uintptr_t)addr, end = start + len;
	uintptr_t pg = start & ~(uintptr_t)(ps - 1);
	unsigned char vec[RESIDENT_BATCH];
	int saved = errno;

	if (sm_filter_may_exist()) {
		/* a filter may kill at mincore: every page counts */
		if (len)
			fn(arg, addr, len);
		return;
	}
	while (pg < end) {
		size_t n = (end - pg + ps - 1) / ps;
		if (n > RESIDENT_BATCH)
			n = RESIDENT_BATCH;
		sm_calls_enter(); /* callgate.c: a filter installed meanwhile */
		int no = sm_filter_may_exist() || syscall(SYS_mincore, (void *)pg, n * ps, vec);
		sm_calls_leave();
		if (no) {
			/* cannot tell: every page counts as resident, the
			 * answer that never skips a page holding data */
			memset(vec, 1, n);
		}
		for (size_t i = 0; i < n;) {
			if (!(vec[i] & 1)) {
				i++;
				continue;
			}
			size_t j = i + 1;
			while (j < n && (vec[j] & 1))
				j++;
			uintptr_t a = pg + i * ps, b = pg + j * ps;
			if (a < start)
				a = start;
			if (b > end)
				b = end;
			fn(arg, (unsigned char *)a, b - a);
			i = j;
		}
		pg += n * ps;
	}
	errno = saved;
}

/* ---- the program's own calls (heap mode: heap/mmcalls.c, adopt.c) -------- */

/* Straight to the kernel, with the program's arguments as they are; 0 or
 * -errno (the mapping's address in *out for os_pass_mmap/os_pass_mremap). */
int os_pass_mmap(void *addr, size_t len, int prot, int flags, int fd, long off, void **out)
{
	int saved = errno;
	long r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
	int rc = r == -1 ? -errno : 0;

	if (!rc)
		*out = (void *)r;
	errno = saved;
	return rc;
}

int os_pass_mremap(void *old, size_t old_len, size_t len, int flags, void *to, void **out)
{
	int saved = errno;
	long r = syscall(SYS_mremap, old, old_len, len, flags, to);
	int rc = r == -1 ? -errno : 0;

	if (!rc)
		*out = (void *)r;
	errno = saved;
	return rc;
}

static int pass(long r)
{
	return r ? -errno : 0;
}

int os_pass_munmap(void *addr, size_t len)
{
	int saved = errno, rc = pass(syscall(SYS_munmap, addr, len));

	errno = saved;
	return rc;
}

int os_pass_mprotect(void *addr, size_t len, int prot)
{
	int saved = errno, rc = pass(syscall(SYS_mprotect, addr, len, prot));

	errno = saved;
	return rc;
}

int os_pass_madvise(void *addr, size_t len, int advice)
{
	int saved = errno, rc = pass(syscall(SYS_madvise, addr, len, advice));

	errno = saved;
	return rc;
}

int os_pass_mlock(const void *addr, size_t len, int flags)
{
	int saved = errno, rc = pass(flags ? syscall(SYS_mlock2, addr, len, flags) : syscall(SYS_mlock, addr, len));

	errno = saved;
	return rc;
}

int os_pass_munlock(const void *addr, size_t len)
{
	int saved = errno, rc = pass(syscall(SYS_munlock, addr, len));

	errno = saved;
	return rc;
}

int os_pass_pkey_mprotect(void *addr, size_t len, int prot, int pkey)
{
	int saved = errno, rc = pass(syscall(SYS_pkey_mprotect, addr, len, prot, pkey));

	errno = saved;
	return rc;
}
