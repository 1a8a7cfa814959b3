/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * heap_waits - the calls that wait keep their meaning under the heap
 * module's clearing of dead stack frames (heap/stackclear.c), and the
 * clearing never touches a live frame; the waits that the module splits
 * in two (one it starts less than 10 ms after its last clearing) end as
 * the program asked.  Each check prints "ok NAME" or
 * "FAIL NAME: why"; the exit status is the number of failures.  Run both
 * without the module (the checks themselves are right) and under it.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

static int failures;

#define CHECK(name, cond, ...)                                        \
	do {                                                          \
		if (cond) {                                           \
			printf("ok %s\n", name);                      \
		} else {                                              \
			printf("FAIL %s: ", name);                    \
			printf(__VA_ARGS__);                          \
			printf(" (errno %d)\n", errno);               \
			failures++;                                   \
		}                                                     \
		fflush(stdout);                                       \
	} while (0)

static void ms_sleep(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* ---- a writer that acts later -------------------------------------------- */

struct later {
	int fd, ms;
	const char *text;
	size_t len;
};

static void *write_later(void *arg)
{
	struct later *l = arg;

	ms_sleep(l->ms);
	if (write(l->fd, l->text, l->len) != (ssize_t)l->len)
		abort();
	return NULL;
}

static pthread_t start_writer(struct later *l)
{
	pthread_t t;

	if (pthread_create(&t, NULL, write_later, l) != 0)
		abort();
	return t;
}

/* ---- the poll family and select ----------------------------------------- */

static void check_select(void)
{
	int a[2], b[2];
	fd_set r;
	struct timeval tv = { 0, 20000 };

	if (pipe(a) || pipe(b) || write(b[1], "x", 1) != 1)
		abort();
	FD_ZERO(&r);
	FD_SET(a[0], &r);
	FD_SET(b[0], &r);
	int n = select((a[0] > b[0] ? a[0] : b[0]) + 1, &r, NULL, NULL, &tv);
	CHECK("select-ready", n == 1 && FD_ISSET(b[0], &r) && !FD_ISSET(a[0], &r), "returned %d", n);
	FD_ZERO(&r);
	FD_SET(a[0], &r);
	tv.tv_sec = 0;
	tv.tv_usec = 20000;
	n = select(a[0] + 1, &r, NULL, NULL, &tv);
	CHECK("select-timeout", n == 0 && !FD_ISSET(a[0], &r), "returned %d", n);
	struct later l = { a[1], 20, "y", 1 };
	pthread_t t = start_writer(&l);
	FD_ZERO(&r);
	FD_SET(a[0], &r);
	FD_SET(b[0] + 0, &r); /* ready at once: answered without waiting */
	fd_set w;
	FD_ZERO(&w);
	struct timespec ts = { 2, 0 };
	n = pselect((a[0] > b[0] ? a[0] : b[0]) + 1, &r, &w, NULL, &ts, NULL);
	CHECK("pselect-ready", n == 1 && FD_ISSET(b[0], &r) && !FD_ISSET(a[0], &r), "returned %d", n);
	char c;
	if (read(b[0], &c, 1) != 1)
		abort();
	FD_ZERO(&r);
	FD_SET(a[0], &r);
	FD_SET(b[0], &r);
	n = pselect((a[0] > b[0] ? a[0] : b[0]) + 1, &r, NULL, NULL, &ts, NULL);
	CHECK("pselect-wait", n == 1 && FD_ISSET(a[0], &r) && !FD_ISSET(b[0], &r), "returned %d", n);
	pthread_join(t, NULL);
	close(a[0]);
	close(a[1]);
	close(b[0]);
	close(b[1]);
}

static void check_poll(void)
{
	int a[2];

	if (pipe(a))
		abort();
	struct pollfd p = { .fd = a[0], .events = POLLIN };
	int n = poll(&p, 1, 20);
	CHECK("poll-timeout", n == 0 && p.revents == 0, "returned %d", n);
	struct later l = { a[1], 20, "z", 1 };
	pthread_t t = start_writer(&l);
	n = poll(&p, 1, 5000);
	CHECK("poll-wait", n == 1 && (p.revents & POLLIN), "returned %d", n);
	pthread_join(t, NULL);
	struct timespec ts = { 0, 10000000 };
	n = ppoll(&p, 1, &ts, NULL);
	CHECK("ppoll-ready", n == 1 && (p.revents & POLLIN), "returned %d", n);
	struct pollfd bad = { .fd = 999, .events = POLLIN };
	n = poll(&bad, 1, 1000);
	CHECK("poll-nval", n == 1 && bad.revents == POLLNVAL, "returned %d", n);

	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 42 }, out[4];
	char c;
	if (ep < 0 || read(a[0], &c, 1) != 1 || epoll_ctl(ep, EPOLL_CTL_ADD, a[0], &ev))
		abort();
	n = epoll_wait(ep, out, 4, 20);
	CHECK("epoll-timeout", n == 0, "returned %d", n);
	t = start_writer(&l);
	n = epoll_pwait(ep, out, 4, 5000, NULL);
	CHECK("epoll-wait", n == 1 && out[0].data.u64 == 42, "returned %d", n);
	pthread_join(t, NULL);

	/* epoll_pwait2: ready at once, its EINVAL, a timeout, a wait */
	struct timespec t0, t1, twenty = { 0, 20000000 }, badts = { 0, 1000000000L };
	n = epoll_pwait2(ep, out, 4, &twenty, NULL);
	CHECK("epoll-pwait2-ready", n == 1 && out[0].data.u64 == 42, "returned %d", n);
	if (read(a[0], &c, 1) != 1)
		abort();
	errno = 0;
	n = epoll_pwait2(ep, out, 4, &badts, NULL);
	CHECK("epoll-pwait2-einval", n == -1 && errno == EINVAL, "returned %d", n);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	n = epoll_pwait2(ep, out, 4, &twenty, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	long us = (t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000;
	CHECK("epoll-pwait2-timeout", n == 0 && us >= 20000, "returned %d after %ld us", n, us);
	t = start_writer(&l);
	n = epoll_pwait2(ep, out, 4, NULL, NULL);
	CHECK("epoll-pwait2-wait", n == 1 && out[0].data.u64 == 42, "returned %d", n);
	pthread_join(t, NULL);
	close(ep);
	close(a[0]);
	close(a[1]);
}

/* ---- descriptors ---------------------------------------------------------- */

static void check_fds(void)
{
	int a[2], s[2];
	char buf[16];

	if (pipe(a) || socketpair(AF_UNIX, SOCK_STREAM, 0, s))
		abort();
	struct later l = { a[1], 20, "hello", 5 };
	pthread_t t = start_writer(&l);
	ssize_t n = read(a[0], buf, sizeof(buf));
	CHECK("read-wait", n == 5 && memcmp(buf, "hello", 5) == 0, "returned %zd", n);
	pthread_join(t, NULL);
	fcntl(a[0], F_SETFL, O_NONBLOCK);
	errno = 0;
	n = read(a[0], buf, sizeof(buf));
	CHECK("read-nonblocking", n == -1 && errno == EAGAIN, "returned %zd", n);
	n = read(-1, buf, 1);
	CHECK("read-ebadf", n == -1 && errno == EBADF, "returned %zd", n);
	fcntl(a[0], F_SETFL, 0);

	/* readv: ready at once, after a wait, of nothing (an empty pipe: no
	 * wait), glibc's EINVAL and EBADF */
	char buf2[16];
	struct iovec two[2] = { { buf, 2 }, { buf2, sizeof(buf2) } }, none[2] = { { buf, 0 }, { buf2, 0 } };
	volatile int minus = -1;
	if (write(a[1], "hello", 5) != 5)
		abort();
	n = readv(a[0], two, 2);
	CHECK("readv-ready", n == 5 && memcmp(buf, "he", 2) == 0 && memcmp(buf2, "llo", 3) == 0, "returned %zd", n);
	t = start_writer(&l);
	n = readv(a[0], two, 2);
	CHECK("readv-wait", n == 5 && memcmp(buf, "he", 2) == 0 && memcmp(buf2, "llo", 3) == 0, "returned %zd", n);
	pthread_join(t, NULL);
	n = readv(a[0], none, 2);
	CHECK("readv-nothing", n == 0, "returned %zd", n);
	errno = 0;
	n = readv(a[0], two, minus);
	CHECK("readv-einval", n == -1 && errno == EINVAL, "returned %zd", n);
	errno = 0;
	n = readv(-1, two, 2);
	CHECK("readv-ebadf", n == -1 && errno == EBADF, "returned %zd", n);
	/* a vector at a bad address: the kernel's EFAULT, not a crash */
	if (write(a[1], "x", 1) != 1)
		abort();
	errno = 0;
	const struct iovec *volatile bad = (const struct iovec *)(uintptr_t)8;
	n = readv(a[0], bad, 1);
	CHECK("readv-efault", n == -1 && errno == EFAULT, "returned %zd", n);
	n = read(a[0], buf, 1);
	CHECK("readv-efault-left", n == 1 && buf[0] == 'x', "returned %zd", n);

	struct later m = { s[1], 20, "abcdef", 6 };
	t = start_writer(&m);
	n = recv(s[0], buf, 3, MSG_WAITALL);
	CHECK("recv-waitall", n == 3 && memcmp(buf, "abc", 3) == 0, "returned %zd", n);
	n = recv(s[0], buf, sizeof(buf), MSG_PEEK);
	CHECK("recv-peek", n == 3 && memcmp(buf, "def", 3) == 0, "returned %zd", n);
	n = recvfrom(s[0], buf, sizeof(buf), 0, NULL, NULL);
	CHECK("recvfrom-ready", n == 3 && memcmp(buf, "def", 3) == 0, "returned %zd", n);
	pthread_join(t, NULL);
	errno = 0;
	n = recv(s[0], buf, sizeof(buf), MSG_DONTWAIT);
	CHECK("recv-dontwait", n == -1 && errno == EAGAIN, "returned %zd", n);
	struct later o = { s[1], 20, "xyz", 3 };
	t = start_writer(&o);
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	n = recvmsg(s[0], &msg, 0);
	CHECK("recvmsg-wait", n == 3 && memcmp(buf, "xyz", 3) == 0, "returned %zd", n);
	pthread_join(t, NULL);
	fcntl(s[0], F_SETFL, O_NONBLOCK);
	errno = 0;
	n = recv(s[0], buf, sizeof(buf), 0);
	CHECK("recv-nonblocking", n == -1 && errno == EAGAIN, "returned %zd", n);
	close(a[0]);
	close(a[1]);
	close(s[0]);
	close(s[1]);

	/* recvmmsg on datagrams: ready at once, MSG_DONTWAIT, no message
	 * asked for, a wait for the first (MSG_WAITFORONE) */
	if (socketpair(AF_UNIX, SOCK_DGRAM, 0, s) || write(s[1], "one", 3) != 3 || write(s[1], "two", 3) != 3)
		abort();
	struct iovec io[2] = { { buf, sizeof(buf) }, { buf2, sizeof(buf2) } };
	struct mmsghdr mm[2] = { { .msg_hdr = { .msg_iov = &io[0], .msg_iovlen = 1 } },
				 { .msg_hdr = { .msg_iov = &io[1], .msg_iovlen = 1 } } };
	int k = recvmmsg(s[0], mm, 2, 0, NULL);
	CHECK("recvmmsg-ready", k == 2 && mm[0].msg_len == 3 && mm[1].msg_len == 3 && memcmp(buf, "one", 3) == 0 &&
	      memcmp(buf2, "two", 3) == 0, "returned %d", k);
	errno = 0;
	k = recvmmsg(s[0], mm, 2, MSG_DONTWAIT, NULL);
	CHECK("recvmmsg-dontwait", k == -1 && errno == EAGAIN, "returned %d", k);
	k = recvmmsg(s[0], mm, 0, 0, NULL);
	CHECK("recvmmsg-none", k == 0, "returned %d", k);
	struct later d = { s[1], 20, "xyz", 3 };
	t = start_writer(&d);
	k = recvmmsg(s[0], mm, 2, MSG_WAITFORONE, NULL);
	CHECK("recvmmsg-wait", k == 1 && mm[0].msg_len == 3 && memcmp(buf, "xyz", 3) == 0, "returned %d", k);
	pthread_join(t, NULL);
	close(s[0]);
	close(s[1]);
}

static void *connect_later(void *arg)
{
	struct sockaddr_un *sa = arg;
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	ms_sleep(20);
	if (fd < 0 || connect(fd, (struct sockaddr *)sa, sizeof(*sa)) != 0)
		abort();
	return (void *)(intptr_t)fd;
}

static void check_accept(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int l = socket(AF_UNIX, SOCK_STREAM, 0);
	pthread_t t;
	void *cfd;

	snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "heap_waits.%d", (int)getpid()); /* abstract */
	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 4) ||
	    pthread_create(&t, NULL, connect_later, &sa))
		abort();
	int c = accept(l, NULL, NULL);
	CHECK("accept-wait", c >= 0, "returned %d", c);
	pthread_join(t, &cfd);
	close((int)(intptr_t)cfd);
	close(c);
	if (pthread_create(&t, NULL, connect_later, &sa))
		abort();
	c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	CHECK("accept4-wait", c >= 0 && (fcntl(c, F_GETFD) & FD_CLOEXEC), "returned %d", c);
	pthread_join(t, &cfd);
	close((int)(intptr_t)cfd);
	close(c);
	close(l);
}

/* ---- sleeps and condition waits ------------------------------------------ */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int flag;

static void *signal_later(void *arg)
{
	(void)arg;
	ms_sleep(20);
	pthread_mutex_lock(&mu);
	flag = 1;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
	return NULL;
}

/* Wait on cv until another thread sets flag, 20 ms later (after a clearing
 * just before the wait when recent_first: recent()). */
static void recent(void);
static void cond_signalled(int recent_first)
{
	pthread_t t;

	flag = 0;
	if (pthread_create(&t, NULL, signal_later, NULL))
		abort();
	pthread_mutex_lock(&mu);
	if (recent_first)
		recent();
	while (!flag)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	pthread_join(t, NULL);
}

/* The time on clock c, ms from now. */
static struct timespec in_ms(clockid_t c, long ms)
{
	struct timespec t;

	clock_gettime(c, &t);
	t.tv_nsec += ms * 1000000;
	while (t.tv_nsec >= 1000000000) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000;
	}
	return t;
}

static void check_sleeps(void)
{
	struct timespec t0, t1, d = { 0, 5000000 }, abs;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	int r = nanosleep(&d, NULL);
	r |= usleep(2000);
	clock_gettime(CLOCK_MONOTONIC, &abs);
	abs.tv_nsec += 3000000;
	if (abs.tv_nsec >= 1000000000) {
		abs.tv_sec++;
		abs.tv_nsec -= 1000000000;
	}
	r |= clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &abs, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	long us = (t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000;
	CHECK("sleeps", r == 0 && us >= 10000, "slept %ld us", us);
	CHECK("sleep-0", sleep(0) == 0, "sleep(0)");

	cond_signalled(0);
	CHECK("cond-wait", flag == 1, "no signal");
	struct timespec soon = in_ms(CLOCK_REALTIME, 5);
	pthread_mutex_lock(&mu);
	r = pthread_cond_timedwait(&cv, &mu, &soon);
	pthread_mutex_unlock(&mu);
	CHECK("cond-timedwait", r == ETIMEDOUT, "returned %d", r);
}

/* ---- waits split in two (the module cleared less than 10 ms before) ------- */

static pthread_cond_t cv2;
static int waking;

static void *wake_every_50ms(void *arg)
{
	struct timespec t = { 0, 50000000 };

	(void)arg;
	while (__atomic_load_n(&waking, __ATOMIC_ACQUIRE)) {
		nanosleep(&t, NULL);
		pthread_mutex_lock(&mu);
		pthread_cond_broadcast(&cv2);
		pthread_mutex_unlock(&mu);
	}
	return NULL;
}

static long since_us(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0->tv_sec) * 1000000 + (t1.tv_nsec - t0->tv_nsec) / 1000;
}

/* A 2 ms wait: under the module, a clearing just now. */
static void recent(void)
{
	poll(NULL, 0, 2);
}

static void on_alarm(int sig)
{
	(void)sig;
}

static void check_split(void)
{
	int a[2];
	struct timespec t0;

	if (pipe(a))
		abort();
	struct pollfd p = { .fd = a[0], .events = POLLIN };
	recent();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int n = poll(&p, 1, 30);
	long us = since_us(&t0);
	CHECK("split-poll-timeout", n == 0 && us >= 30000, "returned %d after %ld us", n, us);
	struct later l = { a[1], 20, "q", 1 };
	pthread_t t = start_writer(&l);
	recent();
	n = poll(&p, 1, 5000);
	CHECK("split-poll-ready", n == 1 && (p.revents & POLLIN), "returned %d", n);
	pthread_join(t, NULL);
	char c;
	if (read(a[0], &c, 1) != 1)
		abort();

	fd_set r;
	struct timeval tv = { 0, 30000 };
	FD_ZERO(&r);
	FD_SET(a[0], &r);
	recent();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	n = select(a[0] + 1, &r, NULL, NULL, &tv);
	us = since_us(&t0);
	CHECK("split-select-timeout", n == 0 && !FD_ISSET(a[0], &r) && us >= 30000 && tv.tv_sec == 0 && tv.tv_usec == 0,
	      "returned %d after %ld us, %ld us left", n, us, (long)tv.tv_usec);
	t = start_writer(&l);
	FD_ZERO(&r);
	FD_SET(a[0], &r);
	tv.tv_sec = 5;
	tv.tv_usec = 0;
	recent();
	n = select(a[0] + 1, &r, NULL, NULL, &tv);
	CHECK("split-select-ready", n == 1 && FD_ISSET(a[0], &r) && tv.tv_sec >= 4 && tv.tv_sec < 5,
	      "returned %d, %ld s left", n, (long)tv.tv_sec);
	pthread_join(t, NULL);
	if (read(a[0], &c, 1) != 1)
		abort();

	struct timespec d = { 0, 25000000 }, rem = { 0, 0 };
	recent();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = nanosleep(&d, NULL);
	us = since_us(&t0);
	CHECK("split-nanosleep", rc == 0 && us >= 25000, "returned %d after %ld us", rc, us);

	struct sigaction sa = { .sa_handler = on_alarm }; /* no SA_RESTART */
	struct itimerval it = { { 0, 0 }, { 0, 15000 } };
	sigaction(SIGALRM, &sa, NULL);
	d.tv_nsec = 100000000;
	recent();
	setitimer(ITIMER_REAL, &it, NULL);
	rc = nanosleep(&d, &rem);
	CHECK("split-nanosleep-eintr", rc == -1 && errno == EINTR && rem.tv_sec == 0 && rem.tv_nsec > 0 &&
	      rem.tv_nsec < 90000000, "returned %d, %ld ns left", rc, rem.tv_nsec);

	cond_signalled(1);
	CHECK("split-cond-wait", flag == 1, "no signal");
	pthread_mutex_lock(&mu);
	recent();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct timespec dl = in_ms(CLOCK_REALTIME, 4);
	rc = pthread_cond_clockwait(&cv, &mu, CLOCK_REALTIME, &dl);
	us = since_us(&t0);
	pthread_mutex_unlock(&mu);
	CHECK("split-clockwait", rc == ETIMEDOUT && us >= 1000, "returned %d after %ld us", rc, us);

	/* pthread_cond_timedwait on the variable's own clock, split as well:
	 * a 30 ms deadline on either clock is kept (a wake-up before it may
	 * be spurious: waited on, as a program does, for 2 s at most; a
	 * thread wakes it every 50 ms, so that a deadline read on the wrong
	 * clock fails instead of waiting for years) */
	for (int mono = 0; mono < 2; mono++) {
		pthread_condattr_t ca;
		pthread_t waker;
		int wakes = 0;
		if (pthread_condattr_init(&ca) || pthread_condattr_setclock(&ca, mono ? CLOCK_MONOTONIC : CLOCK_REALTIME) ||
		    pthread_cond_init(&cv2, &ca))
			abort();
		__atomic_store_n(&waking, 1, __ATOMIC_RELEASE);
		if (pthread_create(&waker, NULL, wake_every_50ms, NULL))
			abort();
		pthread_mutex_lock(&mu);
		recent();
		clock_gettime(CLOCK_MONOTONIC, &t0);
		dl = in_ms(mono ? CLOCK_MONOTONIC : CLOCK_REALTIME, 30);
		while ((rc = pthread_cond_timedwait(&cv2, &mu, &dl)) == 0 && since_us(&t0) < 2000000)
			wakes++;
		us = since_us(&t0);
		pthread_mutex_unlock(&mu);
		__atomic_store_n(&waking, 0, __ATOMIC_RELEASE);
		pthread_join(waker, NULL);
		pthread_cond_destroy(&cv2);
		CHECK(mono ? "split-timedwait-monotonic" : "split-timedwait-realtime",
		      rc == ETIMEDOUT && us >= 29000 && us < 2000000, "returned %d after %ld us, %d wake-ups", rc, us, wakes);
	}
	close(a[0]);
	close(a[1]);
}

/* ---- what the module's tries must not change -------------------------------- */

static void check_answers(void)
{
	int a[2];
	struct sigaction sa = { .sa_handler = on_alarm }; /* no SA_RESTART */
	struct itimerval it = { { 0, 0 }, { 0, 20000 } };

	if (pipe(a))
		abort();
	sigaction(SIGALRM, &sa, NULL);
	for (int split = 0; split < 2; split++) {
		fd_set r;
		struct timeval tv = { 2, 0 };
		FD_ZERO(&r);
		FD_SET(a[0], &r);
		if (split)
			recent();
		setitimer(ITIMER_REAL, &it, NULL);
		errno = 0;
		int n = select(a[0] + 1, &r, NULL, NULL, &tv);
		CHECK(split ? "select-eintr-split" : "select-eintr", n == -1 && errno == EINTR && FD_ISSET(a[0], &r),
		      "returned %d, the set %s", n, FD_ISSET(a[0], &r) ? "kept" : "emptied");
	}

	struct itimerval it2 = { { 0, 0 }, { 0, 200000 } };
	setitimer(ITIMER_REAL, &it2, NULL);
	errno = 0;
	unsigned left = sleep(2); /* glibc: the whole seconds left */
	CHECK("sleep-eintr", left == 1 && errno == EINTR, "returned %u", left);

	/* a regular file: read whole, without its pages cached, O_NONBLOCK
	 * too; a successful read leaves errno */
	char path[] = "/tmp/heap_waits.XXXXXX";
	int f = mkstemp(path);
	size_t len = (size_t)4 << 20;
	char *buf = malloc(len), *back = malloc(len);
	if (f < 0 || !buf || !back)
		abort();
	memset(buf, 'f', len);
	if (write(f, buf, len) != (ssize_t)len || fsync(f) != 0)
		abort();
	close(f);
	for (int nb = 0; nb < 2; nb++) {
		int g = open(path, O_RDONLY | (nb ? O_NONBLOCK : 0));
		if (g < 0)
			abort();
		posix_fadvise(g, 0, 0, POSIX_FADV_DONTNEED);
		char c;
		if (pread(g, &c, 1, 0) != 1) /* the first page cached, the rest not */
			abort();
		errno = 0;
		ssize_t got = read(g, back, len);
		CHECK(nb ? "read-file-nonblocking" : "read-file-whole", got == (ssize_t)len && errno == 0,
		      "read %zd of %zu", got, len);
		close(g);
	}
	unlink(path);
	free(buf);
	free(back);

	int s[2], lowat = 20;
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, s) || setsockopt(s[0], SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof(lowat)))
		abort();
	char ten[10] = "0123456789", got[64];
	if (write(s[1], ten, 10) != 10)
		abort();
	struct later l = { s[1], 30, ten, 10 };
	pthread_t t = start_writer(&l);
	ssize_t n = recv(s[0], got, sizeof(got), 0);
	CHECK("recv-rcvlowat", n == 20, "returned %zd", n);
	pthread_join(t, NULL);
	close(s[0]);
	close(s[1]);
	close(a[0]);
	close(a[1]);
}

/* ---- live frames are never cleared ---------------------------------------- */

static volatile int seen;
static char pattern[2048];

static void alt_handler(int sig)
{
	(void)sig;
	poll(NULL, 0, 5); /* a wait on the signal stack */
	seen++;
}

/* Below the frame that holds the signal stack: a live frame with a
 * pattern, in which the signal arrives. */
__attribute__((noinline)) static int live_below(void)
{
	char live[2048];

	memcpy(live, pattern, sizeof(live));
	__asm__ volatile("" : : "r"(live) : "memory");
	raise(SIGUSR1);
	__asm__ volatile("" : : "r"(live) : "memory");
	return memcmp(live, pattern, sizeof(live)) == 0;
}

static void check_altstack(void)
{
	char altmem[65536] __attribute__((aligned(16))); /* on this thread's stack, above live_below() */
	stack_t ss = { .ss_sp = altmem, .ss_size = sizeof(altmem) }, off = { .ss_flags = SS_DISABLE };
	struct sigaction sa = { .sa_handler = alt_handler, .sa_flags = SA_ONSTACK };

	for (size_t i = 0; i < sizeof(pattern); i++)
		pattern[i] = (char)(i * 7 + 1);
	if (sigaltstack(&ss, NULL) || sigaction(SIGUSR1, &sa, NULL))
		abort();
	int intact = live_below();
	CHECK("sigaltstack-on-stack", intact && seen == 1, "the live frame below the signal stack changed");
	sigaltstack(&off, NULL);
	__asm__ volatile("" : : "r"(altmem) : "memory");

	/* a handler on the thread's stack, interrupting a wait */
	struct sigaction sb = { .sa_handler = alt_handler, .sa_flags = SA_RESTART };
	sigaction(SIGUSR1, &sb, NULL);
	seen = 0;
	intact = live_below();
	CHECK("handler-on-stack", intact && seen == 1, "the live frame below the handler changed");
}

static ucontext_t uc_main, uc_co;

static void coroutine(void)
{
	char live[512];

	memcpy(live, pattern, sizeof(live));
	poll(NULL, 0, 5); /* a wait on the coroutine's stack */
	seen = memcmp(live, pattern, sizeof(live)) == 0;
	swapcontext(&uc_co, &uc_main);
}

static void check_coroutine(void)
{
	size_t size = 256 * 1024;
	char *stack = malloc(size);

	if (!stack || getcontext(&uc_co))
		abort();
	uc_co.uc_stack.ss_sp = stack;
	uc_co.uc_stack.ss_size = size;
	uc_co.uc_link = NULL;
	makecontext(&uc_co, coroutine, 0);
	seen = 0;
	int r = swapcontext(&uc_main, &uc_co);
	CHECK("coroutine", r == 0 && seen == 1, "the coroutine's frame changed");
	free(stack);
}

/* A coroutine on an array of a live frame of this thread's stack, above a
 * frame with a pattern that switches to it; the coroutine waits. */
static ucontext_t uc_below, uc_array;

static void array_coroutine(void)
{
	poll(NULL, 0, 5);
	seen = 1;
	swapcontext(&uc_array, &uc_below);
}

__attribute__((noinline)) static int switch_from_below(void)
{
	char live[2048];

	memcpy(live, pattern, sizeof(live));
	__asm__ volatile("" : : "r"(live) : "memory");
	if (swapcontext(&uc_below, &uc_array))
		abort();
	__asm__ volatile("" : : "r"(live) : "memory");
	return memcmp(live, pattern, sizeof(live)) == 0;
}

static void check_coroutine_on_stack(void)
{
	char array[65536] __attribute__((aligned(16)));

	if (getcontext(&uc_array))
		abort();
	uc_array.uc_stack.ss_sp = array;
	uc_array.uc_stack.ss_size = sizeof(array);
	uc_array.uc_link = NULL;
	makecontext(&uc_array, array_coroutine, 0);
	seen = 0;
	int intact = switch_from_below();
	CHECK("coroutine-on-stack", intact && seen == 1, "the live frame below the coroutine's stack changed");
	__asm__ volatile("" : : "r"(array) : "memory");
}

/* ---- threads ---------------------------------------------------------------- */

static void *small_waiter(void *arg)
{
	char live[1024];

	memcpy(live, pattern, sizeof(live));
	poll(NULL, 0, 5);
	*(int *)arg = memcmp(live, pattern, sizeof(live)) == 0;
	return NULL;
}

static void unlock_mu(void *arg)
{
	(void)arg;
	seen = 42;
}

static void *cancel_me(void *arg)
{
	int *fds = arg;
	char c;

	pthread_cleanup_push(unlock_mu, NULL);
	if (read(fds[0], &c, 1) < 0)
		abort();
	pthread_cleanup_pop(0);
	return NULL;
}

static void check_threads(void)
{
	pthread_attr_t a;
	pthread_t t;
	int ok = 0, fds[2];
	void *r;

	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, PTHREAD_STACK_MIN);
	if (pthread_create(&t, &a, small_waiter, &ok))
		abort();
	pthread_join(t, NULL);
	CHECK("small-stack", ok, "the live frame changed");

	/* a stack the program gives (mapped: a malloc()ed one would be secret
	 * memory, where glibc's thread-exit futex fails; secretmem-heap(7)) */
	size_t size = 1 << 20;
	void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	ok = 0;
	if (mem == MAP_FAILED || pthread_attr_setstack(&a, mem, size) || pthread_create(&t, &a, small_waiter, &ok))
		abort();
	pthread_join(t, NULL);
	CHECK("given-stack", ok, "the live frame changed");
	/* the same with its lowest page filled, then made a guard */
	memset(mem, 1, size);
	if (mprotect(mem, 4096, PROT_NONE) || pthread_create(&t, &a, small_waiter, &ok))
		abort();
	pthread_join(t, NULL);
	CHECK("given-stack-guard", ok, "the live frame changed");
	pthread_attr_destroy(&a);
	munmap(mem, size);

	seen = 0;
	if (pipe(fds) || pthread_create(&t, NULL, cancel_me, fds))
		abort();
	ms_sleep(20);
	pthread_cancel(t);
	pthread_join(t, &r);
	CHECK("cancel-in-read", r == PTHREAD_CANCELED && seen == 42, "not cancelled");
	close(fds[0]);
	close(fds[1]);
}

static void *post_later(void *arg)
{
	ms_sleep(20);
	sem_post(arg);
	return NULL;
}

/* semaphores: glibc's answers, in the order it checks (tv_nsec first) */
static void check_sems(void)
{
	sem_t s;
	struct timespec bad = { 0, 1000000000L }, past = { 1, 0 };
	int r, v = -1;

	if (sem_init(&s, 0, 1))
		abort();
	errno = 0;
	r = sem_timedwait(&s, &bad);
	sem_getvalue(&s, &v);
	CHECK("sem-timedwait-einval", r == -1 && errno == EINVAL && v == 1, "returned %d, value %d", r, v);
	r = sem_timedwait(&s, &past);
	CHECK("sem-timedwait-free", r == 0, "returned %d", r);
	errno = 0;
	r = sem_timedwait(&s, &past);
	CHECK("sem-timedwait-timeout", r == -1 && errno == ETIMEDOUT, "returned %d", r);
	sem_post(&s);
	r = sem_wait(&s);
	sem_getvalue(&s, &v);
	CHECK("sem-wait-free", r == 0 && v == 0, "returned %d, value %d", r, v);

	/* sem_clockwait: glibc checks the clock, then tv_nsec, first */
	sem_post(&s);
	errno = 0;
	r = sem_clockwait(&s, CLOCK_MONOTONIC, &bad);
	sem_getvalue(&s, &v);
	CHECK("sem-clockwait-einval", r == -1 && errno == EINVAL && v == 1, "returned %d, value %d", r, v);
	errno = 0;
	r = sem_clockwait(&s, CLOCK_BOOTTIME, &past);
	sem_getvalue(&s, &v);
	CHECK("sem-clockwait-clock", r == -1 && errno == EINVAL && v == 1, "returned %d, value %d", r, v);
	r = sem_clockwait(&s, CLOCK_MONOTONIC, &past);
	CHECK("sem-clockwait-free", r == 0, "returned %d", r);
	errno = 0;
	r = sem_clockwait(&s, CLOCK_MONOTONIC, &past);
	CHECK("sem-clockwait-timeout", r == -1 && errno == ETIMEDOUT, "returned %d", r);
	pthread_t t;
	if (pthread_create(&t, NULL, post_later, &s))
		abort();
	struct timespec dl = in_ms(CLOCK_MONOTONIC, 5000);
	r = sem_clockwait(&s, CLOCK_MONOTONIC, &dl);
	CHECK("sem-clockwait-wait", r == 0, "returned %d", r);
	pthread_join(t, NULL);
	sem_destroy(&s);
}

/*
 * Bad arguments get glibc's answer, not a crash in the module, which reads
 * the program's timespec and writes its remaining time itself: EFAULT for
 * a bad time or remaining-time pointer (nanosleep, clock_nanosleep, a
 * split nanosleep a signal ends, epoll_pwait2, sigtimedwait), for waitid's
 * bad info; sigtimedwait's EINVAL with a signal of its set pending leaves
 * the signal pending; a split sleep of 10^10 s that a signal ends gives
 * what the kernel does for a time past its range (the range's end less
 * the time now, not half of it); a thread with a cancellation pending is
 * cancelled in sem_wait and sem_timedwait, also when the semaphore is free.
 */
static void *const volatile bad_ptr = (void *)16;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
/* a sanitizer's interceptors read the arguments first: no bad pointers;
 * and ASan reports its own sigaltstack call at the exit of a cancelled
 * thread (google/sanitizers#1399): no cancellation */
#define BAD_POINTERS 0
#else
#define BAD_POINTERS 1
#endif

struct sem_cancel {
	sem_t sem;
	int timed;
};

static void *cancel_in_sem(void *arg)
{
	struct sem_cancel *c = arg;
	struct timespec far = { INT32_MAX, 0 };

	pthread_cancel(pthread_self());
	if (c->timed)
		sem_timedwait(&c->sem, &far);
	else
		sem_wait(&c->sem);
	return NULL;
}

static void check_bad_args(void)
{
	struct sigaction sa = { .sa_handler = on_alarm }; /* no SA_RESTART */
	struct itimerval soon = { { 0, 0 }, { 0, 30000 } };
	int r;

	sigaction(SIGALRM, &sa, NULL);
	struct timespec one = { 1, 0 }, huge = { 10000000000LL, 0 }, rem = { 0, 0 };
	if (BAD_POINTERS) {
		errno = 0;
		r = nanosleep(bad_ptr, NULL);
		CHECK("nanosleep-efault", r == -1 && errno == EFAULT, "returned %d", r);
		r = clock_nanosleep(CLOCK_MONOTONIC, 0, bad_ptr, NULL);
		CHECK("clock-nanosleep-efault", r == EFAULT, "returned %d", r);
		recent();
		setitimer(ITIMER_REAL, &soon, NULL);
		errno = 0;
		r = nanosleep(&one, bad_ptr);
		CHECK("nanosleep-split-rem-efault", r == -1 && errno == EFAULT, "returned %d", r);
	}
	recent();
	setitimer(ITIMER_REAL, &soon, NULL);
	r = nanosleep(&huge, &rem);
	CHECK("nanosleep-split-rem-range", r == -1 && errno == EINTR && rem.tv_sec > INT64_MAX / 1000000000 / 2 + 1,
	      "returned %d, rem %lld s", r, (long long)rem.tv_sec);
	if (BAD_POINTERS) {
		int ep = epoll_create1(EPOLL_CLOEXEC);
		struct epoll_event out[1];
		errno = 0;
		r = epoll_pwait2(ep, out, 1, bad_ptr, NULL);
		CHECK("epoll-pwait2-efault", r == -1 && errno == EFAULT, "returned %d", r);
		close(ep);
	}

	sigset_t usr1, old, pend;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, &old);
	if (BAD_POINTERS) {
		errno = 0;
		r = sigtimedwait(&usr1, NULL, bad_ptr);
		CHECK("sigtimedwait-efault", r == -1 && errno == EFAULT, "returned %d", r);
	}
	raise(SIGUSR1);
	struct timespec badns = { 0, 2000000000L };
	errno = 0;
	r = sigtimedwait(&usr1, NULL, &badns);
	sigpending(&pend);
	CHECK("sigtimedwait-einval-pending", r == -1 && errno == EINVAL && sigismember(&pend, SIGUSR1),
	      "returned %d, %s", r, sigismember(&pend, SIGUSR1) ? "still pending" : "taken");
	struct timespec zero = { 0, 0 };
	sigtimedwait(&usr1, NULL, &zero);
	pthread_sigmask(SIG_SETMASK, &old, NULL);

	if (BAD_POINTERS) {
		pid_t c = fork();
		if (c == 0)
			_exit(0);
		siginfo_t si;
		waitid(P_PID, (id_t)c, &si, WEXITED | WNOWAIT); /* it has ended */
		errno = 0;
		r = waitid(P_PID, (id_t)c, bad_ptr, WEXITED);
		CHECK("waitid-efault", r == -1 && errno == EFAULT, "returned %d", r);
		waitpid(c, NULL, WNOHANG);
	}

	for (int timed = 0; timed < 2 && BAD_POINTERS; timed++) {
		struct sem_cancel sc = { .timed = timed };
		pthread_t t;
		void *res = NULL;
		int v = -1;
		if (sem_init(&sc.sem, 0, 1))
			abort();
		if (pthread_create(&t, NULL, cancel_in_sem, &sc) || pthread_join(t, &res))
			abort();
		sem_getvalue(&sc.sem, &v);
		CHECK(timed ? "sem-timedwait-cancel-pending" : "sem-wait-cancel-pending", res == PTHREAD_CANCELED && v == 1,
		      "%s, value %d", res == PTHREAD_CANCELED ? "cancelled" : "not cancelled", v);
		sem_destroy(&sc.sem);
	}
}

/* the timed joins: an ended thread is joined whatever the time (glibc);
 * another clock than CLOCK_MONOTONIC and CLOCK_REALTIME is refused first */
static void *end_now(void *arg)
{
	return arg;
}

static void *end_later(void *arg)
{
	ms_sleep(20);
	return arg;
}

static void check_joins(void)
{
#if defined(__SANITIZE_THREAD__)
	/* ThreadSanitizer does not intercept the timed joins: it takes the
	 * next thread for one whose id is still in use, and aborts */
	return;
#endif
	struct timespec bad = { 0, 1000000000L }, past = { 1, 0 }, dl;
	pthread_t t, running;
	void *ret = NULL;
	int r, fds[2];

	if (pthread_create(&t, NULL, end_now, (void *)1))
		abort();
	ms_sleep(20);
	dl = in_ms(CLOCK_REALTIME, 5000);
	r = pthread_timedjoin_np(t, &ret, &dl);
	CHECK("timedjoin-ended", r == 0 && ret == (void *)1, "returned %d", r);
	if (pthread_create(&t, NULL, end_now, (void *)2))
		abort();
	ms_sleep(20);
	r = pthread_timedjoin_np(t, &ret, &bad);
	CHECK("timedjoin-ended-badtime", r == 0 && ret == (void *)2, "returned %d", r);
	if (pthread_create(&t, NULL, end_now, (void *)3))
		abort();
	ms_sleep(20);
	r = pthread_clockjoin_np(t, &ret, CLOCK_BOOTTIME, &past);
	CHECK("clockjoin-clock", r == EINVAL, "returned %d", r);
	r = pthread_clockjoin_np(t, &ret, CLOCK_MONOTONIC, &past);
	CHECK("clockjoin-ended", r == 0 && ret == (void *)3, "returned %d", r);

	if (pipe(fds) || pthread_create(&running, NULL, cancel_me, fds))
		abort();
	r = pthread_timedjoin_np(running, &ret, &past);
	CHECK("timedjoin-timeout", r == ETIMEDOUT, "returned %d", r);
	dl = in_ms(CLOCK_MONOTONIC, 20);
	r = pthread_clockjoin_np(running, &ret, CLOCK_MONOTONIC, &dl);
	CHECK("clockjoin-timeout", r == ETIMEDOUT, "returned %d", r);
	if (write(fds[1], "x", 1) != 1 || pthread_join(running, NULL))
		abort();
	close(fds[0]);
	close(fds[1]);

	if (pthread_create(&t, NULL, end_later, (void *)4))
		abort();
	dl = in_ms(CLOCK_REALTIME, 5000);
	r = pthread_timedjoin_np(t, &ret, &dl);
	CHECK("timedjoin-wait", r == 0 && ret == (void *)4, "returned %d", r);
	if (pthread_create(&t, NULL, end_later, (void *)5))
		abort();
	dl = in_ms(CLOCK_MONOTONIC, 5000);
	r = pthread_clockjoin_np(t, &ret, CLOCK_MONOTONIC, &dl);
	CHECK("clockjoin-wait", r == 0 && ret == (void *)5, "returned %d", r);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	check_select();
	check_poll();
	check_fds();
	check_accept();
	check_sleeps();
	check_split();
	check_answers();
	check_sems();
	check_bad_args();
	check_joins();
	check_altstack();
	check_coroutine();
	check_coroutine_on_stack();
	check_threads();
	printf("%d failures\n", failures);
	return failures;
}
