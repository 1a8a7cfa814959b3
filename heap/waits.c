/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * waits.c - the calls that wait, in heap mode: a thread's dead stack
 * frames are cleared (stackclear.c) before it waits for something outside
 * it (secretmem-heap(7), STACKS).
 *
 * Interposed: poll, ppoll, select, pselect, epoll_wait, epoll_pwait,
 * epoll_pwait2, read, readv, recv, recvfrom, recvmsg, recvmmsg, accept,
 * accept4, nanosleep, clock_nanosleep, sleep, usleep, pthread_cond_wait,
 * pthread_cond_clockwait, pthread_cond_timedwait; and pause, sigsuspend,
 * sigwait, sigwaitinfo, sigtimedwait, wait, waitpid, waitid, wait4,
 * pthread_join, pthread_timedjoin_np, pthread_clockjoin_np, sem_wait,
 * sem_timedwait and sem_clockwait.  No other call that waits is
 * (pthread_mutex_lock, write, flock, msgrcv, mq_receive, preadv, C11's
 * cnd_wait and thrd_sleep...): they clear nothing (secretmem-heap(7)).
 * Each calls glibc's own function in the end
 * (cancellation points stay cancellation points, errno and results are
 * glibc's), as the program asked.  glibc's functions are found when the
 * module starts (a dlsym in the middle of the program's work would leave
 * what its registers held in the frames it runs on).
 *
 * When a thread clears: only when the call is about to wait.
 *  - A call that returns at once clears nothing: the poll family is asked
 *    with a zero timeout first; read* and recv* ask poll(2) whether the
 *    descriptor is ready (nothing is taken from it); the waits for a
 *    signal, a child, a thread or a semaphore are tried without waiting;
 *    a sleep of under a millisecond does not clear, nor a recvmmsg of no
 *    message or a readv of a count glibc refuses.  A regular file, a
 *    block device and a descriptor in non-blocking mode never wait
 *    (F_GETFL and fstat, remembered for 100 ms per thread).
 *  - read, readv, recv*, accept on a blocking socket and the waits for a
 *    signal, a child, a thread or a semaphore clear every time they would
 *    wait.
 *    The calls with a timeout (the poll family, the sleeps, the condition
 *    waits) clear at most once per GAP (10 ms) unless they then wait
 *    longer: a thread cleared less than GAP ago first waits for what is
 *    left of GAP (within the program's own timeout); if nothing came, it
 *    clears and waits for the rest, signals blocked in between
 *    (clear_then_wait); a condition wait returns a spurious wake-up
 *    instead.  So an event loop that wakes often clears about once per
 *    GAP, and a thread that goes idle is cleared GAP after its last
 *    clearing at the latest.  pthread_cond_timedwait's clock is the
 *    condition variable's, read from it (cond_clock); on a glibc whose
 *    condition variables do not keep it where 2.25 to 2.36 do, it is not
 *    split: it clears when the last clearing is GAP old, else waits as it
 *    is.
 *  - Under a seccomp filter (sandbox.c) only the program's own system
 *    calls are made: the poll family still asks with a zero timeout
 *    first, select through select; read*, recv* and accept clear before
 *    every call, without asking.
 */
#define _GNU_SOURCE
/* This file defines read, recv, recvfrom, poll and ppoll: with
 * _FORTIFY_SOURCE, glibc's headers define inline wrappers of them first,
 * and clang then drops the definitions' visibility("default") (the
 * module would not interpose them). */
#undef _FORTIFY_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "slab.h"
#include "hp.h"

#define HP_EXPORT __attribute__((visibility("default")))
extern void __chk_fail(void) __attribute__((noreturn));
#define GAP_NS 10000000ll /* 10 ms */
#define MS_NS 1000000ll
#define S_NS 1000000000ll

HP_REAL(poll)
HP_REAL(ppoll)
HP_REAL(epoll_wait)
HP_REAL(epoll_pwait)
#if __GLIBC_PREREQ(2, 35)
HP_REAL(epoll_pwait2)
#endif
HP_REAL(select)
HP_REAL(pselect)
HP_REAL(accept)
HP_REAL(accept4)
HP_REAL(read)
HP_REAL(readv)
HP_REAL(recv)
HP_REAL(recvfrom)
HP_REAL(recvmsg)
HP_REAL(recvmmsg)
HP_REAL(nanosleep)
HP_REAL(clock_nanosleep)
HP_REAL(sleep)
HP_REAL(usleep)
HP_REAL(pthread_cond_clockwait)
HP_REAL(close)
HP_REAL(close_range)
HP_REAL(closefrom)
HP_REAL(dup2)
HP_REAL(dup3)
HP_REAL(fcntl)
HP_REAL(ioctl)
HP_REAL(pause)
HP_REAL(sigsuspend)
HP_REAL(sigwait)
HP_REAL(sigwaitinfo)
HP_REAL(sigtimedwait)
HP_REAL(wait)
HP_REAL(waitpid)
HP_REAL(waitid)
HP_REAL(wait4)
HP_REAL(pthread_join)
HP_REAL(pthread_timedjoin_np)
HP_REAL(pthread_clockjoin_np)
HP_REAL(sem_wait)
HP_REAL(sem_timedwait)
HP_REAL(sem_clockwait)

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

static int cond_clock(const pthread_cond_t *c);

void hp_waits_resolve(void)
{
	pthread_cond_t any = PTHREAD_COND_INITIALIZER;

	resolve_poll();
	resolve_ppoll();
	resolve_epoll_wait();
	resolve_epoll_pwait();
#if __GLIBC_PREREQ(2, 35)
	resolve_epoll_pwait2();
#endif
	resolve_select();
	resolve_pselect();
	resolve_accept();
	resolve_accept4();
	resolve_read();
	resolve_readv();
	resolve_recv();
	resolve_recvfrom();
	resolve_recvmsg();
	resolve_recvmmsg();
	resolve_nanosleep();
	resolve_clock_nanosleep();
	resolve_sleep();
	resolve_usleep();
	resolve_pthread_cond_clockwait();
	resolve_close();
	resolve_close_range();
	resolve_closefrom();
	resolve_dup2();
	resolve_dup3();
	resolve_fcntl();
	resolve_ioctl();
	resolve_pause();
	resolve_sigsuspend();
	resolve_sigwait();
	resolve_sigwaitinfo();
	resolve_sigtimedwait();
	resolve_wait();
	resolve_waitpid();
	resolve_waitid();
	resolve_wait4();
	resolve_pthread_join();
	resolve_pthread_timedjoin_np();
	resolve_pthread_clockjoin_np();
	resolve_sem_wait();
	resolve_sem_timedwait();
	resolve_sem_clockwait();
	resolve_pthread_cond_wait();
	resolve_pthread_cond_timedwait();
	(void)cond_clock(&any);
}

/* ---- time ---------------------------------------------------------------------- */

static __thread int64_t t_cleared __attribute__((tls_model("initial-exec"))); /* CLOCK_MONOTONIC ns */

static int64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * S_NS + t.tv_nsec;
}

static int64_t ts_ns(const struct timespec *t)
{
	if (t->tv_sec >= INT64_MAX / S_NS - 1)
		return INT64_MAX / 2;
	return (int64_t)t->tv_sec * S_NS + t->tv_nsec;
}

static struct timespec ns_ts(int64_t ns)
{
	if (ns < 0)
		ns = 0;
	return (struct timespec){ .tv_sec = (time_t)(ns / S_NS), .tv_nsec = (long)(ns % S_NS) };
}

static int valid_ts(const struct timespec *t)
{
	return t && t->tv_sec >= 0 && t->tv_nsec >= 0 && t->tv_nsec < S_NS;
}

/*
 * Whether the kernel can read the program's timespec at t, before this
 * module reads it: a futex wait on a word that differs returns at once,
 * EFAULT for a pointer the kernel cannot read.  Such a pointer goes to
 * glibc's own call, which returns EFAULT where the module would crash.
 * Under a seccomp filter no call but the program's own is made: there the
 * pointer is taken as readable (a bad one crashes, as before).
 */
static int ts_readable(const struct timespec *t)
{
	if (hp_sandboxed())
		return 1;
	int e = errno, word = 0;
	long r = syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 1, t, NULL, 0);
	int ok = !(r < 0 && errno == EFAULT);
	errno = e;
	return ok;
}

/* A timespec the program gave, readable and valid (see ts_readable). */
static int good_ts(const struct timespec *t)
{
	return t && ts_readable(t) && valid_ts(t);
}

static void clear_now(void)
{
	hp_stack_clear();
	t_cleared = mono_ns();
}

/* What is left of GAP since the thread's last clearing (0: cleared long
 * enough ago, or never). */
static int64_t gap_left(int64_t now)
{
	int64_t since = now - t_cleared;

	return t_cleared && since >= 0 && since < GAP_NS ? GAP_NS - since : 0;
}

/* ---- a wait with a timeout --------------------------------------------------------- */

/*
 * wait(ctx, ns, mask) waits up to ns (-1: without end, 0: only asks),
 * returns what the call returns: > 0 ready, 0 nothing before the timeout,
 * < 0 an error (errno).  mask, when not NULL, is the signal mask to wait
 * with, set atomically by the call (ppoll, epoll_pwait, pselect); a mask
 * the program gave comes first.
 */
typedef long (*wait_fn)(void *ctx, int64_t ns, const sigset_t *mask);

/*
 * The second part of a split wait.  A signal that came between the parts
 * would be handled and not end the wait, where the program's own call
 * would have returned EINTR: every signal is blocked from the end of the
 * first part (the instant between its return and that block excepted) to
 * the second part, which waits with the program's mask.  Under a seccomp
 * filter only the program's own call is made: a signal during the
 * clearing then does not end the wait.
 */
static long clear_then_wait(wait_fn wait, void *ctx, int64_t ns)
{
	sigset_t all, old;

	if (hp_sandboxed()) {
		clear_now();
		return wait(ctx, ns, NULL);
	}
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	clear_now();
	if (hp_sandboxed()) {
		/* a filter another thread installed meanwhile (TSYNC): the
		 * program's own call, as under a filter from the start; one
		 * installed after this reading meets the call that sets the
		 * mask (secretmem-heap(7), SECCOMP FILTERS) */
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		return wait(ctx, ns, NULL);
	}
	long r = wait(ctx, ns, &old);
	int e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return r;
}

static long wait_planned(wait_fn wait, void *ctx, int64_t ns)
{
	if (ns == 0 || !hp_stack_on())
		return wait(ctx, ns, NULL);
	int64_t t0 = mono_ns(), left = gap_left(t0);
	if (!left) {
		/* a signal during this clearing comes before the wait: as
		 * one before the program's own call */
		long r = wait(ctx, 0, NULL);
		if (r != 0)
			return r;
		clear_now();
		return wait(ctx, ns, NULL);
	}
	if (ns > 0 && ns <= left)
		return wait(ctx, ns, NULL);
	long r = wait(ctx, left, NULL);
	if (r != 0)
		return r;
	if (ns < 0)
		return clear_then_wait(wait, ctx, -1);
	int64_t rest = ns - (mono_ns() - t0);
	return clear_then_wait(wait, ctx, rest > 0 ? rest : 0);
}

/* A timeout in ms (negative: none) as ns, and back (rounded up). */
static int64_t ms_ns(int ms)
{
	return ms < 0 ? -1 : (int64_t)ms * MS_NS;
}

static int ns_ms(int64_t ns)
{
	if (ns < 0)
		return -1;
	int64_t ms = (ns + MS_NS - 1) / MS_NS;
	return ms > INT32_MAX ? INT32_MAX : (int)ms;
}

/* ---- the poll family -------------------------------------------------------------- */

struct pollctx {
	struct pollfd *fds;
	nfds_t nfds;
	const sigset_t *mask;
	int ppoll;
};

static long poll_wait(void *c, int64_t ns, const sigset_t *mask)
{
	struct pollctx *p = c;

	if (!p->ppoll && !mask)
		return real_poll(p->fds, p->nfds, ns_ms(ns));
	struct timespec t = ns_ts(ns);
	return real_ppoll(p->fds, p->nfds, ns < 0 ? NULL : &t, p->mask ? p->mask : mask);
}

HP_EXPORT int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	struct pollctx p = { fds, nfds, NULL, 0 };

	resolve_poll();
	return (int)wait_planned(poll_wait, &p, ms_ns(timeout));
}

HP_EXPORT int ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *tmo, const sigset_t *mask)
{
	struct pollctx p = { fds, nfds, mask, 1 };

	resolve_ppoll();
	if (tmo && !valid_ts(tmo))
		return real_ppoll(fds, nfds, tmo, mask); /* its EINVAL */
	return (int)wait_planned(poll_wait, &p, tmo ? ts_ns(tmo) : -1);
}

struct epollctx {
	int epfd, max;
	struct epoll_event *ev;
	const sigset_t *mask;
	int pwait; /* 1: epoll_pwait, 2: epoll_pwait2 (ns to the nanosecond) */
};

static long epoll_part(void *c, int64_t ns, const sigset_t *mask)
{
	struct epollctx *e = c;

#if __GLIBC_PREREQ(2, 35)
	if (e->pwait == 2) {
		struct timespec t = ns_ts(ns);
		return real_epoll_pwait2(e->epfd, e->ev, e->max, ns < 0 ? NULL : &t, e->mask ? e->mask : mask);
	}
#endif
	if (e->pwait || mask)
		return real_epoll_pwait(e->epfd, e->ev, e->max, ns_ms(ns), e->mask ? e->mask : mask);
	return real_epoll_wait(e->epfd, e->ev, e->max, ns_ms(ns));
}

HP_EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	struct epollctx e = { epfd, max, ev, NULL, 0 };

	resolve_epoll_wait();
	return (int)wait_planned(epoll_part, &e, ms_ns(timeout));
}

HP_EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout, const sigset_t *mask)
{
	struct epollctx e = { epfd, max, ev, mask, 1 };

	resolve_epoll_pwait();
	return (int)wait_planned(epoll_part, &e, ms_ns(timeout));
}

#if __GLIBC_PREREQ(2, 35)
HP_EXPORT int epoll_pwait2(int epfd, struct epoll_event *ev, int max, const struct timespec *tmo,
			   const sigset_t *mask)
{
	struct epollctx e = { epfd, max, ev, mask, 2 };

	resolve_epoll_pwait2();
	if (tmo && !good_ts(tmo))
		return real_epoll_pwait2(epfd, ev, max, tmo, mask); /* its EINVAL, EFAULT */
	return (int)wait_planned(epoll_part, &e, tmo ? ts_ns(tmo) : -1);
}
#endif

/*
 * select and pselect change their sets, and a part that found nothing
 * clears them: every part starts from a copy of the program's sets (of up
 * to FD_SETSIZE descriptors; a larger nfds is waited for as asked, after
 * a clearing when the last one is GAP old), and its answer is copied back.
 */
struct selctx {
	int nfds;
	fd_set *set[3];
	fd_set orig[3];
	const sigset_t *mask;
	int pselect;
};

static size_t set_bytes(int nfds)
{
	return ((size_t)nfds + 63) / 64 * 8;
}

static long select_part(void *c, int64_t ns, const sigset_t *mask)
{
	struct selctx *s = c;
	fd_set work[3];
	struct timespec t = ns_ts(ns);
	size_t n = set_bytes(s->nfds);

	memcpy(work, s->orig, sizeof(work));
	int r;
	if (s->pselect || mask) {
		r = real_pselect(s->nfds, s->set[0] ? &work[0] : NULL, s->set[1] ? &work[1] : NULL,
				 s->set[2] ? &work[2] : NULL, ns < 0 ? NULL : &t, s->mask ? s->mask : mask);
	} else { /* the program's own system call (a seccomp filter may allow only it) */
		struct timeval tv = { t.tv_sec, t.tv_nsec / 1000 + (t.tv_nsec % 1000 != 0) };
		r = real_select(s->nfds, s->set[0] ? &work[0] : NULL, s->set[1] ? &work[1] : NULL,
				s->set[2] ? &work[2] : NULL, ns < 0 ? NULL : &tv);
	}
	if (r > 0) /* ready: the answer's sets; else the program's stay */
		for (int i = 0; i < 3; i++)
			if (s->set[i])
				memcpy(s->set[i], &work[i], n);
	return r;
}

static long select_planned(int nfds, fd_set *r, fd_set *w, fd_set *x, int64_t ns, const sigset_t *mask, int psel)
{
	struct selctx s = { nfds, { r, w, x }, { { { 0 } } }, mask, psel };

	for (int i = 0; i < 3; i++)
		if (s.set[i])
			memcpy(&s.orig[i], s.set[i], set_bytes(nfds));
	long ret = wait_planned(select_part, &s, ns);
	if (ret == 0) /* the timeout: empty sets, as select's; an error keeps them */
		for (int i = 0; i < 3; i++)
			if (s.set[i])
				memset(s.set[i], 0, set_bytes(nfds));
	return ret;
}

HP_EXPORT int select(int nfds, fd_set *r, fd_set *w, fd_set *x, struct timeval *tmo)
{
	resolve_select();
	resolve_pselect();
	if (nfds < 0 || nfds > FD_SETSIZE || (tmo && (tmo->tv_sec < 0 || tmo->tv_usec < 0 || tmo->tv_usec >= 1000000)) ||
	    !hp_stack_on()) {
		if (nfds > FD_SETSIZE && hp_stack_on() && !gap_left(mono_ns()))
			clear_now();
		return real_select(nfds, r, w, x, tmo);
	}
	int64_t ns = tmo ? (int64_t)tmo->tv_sec * S_NS + (int64_t)tmo->tv_usec * 1000 : -1, t0 = mono_ns();
	int ret = (int)select_planned(nfds, r, w, x, ns, NULL, 0);
	if (tmo) { /* Linux's select tells what is left of the timeout */
		int64_t left = ns - (mono_ns() - t0);
		if (left < 0 || ret == 0)
			left = 0;
		tmo->tv_sec = (time_t)(left / S_NS);
		tmo->tv_usec = (suseconds_t)(left % S_NS / 1000);
	}
	return ret;
}

HP_EXPORT int pselect(int nfds, fd_set *r, fd_set *w, fd_set *x, const struct timespec *tmo, const sigset_t *mask)
{
	resolve_pselect();
	if (nfds < 0 || nfds > FD_SETSIZE || (tmo && !valid_ts(tmo)) || !hp_stack_on()) {
		if (nfds > FD_SETSIZE && hp_stack_on() && !gap_left(mono_ns()))
			clear_now();
		return real_pselect(nfds, r, w, x, tmo, mask);
	}
	return (int)select_planned(nfds, r, w, x, tmo ? ts_ns(tmo) : -1, mask, 1);
}

/* ---- descriptors ------------------------------------------------------------------ */

/*
 * What a descriptor is, per thread, for 100 ms: a regular file or block
 * device (its reads never wait for anything outside), or one in
 * non-blocking mode (it never waits); a call on either goes to glibc at
 * once - an event loop's reads cost nothing.  Any close, close_range,
 * closefrom, dup2, dup3, fcntl(F_SETFL) or ioctl(FIONBIO) of the
 * program's forgets them all; one that glibc makes inside (fclose,
 * pclose) is not seen, and then a blocking descriptor that took the
 * number within those 100 ms waits without a clearing.
 */
#define MEMO 64              /* a slot per descriptor number modulo MEMO */
#define MEMO_NS 100000000ll /* 100 ms */
struct memo {
	int fd;
	unsigned gen;
	int64_t at;
};
static __thread struct memo t_memo[MEMO] __attribute__((tls_model("initial-exec")));
static unsigned fd_gen = 1;

static int memo_never_waits(int fd)
{
	const struct memo *m = &t_memo[(unsigned)fd % MEMO];

	return m->fd == fd && m->gen == __atomic_load_n(&fd_gen, __ATOMIC_ACQUIRE) && mono_ns() - m->at < MEMO_NS;
}

static void memo_put(int fd)
{
	struct memo *m = &t_memo[(unsigned)fd % MEMO];

	m->fd = fd;
	m->gen = __atomic_load_n(&fd_gen, __ATOMIC_ACQUIRE);
	m->at = mono_ns();
}

static void memo_forget(void)
{
	__atomic_fetch_add(&fd_gen, 1, __ATOMIC_RELEASE);
}

/* 1 if a call on fd never waits for anything outside: a regular file or a
 * block device, or a descriptor in non-blocking mode (remembered).  A
 * refusal (a seccomp filter's errno) counts as "may wait".  errno kept. */
static int never_waits(int fd)
{
	int e = errno, fl = fcntl(fd, F_GETFL), yes = 0;
	struct stat st;

	if (fl < 0 && (errno == EPERM || errno == EACCES || errno == ENOSYS))
		hp_sandbox_seen();
	if (fl >= 0 && (fl & O_NONBLOCK))
		yes = 1;
	else if (fl >= 0 && fstat(fd, &st) == 0 && (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)))
		yes = 1;
	errno = e;
	if (yes)
		memo_put(fd);
	return yes;
}

/*
 * Before a call on fd that may wait for it to be readable: nothing when it
 * never waits (above); else poll(2) asks whether it is ready, without
 * taking anything from it (SO_RCVLOWAT counts), and the thread is cleared
 * when it is not.  always: clear without asking (accept, which several
 * threads may wait in for one connection).  Under a seccomp filter
 * nothing is asked: the thread is cleared.
 */
static void before_fd_call(int fd, int always)
{
	if (!hp_stack_on() || memo_never_waits(fd))
		return;
	int e = errno, clear;
	sm_calls_enter(); /* the questions as one section (src/callgate.c) */
	if (hp_sandboxed()) {
		clear = 1;
	} else if (never_waits(fd)) {
		clear = 0;
	} else {
		/* raw: glibc's poll is a cancellation point, and a thread
		 * cancelled there would never leave the section */
		struct pollfd p = { .fd = fd, .events = POLLIN };
		struct timespec zero = { 0, 0 };
		clear = always || syscall(SYS_ppoll, &p, 1, &zero, NULL, (size_t)8) == 0;
	}
	sm_calls_leave();
	errno = e;
	if (clear)
		clear_now();
}

HP_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	resolve_read();
	if (n)
		before_fd_call(fd, 0);
	return real_read(fd, buf, n);
}

/* As read; a count glibc refuses never waits. */
HP_EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
	resolve_readv();
	/* the vector is not read here: a bad pointer is the kernel's EFAULT,
	 * not a crash of the module's (buffers all empty clear for nothing) */
	if (cnt > 0 && cnt <= IOV_MAX)
		before_fd_call(fd, 0);
	return real_readv(fd, iov, cnt);
}

HP_EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	resolve_recv();
	if (!(flags & MSG_DONTWAIT))
		before_fd_call(fd, 0);
	return real_recv(fd, buf, n, flags);
}

HP_EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *addr, socklen_t *len)
{
	resolve_recvfrom();
	if (!(flags & MSG_DONTWAIT))
		before_fd_call(fd, 0);
	return real_recvfrom(fd, buf, n, flags, addr, len);
}

HP_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	resolve_recvmsg();
	if (!(flags & MSG_DONTWAIT))
		before_fd_call(fd, 0);
	return real_recvmsg(fd, msg, flags);
}

/* Waits for the first message only (its timeout is looked at after each
 * one, MSG_WAITFORONE makes the rest non-blocking). */
HP_EXPORT int recvmmsg(int fd, struct mmsghdr *msgs, unsigned int n, int flags, struct timespec *tmo)
{
	resolve_recvmmsg();
	if (n && !(flags & MSG_DONTWAIT))
		before_fd_call(fd, 0);
	return real_recvmmsg(fd, msgs, n, flags, tmo);
}

HP_EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	resolve_accept();
	before_fd_call(fd, 1);
	return real_accept(fd, addr, len);
}

HP_EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	resolve_accept4();
	before_fd_call(fd, 1);
	return real_accept4(fd, addr, len, flags);
}

/* _FORTIFY_SOURCE's checked versions (glibc's call its internal read, recv,
 * poll): checked here as glibc does, then the calls above.  (Their
 * declarations come with _FORTIFY_SOURCE, off in this file.) */
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags, struct sockaddr *addr,
		       socklen_t *len);
int __poll_chk(struct pollfd *fds, nfds_t nfds, int timeout, size_t fdslen);
int __ppoll_chk(struct pollfd *fds, nfds_t nfds, const struct timespec *tmo, const sigset_t *mask, size_t fdslen);

HP_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	if (n > buflen)
		__chk_fail();
	return read(fd, buf, n);
}

HP_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
	if (n > buflen)
		__chk_fail();
	return recv(fd, buf, n, flags);
}

HP_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags, struct sockaddr *addr,
				 socklen_t *len)
{
	if (n > buflen)
		__chk_fail();
	return recvfrom(fd, buf, n, flags, addr, len);
}

HP_EXPORT int __poll_chk(struct pollfd *fds, nfds_t nfds, int timeout, size_t fdslen)
{
	if (fdslen / sizeof(*fds) < nfds)
		__chk_fail();
	return poll(fds, nfds, timeout);
}

HP_EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t nfds, const struct timespec *tmo, const sigset_t *mask,
			  size_t fdslen)
{
	if (fdslen / sizeof(*fds) < nfds)
		__chk_fail();
	return ppoll(fds, nfds, tmo, mask);
}

/* What makes the memo of non-blocking descriptors stale. */
HP_EXPORT int close(int fd)
{
	resolve_close();
	memo_forget();
	return real_close(fd);
}

HP_EXPORT int close_range(unsigned int fd, unsigned int max, int flags)
{
	resolve_close_range();
	memo_forget();
	return real_close_range(fd, max, flags);
}

HP_EXPORT void closefrom(int fd)
{
	resolve_closefrom();
	memo_forget();
	real_closefrom(fd);
}

HP_EXPORT int dup2(int fd, int to)
{
	resolve_dup2();
	memo_forget();
	return real_dup2(fd, to);
}

HP_EXPORT int dup3(int fd, int to, int flags)
{
	resolve_dup3();
	memo_forget();
	return real_dup3(fd, to, flags);
}

HP_EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;

	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	resolve_fcntl();
	if (cmd == F_SETFL)
		memo_forget();
	return real_fcntl(fd, cmd, arg);
}

/* fcntl64 (what -D_FILE_OFFSET_BITS=64 programs call) is the same
 * function on a 64-bit system: the same here. */
#if __SIZEOF_LONG__ == 8
extern __typeof__(fcntl) fcntl64 __attribute__((alias("fcntl"), visibility("default")));
#endif

HP_EXPORT int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;

	va_start(ap, req);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	resolve_ioctl();
	if (req == FIONBIO)
		memo_forget();
	return real_ioctl(fd, req, arg);
}

/* ---- sleeps ---------------------------------------------------------------------------- */

/* The clocks a sleep is split on (others: cleared before, not split). */
static int splittable(clockid_t c)
{
	return c == CLOCK_MONOTONIC || c == CLOCK_REALTIME || c == CLOCK_BOOTTIME || c == CLOCK_TAI;
}

/*
 * The second part of a split sleep, to the deadline on clk: ppoll without
 * descriptors when clear_then_wait gives a mask to set, else
 * clock_nanosleep.  0, or -1 with errno.
 */
struct sleepctx {
	clockid_t clk;
	int64_t deadline;
};

static long sleep_rest(void *c, int64_t ns, const sigset_t *mask)
{
	struct sleepctx *s = c;
	struct timespec t;

	(void)ns;
	if (mask) {
		clock_gettime(s->clk, &t);
		t = ns_ts(s->deadline - ts_ns(&t));
		return real_ppoll(NULL, 0, &t, mask);
	}
	t = ns_ts(s->deadline);
	int e = real_clock_nanosleep(s->clk, TIMER_ABSTIME, &t, NULL);
	if (e) {
		errno = e;
		return -1;
	}
	return 0;
}

/*
 * clock_nanosleep's contract (an error number; rem for a relative sleep
 * that a signal ended) with the clearing: a sleep of under a millisecond
 * does not clear; a thread cleared GAP ago or more clears, then sleeps;
 * else it sleeps what is left of GAP first, then clears, then sleeps the
 * rest (to the same deadline).  req is readable: a program's was probed
 * by its caller (good_ts).
 */
static int sleep_planned(clockid_t clk, int flags, const struct timespec *req, struct timespec *rem)
{
	resolve_clock_nanosleep();
	resolve_ppoll();
	if (!hp_stack_on() || !valid_ts(req))
		return real_clock_nanosleep(clk, flags, req, rem); /* its EINVAL */
	struct timespec now;
	if (!splittable(clk) || clock_gettime(clk, &now) != 0) {
		if (!gap_left(mono_ns()))
			clear_now();
		return real_clock_nanosleep(clk, flags, req, rem);
	}
	/* as the kernel's: a time past its range is the end of the range
	 * (rem of such a sleep: that end less the time now) */
	int64_t deadline = req->tv_sec >= INT64_MAX / S_NS - 1 ? INT64_MAX
			   : flags & TIMER_ABSTIME ? ts_ns(req)
			   : ts_ns(&now) > 0 && ts_ns(req) > INT64_MAX - ts_ns(&now) ? INT64_MAX
			   : ts_ns(&now) + ts_ns(req);
	int64_t ns = deadline - ts_ns(&now), left = gap_left(mono_ns());
	if (ns < MS_NS || (left && ns <= left))
		return real_clock_nanosleep(clk, flags, req, rem);
	if (!left) {
		clear_now();
		return real_clock_nanosleep(clk, flags, req, rem);
	}
	struct timespec part = ns_ts(ts_ns(&now) + left);
	int r = real_clock_nanosleep(clk, TIMER_ABSTIME, &part, NULL);
	if (r == 0) {
		struct sleepctx rest = { clk, deadline };
		r = clear_then_wait(sleep_rest, &rest, -1) < 0 ? errno : 0;
	}
	if (r == EINTR && !(flags & TIMER_ABSTIME) && rem) {
		clock_gettime(clk, &now);
		/* the kernel writes rem, and answers EFAULT where it cannot:
		 * its own clock_gettime into rem first tells (not under a
		 * filter: see ts_readable) */
		if (!hp_sandboxed() && syscall(SYS_clock_gettime, clk, rem) != 0)
			return EFAULT;
		*rem = ns_ts(deadline - ts_ns(&now));
	}
	return r;
}

/* The program's time is probed here, once (sleep and usleep give their
 * own, which sleep_planned reads as it is). */
HP_EXPORT int clock_nanosleep(clockid_t clk, int flags, const struct timespec *req, struct timespec *rem)
{
	resolve_clock_nanosleep();
	if (hp_stack_on() && !good_ts(req))
		return real_clock_nanosleep(clk, flags, req, rem); /* its EINVAL, EFAULT */
	return sleep_planned(clk, flags, req, rem);
}

HP_EXPORT int nanosleep(const struct timespec *req, struct timespec *rem)
{
	resolve_nanosleep();
	if (!hp_stack_on() || !good_ts(req))
		return real_nanosleep(req, rem); /* its EINVAL, EFAULT */
	int r = sleep_planned(CLOCK_MONOTONIC, 0, req, rem);
	if (r == 0)
		return 0;
	errno = r;
	return -1;
}

HP_EXPORT unsigned int sleep(unsigned int s)
{
	struct timespec req = { (time_t)s, 0 }, rem = { 0, 0 };

	resolve_sleep();
	if (!hp_stack_on())
		return real_sleep(s);
	if (sleep_planned(CLOCK_MONOTONIC, 0, &req, &rem) == EINTR) { /* as glibc's sleep */
		errno = EINTR;
		return (unsigned int)rem.tv_sec;
	}
	return 0;
}

HP_EXPORT int usleep(useconds_t us)
{
	struct timespec req = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };

	resolve_usleep();
	if (!hp_stack_on())
		return real_usleep(us);
	int r = sleep_planned(CLOCK_MONOTONIC, 0, &req, NULL);
	if (r == 0)
		return 0;
	errno = r;
	return -1;
}

/* ---- condition waits ----------------------------------------------------------------- */

/*
 * pthread_cond_clockwait's contract with the clearing.  A thread cleared
 * less than GAP ago waits for what is left of GAP first; if nothing came,
 * it clears and returns 0: a spurious wake-up, which a condition wait may
 * have and its caller handles (it checks its predicate and waits again).
 * Waiting on at once would lose a signal sent between the parts without
 * the mutex.  The wait that follows within a millisecond on the same
 * condition variable is not split again: an idle thread wakes once.
 */
static __thread const pthread_cond_t *t_cond_woke __attribute__((tls_model("initial-exec")));
static __thread int64_t t_cond_at __attribute__((tls_model("initial-exec")));

static int cond_planned(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk, const struct timespec *t)
{
	resolve_pthread_cond_wait();
	resolve_pthread_cond_clockwait();
	int64_t now = mono_ns(), left = gap_left(now);
	int again = t_cond_woke == c && now - t_cond_at < MS_NS;
	t_cond_woke = NULL;
	if (!left || again) {
		if (!again)
			clear_now();
		return t ? real_pthread_cond_clockwait(c, m, clk, t) : real_pthread_cond_wait(c, m);
	}
	struct timespec part = ns_ts(now + left), cnow;
	if (t && clock_gettime(clk, &cnow) == 0 && ts_ns(t) - ts_ns(&cnow) <= left)
		return real_pthread_cond_clockwait(c, m, clk, t); /* it ends first */
	int r = real_pthread_cond_clockwait(c, m, CLOCK_MONOTONIC, &part);
	if (r != ETIMEDOUT)
		return r;
	clear_now();
	t_cond_woke = c;
	t_cond_at = mono_ns();
	return 0;
}

HP_EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	resolve_pthread_cond_wait();
	if (!hp_stack_on())
		return real_pthread_cond_wait(c, m);
	return cond_planned(c, m, CLOCK_MONOTONIC, NULL);
}

HP_EXPORT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk, const struct timespec *t)
{
	resolve_pthread_cond_clockwait();
	if (!hp_stack_on() || !valid_ts(t) || (clk != CLOCK_MONOTONIC && clk != CLOCK_REALTIME))
		return real_pthread_cond_clockwait(c, m, clk, t); /* its EINVAL */
	return cond_planned(c, m, clk, t);
}

/*
 * The clock of a condition variable, which pthread_cond_timedwait's time
 * is on: glibc (since 2.25) keeps it in bit 1 of __data.__wrefs, set by
 * pthread_cond_init from the attribute and never changed.  Checked once
 * on a variable of each clock; -1 when this glibc keeps it elsewhere.
 */
#define COND_CLOCK_BIT 2u
static int cond_clock(const pthread_cond_t *c)
{
	static int known; /* 0: not checked, 1: the bit holds, -1: it does not */
	int k = __atomic_load_n(&known, __ATOMIC_ACQUIRE);

	if (!k) {
		pthread_condattr_t a;
		pthread_cond_t rt = PTHREAD_COND_INITIALIZER, mono;
		k = -1;
		if (pthread_condattr_init(&a) == 0) {
			if (pthread_condattr_setclock(&a, CLOCK_MONOTONIC) == 0 && pthread_cond_init(&mono, &a) == 0) {
				if (!(rt.__data.__wrefs & COND_CLOCK_BIT) && (mono.__data.__wrefs & COND_CLOCK_BIT))
					k = 1;
				pthread_cond_destroy(&mono);
			}
			pthread_condattr_destroy(&a);
		}
		__atomic_store_n(&known, k, __ATOMIC_RELEASE);
	}
	if (k < 0)
		return -1;
	return __atomic_load_n(&c->__data.__wrefs, __ATOMIC_RELAXED) & COND_CLOCK_BIT ? CLOCK_MONOTONIC
											 : CLOCK_REALTIME;
}

/* Split as pthread_cond_clockwait on the variable's own clock; when that
 * clock is not known, not split: cleared before when the last clearing is
 * GAP old. */
HP_EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t)
{
	resolve_pthread_cond_timedwait();
	if (!hp_stack_on() || !valid_ts(t))
		return real_pthread_cond_timedwait(c, m, t); /* its EINVAL */
	int clk = cond_clock(c);
	if (clk >= 0)
		return cond_planned(c, m, clk, t);
	if (!gap_left(mono_ns()))
		clear_now();
	return real_pthread_cond_timedwait(c, m, t);
}

/* ---- the other waits ------------------------------------------------------------------ */

/*
 * Waits for a signal, a child, another thread or a semaphore: each is first
 * tried without waiting (sem_trywait, pthread_tryjoin_np, WNOHANG, a zero
 * timeout); when it would wait, the thread is cleared (no GAP: they are
 * not an event loop's calls).  pause and sigsuspend always wait.
 */
static void before_wait(void)
{
	if (hp_stack_on())
		clear_now();
}

HP_EXPORT int pause(void)
{
	resolve_pause();
	before_wait();
	return real_pause();
}

HP_EXPORT int sigsuspend(const sigset_t *mask)
{
	resolve_sigsuspend();
	before_wait();
	return real_sigsuspend(mask);
}

/* A signal of set pending: its number (and info), else -1 (EAGAIN: none). */
static int signal_now(const sigset_t *set, siginfo_t *info)
{
	static const struct timespec zero;

	return real_sigtimedwait(set, info, &zero);
}

HP_EXPORT int sigwait(const sigset_t *set, int *sig)
{
	resolve_sigwait();
	resolve_sigtimedwait();
	if (hp_stack_on()) {
		int e = errno, n = signal_now(set, NULL);
		errno = e;
		if (n > 0) {
			*sig = n;
			return 0;
		}
		before_wait();
	}
	return real_sigwait(set, sig);
}

HP_EXPORT int sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
	resolve_sigwaitinfo();
	resolve_sigtimedwait();
	if (hp_stack_on()) {
		int e = errno, n = signal_now(set, info);
		if (n > 0 || errno != EAGAIN)
			return n;
		errno = e;
		before_wait();
	}
	return real_sigwaitinfo(set, info);
}

HP_EXPORT int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *t)
{
	resolve_sigtimedwait();
	/* a bad or invalid time goes to glibc before a signal is taken */
	if (hp_stack_on() && !(t && (!good_ts(t) || (t->tv_sec == 0 && t->tv_nsec == 0)))) {
		int e = errno, n = signal_now(set, info);
		if (n > 0 || errno != EAGAIN)
			return n;
		errno = e;
		before_wait();
	}
	return real_sigtimedwait(set, info, t);
}

HP_EXPORT pid_t wait4(pid_t pid, int *status, int options, struct rusage *ru)
{
	resolve_wait4();
	if (hp_stack_on() && !(options & WNOHANG)) {
		pid_t r = real_wait4(pid, status, options | WNOHANG, ru);
		if (r != 0)
			return r;
		before_wait();
	}
	return real_wait4(pid, status, options, ru);
}

HP_EXPORT pid_t waitpid(pid_t pid, int *status, int options)
{
	resolve_waitpid();
	resolve_wait4();
	if (hp_stack_on() && !(options & WNOHANG)) {
		pid_t r = real_wait4(pid, status, options | WNOHANG, NULL);
		if (r != 0)
			return r;
		before_wait();
	}
	return real_waitpid(pid, status, options);
}

HP_EXPORT pid_t wait(int *status)
{
	resolve_wait();
	return waitpid(-1, status, 0);
}

HP_EXPORT int waitid(idtype_t type, id_t id, siginfo_t *info, int options)
{
	resolve_waitid();
	if (hp_stack_on() && !(options & WNOHANG)) {
		/* asked without taking the child's state (WNOWAIT), into a
		 * siginfo of its own: the program's call then takes it, and a
		 * bad info pointer gets the kernel's EFAULT */
		siginfo_t probe;
		int e = errno;
		probe.si_pid = 0;
		int r = real_waitid(type, id, &probe, options | WNOHANG | WNOWAIT);
		errno = e;
		if (r == 0 && probe.si_pid == 0)
			before_wait();
	}
	return real_waitid(type, id, info, options);
}

/* Before a join: pthread_tryjoin_np first; its answer when the thread has
 * ended (or on an error), else -1 (the thread cleared).  glibc joins an
 * ended thread whatever a timed join's time (a tv_nsec out of range too). */
static int join_first(pthread_t t, void **ret)
{
	if (!hp_stack_on())
		return -1;
	int r = pthread_tryjoin_np(t, ret);
	if (r != EBUSY)
		return r;
	before_wait();
	return -1;
}

HP_EXPORT int pthread_join(pthread_t t, void **ret)
{
	resolve_pthread_join();
	int r = join_first(t, ret);
	return r >= 0 ? r : real_pthread_join(t, ret);
}

HP_EXPORT int pthread_timedjoin_np(pthread_t t, void **ret, const struct timespec *abstime)
{
	resolve_pthread_timedjoin_np();
	int r = join_first(t, ret);
	return r >= 0 ? r : real_pthread_timedjoin_np(t, ret, abstime);
}

HP_EXPORT int pthread_clockjoin_np(pthread_t t, void **ret, clockid_t clk, const struct timespec *abstime)
{
	resolve_pthread_clockjoin_np();
	/* glibc refuses another clock before it looks at the thread */
	int r = clk != CLOCK_MONOTONIC && clk != CLOCK_REALTIME ? -1 : join_first(t, ret);
	return r >= 0 ? r : real_pthread_clockjoin_np(t, ret, clk, abstime);
}

/* Before a semaphore wait: sem_trywait first; 1 when it took the
 * semaphore, -1 on its error (errno set), 0 when the call will wait (the
 * thread cleared, errno kept). */
static int sem_first(sem_t *sem)
{
	if (!hp_stack_on())
		return 0;
	int e = errno;
	if (sem_trywait(sem) == 0)
		return 1;
	if (errno != EAGAIN)
		return -1;
	errno = e;
	before_wait();
	return 0;
}

HP_EXPORT int sem_wait(sem_t *sem)
{
	resolve_sem_wait();
	/* glibc acts on a pending cancellation before it takes the
	 * semaphore (sem_trywait is no cancellation point) */
	pthread_testcancel();
	int r = sem_first(sem);
	return r ? (r > 0 ? 0 : -1) : real_sem_wait(sem);
}

HP_EXPORT int sem_timedwait(sem_t *sem, const struct timespec *t)
{
	resolve_sem_timedwait();
	/* glibc checks tv_nsec before it looks at the semaphore (EINVAL),
	 * then acts on a pending cancellation (as sem_wait) */
	int bad = t->tv_nsec < 0 || t->tv_nsec >= S_NS;
	if (!bad)
		pthread_testcancel();
	int r = bad ? 0 : sem_first(sem);
	return r ? (r > 0 ? 0 : -1) : real_sem_timedwait(sem, t);
}

HP_EXPORT int sem_clockwait(sem_t *sem, clockid_t clk, const struct timespec *t)
{
	resolve_sem_clockwait();
	/* glibc checks the clock, then tv_nsec, before the semaphore (EINVAL) */
	int bad = (clk != CLOCK_MONOTONIC && clk != CLOCK_REALTIME) || t->tv_nsec < 0 || t->tv_nsec >= S_NS;
	int r = bad ? 0 : sem_first(sem);
	return r ? (r > 0 ? 0 : -1) : real_sem_clockwait(sem, clk, t);
}
