/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_fork_streams - fork under the heap module from a process with a
 * second thread while streams made by fopen, open_memstream and fmemopen
 * are open (their FILE structures are secret heap blocks; glibc's fork()
 * resets every stream's lock in such a child before any fork handler runs:
 * the child used to die of SIGSEGV).
 *
 *  streams: a thread churning malloc, another holding one stream's lock
 *         (flockfile) across fork(); a read stream with unread buffered
 *         data, a write stream with unflushed data, an open_memstream, an
 *         fmemopen.  The child finds glibc's list of streams as the parent
 *         had it, reads the rest of the read stream, writes and flushes
 *         the others (the locked one too: its lock is reset, as glibc
 *         resets it), closes them all and exits 0; then the parent does
 *         the same with its own data, and the files hold both.  Then 20
 *         forks, each child flushing every stream (fflush(NULL), exit).
 *  cut:   70 streams in ordinary memory (fopen's FILE above
 *         SECRETMEM_HEAP_HUGE=300) each followed by one in the heap
 *         (fopencookie's, 280 bytes): more runs than streams.c remembers,
 *         so the list is cut; a thread holds the lock of the last ordinary
 *         stream (past the cut) and of a heap one across fork(); the child
 *         writes to both and every stream is flushed and closed.
 *  bound: (as an ordinary user) with no room left under the memory-lock
 *         limit fork() fails with ENOMEM: glibc's list is as it was and
 *         the streams work; fork() works again once the limit is back.
 * Each case runs as root and as uid 65534 under `ulimit -l 8192`.
 */
#include <dlfcn.h>
#include <errno.h>
#include <gnu/lib-names.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "heaprig.h"
#include "tlib.h"

#define LIMIT ((size_t)8 << 20)
#define RLEN 3000 /* the read file: less than a stream's buffer */
#define MAXLIST 256

/* libc's own list of open streams and single-thread flag (naming them here
 * would make copies of them in this program's data: copy relocations) */
static FILE **list_all;
static const volatile char *single_threaded;

static void find_libc(void)
{
	void *libc = dlopen(LIBC_SO, RTLD_LAZY | RTLD_NOLOAD);

	TL_CHECK(libc, "dlopen %s", LIBC_SO);
	list_all = dlsym(libc, "_IO_list_all");
	single_threaded = dlsym(libc, "__libc_single_threaded");
	TL_CHECK(list_all && single_threaded, "_IO_list_all or __libc_single_threaded not in %s", LIBC_SO);
}

static FILE *list_before[MAXLIST];
static int nlist;

/* Remember glibc's list of streams, in its order. */
static void list_save(void)
{
	nlist = 0;
	for (FILE *fp = *list_all; fp; fp = fp->_chain) {
		TL_CHECK(nlist < MAXLIST, "more than %d streams", MAXLIST);
		list_before[nlist++] = fp;
	}
}

/* 1 if glibc's list is the one list_save saw. */
static int list_same(void)
{
	int i = 0;

	for (FILE *fp = *list_all; fp; fp = fp->_chain, i++)
		if (i >= nlist || list_before[i] != fp)
			return 0;
	return i == nlist;
}

/* ---- a thread holding streams' locks ------------------------------------------ */

struct holder {
	FILE *fp[2];
	int go[2], done[2]; /* pipes: locked, release */
	pthread_t t;
};

static void *hold(void *arg)
{
	struct holder *h = arg;
	char c = 0;

	for (int i = 0; i < 2; i++)
		if (h->fp[i])
			flockfile(h->fp[i]);
	if (write(h->go[1], &c, 1) != 1 || read(h->done[0], &c, 1) != 1)
		abort();
	for (int i = 0; i < 2; i++)
		if (h->fp[i])
			funlockfile(h->fp[i]);
	return NULL;
}

/* Start a thread that holds the locks of a and b (b may be NULL) until
 * holder_end. */
static void holder_start(struct holder *h, FILE *a, FILE *b)
{
	char c;

	h->fp[0] = a;
	h->fp[1] = b;
	TL_CHECK(pipe(h->go) == 0 && pipe(h->done) == 0, "pipe");
	TL_CHECK(pthread_create(&h->t, NULL, hold, h) == 0, "pthread_create");
	TL_CHECK(read(h->go[0], &c, 1) == 1, "the holder thread");
	TL_CHECK(ftrylockfile(a) != 0, "the stream is not locked by the other thread");
}

static void holder_end(struct holder *h)
{
	char c = 0;

	TL_CHECK(write(h->done[1], &c, 1) == 1, "release");
	pthread_join(h->t, NULL);
	for (int i = 0; i < 2; i++) {
		close(h->go[i]);
		close(h->done[i]);
	}
}

/* ---- files ------------------------------------------------------------------ */

static char dir[] = "/tmp/t_heap_fork_streams.XXXXXX";
static pid_t dir_owner; /* a child's exit() leaves the files alone */

static void path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

static void rdata(char *b)
{
	for (int i = 0; i < RLEN; i++)
		b[i] = (char)('a' + i % 26);
}

/* The whole file name into buf (NUL-terminated); its length. */
static size_t slurp(const char *name, char *buf, size_t len)
{
	char p[256];

	path(p, sizeof(p), name);
	FILE *f = fopen(p, "r");
	TL_CHECK(f, "fopen %s: %s", p, strerror(errno));
	size_t n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
	return n;
}

static void cleanup(void)
{
	static const char *const names[] = { "r", "w", "l", "c" };
	char p[256];

	if (getpid() != dir_owner)
		return;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		path(p, sizeof(p), names[i]);
		unlink(p);
	}
	rmdir(dir);
}

static void make_dir(void)
{
	char p[256], b[RLEN];

	TL_CHECK(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	dir_owner = getpid();
	atexit(cleanup);
	path(p, sizeof(p), "r");
	FILE *f = fopen(p, "w");
	rdata(b);
	TL_CHECK(f && fwrite(b, 1, RLEN, f) == RLEN && fclose(f) == 0, "writing %s", p);
}

static FILE *open_in(const char *name, const char *mode)
{
	char p[256];

	path(p, sizeof(p), name);
	FILE *f = fopen(p, mode);
	TL_CHECK(f, "fopen %s: %s", p, strerror(errno));
	return f;
}

/* ---- streams ------------------------------------------------------------------ */

struct streams {
	FILE *r, *w, *l, *ms, *fm;
	char *mbuf, *fmbuf;
	size_t msize;
};

static void streams_open(struct streams *s)
{
	char b[100], want[RLEN];

	s->r = open_in("r", "r");
	rdata(want);
	TL_CHECK(fread(b, 1, 100, s->r) == 100 && !memcmp(b, want, 100), "the first 100 bytes");
	s->w = open_in("w", "w");
	TL_CHECK(fputs("before\n", s->w) >= 0, "fputs"); /* stays in the buffer */
	s->l = open_in("l", "w");
	s->ms = open_memstream(&s->mbuf, &s->msize);
	TL_CHECK(s->ms && fputs("mem-before;", s->ms) >= 0, "open_memstream");
	s->fmbuf = malloc(64);
	TL_CHECK(s->fmbuf, "malloc");
	memset(s->fmbuf, 0, 64);
	strcpy(s->fmbuf, "fmemopen-data");
	s->fm = fmemopen(s->fmbuf, 64, "r+");
	TL_CHECK(s->fm && fread(b, 1, 8, s->fm) == 8 && !memcmp(b, "fmemopen", 8), "fmemopen");
	FILE *all[] = { s->r, s->w, s->l, s->ms, s->fm };
	for (int i = 0; i < 5; i++)
		TL_CHECK(hr_where(all[i]) == 's', "stream %d: its FILE is not in secret memory (%c)", i, hr_where(all[i]));
}

/* What each process does with the streams after fork(), who: "child" or
 * "parent"; 0, or the number of the step that went wrong. */
static int streams_use(struct streams *s, const char *who)
{
	char b[RLEN + 1], want[RLEN], fm[64];

	rdata(want);
	if (fread(b, 1, RLEN, s->r) != RLEN - 100 || memcmp(b, want + 100, RLEN - 100) || fgetc(s->r) != EOF)
		return 1;
	if (fclose(s->r))
		return 2;
	if (fprintf(s->w, "%s\n", who) < 0 || fflush(s->w) || fclose(s->w))
		return 3;
	if (fprintf(s->l, "%s-locked\n", who) < 0 || fflush(s->l) || fclose(s->l))
		return 4;
	if (fputs(who, s->ms) < 0 || fclose(s->ms))
		return 5;
	snprintf(b, sizeof(b), "mem-before;%s", who);
	if (strcmp(s->mbuf, b) || s->msize != strlen(b))
		return 6;
	free(s->mbuf);
	if (fread(fm, 1, 5, s->fm) != 5 || memcmp(fm, "-data", 5))
		return 7;
	if (fseek(s->fm, 0, SEEK_SET) || fputs(who, s->fm) < 0 || fclose(s->fm))
		return 8;
	snprintf(b, sizeof(b), "%s", who);
	if (memcmp(s->fmbuf, b, strlen(b)))
		return 9;
	free(s->fmbuf);
	return 0;
}

/* Wait for pid: 0 when it exited 0, else a line on stderr and 1. */
static int reap(pid_t pid, const char *what)
{
	int st;

	TL_CHECK(pid > 0, "fork: %s", strerror(errno));
	while (waitpid(pid, &st, 0) < 0)
		TL_CHECK(errno == EINTR, "waitpid: %s", strerror(errno));
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	fprintf(stderr, "%s: %s\n", what, tl_status_str(st));
	return 1;
}

static pthread_t churner;

/* A second thread, churning malloc: glibc's fork() now resets the streams'
 * locks in its child. */
static void churn_start(void)
{
	tl_churn_start(&churner, 1);
	TL_CHECK(!*single_threaded, "still single-threaded for glibc");
}

static void churn_stop(void)
{
	tl_churn_stop(&churner, 1);
}

static int case_streams(void)
{
	struct streams s;
	struct holder h;

	make_dir();
	streams_open(&s);
	churn_start();
	holder_start(&h, s.l, NULL);
	list_save();
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		alarm(20); /* a stream lock the child cannot take: fail, not hang */
		if (!list_same())
			_exit(20);
		int rc = streams_use(&s, "child");
		if (rc)
			_exit(rc);
		exit(0); /* exit() walks the list of streams again */
	}
	TL_CHECK(reap(pid, "the child") == 0, "the child with open streams");
	TL_CHECK(list_same(), "the parent's list of streams changed");
	holder_end(&h);
	int rc = streams_use(&s, "parent");
	TL_CHECK(rc == 0, "the parent's streams after fork(): step %d", rc);
	char b[256];
	slurp("w", b, sizeof(b));
	TL_CHECK(!strcmp(b, "before\nchild\nbefore\nparent\n"), "write stream's file: \"%s\"", b);
	slurp("l", b, sizeof(b));
	TL_CHECK(!strcmp(b, "child-locked\nparent-locked\n"), "locked stream's file: \"%s\"", b);
	printf("fork with 5 open streams, one locked by another thread: child and parent used each\n");

	/* again and again, every stream flushed by the child's exit() */
	streams_open(&s);
	list_save();
	for (int k = 0; k < 20; k++) {
		fflush(stdout);
		pid = fork();
		if (pid == 0)
			exit(list_same() && fflush(NULL) == 0 ? 0 : 22);
		TL_CHECK(reap(pid, "a child") == 0, "fork %d", k);
	}
	TL_CHECK(list_same(), "the parent's list of streams changed");
	churn_stop();
	printf("20 more forks with the streams open: every child flushed them and exited 0\n");
	return 0;
}

/* ---- cut: more runs of the heap's streams than streams.c remembers --------- */

#define PAIRS 70

static ssize_t cookie_write(void *c, const char *buf, size_t n)
{
	(void)c;
	(void)buf;
	return (ssize_t)n;
}

static int case_cut(void)
{
	static FILE *plain[PAIRS], *heap[PAIRS];
	cookie_io_functions_t io = { .write = cookie_write };
	struct holder h;

	make_dir();
	for (int i = 0; i < PAIRS; i++) {
		plain[i] = open_in("c", "w");
		heap[i] = fopencookie(NULL, "w", io);
		TL_CHECK(heap[i], "fopencookie");
		TL_CHECK(hr_where(plain[i]) == 'o' && hr_where(heap[i]) == 's',
			 "pair %d: FILEs in %c and %c, expected ordinary and secret memory", i, hr_where(plain[i]),
			 hr_where(heap[i]));
	}
	churn_start();
	/* plain[0]: the last ordinary stream on the list (the newest first) */
	holder_start(&h, plain[0], heap[PAIRS / 2]);
	list_save();
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		alarm(20);
		if (!list_same())
			_exit(20);
		if (fputs("child\n", plain[0]) < 0 || fflush(plain[0]) || fputs("x", heap[PAIRS / 2]) < 0 ||
		    fflush(heap[PAIRS / 2]))
			_exit(23);
		for (int i = 0; i < PAIRS; i++)
			if (fclose(plain[i]) || fclose(heap[i]))
				_exit(24);
		exit(0);
	}
	TL_CHECK(reap(pid, "the child") == 0, "the child of a list with %d runs", PAIRS);
	TL_CHECK(list_same(), "the parent's list of streams changed");
	holder_end(&h);
	churn_stop();
	for (int i = 0; i < PAIRS; i++)
		TL_CHECK(fclose(plain[i]) == 0 && fclose(heap[i]) == 0, "fclose");
	char b[256];
	slurp("c", b, sizeof(b));
	TL_CHECK(!strcmp(b, "child\n"), "the stream's file: \"%s\"", b);
	printf("fork with %d ordinary streams each followed by a heap one, two locked: the child used both\n", PAIRS);
	return 0;
}

/* ---- bound: fork() fails with ENOMEM ------------------------------------------ */

static int case_bound(void)
{
	struct streams s;

	make_dir();
	streams_open(&s);
	churn_start();
	list_save();
	size_t locked = hr_vmlck();
	hr_set_soft_memlock(locked);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	int err = errno;
	TL_CHECK(pid < 0 && err == ENOMEM, "limit = VmLck (%zu KiB): fork() gave %d (%s), expected ENOMEM",
		 locked >> 10, (int)pid, strerror(err));
	TL_CHECK(list_same(), "the list of streams changed by the failed fork()");
	printf("limit = VmLck: fork() failed with ENOMEM, the list of streams is intact\n");
	hr_set_soft_memlock(LIMIT);
	fflush(stdout);
	pid = fork();
	if (pid == 0) /* not exit(): it would move the read stream's offset,
		       * which the parent shares, back to its unread data */
		_exit(list_same() && fflush(NULL) == 0 ? 0 : 22);
	TL_CHECK(reap(pid, "the child") == 0, "fork() once the limit is back");
	churn_stop();
	int rc = streams_use(&s, "parent");
	TL_CHECK(rc == 0, "the parent's streams: step %d", rc);
	printf("limit back: the child flushed every stream; the parent used them\n");
	return 0;
}

int main(int argc, char **argv)
{
	static char out[1 << 16];
	static const char *const huge[] = { "SECRETMEM_HEAP_HUGE=300", NULL };
	static const struct {
		const char *name;
		const char *const *env;
		int root;
	} cases[] = {
		{ "streams", NULL, 1 },
		{ "cut", huge, 1 },
		{ "bound", NULL, 0 },
	};

	if (argc > 1) {
		TL_CHECK(hr_active(), "the heap module is not active");
		find_libc();
		if (!strcmp(argv[1], "streams"))
			return case_streams();
		if (!strcmp(argv[1], "cut"))
			return case_cut();
		if (!strcmp(argv[1], "bound"))
			return case_bound();
		return 2;
	}
	tl_need_secretmem();
	hr_module();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (int user = !cases[i].root; user < 2; user++) {
			int st = hr_run_user(argv[0], cases[i].name, 1, cases[i].env, user ? LIMIT : 0, out, sizeof(out));
			if (user && WIFEXITED(st) && WEXITSTATUS(st) == 77) {
				printf("%s", out);
				tl_skip("an ordinary user cannot run the tests here");
			}
			printf("== %s as %s: %s\n%s", cases[i].name, user ? "uid 65534 (ulimit -l 8192)" : "this user",
			       tl_status_str(st), out);
			TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", cases[i].name);
		}
	}
	printf("pass\n");
	return TL_PASS;
}
