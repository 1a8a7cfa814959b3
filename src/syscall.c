/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * syscall.c - the memfd_secret(2) wrapper, the support probe, the probe of
 * the kernel's memory-lock regime and the reads of /proc/self/status the
 * library needs (seccomp state, locked memory).
 *
 * Re-entrancy: nothing here calls malloc, stdio or a cancellation point.
 * /proc is read with raw openat/read/close system calls into stack buffers,
 * so that a malloc built on this library can call it from its first call.
 *
 * Sandboxes: a seccomp filter can be installed at any time, by this thread
 * or (SECCOMP_FILTER_FLAG_TSYNC) by another one, and its action can kill the
 * process.  So a memfd_secret call of the library runs in a short-lived
 * child that shares the address space and file table with the caller
 * (clone(CLONE_VM | CLONE_VFORK | CLONE_FILES)), with SIGSYS at its default
 * action: a filter that kills or traps then ends the child, never the
 * caller.  The one exception is a call that no filter can meet: the caller
 * is the process's only thread and has no filter, and every signal but
 * SIGSYS is blocked from that check to the call; it is made in-process.  See
 * call_in_process().
 * The regime probe runs where the call runs, so its mmap/madvise/munmap (raw
 * system calls) are the only ones outside os.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "annotate.h"
#include "internal.h"

/*
 * The number comes from the kernel headers when they know it; otherwise 447
 * on the architectures that wire the call (x86_64, i386, arm64, riscv, s390,
 * loongarch).  32-bit arm, powerpc and mips only reserve it.
 */
#if defined(SYS_memfd_secret)
#define SM_NR_MEMFD_SECRET SYS_memfd_secret
#elif defined(__NR_memfd_secret)
#define SM_NR_MEMFD_SECRET __NR_memfd_secret
#elif defined(__x86_64__) || defined(__i386__) || defined(__aarch64__) || \
	(defined(__riscv) && __riscv_xlen == 64) || defined(__s390x__) || defined(__loongarch__)
#define SM_NR_MEMFD_SECRET 447
#endif

#ifndef SECRETMEM_MAGIC
#define SECRETMEM_MAGIC 0x5345434d /* linux/magic.h */
#endif

/*
 * n bytes at p zeroed without a call (no memset: this runs with signals
 * blocked and in the memfd child, where a sanitizer's interceptor must not
 * run): the buffers a system call fills, so that a seccomp filter's
 * made-up success (ERRNO(0)), which fills nothing, reads as zero.
 */
#if defined(__clang__) || defined(__GNUC__)
__attribute__((no_sanitize_address, no_sanitize_thread))
#endif
static void raw_zero(void *p, size_t n)
{
	unsigned char *b = p;

	for (size_t i = 0; i < n; i++) {
		b[i] = 0;
		__asm__("" : : : "memory"); /* not a memset call */
	}
}

/*
 * Whether fd is a secret memory file: fstatfs says the kernel's secretmem
 * file system.  memfd_secret's answer is not enough: a seccomp filter that
 * answers ERRNO(0) "returns" descriptor 0, the program's stdin or any file
 * it opened there, and a supervisor can answer any number; mapping that
 * file would write secrets into it.  0 if it is not (or cannot be told).
 */
#ifdef SM_NR_MEMFD_SECRET
#if defined(__clang__) || defined(__GNUC__)
__attribute__((no_sanitize_address, no_sanitize_thread))
#endif
static int is_secret_file(long fd)
{
	struct statfs fs;

	raw_zero(&fs, sizeof(fs));
	return syscall(SYS_fstatfs, (int)fd, &fs) == 0 && fs.f_type == SECRETMEM_MAGIC;
}
#endif

static int raw_memfd_secret(unsigned int flags)
{
#ifdef SM_NR_MEMFD_SECRET
	int saved = errno;
	long fd = syscall(SM_NR_MEMFD_SECRET, flags);
	int rc = fd >= 0 ? (int)fd : -errno;

	if (fd >= 0 && !is_secret_file(fd))
		rc = -EPERM; /* a sandbox's made-up answer: left alone */

	errno = saved;
	return rc;
#else
	(void)flags;
	return -ENOSYS;
#endif
}

SM_API int secretmem_memfd(unsigned int flags)
{
	if (flags & ~(unsigned int)O_CLOEXEC)
		return -EINVAL;
	return raw_memfd_secret(flags);
}

/* ---- /proc/self/status, raw ---------------------------------------------- */

/*
 * Read path (/proc/self/status or /proc/thread-self/status) into buf
 * (NUL-terminated) with raw system calls (no stdio, no malloc, no
 * cancellation point).  Returns the length, or -errno.  The file is about
 * 1.5 KiB; what does not fit is not read.
 *
 * The descriptor must be a file of procfs (fstatfs): a seccomp filter that
 * answers openat with ERRNO(0), or any small number, "returns" a descriptor
 * of the program's own (stdin), which must be neither read (it may block)
 * nor closed; such an answer is -EBADF (no such descriptor) or -EPERM
 * (not procfs), and the descriptor is left alone.  A real descriptor of
 * another file (a broker's odd answer) is left open too: the in-process
 * check reads no more after it (one descriptor at most); the support probe
 * and the memory-lock figures, which read /proc/self/status, may leave one
 * per call in that odd case.
 */
static long read_proc(const char *path, char *buf, size_t size)
{
	int saved = errno;
	long rc = sm_calls_enter_new(); /* callgate.c: a section, no answer once a filter stops it */

	if (rc)
		return rc;
	long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	size_t len = 0;
	struct statfs fs;

	/* zeroed: a filter's made-up success of fstatfs (ERRNO(0)) fills
	 * nothing, and must not find an earlier call's answer here */
	raw_zero(&fs, sizeof(fs));
	if (fd < 0)
		rc = -errno;
	else if (syscall(SYS_fstatfs, (int)fd, &fs) != 0)
		rc = -errno; /* EBADF: no such descriptor, openat's answer was made up */
	else if (fs.f_type != PROC_SUPER_MAGIC)
		rc = -EPERM;
	if (rc) {
		sm_calls_leave();
		errno = saved;
		return rc;
	}
	while (len < size - 1) {
		long n = syscall(SYS_read, (int)fd, buf + len, size - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	syscall(SYS_close, (int)fd);
	sm_calls_leave();
	buf[len] = '\0';
	errno = saved;
	return (long)len;
}

static long read_status(char *buf, size_t size)
{
	return read_proc("/proc/self/status", buf, size);
}

/* The number after "name" at the start of a line of buf; -1 if absent.
 * Plain loops, no string functions: call_in_process() runs it with signals
 * blocked, where a sanitizer's interceptor could run a deferred handler. */
static long status_field(const char *buf, const char *name)
{
	for (const char *s = buf; *s; ) {
		size_t i = 0;
		while (name[i] && s[i] == name[i])
			i++;
		if (!name[i]) {
			s += i;
			while (*s == ' ' || *s == '\t')
				s++;
			if (*s < '0' || *s > '9')
				return -1;
			long v = 0;
			while (*s >= '0' && *s <= '9' && v < (LONG_MAX - 9) / 10)
				v = v * 10 + (*s++ - '0');
			return v;
		}
		while (*s && *s != '\n')
			s++;
		if (*s)
			s++;
	}
	return -1;
}

static atomic_int filter_seen;

void sm_filter_seen(void)
{
	atomic_store_explicit(&filter_seen, 1, memory_order_relaxed);
}

int sm_filter_may_exist(void)
{
	return atomic_load_explicit(&filter_seen, memory_order_relaxed);
}

static atomic_int new_secret_off;

void sm_secret_new_off(void)
{
	sm_filter_seen();
	atomic_store_explicit(&new_secret_off, 1, memory_order_relaxed);
}

int sm_secret_new_is_off(void)
{
	return atomic_load_explicit(&new_secret_off, memory_order_relaxed);
}

int sm_seccomp_state(int *mode, long *filters)
{
	char buf[4096];
	long n = read_status(buf, sizeof(buf));

	*mode = -1;
	*filters = -1;
	if (n < 0)
		return (int)n;
	*mode = (int)status_field(buf, "Seccomp:");
	*filters = status_field(buf, "Seccomp_filters:"); /* Linux 5.9 and later */
	if (*mode > 0)
		sm_filter_seen();
	return *mode < 0 ? -ENOENT : 0;
}

size_t sm_locked_bytes(void)
{
	char buf[4096];

	if (read_status(buf, sizeof(buf)) < 0)
		return 0;
	long kb = status_field(buf, "VmLck:");
	return kb > 0 ? (size_t)kb * 1024 : 0;
}

/* CAP_IPC_LOCK in the effective set, by capget(2). */
static int have_cap_ipc_lock(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];
	int saved = errno;

	if (syscall(SYS_capget, &hdr, data) != 0) {
		errno = saved;
		return 0;
	}
	return (int)((data[CAP_IPC_LOCK / 32].effective >> (CAP_IPC_LOCK % 32)) & 1);
}

void sm_memlock_figures(int *unlimited, size_t *limit, size_t *locked)
{
	struct rlimit rl;
	int saved = errno;

	*unlimited = 1;
	*limit = SIZE_MAX;
	*locked = 0;
	/* figures for new secret memory (callgate.c): none once a filter stops
	 * the calls, and no room then */
	if (sm_calls_enter_new()) {
		*unlimited = 0;
		*limit = 0;
		return;
	}
	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0) {
		*limit = rl.rlim_cur == RLIM_INFINITY ? SIZE_MAX : (size_t)rl.rlim_cur;
		*unlimited = rl.rlim_cur == RLIM_INFINITY || have_cap_ipc_lock();
	}
	errno = saved;
	if (!*unlimited)
		*locked = sm_locked_bytes();
	sm_calls_leave();
}

/* ---- the call, made where a filter cannot kill the caller ---------------- */

#define CHILD_KILLED (-1000000) /* no answer: the child did not return */
#define NOT_SECRET (-1000001)   /* an answer that is no secret memory file */

/*
 * The memory-lock regime of the kernel (KERNEL-FACTS.md, "Memory-lock
 * accounting: two regimes"), probed once per process by the child of the
 * first memfd_secret call: regime_state holds a final SM_REGIME_* value, or
 * REGIME_UNPROBED while no probe has answered (none made yet, valgrind, or
 * only transient failures).  A transient failure (the memory-lock limit
 * refused the probe's one page, no fd, no memory) leaves it unprobed and
 * the next memfd_secret call probes again: such a failure means the caller's
 * own mapping is about to fail too, so the probe's few system calls only
 * add to calls that fail anyway; REGIME_TRIES bounds a process that stays
 * there for good.
 */
#define REGIME_UNPROBED (-1)
#define REGIME_TRIES 64
static atomic_int regime_state = REGIME_UNPROBED;
static atomic_int regime_tries;
static atomic_int regime_forced = -1; /* tests: sm_fault_regime_force */
static atomic_int regime_probes;      /* tests: sm_fault_regime_probes */

/* One memfd_secret call, made in a child or (call_in_process) here. */
struct child_call {
	volatile int result;
	int probe;               /* in: probe the regime after the call       */
	size_t page;             /* in: the page size                         */
	volatile int regime;     /* out: SM_REGIME_MMAP/FAULT or -errno       */
	volatile long probe_fd;  /* out: the probe's fd while it is open      */
	volatile long probe_map; /* out: the probe's mapping while it exists  */
};

#ifdef SM_NR_MEMFD_SECRET
#ifndef MADV_COLD
#define MADV_COLD 20
#endif
#ifdef SYS_mmap2 /* 32-bit: SYS_mmap is the old one-argument call there */
#define SM_NR_MMAP SYS_mmap2
#else
#define SM_NR_MMAP SYS_mmap
#endif
/*
 * In the child, after its memfd_secret: which memory-lock regime?  One page
 * of a second secret file is mapped and given MADV_COLD, which the kernel
 * refuses with EINVAL on a VM_LOCKED mapping (mm/madvise.c,
 * can_madv_lru_vma) - the mmap-time regime, whose mapping is VM_LOCKED -
 * and accepts on the fault-time regime's mapping (0).  MADV_NORMAL first,
 * which any mapping accepts: a sandbox that refuses madvise outright makes
 * the answer unknown rather than "locked" (MADV_COLD needs Linux 5.4;
 * memfd_secret came in 5.14).  Every other failure is -errno.  The fd and
 * the mapping are noted in c while they exist, so that the caller can
 * remove them if a filter kills the child half-way.
 */
#if defined(__clang__) || defined(__GNUC__)
__attribute__((no_sanitize_address, no_sanitize_thread, noinline))
#endif
static void regime_probe(struct child_call *c)
{
	long fd = syscall(SM_NR_MEMFD_SECRET, O_CLOEXEC), m;
	int r;

	if (fd < 0) {
		c->regime = -errno;
		return;
	}
	if (!is_secret_file(fd)) {
		c->regime = -EPERM; /* not ours (memfd_body): left alone */
		return;
	}
	c->probe_fd = fd;
	if (syscall(SYS_ftruncate, (int)fd, (long)c->page) != 0) {
		r = -errno;
	} else if ((m = syscall(SM_NR_MMAP, 0L, (long)c->page, (long)(PROT_READ | PROT_WRITE),
				(long)MAP_SHARED, fd, 0L)) ==
		   (long)MAP_FAILED) {
		r = -errno;
	} else {
		c->probe_map = m;
		if (syscall(SYS_madvise, m, (long)c->page, (long)MADV_NORMAL) != 0)
			r = -errno;
		else if (syscall(SYS_madvise, m, (long)c->page, (long)MADV_COLD) == 0)
			r = SM_REGIME_FAULT;
		else
			r = errno == EINVAL ? SM_REGIME_MMAP : -errno;
		syscall(SYS_munmap, m, (long)c->page);
		c->probe_map = 0;
	}
	syscall(SYS_close, (int)fd);
	c->probe_fd = -1;
	c->regime = r;
}
#endif

/* The call (and the regime probe when wanted), in the child or in-process. */
#if defined(__clang__) || defined(__GNUC__)
__attribute__((no_sanitize_address, no_sanitize_thread, noinline))
#endif
static void memfd_body(struct child_call *c)
{
#ifdef SM_NR_MEMFD_SECRET
	long fd = syscall(SM_NR_MEMFD_SECRET, O_CLOEXEC);
	if (fd >= 0 && !is_secret_file(fd)) {
		c->result = NOT_SECRET; /* not ours: left alone */
		return;
	}
	c->result = fd >= 0 ? (int)fd : -errno;
	if (fd >= 0 && c->probe)
		regime_probe(c);
#else
	c->result = -ENOSYS;
#endif
}

/*
 * The child: same memory, same file table, its own signal handlers (no
 * CLONE_SIGHAND).  Raw system calls only; nothing here touches the
 * caller's state except the result.  Not instrumented by sanitizers: it
 * runs on a stack they do not know, with the caller's thread pointer.
 */
#if defined(__clang__) || defined(__GNUC__)
__attribute__((no_sanitize_address, no_sanitize_thread, noinline))
#endif
static int memfd_child(void *arg)
{
	struct child_call *c = arg;
	/* struct sigaction of the kernel: handler first, all zero = SIG_DFL */
	unsigned long ksa[4] = { 0, 0, 0, 0 };

	/* a filter's TRAP now kills the child with SIGSYS, whose default
	 * action dumps core - of the address space it shares with the caller.
	 * RLIMIT_CORE 1 (the child's own limits: no CLONE_THREAD) stops a dump
	 * to a file (smaller than a page) and to a pipe (1 is the kernel's
	 * "never to a pipe" value), so no ordinary memory of the program
	 * reaches a core file or a coredump service. */
	struct rlimit core = { 1, 1 };

	syscall(SYS_rt_sigaction, SIGSYS, ksa, NULL, (size_t)8);
	syscall(SYS_prlimit64, 0, RLIMIT_CORE, &core, NULL);
	memfd_body(c);
	return 0;
}

#if defined(__SANITIZE_THREAD__)
#define SM_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SM_TSAN 1
#endif
#endif

#ifdef SM_TSAN
#include <dlfcn.h>
typedef int sm_clone_fn(int (*)(void *), void *, int, void *, ...);
/*
 * ThreadSanitizer builds only: its clone() interceptor handles every clone as
 * a fork, and its child-side bookkeeping runs in our shared address space
 * (CLONE_VM): it marks the caller as after a multi-threaded fork (the next
 * pthread_create() of the program dies) and resets its lock state (false
 * races).  glibc's own clone() is called instead.
 */
static sm_clone_fn *sm_clone(void)
{
	static sm_clone_fn *cached; /* looked up once: dlopen allocates */
	sm_clone_fn *fn = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);

	if (fn)
		return fn;
	void *h = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	if (h) {
		fn = (sm_clone_fn *)dlsym(h, "clone");
		dlclose(h);
	}
	if (!fn)
		fn = clone;
	__atomic_store_n(&cached, fn, __ATOMIC_RELEASE);
	return fn;
}
#else
#define sm_clone() clone
#endif

/*
 * The child's stacks: static, so that the caller's own stack pays nothing (a
 * thread created with PTHREAD_STACK_MIN has 16 KiB in all).  A slot is held
 * only while its child runs (raw system calls, never blocking on anything of
 * ours), so callers rarely wait; a fork child starts with every slot free
 * (sm_memfd_after_fork).  The child uses well under a kilobyte.
 */
#define CHILD_STACKS 4
#define CHILD_STACK_SIZE 8192
static unsigned char child_stack[CHILD_STACKS][CHILD_STACK_SIZE] __attribute__((aligned(64)));
static atomic_int child_stack_busy[CHILD_STACKS];

static int child_stack_take(void)
{
	for (;;) {
		for (int i = 0; i < CHILD_STACKS; i++)
			if (!atomic_load_explicit(&child_stack_busy[i], memory_order_relaxed) &&
			    !atomic_exchange_explicit(&child_stack_busy[i], 1, memory_order_acquire))
				return i;
		syscall(SYS_sched_yield);
	}
}

static pthread_mutex_t newfile = PTHREAD_MUTEX_INITIALIZER;

void sm_newfile_lock(void)
{
	pthread_mutex_lock(&newfile);
}

void sm_newfile_unlock(void)
{
	pthread_mutex_unlock(&newfile);
}

void sm_memfd_after_fork(void)
{
	for (int i = 0; i < CHILD_STACKS; i++)
		atomic_store_explicit(&child_stack_busy[i], 0, memory_order_relaxed);
}

void sm_newfile_reinit(void)
{
	pthread_mutex_init(&newfile, NULL);
}

/* Probe the regime in this call's child?  While none has answered, up to
 * REGIME_TRIES times (two racing first calls may both probe: the answers
 * agree).  Costs nothing once answered. */
static int regime_wanted(void)
{
	return atomic_load_explicit(&regime_state, memory_order_relaxed) == REGIME_UNPROBED &&
	       atomic_load_explicit(&regime_tries, memory_order_relaxed) < REGIME_TRIES;
}

/* After a child that probed: keep its answer.  A transient failure (no
 * memory, no fd, the memory-lock limit refused the probe's one page: EAGAIN)
 * leaves the regime unprobed for a later call; anything else that is not an
 * answer (a filter refused or killed, a kernel that says neither) is final:
 * unknown, and the kernel-side fault-in is kept. */
static void regime_record(struct child_call *c)
{
	int r = c->regime;

	if (r == CHILD_KILLED) {
		/* killed by a filter during the probe: remove what it left in
		 * the shared address space and file table (raw calls, like the
		 * child's own) */
		if (c->probe_map)
			syscall(SYS_munmap, c->probe_map, (long)c->page);
		if (c->probe_fd >= 0)
			syscall(SYS_close, (int)c->probe_fd);
		r = SM_REGIME_UNKNOWN;
	} else if (r == -EAGAIN || r == -ENOMEM || r == -EMFILE || r == -ENFILE || r == -EINTR) {
		if (atomic_fetch_add(&regime_tries, 1) + 1 < REGIME_TRIES)
			return;
		r = SM_REGIME_UNKNOWN;
	} else if (r != SM_REGIME_MMAP && r != SM_REGIME_FAULT) {
		r = SM_REGIME_UNKNOWN;
	}
	atomic_store_explicit(&regime_state, r, memory_order_release);
}

int sm_fault_regime(void)
{
	int f = atomic_load_explicit(&regime_forced, memory_order_relaxed);

	if (SM_UNLIKELY(f >= 0))
		return f;
	int r = atomic_load_explicit(&regime_state, memory_order_acquire);
	return r == REGIME_UNPROBED ? SM_REGIME_UNKNOWN : r;
}

int sm_fault_regime_probes(void)
{
	return atomic_load(&regime_probes);
}

int sm_fault_regime_force(int regime)
{
	int valid = regime >= SM_REGIME_UNKNOWN && regime <= SM_REGIME_FAULT;

	return atomic_exchange(&regime_forced, valid ? regime : -1);
}

/* Set when a filter was seen (the mode never goes back to 0) or the status
 * file could not be trusted (a broker's answer, an odd format): every later
 * call goes to the child without reading /proc again, so a sandbox's SIGSYS
 * handler or broker meets the check once per process at most. */
static atomic_int no_inline;

/*
 * Is this thread the process's only one, with no seccomp filter?  Then no
 * filter can appear before this thread's next system call except from a
 * signal handler on this thread: another thread could install one (with
 * SECCOMP_FILTER_FLAG_TSYNC) only if there were one.  A thread that has
 * exited but is not yet reaped (a main thread that called pthread_exit)
 * still counts, so such a process always uses the child.
 * /proc/thread-self: the Seccomp line is this thread's.  The file must say
 * it is this thread's (Pid: and Tgid:): a sandbox's broker or a seccomp
 * supervisor that answers openat by opening the path itself hands back its
 * own thread's file.  2 KiB holds the lines needed (Seccomp ends near byte
 * 900); a longer file (a huge Groups: line) loses Seccomp: no.  Unreadable,
 * or /proc of another PID namespace: no.
 */
static int lone_thread_unfiltered(long tid, long pid)
{
	char buf[2048];
	long n = read_proc("/proc/thread-self/status", buf, sizeof(buf));

	if (n < 0) {
		/* out of descriptors is transient; anything else (no /proc,
		 * a refusal, a broker's error) stays */
		if (n != -EMFILE && n != -ENFILE && n != -ENOMEM && n != -EINTR)
			atomic_store_explicit(&no_inline, 1, memory_order_relaxed);
		return 0;
	}
	/* not this thread's file, a filter, a missing line, or a thread the C
	 * library does not know of (a raw clone, an exited main thread): for
	 * good */
	if (status_field(buf, "Seccomp:") > 0)
		sm_filter_seen();
	if (status_field(buf, "Pid:") != tid || status_field(buf, "Tgid:") != pid ||
	    status_field(buf, "Seccomp:") != 0 || status_field(buf, "Threads:") != 1) {
		atomic_store_explicit(&no_inline, 1, memory_order_relaxed);
		return 0;
	}
	return 1;
}

static atomic_int memfd_inline; /* tests: sm_memfd_inline_calls */

int sm_memfd_inline_calls(void)
{
	return atomic_load(&memfd_inline);
}

/* The kernel's signal set: 64 signals (128 on MIPS), in unsigned longs. */
#define KSIGSET_SIZE ((size_t)(_NSIG / 8))
#define KSIGSET_WORDS (KSIGSET_SIZE / sizeof(unsigned long))
#define KSIG_WORD(sig) (((unsigned)(sig) - 1) / (8 * sizeof(unsigned long)))
#define KSIG_BIT(sig) (1UL << (((unsigned)(sig) - 1) % (8 * sizeof(unsigned long))))

/*
 * The call in this process when no filter can meet it: 1 (c->result set),
 * else 0.  A child cost 85-480 us here, median ~130 us (two cross-CPU
 * wake-ups: 2.6 and 6.5 ms seen on this machine's paravirtualised vCPUs),
 * the check and the call ~20 us.
 *
 * The check and the call run with every signal blocked but SIGSYS, so that
 * no handler can install a filter in between: every bit of the kernel's
 * mask is set by hand (sigfillset leaves out the C library's internal
 * signals, whose handlers could run), with SIG_BLOCK.  SIGSYS must stay
 * open: a filter that traps openat, fstatfs, read or close (a sandbox's broker
 * answering them), and Syscall User Dispatch, which traps every call and
 * shows no filter, run the program's own SIGSYS handler, where a blocked
 * SIGSYS would make the kernel kill the process.  So a caller that has
 * SIGSYS blocked gets the child, with no check.  What remains: a SIGSYS sent
 * to the thread between the check and the call (another process, a timer),
 * whose handler installs a filter (secretmem_supported(3)).  Raw system
 * calls throughout, and no library function while the mask is set (a
 * sanitizer's interceptor could run a deferred handler).
 */
static int call_in_process(struct child_call *c)
{
	unsigned long most[KSIGSET_WORDS], old[KSIGSET_WORDS];

	if (atomic_load_explicit(&no_inline, memory_order_relaxed))
		return 0;
#ifdef SM_HAVE_SINGLE_THREADED
	/* a process that has made a thread (glibc 2.32 and later tell) goes to
	 * the child with no system call of the check, as before */
	if (!SM_SINGLE_THREADED())
		return 0;
#endif
	long tid = syscall(SYS_gettid), pid = syscall(SYS_getpid);
	for (size_t i = 0; i < KSIGSET_WORDS; i++)
		most[i] = ~0UL;
	most[KSIG_WORD(SIGSYS)] &= ~KSIG_BIT(SIGSYS);
	if (syscall(SYS_rt_sigprocmask, SIG_BLOCK, most, old, KSIGSET_SIZE) != 0)
		return 0;
	int ok = !(old[KSIG_WORD(SIGSYS)] & KSIG_BIT(SIGSYS)) && lone_thread_unfiltered(tid, pid);
	if (ok)
		memfd_body(c);
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, old, NULL, KSIGSET_SIZE);
	if (ok)
		atomic_fetch_add_explicit(&memfd_inline, 1, memory_order_relaxed);
	return ok;
}

static atomic_int no_reap;    /* wait4 refused once: no more children */
static atomic_int memfd_lies; /* an answer was no secret memory file */

/*
 * The call in a child (c->result stays CHILD_KILLED if a filter ends it):
 * 0, or -EAGAIN when no child could be made (RLIMIT_NPROC, the kernel's
 * task limit, memory), -EPERM when clone itself is refused, or wait4 was
 * once (a child left unreaped: no more are made).
 *
 * Every signal but SIGSYS is blocked from before the clone until the child
 * is reaped, so that no handler of the program runs in the child (it
 * inherits the handlers and the mask): a signal sent to the process group
 * at that moment (a terminal's ^C, systemd stopping a service) ran the
 * program's handler there, on the child's small static stack, below which
 * it wrote over the library's data.  Blocked, such a signal is lost in the
 * child, and waits in the caller until the mask is restored.  SIGSYS stays
 * open for the caller's own trapped calls (above); the child's first call
 * sets it to its default action, so a filter's TRAP kills the child.
 */
static int call_in_child(struct child_call *c)
{
	unsigned long all[KSIGSET_WORDS], old[KSIGSET_WORDS];
	int status, slot;

	if (atomic_load_explicit(&no_reap, memory_order_relaxed))
		return -EPERM;
	for (size_t i = 0; i < KSIGSET_WORDS; i++)
		all[i] = ~0UL;
	/* but SIGSYS: a filter that traps this thread's clone or wait4 runs
	 * the program's SIGSYS handler (a sandbox's answer), where a blocked
	 * SIGSYS would make the kernel kill the process; the child sets it to
	 * its default action first thing */
	all[KSIG_WORD(SIGSYS)] &= ~KSIG_BIT(SIGSYS);
	if (syscall(SYS_rt_sigprocmask, SIG_BLOCK, all, old, KSIGSET_SIZE) != 0)
		return -EPERM; /* refused: a sandbox */
	slot = child_stack_take();
	/* the caller waits (CLONE_VFORK) until the child exits */
	long pid = sm_clone()(memfd_child, child_stack[slot] + CHILD_STACK_SIZE,
			      CLONE_VM | CLONE_VFORK | CLONE_FILES, c);
	int rc = 0;
	if (pid < 0) {
		rc = errno == ENOMEM || errno == EAGAIN ? -EAGAIN : -EPERM;
	} else {
		/* exit signal 0: no SIGCHLD reaches the program; __WALL reaps
		 * it (raw wait4: waitpid is a cancellation point).  A wait4
		 * that a filter refuses leaves the child a zombie: one, as no
		 * more are made (the answer, given before the child exited, stands) */
		long w;
		while ((w = syscall(SYS_wait4, (pid_t)pid, &status, __WALL, NULL)) < 0 && errno == EINTR)
			;
		if (w != pid) /* refused, or a made-up answer (ERRNO(0)) */
			atomic_store_explicit(&no_reap, 1, memory_order_relaxed);
	}
	atomic_store_explicit(&child_stack_busy[slot], 0, memory_order_release);
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, old, NULL, KSIGSET_SIZE);
	return rc;
}

/*
 * memfd_secret(O_CLOEXEC), in-process when no filter can meet it, else in
 * a child: the new fd (in the shared table) or -errno; -EPERM when the child
 * was killed (a filter's KILL or TRAP action); -EAGAIN when no child could
 * be made: a transient failure that says nothing about secret memory, never
 * a reason to use the fallback.  Until the memory-lock regime is known, the
 * call is followed by its probe (regime_probe), where the call was made.
 */
static int memfd_call(void)
{
	struct child_call c = { CHILD_KILLED, regime_wanted(), os_page_size(), CHILD_KILLED, -1, 0 };
	int saved = errno;

	if (c.probe)
		atomic_fetch_add_explicit(&regime_probes, 1, memory_order_relaxed);
	if (!call_in_process(&c)) {
		int err = call_in_child(&c);
		if (err) {
			errno = saved;
			return err;
		}
	}
	int rc = c.result;
	if (c.probe && rc != CHILD_KILLED && rc >= 0)
		regime_record(&c);
	errno = saved;
	if (rc == NOT_SECRET) {
		/* a sandbox that answers for the kernel: no more calls (a real
		 * descriptor behind an odd answer stays open: one at most) */
		atomic_store_explicit(&memfd_lies, 1, memory_order_relaxed);
		return -EPERM;
	}
	return rc == CHILD_KILLED ? -EPERM : rc;
}

static atomic_int memfd_calls; /* tests: sm_memfd_calls */

int sm_memfd_calls(void)
{
	return atomic_load(&memfd_calls);
}

/*
 * memfd_secret(O_CLOEXEC) that a seccomp filter cannot turn into the
 * caller's death: made in the child, unless call_in_process() finds that no
 * filter can meet the call.  Reading /proc/self/status and calling
 * in-process when it shows no filter would not do on its own: another thread
 * can install a filter with SECCOMP_FILTER_FLAG_TSYNC, or a signal handler on
 * this one, between the read and the call; hence the thread count and the
 * blocked signals.  The child costs 85-480 us per call here, with a tail
 * of milliseconds (two cross-CPU wake-ups), the in-process call ~20 us; the
 * library makes the call once per chunk, region or new large block, never
 * per small block.  Strict mode (Seccomp: 1) allows no clone(2) and no
 * openat(2): see secretmem_supported(3).
 */
static int memfd_guarded(void)
{
	if (atomic_load_explicit(&memfd_lies, memory_order_relaxed))
		return -EPERM;
	atomic_fetch_add_explicit(&memfd_calls, 1, memory_order_relaxed);
#ifdef SM_VALGRIND
	/* valgrind runs no clone() but a thread's, and exits on ours; it
	 * does not pass this call to the kernel either (ENOSYS: the fallback),
	 * so no filter can act on it and the call is made in-process (no
	 * regime probe: it stays unknown) */
	if (RUNNING_ON_VALGRIND)
		return raw_memfd_secret(O_CLOEXEC);
#endif
	/* the clone, the child and the wait as one call (callgate.c) */
	int fd = sm_calls_enter_new();
	if (fd)
		return fd;
	fd = memfd_call();
	sm_calls_leave();
	return fd == -EACCES ? -EPERM : fd; /* an LSM's refusal */
}

/* ---- the probe -------------------------------------------------------------- */

#define PROBE_UNKNOWN 1 /* no valid result is positive */
static atomic_int probe_result = PROBE_UNKNOWN;
static atomic_int probe_said_secret; /* secretmem_supported() once said 0 */

int sm_probe_said_secret(void)
{
	return atomic_load_explicit(&probe_said_secret, memory_order_relaxed);
}

static atomic_long probe_sig = -2; /* seccomp signature when probed */

/* What identifies the sandbox: the filter count (Linux 5.9+), else the
 * mode; -1 when /proc cannot tell (the result is then cached for good);
 * SIG_TRANSIENT when the status file could not be read for want of a
 * descriptor or memory, which says nothing of the sandbox. */
#define SIG_TRANSIENT (-3)
static long seccomp_signature(void)
{
	int mode;
	long filters;
	int rc = sm_seccomp_state(&mode, &filters);

	if (rc == -EMFILE || rc == -ENFILE || rc == -ENOMEM || rc == -EINTR)
		return SIG_TRANSIENT;
	if (filters >= 0)
		return filters;
	return mode >= 0 ? 1000000L + mode : -1;
}

/* Under the new-file lock: no fork child inherits the probe's file. */
static int probe(void)
{
	int cancel;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	sm_newfile_lock();
	int fd = memfd_guarded();
	if (fd >= 0)
		sm_close(fd);
	sm_newfile_unlock();
	pthread_setcancelstate(cancel, NULL);
	return fd < 0 ? fd : 0;
}

int sm_memfd_secret(void)
{
	int rc = os_injected(OS_OP_MEMFD);

	if (rc)
		return rc; /* a simulated failure: the probe stays as it is */
	if (sm_secret_new_is_off())
		return -EPERM; /* a filter would stop the calls: none is made */
	rc = memfd_guarded();
	if (rc == -ENOSYS || rc == -EPERM) {
		/* the sandbox changed (or the kernel refuses now): tell the
		 * probe, so that secretmem_supported() and the default backend
		 * stop saying "secret" */
		atomic_store(&probe_sig, seccomp_signature());
		atomic_store_explicit(&probe_result, rc, memory_order_release);
	}
	return rc;
}

/* Not probed yet: 0, and the caller's own memfd_secret call is the probe
 * (a refusal it meets is recorded by sm_memfd_secret; after a success the
 * first secretmem_supported() probes, as it has no seccomp count to compare
 * with).  A separate probe first would cost the first allocation of every
 * process a second child and a read of /proc/self/status. */
int sm_probe_cached(void)
{
	int rc = atomic_load_explicit(&probe_result, memory_order_acquire);

	return rc == PROBE_UNKNOWN ? 0 : rc;
}

SM_API int secretmem_supported(void)
{
	int rc = atomic_load_explicit(&probe_result, memory_order_acquire);

	/* a refusal is final: filters are only ever added, never removed */
	if (rc != PROBE_UNKNOWN && rc != 0)
		return rc;
	long sig = seccomp_signature();
	/* nothing changed since the probe; a status that could be read then
	 * and cannot now (a filter that refuses openat) is a change, one that
	 * could not be read for want of a descriptor is not */
	if (rc == 0 && (sig == SIG_TRANSIENT || sig == atomic_load(&probe_sig)))
		return 0;
	/* a raw child (_Fork, a raw fork system call) first gets its state
	 * back: the new-file lock may have been held by a parent's thread it
	 * does not have (probe would wait for it for ever) */
	sm_gate_check();
	/* two racing calls both probe; the answers agree */
	rc = probe();
	if (rc != 0 && rc != -ENOSYS && rc != -EPERM)
		return rc; /* transient (EMFILE...): do not cache */
	atomic_store(&probe_sig, sig);
	atomic_store_explicit(&probe_result, rc, memory_order_release);
	if (rc == 0)
		atomic_store_explicit(&probe_said_secret, 1, memory_order_relaxed);
	return rc;
}
