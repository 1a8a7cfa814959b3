/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * stackclear.c - no key left in a dead stack frame (secretmem-heap(7),
 * STACKS): before a thread sleeps in a call that waits for something
 * outside it, the stack below the call is zeroed and the vector registers
 * are cleared.
 *
 * The frames a function leaves when it returns are not erased: a key that
 * a signing routine copied into a local array stays on the stack, below
 * the stack pointer, until a deeper call happens to write over it, and a
 * program that then waits for its next request (an agent, a server) keeps
 * it there for as long as it waits.  So the module interposes the calls
 * that wait - poll, ppoll, select, pselect, epoll_wait, epoll_pwait,
 * accept, accept4, read, recv, recvfrom, recvmsg, nanosleep,
 * clock_nanosleep, sleep, usleep, pthread_cond_wait and
 * pthread_cond_timedwait - and when the call is about to wait, zeroes
 * every page of the thread's stack below it that holds memory (mincore),
 * then clears the vector registers (a core file's notes keep them; they
 * are all call-clobbered, so no caller loses a value).  The same happens
 * when a thread ends (pthread_create: glibc keeps ended threads' stacks
 * for new threads).
 *
 * "About to wait": a call that returns at once costs nothing extra - an
 * event loop that has work pays no clearing.  The poll family is asked
 * first with a zero timeout; read and accept ask poll(2) whether the
 * descriptor is ready; recv tries MSG_DONTWAIT first; a descriptor in
 * non-blocking mode never waits; the sleeps of under a millisecond do
 * not clear; a condition wait always may.  The real function is then
 * called as the program asked (glibc's, found with dlsym: cancellation
 * points stay cancellation points).
 *
 * What is cleared: the pages of the thread's own stack (pthread_getattr_np:
 * the main thread's and every thread's, a stack the program gave with
 * pthread_attr_setstack included) below the current frame; pages the
 * kernel reports without memory are skipped, so nothing is faulted in.
 * Not cleared: a stack the thread is not on (a signal handler on its
 * sigaltstack, a coroutine on a stack of its own - those from malloc are
 * in secret memory already), and a thread whose stack bounds glibc cannot
 * give.  SECRETMEM_HEAP_STACKS=0 turns the clearing off; it is also off
 * while the module does not serve the process's malloc.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "slab.h"
#include "hp.h"

#define HP_EXPORT __attribute__((visibility("default")))
#define PAGE 4096u

#if defined(__x86_64__)
#define SP_NOW(v) __asm__ volatile("mov %%rsp, %0" : "=r"(v))
#elif defined(__aarch64__)
#define SP_NOW(v) __asm__ volatile("mov %0, sp" : "=r"(v))
#endif

/* ---- when ------------------------------------------------------------------ */

enum { ON_UNKNOWN = 0, ON_YES = 1, ON_NO = 2 };
static int on_state; /* ON_*, decided at the first wait after the module serves */

static int clearing_on(void)
{
	int s = __atomic_load_n(&on_state, __ATOMIC_RELAXED);

	if (SM_LIKELY(s != ON_UNKNOWN))
		return s == ON_YES;
	if (!hp_serving())
		return 0; /* not yet, or never: asked again next time */
#ifdef SP_NOW
	const char *e = getenv("SECRETMEM_HEAP_STACKS");
	s = e && strcmp(e, "0") == 0 ? ON_NO : ON_YES;
#else
	s = ON_NO;
#endif
	__atomic_store_n(&on_state, s, __ATOMIC_RELAXED);
	return s == ON_YES;
}

/* ---- the thread's stack -------------------------------------------------------- */

enum { ST_NEW = 0, ST_KNOWN, ST_NONE, ST_BUSY };

struct tstack {
	uintptr_t lo, hi;     /* the stack glibc gives for the thread            */
	uintptr_t vstart;     /* its lowest mapped page (the main stack grows)   */
	uintptr_t alt_lo, alt_hi; /* the thread's sigaltstack, if any           */
	unsigned char state;  /* ST_*                                            */
	unsigned long clears; /* how often it was cleared                        */
};
static __thread struct tstack t_st __attribute__((tls_model("initial-exec")));

static unsigned long total_clears, total_bytes;

/* 1 if the page at p is mapped (mincore answers for it). */
static int mapped(uintptr_t p)
{
	unsigned char v;

	return syscall(SYS_mincore, (void *)p, (size_t)PAGE, &v) == 0;
}

/* The lowest page of [lo, top) from which everything up to top is mapped
 * (the main thread's stack mapping starts above glibc's lower bound, which
 * comes from RLIMIT_STACK).  top is mapped. */
static uintptr_t lowest_mapped(uintptr_t lo, uintptr_t top)
{
	uintptr_t a = (lo + PAGE - 1) & ~(uintptr_t)(PAGE - 1), b = top; /* b is mapped */

	if (a >= b || mapped(a))
		return a < b ? a : b;
	while (b - a > PAGE) { /* a unmapped, b mapped */
		uintptr_t m = a + ((b - a) / 2 & ~(uintptr_t)(PAGE - 1));
		if (mapped(m))
			b = m;
		else
			a = m;
	}
	return b;
}

__attribute__((noinline)) static void stack_learn(uintptr_t sp)
{
	pthread_attr_t a;
	void *addr;
	size_t size;

	t_st.state = ST_BUSY; /* a wait in a signal handler meanwhile: skipped */
	if (pthread_getattr_np(pthread_self(), &a) != 0) {
		t_st.state = ST_NONE;
		return;
	}
	int ok = pthread_attr_getstack(&a, &addr, &size) == 0;
	pthread_attr_destroy(&a);
	uintptr_t lo = (uintptr_t)addr, hi = lo + size;
	if (!ok || sp < lo || sp >= hi) {
		t_st.state = ST_NONE;
		return;
	}
	t_st.lo = lo;
	t_st.hi = hi;
	t_st.vstart = lowest_mapped(lo, sp & ~(uintptr_t)(PAGE - 1));
	t_st.state = ST_KNOWN;
}

/* ---- the clearing --------------------------------------------------------------- */

/* Zero [p, end) with stores the compiler keeps, without calling anything
 * (the memory is below the stack pointer). */
static inline void zero_words(uintptr_t p, uintptr_t end)
{
	for (volatile uint64_t *q = (volatile uint64_t *)p; (uintptr_t)q < end; q++)
		*q = 0;
}

static inline int page_dirty(uintptr_t p)
{
	const uint64_t *q = (const uint64_t *)p;
	uint64_t acc = 0;

	for (unsigned i = 0; i < PAGE / 8; i++)
		acc |= q[i];
	return acc != 0;
}

/* Pages per mincore call: one call for a stack of up to 16 MiB; the answer
 * (a byte a page) is on the stack, at most 1/4096 of the stack's size. */
#define VEC 4096

/*
 * Zero every page of the stack wholly below the page this function's
 * stack pointer is in, where the page holds memory and is not zero
 * already.  Returns that page's start (the caller zeroes the rest up to
 * its own frame), or 0 when this thread is not cleared.
 */
__attribute__((noinline)) static uintptr_t clear_pages(void)
{
	uintptr_t sp;
	unsigned long bytes = 0;

	SP_NOW(sp);
	if (SM_UNLIKELY(t_st.state != ST_KNOWN)) {
		if (t_st.state != ST_NEW)
			return 0;
		stack_learn(sp);
		if (t_st.state != ST_KNOWN)
			return 0;
	}
	if (sp < t_st.vstart || sp >= t_st.hi || (sp >= t_st.alt_lo && sp < t_st.alt_hi))
		return 0; /* on another stack: a signal stack, a coroutine's */
	uintptr_t cut = sp & ~(uintptr_t)(PAGE - 1);
	if (t_st.vstart > t_st.lo && mapped(t_st.vstart - PAGE)) /* the main stack grew */
		t_st.vstart = lowest_mapped(t_st.lo, t_st.vstart - PAGE);
	size_t pages = (cut - t_st.vstart) / PAGE;
	unsigned char vec[pages < VEC ? pages + 1 : VEC];
	for (uintptr_t top = cut; top > t_st.vstart;) { /* from the top down */
		size_t n = (top - t_st.vstart) / PAGE < VEC ? (top - t_st.vstart) / PAGE : VEC;
		uintptr_t base = top - n * PAGE;
		if (syscall(SYS_mincore, (void *)base, n * PAGE, vec) != 0)
			return 0;
		for (size_t i = 0; i < n; i++) {
			uintptr_t p = base + i * PAGE;
			if ((vec[i] & 1) && page_dirty(p)) {
				zero_words(p, p + PAGE);
				bytes += PAGE;
			}
		}
		top = base;
	}
	t_st.clears++;
	__atomic_fetch_add(&total_clears, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&total_bytes, bytes, __ATOMIC_RELAXED);
	return cut;
}

/* Zero from cut up to this function's own stack pointer: what is left of
 * clear_pages()'s frame and of the dead frames in that page. */
__attribute__((noinline)) static void zero_tail(uintptr_t cut)
{
	uintptr_t sp;

	SP_NOW(sp);
	if (cut && cut < sp)
		zero_words(cut, sp & ~(uintptr_t)7);
}

static int vec_kind = -1; /* 0: SSE, 1: AVX, 2: AVX-512 */

/* Zero the vector registers (all of them are call-clobbered). */
__attribute__((noinline)) static void clear_vectors(void)
{
#if defined(__x86_64__)
	if (vec_kind < 0) {
		__builtin_cpu_init();
		vec_kind = __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx") ? 1 : 0;
	}
	if (vec_kind == 2)
		__asm__ volatile("vzeroall\n\t"
				 "vpxord %%xmm16, %%xmm16, %%xmm16\n\tvpxord %%xmm17, %%xmm17, %%xmm17\n\t"
				 "vpxord %%xmm18, %%xmm18, %%xmm18\n\tvpxord %%xmm19, %%xmm19, %%xmm19\n\t"
				 "vpxord %%xmm20, %%xmm20, %%xmm20\n\tvpxord %%xmm21, %%xmm21, %%xmm21\n\t"
				 "vpxord %%xmm22, %%xmm22, %%xmm22\n\tvpxord %%xmm23, %%xmm23, %%xmm23\n\t"
				 "vpxord %%xmm24, %%xmm24, %%xmm24\n\tvpxord %%xmm25, %%xmm25, %%xmm25\n\t"
				 "vpxord %%xmm26, %%xmm26, %%xmm26\n\tvpxord %%xmm27, %%xmm27, %%xmm27\n\t"
				 "vpxord %%xmm28, %%xmm28, %%xmm28\n\tvpxord %%xmm29, %%xmm29, %%xmm29\n\t"
				 "vpxord %%xmm30, %%xmm30, %%xmm30\n\tvpxord %%xmm31, %%xmm31, %%xmm31" ::: "memory");
	else if (vec_kind == 1)
		__asm__ volatile("vzeroall" ::: "memory");
	else
		__asm__ volatile("pxor %%xmm0, %%xmm0\n\tpxor %%xmm1, %%xmm1\n\tpxor %%xmm2, %%xmm2\n\t"
				 "pxor %%xmm3, %%xmm3\n\tpxor %%xmm4, %%xmm4\n\tpxor %%xmm5, %%xmm5\n\t"
				 "pxor %%xmm6, %%xmm6\n\tpxor %%xmm7, %%xmm7\n\tpxor %%xmm8, %%xmm8\n\t"
				 "pxor %%xmm9, %%xmm9\n\tpxor %%xmm10, %%xmm10\n\tpxor %%xmm11, %%xmm11\n\t"
				 "pxor %%xmm12, %%xmm12\n\tpxor %%xmm13, %%xmm13\n\tpxor %%xmm14, %%xmm14\n\t"
				 "pxor %%xmm15, %%xmm15" ::: "memory");
#endif
}

/* The thread is about to wait: clear its dead frames and its vector
 * registers (errno kept). */
static inline void about_to_wait(void)
{
	int e = errno;

	zero_tail(clear_pages());
	clear_vectors();
	errno = e;
}

void hp_stack_figures(unsigned long *clears, unsigned long *bytes)
{
	*clears = __atomic_load_n(&total_clears, __ATOMIC_RELAXED);
	*bytes = __atomic_load_n(&total_bytes, __ATOMIC_RELAXED);
}

/* ---- the real functions --------------------------------------------------------- */

/* The function this module's name stands in front of (glibc's), found at
 * the first call: dlsym in the lookup order after this module. */
#define REAL(name)                                                                     \
	static __typeof__(name) *real_##name;                                          \
	static void resolve_##name(void)                                               \
	{                                                                              \
		if (SM_UNLIKELY(!__atomic_load_n(&real_##name, __ATOMIC_RELAXED)))     \
			__atomic_store_n(&real_##name,                                 \
					 (__typeof__(name) *)dlsym(RTLD_NEXT, #name),  \
					 __ATOMIC_RELAXED);                            \
	}

REAL(poll)
REAL(ppoll)
REAL(epoll_wait)
REAL(epoll_pwait)
REAL(select)
REAL(pselect)
REAL(accept)
REAL(accept4)
REAL(read)
REAL(recv)
REAL(recvfrom)
REAL(recvmsg)
REAL(nanosleep)
REAL(clock_nanosleep)
REAL(sleep)
REAL(usleep)
REAL(pthread_cond_clockwait)

/* The condition waits have two versions in glibc; dlsym gives the oldest
 * (LinuxThreads' layout), so the current one is asked for by name. */
#define REAL_COND(name)                                                              \
	static __typeof__(name) *real_##name;                                        \
	static void resolve_##name(void)                                             \
	{                                                                            \
		if (SM_UNLIKELY(!__atomic_load_n(&real_##name, __ATOMIC_RELAXED))) { \
			void *f = dlvsym(RTLD_NEXT, #name, "GLIBC_2.3.2");           \
			__atomic_store_n(&real_##name,                               \
					 (__typeof__(name) *)(f ? f : dlsym(RTLD_NEXT, #name)), \
					 __ATOMIC_RELAXED);                          \
		}                                                                    \
	}
REAL_COND(pthread_cond_wait)
REAL_COND(pthread_cond_timedwait)
REAL(sigaltstack)
REAL(pthread_create)

/* 1 if fd is in non-blocking mode (such a call never waits). */
static int nonblocking(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl >= 0 && (fl & O_NONBLOCK);
}

/* Before a call on fd that waits until it is readable: clear unless it is
 * ready (or cannot wait). */
static void before_fd_wait(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int e = errno;

	int r = (int)syscall(SYS_poll, &p, 1, 0);
	errno = e;
	if (r == 0 && !nonblocking(fd))
		about_to_wait();
}

/* ---- the poll family -------------------------------------------------------------- */

HP_EXPORT int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	resolve_poll();
	if (timeout != 0 && clearing_on()) {
		int r = real_poll(fds, nfds, 0);
		if (r != 0)
			return r;
		about_to_wait();
	}
	return real_poll(fds, nfds, timeout);
}

static int zero_time(const struct timespec *t)
{
	return t && t->tv_sec == 0 && t->tv_nsec == 0;
}

HP_EXPORT int ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *tmo, const sigset_t *mask)
{
	resolve_ppoll();
	if (!zero_time(tmo) && clearing_on()) {
		static const struct timespec zero;
		int r = real_ppoll(fds, nfds, &zero, mask);
		if (r != 0)
			return r;
		about_to_wait();
	}
	return real_ppoll(fds, nfds, tmo, mask);
}

HP_EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	resolve_epoll_wait();
	if (timeout != 0 && clearing_on()) {
		int r = real_epoll_wait(epfd, ev, max, 0);
		if (r != 0)
			return r;
		about_to_wait();
	}
	return real_epoll_wait(epfd, ev, max, timeout);
}

HP_EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout, const sigset_t *mask)
{
	resolve_epoll_pwait();
	if (timeout != 0 && clearing_on()) {
		int r = real_epoll_pwait(epfd, ev, max, 0, mask);
		if (r != 0)
			return r;
		about_to_wait();
	}
	return real_epoll_pwait(epfd, ev, max, timeout, mask);
}

/*
 * select and pselect change their sets: the zero-timeout question is asked
 * on copies (sets of up to 1024 descriptors; a larger nfds clears without
 * asking).  Returns the question's answer (0: nothing ready), and then the
 * copies are the answer's sets.
 */
struct sets {
	fd_set r, w, x;
};

static void sets_copy(struct sets *s, int nfds, fd_set *r, fd_set *w, fd_set *x)
{
	size_t n = ((size_t)nfds + 63) / 64 * 8;

	memset(s, 0, sizeof(*s));
	if (r)
		memcpy(&s->r, r, n);
	if (w)
		memcpy(&s->w, w, n);
	if (x)
		memcpy(&s->x, x, n);
}

static void sets_back(const struct sets *s, int nfds, fd_set *r, fd_set *w, fd_set *x)
{
	size_t n = ((size_t)nfds + 63) / 64 * 8;

	if (r)
		memcpy(r, &s->r, n);
	if (w)
		memcpy(w, &s->w, n);
	if (x)
		memcpy(x, &s->x, n);
}

/* 1 when a select-type call may wait: clear then; else *ready holds the
 * answer to return (the sets were updated). */
__attribute__((noinline)) static int select_may_wait(int nfds, fd_set *r, fd_set *w, fd_set *x,
						     const sigset_t *mask, int *ready)
{
	static const struct timespec zero;
	struct sets s;

	if (nfds < 0 || nfds > FD_SETSIZE)
		return 1;
	sets_copy(&s, nfds, r, w, x);
	resolve_pselect();
	int n = real_pselect(nfds, r ? &s.r : NULL, w ? &s.w : NULL, x ? &s.x : NULL, &zero, mask);
	if (n == 0)
		return 1;
	if (n > 0)
		sets_back(&s, nfds, r, w, x);
	*ready = n;
	return 0;
}

HP_EXPORT int select(int nfds, fd_set *r, fd_set *w, fd_set *x, struct timeval *tmo)
{
	resolve_select();
	if (!(tmo && tmo->tv_sec == 0 && tmo->tv_usec == 0) && clearing_on()) {
		int ready;
		if (!select_may_wait(nfds, r, w, x, NULL, &ready))
			return ready;
		about_to_wait();
	}
	return real_select(nfds, r, w, x, tmo);
}

HP_EXPORT int pselect(int nfds, fd_set *r, fd_set *w, fd_set *x, const struct timespec *tmo, const sigset_t *mask)
{
	resolve_pselect();
	if (!zero_time(tmo) && clearing_on()) {
		int ready;
		if (!select_may_wait(nfds, r, w, x, mask, &ready))
			return ready;
		about_to_wait();
	}
	return real_pselect(nfds, r, w, x, tmo, mask);
}

/* ---- descriptors ------------------------------------------------------------------ */

HP_EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	resolve_accept();
	if (clearing_on())
		before_fd_wait(fd);
	return real_accept(fd, addr, len);
}

HP_EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	resolve_accept4();
	if (clearing_on())
		before_fd_wait(fd);
	return real_accept4(fd, addr, len, flags);
}

HP_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	resolve_read();
	if (n && clearing_on())
		before_fd_wait(fd);
	return real_read(fd, buf, n);
}

/*
 * The recv family: the call itself is tried with MSG_DONTWAIT first (what
 * it returns then is its answer), unless the program asked for
 * MSG_DONTWAIT or MSG_WAITALL (which waits for the whole length: cleared
 * before, without trying).  1 when the call may wait: cleared then.
 */
static int recv_may_wait(int fd, int flags, ssize_t tried)
{
	if (flags & MSG_WAITALL) {
		about_to_wait();
		return 1;
	}
	if (tried >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK) || nonblocking(fd))
		return 0;
	about_to_wait();
	return 1;
}

static int recv_asks(int flags)
{
	return !(flags & MSG_DONTWAIT) && clearing_on();
}

HP_EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	resolve_recv();
	if (recv_asks(flags)) {
		ssize_t r = flags & MSG_WAITALL ? -1 : real_recv(fd, buf, n, flags | MSG_DONTWAIT);
		if (!recv_may_wait(fd, flags, r))
			return r;
	}
	return real_recv(fd, buf, n, flags);
}

HP_EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *addr, socklen_t *len)
{
	resolve_recvfrom();
	if (recv_asks(flags)) {
		ssize_t r = flags & MSG_WAITALL ? -1 : real_recvfrom(fd, buf, n, flags | MSG_DONTWAIT, addr, len);
		if (!recv_may_wait(fd, flags, r))
			return r;
	}
	return real_recvfrom(fd, buf, n, flags, addr, len);
}

HP_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	resolve_recvmsg();
	if (recv_asks(flags)) {
		ssize_t r = flags & MSG_WAITALL ? -1 : real_recvmsg(fd, msg, flags | MSG_DONTWAIT);
		if (!recv_may_wait(fd, flags, r))
			return r;
	}
	return real_recvmsg(fd, msg, flags);
}

/* ---- sleeps and condition waits ---------------------------------------------------- */

static int long_sleep(const struct timespec *t)
{
	return t && (t->tv_sec > 0 || t->tv_nsec >= 1000000);
}

HP_EXPORT int nanosleep(const struct timespec *req, struct timespec *rem)
{
	resolve_nanosleep();
	if (long_sleep(req) && clearing_on())
		about_to_wait();
	return real_nanosleep(req, rem);
}

HP_EXPORT int clock_nanosleep(clockid_t clock, int flags, const struct timespec *req, struct timespec *rem)
{
	resolve_clock_nanosleep();
	if ((flags & TIMER_ABSTIME || long_sleep(req)) && clearing_on())
		about_to_wait();
	return real_clock_nanosleep(clock, flags, req, rem);
}

HP_EXPORT unsigned int sleep(unsigned int s)
{
	resolve_sleep();
	if (s && clearing_on())
		about_to_wait();
	return real_sleep(s);
}

HP_EXPORT int usleep(useconds_t us)
{
	resolve_usleep();
	if (us >= 1000 && clearing_on())
		about_to_wait();
	return real_usleep(us);
}

HP_EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	resolve_pthread_cond_wait();
	if (clearing_on())
		about_to_wait();
	return real_pthread_cond_wait(c, m);
}

HP_EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t)
{
	resolve_pthread_cond_timedwait();
	if (clearing_on())
		about_to_wait();
	return real_pthread_cond_timedwait(c, m, t);
}

HP_EXPORT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clock, const struct timespec *t)
{
	resolve_pthread_cond_clockwait();
	if (clearing_on())
		about_to_wait();
	return real_pthread_cond_clockwait(c, m, clock, t);
}

/* ---- the signal stack ---------------------------------------------------------------- */

/* Remembered so that a wait inside a handler that runs on it is not taken
 * for a wait on the thread's stack (the signal stack may be an array on
 * that stack, above live frames). */
HP_EXPORT int sigaltstack(const stack_t *ss, stack_t *old)
{
	resolve_sigaltstack();
	int r = real_sigaltstack(ss, old);
	if (r == 0 && ss) {
		if (ss->ss_flags & SS_DISABLE) {
			t_st.alt_lo = t_st.alt_hi = 0;
		} else {
			t_st.alt_lo = (uintptr_t)ss->ss_sp;
			t_st.alt_hi = (uintptr_t)ss->ss_sp + ss->ss_size;
		}
	}
	return r;
}

/* ---- a thread's end ---------------------------------------------------------------- */

/*
 * A thread that ends leaves its frames too, and glibc keeps the stacks of
 * ended threads for new ones: every thread the program starts runs under
 * a frame of the module's that clears the stack below it when the
 * thread's function returns, calls pthread_exit or is cancelled (a
 * cleanup handler, run at this frame's depth).
 */
struct start {
	void *(*fn)(void *);
	void *arg;
	int taken;
};

/* Start records: held from pthread_create until the thread runs; a
 * thread's first allocator call is not the module's to make. */
#define STARTS 64
static struct start starts[STARTS];

static void at_end(void *unused)
{
	(void)unused;
	about_to_wait();
}

static void start_drop(struct start *s)
{
	if (s >= starts && s < starts + STARTS)
		__atomic_store_n(&s->taken, 0, __ATOMIC_RELEASE);
	else
		free(s);
}

static struct start *start_record(void)
{
	static unsigned next;

	for (unsigned i = 0; i < STARTS; i++) {
		struct start *s = &starts[(__atomic_fetch_add(&next, 1, __ATOMIC_RELAXED)) % STARTS];
		if (!__atomic_exchange_n(&s->taken, 1, __ATOMIC_ACQUIRE))
			return s;
	}
	return malloc(sizeof(struct start)); /* more threads starting than records */
}

static void *run_body(void *(*fn)(void *), void *arg)
{
	void *r;

	pthread_cleanup_push(at_end, NULL);
	r = fn(arg);
	pthread_cleanup_pop(1);
	return r;
}

static void *run_thread(void *p)
{
	struct start *s = p;
	void *(*fn)(void *) = s->fn, *arg = s->arg;

	start_drop(s);
	return run_body(fn, arg);
}

HP_EXPORT int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	resolve_pthread_create();
	if (!clearing_on())
		return real_pthread_create(t, attr, fn, arg);
	struct start *s = start_record();
	if (!s)
		return EAGAIN;
	s->fn = fn;
	s->arg = arg;
	int r = real_pthread_create(t, attr, run_thread, s);
	if (r != 0)
		start_drop(s);
	return r;
}
