/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_lock_adopt - heap mode makes the memory a program locks itself
 * secret memory (heap/mmcalls.c, src/adopt.c), and the program's later
 * calls on it keep their meaning.
 *
 * calls (this program run again, plain and in heap mode, as root and as an
 * ordinary user under `ulimit -l 8192`): it maps and locks memory of its
 * own and then uses it as libraries do - munlock, mprotect (guard pages,
 * read-only pages), madvise (DONTDUMP, DONTNEED and FREE of locked and of
 * unlocked pages, WIPEONFORK, a bad advice), fork (the child reads its copy,
 * its guard page faults, its writes stay its own), mremap (grow, shrink,
 * refused growth), munmap of a page and of the rest, a second mlock,
 * mlock2(MLOCK_ONFAULT), mlock2 with bad flags, mmap(MAP_LOCKED), mlock and
 * munlock of a malloc()ed buffer, mlock of unmapped memory, a locked block
 * of glibc's that realloc grows and shrinks (it stays locked, as the
 * kernel keeps it through glibc's mremap).  Every result
 * line must be the same in heap mode as plain; the "secret" lines (from
 * /proc/self/maps) must say "yes" in heap mode and "no" plain.
 *
 * threads (heap mode): three threads map, lock, protect and unmap memory
 * while a fourth forks; every child reads a locked range of the parent.
 *
 * scan (root): a random key in a range locked with mlock between guard
 * pages, one locked with mlock2(MLOCK_ONFAULT) and one mapped with
 * MAP_LOCKED.  Reading the running program through /proc/PID/mem finds
 * the key in all three plain (the control) and nowhere in heap mode; the
 * heap figures page counts the adopted ranges.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "heaprig.h"
#include "tlib.h"

#define PS 4096
#define LEN (16 * PS)

static sigjmp_buf jb;

static void on_segv(int sig)
{
	(void)sig;
	siglongjmp(jb, 1);
}

/* 1 if reading p faults. */
static int faults(const volatile unsigned char *p)
{
	struct sigaction sa = { .sa_handler = on_segv }, old;
	int f = 0;

	sigaction(SIGSEGV, &sa, &old);
	if (sigsetjmp(jb, 1) == 0)
		(void)*p;
	else
		f = 1;
	sigaction(SIGSEGV, &old, NULL);
	return f;
}

/* Whether every page of [p, p+len) is secret memory: "yes", "no", "part". */
static const char *secret(const void *p, size_t len)
{
	uintptr_t lo = (uintptr_t)p, hi = lo + len, covered = 0, other = 0;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return "unknown";
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b;
		if (sscanf(line, "%lx-%lx", &a, &b) != 2 || b <= lo || a >= hi)
			continue;
		size_t n = (b < hi ? b : hi) - (a > lo ? a : lo);
		if (strstr(line, "/secretmem"))
			covered += n;
		else
			other += n;
	}
	fclose(f);
	return covered == len ? "yes" : covered ? "part" : other ? "no" : "unmapped";
}

/* The line of /proc/self/smaps that starts with key, for the mapping that
 * holds p, into line; 0 if there is none. */
static int smaps_line(const void *p, const char *key, char *line, size_t len)
{
	int in = 0, found = 0;
	FILE *f = fopen("/proc/self/smaps", "re");

	while (f && !found && fgets(line, (int)len, f)) {
		unsigned long a, b;
		if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' '))
			in = a <= (uintptr_t)p && (uintptr_t)p < b;
		else
			found = in && strncmp(line, key, strlen(key)) == 0;
	}
	if (f)
		fclose(f);
	return found;
}

/* The Locked: kB of the mapping that holds p, or -1. */
static long locked_kb(const void *p)
{
	char line[512];
	long kb = -1;

	if (smaps_line(p, "Locked:", line, sizeof(line)))
		sscanf(line, "Locked: %ld kB", &kb);
	return kb;
}

/* 1 if the mapping that holds p is locked (VmFlags "lo"): also a mapping
 * with no page in memory, which Locked: does not show; -1 if unknown. */
static int vm_locked(const void *p)
{
	char line[512];

	return smaps_line(p, "VmFlags:", line, sizeof(line)) ? strstr(line, " lo") != NULL : -1;
}

/* The start of the mapping that holds p. */
static uintptr_t mapping_start(const void *p)
{
	uintptr_t lo = 0;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");

	while (f && fgets(line, sizeof(line), f)) {
		unsigned long a, b;
		if (sscanf(line, "%lx-%lx", &a, &b) == 2 && a <= (uintptr_t)p && (uintptr_t)p < b)
			lo = a;
	}
	if (f)
		fclose(f);
	return lo;
}

/* The end of the mappings from p on with no unmapped page between. */
static uintptr_t mapped_end(const void *p)
{
	uintptr_t end = 0;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");

	while (f && fgets(line, sizeof(line), f)) {
		unsigned long a, b;
		if (sscanf(line, "%lx-%lx", &a, &b) != 2)
			continue;
		if ((a <= (uintptr_t)p && (uintptr_t)p < b) || (end && a == end))
			end = b;
		else if (end)
			break;
	}
	if (f)
		fclose(f);
	return end;
}

static unsigned sum(const unsigned char *p, size_t len)
{
	unsigned s = 0;

	for (size_t i = 0; i < len; i++)
		s = s * 31 + p[i];
	return s;
}

static int all(const unsigned char *p, size_t len, unsigned char v)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != v)
			return 0;
	return 1;
}

static void *anon(size_t len, int flags)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);

	if (p == MAP_FAILED) {
		printf("mmap: %s\n", strerror(errno));
		exit(1);
	}
	return p;
}

/* munmap(2) without the C library (and so without heap mode's munmap). */
static long raw_munmap(void *p, size_t len)
{
#if defined(__x86_64__)
	long r;
	__asm__ __volatile__("syscall" : "=a"(r) : "a"((long)SYS_munmap), "D"(p), "S"(len) : "rcx", "r11", "memory");
	return r;
#else
	return munmap(p, len);
#endif
}

static const char *rc(int r)
{
	return r == 0 ? "0" : strerror(errno);
}

static int scan(int fd)
{
	unsigned char *a = anon(LEN, 0), *b = anon(LEN, 0);

	/* guard pages at both ends, as libsodium and OpenSSL lay them out */
	if (mprotect(a, PS, PROT_NONE) || mprotect(a + LEN - PS, PS, PROT_NONE))
		return 1;
	memset(a + PS, 0x5a, LEN - 2 * PS);
	if (mlock(a + PS, LEN - 2 * PS))
		return printf("mlock: %s\n", strerror(errno)), 1;
	if (mlock2(b, LEN, MLOCK_ONFAULT))
		return printf("mlock2: %s\n", strerror(errno)), 1;
	unsigned char *c = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_LOCKED, -1, 0);
	if (c == MAP_FAILED)
		return printf("mmap MAP_LOCKED: %s\n", strerror(errno)), 1;
	/* the key is made in locked memory and copied a byte at a time */
	if (getrandom(a + 3 * PS, 32, 0) != 32)
		return 1;
	for (int i = 0; i < 32; i++) {
		((volatile unsigned char *)b)[5 * PS + i] = a[3 * PS + i];
		((volatile unsigned char *)c)[7 * PS + i] = a[3 * PS + i];
	}
	if (write(fd, a + 3 * PS, 32) != 32)
		return 1;
	close(fd);
	printf("secret mlock %s mlock2 %s map_locked %s\n", secret(a + PS, LEN - 2 * PS), secret(b, LEN), secret(c, LEN));
	printf("ready\n");
	fflush(stdout);
	pause();
	return 0;
}

static int calls(void)
{
	unsigned char *p = anon(LEN, 0);

	for (size_t i = 0; i < LEN; i++)
		p[i] = (unsigned char)(i * 7 + 1);
	unsigned before = sum(p, LEN);
	printf("mlock: %s\n", rc(mlock(p, LEN)));
	printf("contents kept: %d\n", sum(p, LEN) == before);
	printf("secret after mlock %s\n", secret(p, LEN));
	printf("mlock again: %s\n", rc(mlock(p + PS, 2 * PS)));
	printf("mprotect none: %s\n", rc(mprotect(p, PS, PROT_NONE)));
	printf("guard faults: %d, next page readable: %d\n", faults(p), !faults(p + PS));
	printf("mprotect read-only: %s\n", rc(mprotect(p + 2 * PS, PS, PROT_READ)));
	printf("read-only page read: %d\n", p[2 * PS + 5] == (unsigned char)((2 * PS + 5) * 7 + 1));
	printf("munlock: %s\n", rc(munlock(p + PS, 4 * PS)));
	printf("after munlock: %d\n", p[3 * PS] == (unsigned char)(3 * PS * 7 + 1));
	printf("madvise dontdump: %s\n", rc(madvise(p, LEN, MADV_DONTDUMP)));
	/* locked pages refuse it; pages unlocked above are emptied */
	printf("madvise dontneed of locked pages: %s\n", rc(madvise(p + 4 * PS, 2 * PS, MADV_DONTNEED)));
	printf("madvise dontneed: %s\n", rc(madvise(p + 3 * PS, 2 * PS, MADV_DONTNEED)));
	printf("zero after dontneed: %d, next kept: %d\n", all(p + 3 * PS, 2 * PS, 0),
	       p[5 * PS] == (unsigned char)(5 * PS * 7 + 1));
	printf("madvise free of locked pages: %s\n", rc(madvise(p + 6 * PS, PS, MADV_FREE)));
	printf("munlock: %s\n", rc(munlock(p + 6 * PS, PS)));
	printf("madvise free: %s\n", rc(madvise(p + 6 * PS, PS, MADV_FREE)));
	printf("madvise willneed: %s\n", rc(madvise(p + 7 * PS, PS, MADV_WILLNEED)));
	printf("madvise bad advice: %s\n", rc(madvise(p, PS, 12345)));

	/* fork: the child reads its own copy, and its writes stay its own */
	unsigned at_fork = sum(p + 8 * PS, 8 * PS);
	int pipefd[2];
	if (pipe(pipefd))
		return 1;
	pid_t pid = fork();
	if (pid == 0) {
		unsigned s = sum(p + 8 * PS, 8 * PS);
		int guard = faults(p), ro = faults(p + 2 * PS);
		memset(p + 8 * PS, 0xee, PS);
		char msg[80];
		int n = snprintf(msg, sizeof(msg), "%d %d %d\n", s == at_fork, guard, !ro);
		_exit(write(pipefd[1], msg, (size_t)n) == n ? 0 : 1);
	}
	int st;
	char got[80] = "";
	close(pipefd[1]);
	ssize_t n = read(pipefd[0], got, sizeof(got) - 1);
	got[n > 0 ? n : 0] = '\0';
	waitpid(pid, &st, 0);
	printf("child: same contents, guard faults, read-only readable: %s", got);
	printf("parent unchanged by child: %d\n", sum(p + 8 * PS, 8 * PS) == at_fork);

	printf("madvise wipeonfork: %s\n", rc(madvise(p + 8 * PS, 8 * PS, MADV_WIPEONFORK)));
	pid = fork();
	if (pid == 0)
		_exit(all(p + 8 * PS, 8 * PS, 0) ? 0 : 3);
	waitpid(pid, &st, 0);
	printf("child of wipeonfork sees zeros: %d\n", WIFEXITED(st) && WEXITSTATUS(st) == 0);
	printf("madvise keeponfork: %s\n", rc(madvise(p + 8 * PS, 8 * PS, MADV_KEEPONFORK)));

	/* mremap: grow (moves or not), the new part zero; shrink */
	unsigned tail = sum(p + 8 * PS, 8 * PS);
	unsigned char *q = mremap(p + 8 * PS, 8 * PS, 32 * PS, MREMAP_MAYMOVE);
	printf("mremap grow: %s\n", q == MAP_FAILED ? strerror(errno) : "ok");
	if (q == MAP_FAILED)
		return 1;
	printf("grown: kept %d, new part zero %d\n", sum(q, 8 * PS) == tail, all(q + 8 * PS, 24 * PS, 0));
	printf("secret after grow %s\n", secret(q, 32 * PS));
	unsigned char *r = mremap(q, 32 * PS, 4 * PS, 0);
	printf("mremap shrink: %s, in place %d, kept %d\n", r == MAP_FAILED ? strerror(errno) : "ok", r == q,
	       r != MAP_FAILED && sum(r, 4 * PS) == sum(q, 4 * PS));
	printf("mremap without MAYMOVE over a neighbour: %s\n",
	       mremap(p, PS, 64 * PS, 0) == MAP_FAILED ? strerror(errno) : "ok");

	/* munmap of a part, then the rest */
	printf("munmap a page: %s\n", rc(munmap(p + 3 * PS, PS)));
	printf("unmapped page faults: %d, neighbour kept: %d\n", faults(p + 3 * PS),
	       p[PS + 1] == (unsigned char)((PS + 1) * 7 + 1));
	pid = fork();
	if (pid == 0)
		_exit(p[PS + 1] == (unsigned char)((PS + 1) * 7 + 1) ? 0 : 3);
	waitpid(pid, &st, 0);
	printf("child after partial munmap reads: %d\n", WIFEXITED(st) && WEXITSTATUS(st) == 0);
	printf("munmap rest: %s\n", rc(munmap(p, 8 * PS)));
	printf("munmap shrunk: %s\n", rc(munmap(r, 4 * PS)));

	/* mlock2 on fault, MAP_LOCKED, a malloc()ed buffer */
	unsigned char *o = anon(LEN, 0);
	memset(o, 0x33, PS);
	printf("mlock2 onfault: %s\n", rc(mlock2(o, LEN, MLOCK_ONFAULT)));
	printf("kept: %d\n", all(o, PS, 0x33));
	printf("secret after mlock2 %s\n", secret(o, LEN));
	printf("mlock2 bad flags: %s\n", rc(mlock2(o, LEN, 0x100)));
	unsigned char *m = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_LOCKED, -1, 0);
	printf("mmap locked: %s, zero %d\n", m == MAP_FAILED ? strerror(errno) : "ok", m != MAP_FAILED && all(m, LEN, 0));
	if (m != MAP_FAILED)
		printf("secret after MAP_LOCKED %s\n", secret(m, LEN));
	unsigned char *h = malloc(1000);
	printf("mlock of a malloc block: %s\n", rc(mlock(h, 1000)));
	printf("munlock of it: %s\n", rc(munlock(h, 1000)));
	printf("mlock of unmapped memory: %s\n", rc(mlock(r, PS)));
	free(h);

	/* a block of glibc's (above the heap module's 1 MiB threshold) that the
	 * program locks, then grows: glibc moves it with its own mremap */
	size_t big = (size_t)2 << 20;
	unsigned char *g = malloc(big);
	if (!g)
		return 1;
	memset(g, 0x44, big);
	unsigned char *gl = (unsigned char *)(((uintptr_t)g + 2 * PS) & ~(uintptr_t)(PS - 1));
	printf("mlock of a large block: %s\n", rc(mlock(g, big)));
	printf("secret after mlock of a large block %s\n", secret(gl, 32 * PS));
	g = realloc(g, 2 * big);
	printf("grown: %d\n", g && all(g, big, 0x44));
	/* the kernel keeps a locked mapping locked through glibc's mremap:
	 * heap mode keeps it secret (it went to ordinary unlocked memory) */
	gl = g ? (unsigned char *)(((uintptr_t)g + 2 * PS) & ~(uintptr_t)(PS - 1)) : NULL;
	printf("locked after realloc of a large block: %d\n", g && locked_kb(gl) > 0 && locked_kb(gl + big) > 0);
	printf("secret after realloc of a large block %s\n", g ? secret(gl, 2 * big - 4 * PS) : "none");
	pid = g ? fork() : -1;
	if (pid == 0)
		_exit(all(g, big, 0x44) ? 0 : 3);
	waitpid(pid, &st, 0);
	printf("child reads the grown block: %d\n", WIFEXITED(st) && WEXITSTATUS(st) == 0);
	g = realloc(g, big + big / 2); /* shrunk: glibc's mremap in place */
	gl = g ? (unsigned char *)(((uintptr_t)g + 2 * PS) & ~(uintptr_t)(PS - 1)) : NULL;
	printf("shrunk: %d, locked %d\n", g && all(g, big, 0x44), g && locked_kb(gl) > 0);
	printf("secret after shrinking a large block %s\n", g ? secret(gl, big) : "none");
	free(g);

	/* made executable (secret memory cannot be: it goes back to ordinary
	 * memory), kept from children */
	unsigned char *x = anon(LEN, 0);
	memset(x, 0x21, LEN);
	printf("mlock: %s\n", rc(mlock(x, LEN)));
	printf("mprotect exec: %s\n", rc(mprotect(x, PS, PROT_READ | PROT_EXEC)));
	printf("executable page kept: %d, rest kept: %d\n", all(x, PS, 0x21), all(x + PS, LEN - PS, 0x21));
	printf("madvise dontfork: %s\n", rc(madvise(x + PS, LEN - PS, MADV_DONTFORK)));
	pid = fork();
	if (pid == 0)
		_exit(x[2 * PS] == 0x21 ? 0 : 3);
	waitpid(pid, &st, 0);
	printf("child of dontfork: %s\n", tl_status_str(st));
	printf("madvise dofork: %s\n", rc(madvise(x + PS, LEN - PS, MADV_DOFORK)));
	pid = fork();
	if (pid == 0)
		_exit(all(x + PS, LEN - PS, 0x21) ? 0 : 3);
	waitpid(pid, &st, 0);
	printf("child of dofork: %s\n", tl_status_str(st));
	printf("munmap: %s\n", rc(munmap(x, LEN)));

	/* locked memory unmapped by a raw system call, which no interposer
	 * sees: the next fork must not trip over it */
	unsigned char *u = anon(LEN, 0);
	printf("mlock before a raw munmap: %s\n", rc(mlock(u, LEN)));
	printf("raw munmap: %ld\n", raw_munmap(u, LEN));
	pid = fork();
	if (pid == 0)
		_exit(0);
	waitpid(pid, &st, 0);
	printf("fork after it: %d\n", WIFEXITED(st) && WEXITSTATUS(st) == 0);
	printf("done\n");
	return 0;
}

static void on_bus(int sig)
{
	(void)sig;
	siglongjmp(jb, 1);
}

/* 1 if writing p faults (SIGSEGV or SIGBUS). */
static int write_faults(volatile unsigned char *p)
{
	struct sigaction sa = { .sa_handler = on_bus }, o1, o2;
	int f = 0;

	sigaction(SIGSEGV, &sa, &o1);
	sigaction(SIGBUS, &sa, &o2);
	if (sigsetjmp(jb, 1) == 0)
		*p = 1;
	else
		f = 1;
	sigaction(SIGSEGV, &o1, NULL);
	sigaction(SIGBUS, &o2, NULL);
	return f;
}

/* fork; the child runs fn(arg) and exits with it; its status as text
 * (one call per statement: the text is the call's own until the next) */
static const char *forked(int (*fn)(unsigned char *), unsigned char *arg)
{
	static char buf[64];
	int st;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0)
		_exit(fn(arg));
	if (pid < 0)
		return strerror(errno);
	waitpid(pid, &st, 0);
	snprintf(buf, sizeof(buf), "%s", tl_status_str(st));
	return buf;
}

static int child_reads(unsigned char *p)
{
	return faults(p) ? 9 : *p;
}

static int child_writes(unsigned char *p)
{
	*p = 'C';
	return 0;
}

static unsigned char *alt_mem;
static const char *alt_child;

static void on_usr1(int sig)
{
	(void)sig;
	alt_child = forked(child_reads, alt_mem);
}

static long raw3(long n, long a, long b, long c, long d)
{
#if defined(__x86_64__)
	long r;
	register long r10 __asm__("r10") = d;
	__asm__ __volatile__("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
	return r;
#else
	return syscall(n, a, b, c, d);
#endif
}

#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24
#endif

/* 8 pages, half of them locked (the second half if second), moved
 * (MREMAP_FIXED) and shrunk to the first half */
static void shrinking_move(int second)
{
	unsigned char *m = anon(8 * PS, 0);

	memset(m, 'T', 8 * PS);
	printf("mlock of the %s half: %s\n", second ? "second" : "first", rc(mlock(m + (second ? 4 * PS : 0), 4 * PS)));
	unsigned char *to = mmap(NULL, 4 * PS, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *r = mremap(m, 8 * PS, 4 * PS, MREMAP_MAYMOVE | MREMAP_FIXED, to);
	printf("mremap move shrinking off %s half: %s\n", second ? "a locked" : "an unlocked",
	       r == to ? "ok" : strerror(errno));
	if (r == to)
		printf("moved: kept %d, the rest unmapped %d\n", all(r, 4 * PS, 'T'), faults(m + 5 * PS));
	munmap(to, 4 * PS);
}

/*
 * edges: what a program may do to its locked memory that the kernel answers
 * in a way of its own - calls over holes, calls the module cannot see,
 * protections it cannot read - and fork after each.  Each result line must
 * be the same plain and in heap mode.
 */
static int edges(void)
{
	/* before anything is adopted: MADV_DOFORK from below the mapping that
	 * holds a heap block to above it (its result depends on the layout,
	 * not printed); the child's write must stay its own */
	unsigned char *hb = malloc(3 * PS);
	memset(hb, 'P', 3 * PS);
	unsigned char *hp = (unsigned char *)(((uintptr_t)hb + PS - 1) & ~(uintptr_t)(PS - 1));
	uintptr_t hlo = mapping_start(hp);
	madvise((void *)(hlo - PS), mapped_end(hp) + PS - (hlo - PS), MADV_DOFORK);
	printf("child writes a heap block after DOFORK around its mapping: %s\n", forked(child_writes, hp));
	printf("parent reads %c\n", *hp);
	free(hb);

	/* mlock over [rw][PROT_NONE][rw]: the kernel locks every mapping
	 * and says ENOMEM for the page it cannot fault in; the walk must go
	 * on past it (it stopped there: the last page was neither secret
	 * nor locked) */
	unsigned char *pn = anon(3 * PS, 0);
	memset(pn, 'N', 3 * PS);
	mprotect(pn + PS, PS, PROT_NONE);
	printf("mlock over a PROT_NONE page: %s\n", rc(mlock(pn, 3 * PS)));
	printf("secret before a PROT_NONE page %s\n", secret(pn, PS));
	printf("secret after a PROT_NONE page %s\n", secret(pn + 2 * PS, PS));
	printf("locked after a PROT_NONE page: %d, kept %d\n", locked_kb(pn + 2 * PS) > 0, all(pn + 2 * PS, PS, 'N'));
	munmap(pn, 3 * PS);

	/* mprotect over [locked][hole]: the kernel changes the first part
	 * and says ENOMEM; then the range grows (no fork between: the
	 * records must know the protection at once) */
	unsigned char *m = anon(3 * PS, 0);
	memset(m, 'P', 3 * PS);
	munmap(m + 2 * PS, PS);
	printf("mlock: %s\n", rc(mlock(m, 2 * PS)));
	printf("mprotect over a hole: %s\n", rc(mprotect(m, 3 * PS, PROT_NONE)));
	m = mremap(m, 2 * PS, 4 * PS, MREMAP_MAYMOVE);
	printf("mremap grow: %s\n", m == MAP_FAILED ? strerror(errno) : "ok");
	if (m != MAP_FAILED) {
		printf("grown range read faults: %d\n", faults(m));
		munmap(m, 4 * PS);
	}

	/* mprotect over [locked][hole] again, then fork reads; a raw
	 * pkey_mprotect */
	m = anon(3 * PS, 0);
	memset(m, 'P', 3 * PS);
	munmap(m + 2 * PS, PS);
	printf("mlock: %s\n", rc(mlock(m, 2 * PS)));
	printf("secret %s\n", secret(m, 2 * PS));
	printf("mprotect over a hole: %s\n", rc(mprotect(m, 3 * PS, PROT_NONE)));
	printf("child of it reads the first page: %s\n", forked(child_reads, m));
	printf("mprotect back: %s\n", rc(mprotect(m, 2 * PS, PROT_READ | PROT_WRITE)));
	printf("raw pkey_mprotect none: %ld\n", raw3(SYS_pkey_mprotect, (long)m, PS, PROT_NONE, -1));
	printf("child of it reads the first page: %s\n", forked(child_reads, m));
	printf("child of it reads the second page: %s\n", forked(child_reads, m + PS));
	printf("madvise dofork over a hole: %s\n", rc(madvise(m, 3 * PS, MADV_DOFORK)));
	printf("child of it writes: %s\n", forked(child_writes, m + PS));
	printf("parent reads %c\n", m[PS]);
	munmap(m, 2 * PS);

	/* many pieces unmapped behind the module's back, then fork */
	size_t n = 2 * 80 + 1;
	m = anon(n * PS, 0);
	memset(m, 'R', n * PS);
	printf("mlock: %s\n", rc(mlock(m, n * PS)));
	for (size_t i = 1; i < n; i += 2)
		raw_munmap(m + i * PS, PS);
	printf("after 80 raw munmaps, child reads: %s\n", forked(child_reads, m + 2 * PS));
	for (size_t i = 0; i < n; i += 2)
		munmap(m + i * PS, PS);

	/* DOFORK over a heap block, the mappings after it and the first
	 * unmapped page: never shared */
	unsigned char *b = malloc(3 * PS);
	memset(b, 'P', 3 * PS);
	unsigned char *pg = (unsigned char *)(((uintptr_t)b + PS - 1) & ~(uintptr_t)(PS - 1));
	printf("madvise dofork over a block and the next hole: %s\n",
	       rc(madvise(pg, mapped_end(pg) + PS - (uintptr_t)pg, MADV_DOFORK)));
	printf("child writes the block: %s\n", forked(child_writes, pg));
	printf("parent reads %c\n", *pg);
	free(b);

	/* what the kernel refuses to lock */
	m = mmap(NULL, 2 * PS, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	printf("mlock of PROT_NONE: %s\n", rc(mlock(m, 2 * PS)));
	printf("mlock2 of PROT_NONE: %s\n", rc(mlock2(m, 2 * PS, MLOCK_ONFAULT)));
	munmap(m, 2 * PS);
	printf("mlock at the top of the address space: %s\n", rc(mlock((void *)-PS, 2 * PS)));

	/* syscall(SYS_mremap) grows a locked range; adjacent locked ranges
	 * shrink and grow as one mapping */
	m = anon(8 * PS, 0);
	memset(m, 'G', 8 * PS);
	printf("mlock: %s\n", rc(mlock(m, 2 * PS)));
	printf("mlock of the next pages: %s\n", rc(mlock(m + 2 * PS, 2 * PS)));
	munmap(m + 4 * PS, 4 * PS);
	printf("secret %s\n", secret(m, 4 * PS));
	unsigned char *r = mremap(m, 4 * PS, 3 * PS, 0);
	printf("mremap shrink of two locked ranges: %s\n", r == m ? "in place" : strerror(errno));
	r = mremap(m, 3 * PS, 16 * PS, MREMAP_MAYMOVE);
	printf("mremap grow of two locked ranges: %s\n", r == MAP_FAILED ? strerror(errno) : "ok");
	if (r != MAP_FAILED) {
		printf("grown: kept %d, new part zero %d\n", all(r, 3 * PS, 'G'), all(r + 3 * PS, 13 * PS, 0));
		m = (unsigned char *)syscall(SYS_mremap, r, 16 * PS, 32 * PS, MREMAP_MAYMOVE, NULL);
		printf("syscall(SYS_mremap) grow: %s\n", m == MAP_FAILED ? strerror(errno) : "ok");
		if (m != MAP_FAILED) {
			printf("grown part written: faults %d\n", write_faults(m + 20 * PS));
			printf("kept %d\n", all(m, 3 * PS, 'G'));
			printf("secret %s\n", secret(m, 32 * PS));
			munmap(m, 32 * PS);
		}
	}

	/* unmapped behind the module's back and mapped again at the same
	 * place: locking the new mapping makes it secret (the old record is
	 * not taken for it) */
	m = anon(4 * PS, 0);
	printf("mlock: %s\n", rc(mlock(m, 4 * PS)));
	raw_munmap(m, 4 * PS);
	unsigned char *again = mmap(m, 4 * PS, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
				    -1, 0);
	printf("mapped again at its place: %d\n", again == m);
	if (again == m) {
		memset(m, 'S', 4 * PS);
		printf("mlock of the new mapping: %s\n", rc(mlock(m, 4 * PS)));
		printf("secret %s\n", secret(m, 4 * PS));
		printf("child of it reads: %s\n", forked(child_reads, m + 3 * PS));
		munmap(m, 4 * PS);
	}

	/* neighbouring locked ranges: other fork advice or lock makes them
	 * two mappings, which no mremap grows (the wiped range stays wiped
	 * in a child); alike, they move as one, and shrink while moving */
	unsigned char *w = mmap(NULL, 8 * PS, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	mmap(w, 4 * PS, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	mmap(w + 4 * PS, 4 * PS, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	memset(w, 'A', 4 * PS);
	memset(w + 4 * PS, 'W', 4 * PS);
	printf("mlock: %s\n", rc(mlock(w, 4 * PS)));
	printf("mlock of the next pages: %s\n", rc(mlock(w + 4 * PS, 4 * PS)));
	printf("madvise wipeonfork of the second: %s\n", rc(madvise(w + 4 * PS, 4 * PS, MADV_WIPEONFORK)));
	r = mremap(w, 8 * PS, 12 * PS, MREMAP_MAYMOVE);
	printf("mremap grow of both: %s\n", r == MAP_FAILED ? strerror(errno) : "ok");
	if (r != MAP_FAILED)
		w = r;
	printf("child reads the wiped one: %s\n", forked(child_reads, w + 4 * PS));
	printf("madvise keeponfork: %s\n", rc(madvise(w + 4 * PS, 4 * PS, MADV_KEEPONFORK)));
	printf("munlock of the first: %s\n", rc(munlock(w, 4 * PS)));
	r = mremap(w, 8 * PS, 12 * PS, MREMAP_MAYMOVE);
	printf("mremap grow of both: %s\n", r == MAP_FAILED ? strerror(errno) : "ok");
	if (r != MAP_FAILED)
		w = r;
	printf("mlock of the first again: %s\n", rc(mlock(w, 4 * PS)));
	unsigned char *to = mmap(NULL, 8 * PS, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	r = mremap(w, 8 * PS, 8 * PS, MREMAP_MAYMOVE | MREMAP_FIXED, to);
	printf("mremap move of both: %s\n", r == to ? "ok" : strerror(errno));
	if (r == to) {
		w = r;
		printf("moved: kept %d %d\n", all(w, 4 * PS, 'A'), all(w + 4 * PS, 4 * PS, 'W'));
		printf("secret %s\n", secret(w, 8 * PS));
		to = mmap(NULL, 8 * PS, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		r = mremap(w, 8 * PS, 6 * PS, MREMAP_MAYMOVE | MREMAP_FIXED, to);
		printf("mremap move of both, shrinking: %s\n", r == to ? "ok" : strerror(errno));
		if (r == to) {
			w = r;
			printf("moved: kept %d %d\n", all(w, 4 * PS, 'A'), all(w + 4 * PS, 2 * PS, 'W'));
			printf("child reads the second: %s\n", forked(child_reads, w + 5 * PS));
		}
	}
	munmap(w, 8 * PS);
	munmap(to, 8 * PS);

	/* more mappings than one read of the maps gives (300, every other
	 * page read-only): munlock and mlock reach them all */
	n = 300;
	m = anon(n * PS, 0);
	memset(m, 'E', n * PS);
	printf("mlock: %s\n", rc(mlock(m, n * PS)));
	for (size_t i = 1; i < n; i += 2)
		mprotect(m + i * PS, PS, PROT_READ);
	printf("munlock of 300 mappings: %s\n", rc(munlock(m, n * PS)));
	printf("madvise dontneed of the last: %s\n", rc(madvise(m + (n - 2) * PS, PS, MADV_DONTNEED)));
	printf("zero %d\n", all(m + (n - 2) * PS, PS, 0));
	printf("mlock of 300 mappings: %s\n", rc(mlock(m, n * PS)));
	printf("madvise dontneed of the last: %s\n", rc(madvise(m + (n - 4) * PS, PS, MADV_DONTNEED)));
	printf("secret %s\n", secret(m, n * PS));
	munmap(m, n * PS);

	/* munlock and mlock over [adopted][hole]: the part before the hole
	 * is unlocked, then locked again, and both say ENOMEM */
	m = anon(5 * PS, 0);
	memset(m, 'L', 5 * PS);
	munmap(m + 4 * PS, PS);
	printf("mlock: %s\n", rc(mlock(m, 4 * PS)));
	printf("munlock over a hole: %s\n", rc(munlock(m, 5 * PS)));
	printf("madvise dontneed: %s\n", rc(madvise(m, PS, MADV_DONTNEED)));
	printf("zero %d\n", all(m, PS, 0));
	printf("mlock over a hole: %s\n", rc(mlock(m, 5 * PS)));
	printf("madvise dontneed: %s\n", rc(madvise(m + PS, PS, MADV_DONTNEED)));
	printf("kept %d\n", all(m + PS, PS, 'L'));
	munmap(m, 4 * PS);

	/* MREMAP_DONTUNMAP: the old range stays, empty and unlocked */
	m = anon(4 * PS, 0);
	memset(m, 'U', 4 * PS);
	printf("mlock: %s\n", rc(mlock(m, 4 * PS)));
	r = mremap(m, 4 * PS, 4 * PS, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, NULL);
	printf("mremap dontunmap: %s\n", r == MAP_FAILED ? strerror(errno) : "ok");
	if (r != MAP_FAILED) {
		printf("moved: kept %d\n", all(r, 4 * PS, 'U'));
		printf("old range: madvise dontneed %s\n", rc(madvise(m, PS, MADV_DONTNEED)));
		printf("old range zero %d\n", all(m, 4 * PS, 0));
		munmap(r, 4 * PS);
	}
	munmap(m, 4 * PS);

	/* moves (MREMAP_FIXED) of neighbours that are not alike, of 5 MiB
	 * (over half an ordinary user's limit), and shrinking moves whose cut
	 * off part is not adopted, or whose kept part is not; a destination
	 * the kernel refuses before it looks at the mappings */
	size_t big = (size_t)5 << 20;
	unsigned char *nb = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(nb, 'N', big);
	printf("mlock: %s\n", rc(mlock(nb, big / 2)));
	printf("mlock of the next half: %s\n", rc(mlock(nb + big / 2, big / 2)));
	printf("mprotect of one page read-only: %s\n", rc(mprotect(nb + big / 2, PS, PROT_READ)));
	to = mmap(NULL, big, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	r = mremap(nb, big, big, MREMAP_MAYMOVE | MREMAP_FIXED, to + 1);
	printf("mremap move to an unaligned address: %s\n", r == MAP_FAILED ? strerror(errno) : "ok");
	r = mremap(nb, big, big + PS, MREMAP_MAYMOVE | MREMAP_FIXED, to + 1);
	printf("mremap grow to an unaligned address: %s\n", r == MAP_FAILED ? strerror(errno) : "ok");
	r = mremap(nb, big, big, MREMAP_MAYMOVE | MREMAP_FIXED, to);
	/* one mapping after another moves since Linux 6.17 (EFAULT before):
	 * the line is the kernel's answer either way */
	printf("mremap move of 5 MiB of unlike neighbours: %s\n", r == to ? "ok" : strerror(errno));
	if (r == to) {
		nb = r;
		printf("moved: kept %d, read-only page faults on write %d\n", all(nb, big, 'N'),
		       write_faults(nb + big / 2));
		printf("secret %s\n", secret(nb, big));
	}
	munmap(nb, big);
	munmap(to, big);
	shrinking_move(0);
	shrinking_move(1);

	/* a shrinking move whose kept part is two mappings: EFAULT, and
	 * what it would cut off is still there */
	m = anon(8 * PS, 0);
	memset(m, 'K', 8 * PS);
	printf("mlock: %s\n", rc(mlock(m, 8 * PS)));
	printf("mprotect of the second half read-only: %s\n", rc(mprotect(m + 4 * PS, 4 * PS, PROT_READ)));
	to = mmap(NULL, 5 * PS, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	r = mremap(m, 8 * PS, 5 * PS, MREMAP_MAYMOVE | MREMAP_FIXED, to);
	printf("mremap move shrinking to part of two mappings: %s\n", r == to ? "ok" : strerror(errno));
	printf("the end still there: %d\n", r != to && !faults(m + 7 * PS) && m[7 * PS] == 'K');
	munmap(r == to ? to : m, r == to ? 5 * PS : 8 * PS);
	munmap(to, 5 * PS);

	/* a shrinking mremap from an unmapped page: EFAULT, nothing unmapped */
	m = anon(4 * PS, 0);
	memset(m, 'H', 4 * PS);
	printf("mlock: %s\n", rc(mlock(m, 4 * PS)));
	munmap(m, PS);
	r = mremap(m, 4 * PS, 2 * PS, 0);
	printf("mremap shrink from a hole: %s\n", r == MAP_FAILED ? strerror(errno) : "ok");
	printf("the last page still there: %d\n", !faults(m + 3 * PS) && m[3 * PS] == 'H');
	munmap(m + PS, 3 * PS);

	/* mmap(MAP_FIXED | MAP_LOCKED) of 5 MiB, over half of an ordinary
	 * user's 8 MiB limit: made secret (charged once) */
	m = anon(5 << 20, 0);
	r = mmap(m, 5 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_LOCKED, -1, 0);
	printf("mmap(MAP_FIXED | MAP_LOCKED) of 5 MiB: %s\n", r == m ? "ok" : strerror(errno));
	printf("secret %s\n", secret(m, 5 << 20));
	munmap(m, 5 << 20);

	/* MADV_DOFORK over a heap block while the module cannot read its maps
	 * (no file can be opened): the block is still never shared with a
	 * child (its result is not printed: EAGAIN in heap mode) */
	b = malloc(3 * PS);
	memset(b, 'P', 3 * PS);
	pg = (unsigned char *)(((uintptr_t)b + PS - 1) & ~(uintptr_t)(PS - 1));
	struct rlimit files, none;
	getrlimit(RLIMIT_NOFILE, &files);
	none = files;
	none.rlim_cur = 0;
	setrlimit(RLIMIT_NOFILE, &none);
	madvise(pg, PS, MADV_DOFORK);
	/* and a reservation far from the heap: the kernel's answer */
	size_t huge = (size_t)3 << 30;
	unsigned char *far = mmap(NULL, huge, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	int far_rc = far == MAP_FAILED ? -2 : madvise(far, huge, MADV_DONTFORK);
	fflush(stdout);
	long child = syscall(SYS_fork); /* no handlers */
	if (child == 0) {
		*pg = 'C';
		_exit(0);
	}
	if (child > 0)
		waitpid((pid_t)child, NULL, 0);
	setrlimit(RLIMIT_NOFILE, &files);
	printf("dontfork of 3 GiB reserved, at the open-file limit: %s\n", far_rc == -2 ? "no room" : rc(far_rc));
	if (far != MAP_FAILED)
		munmap(far, huge);
	printf("after a raw fork's child wrote a heap block (DOFORK at the open-file limit): parent reads %c\n", *pg);
	free(b);

	/* a handler on a locked signal stack forks */
	alt_mem = anon(16 * PS, 0);
	memset(alt_mem, 'A', PS);
	stack_t ss = { .ss_sp = alt_mem, .ss_size = 16 * PS };
	sigaltstack(&ss, NULL);
	printf("mlock of the signal stack: %s\n", rc(mlock(alt_mem, 16 * PS)));
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_ONSTACK };
	sigaction(SIGUSR1, &sa, NULL);
	raise(SIGUSR1);
	printf("child forked on the signal stack: %s\n", alt_child);
	ss.ss_flags = SS_DISABLE;
	sigaltstack(&ss, NULL);

	/* the program's own memfd_secret memory keeps the kernel's answers
	 * (something is adopted meanwhile) */
	unsigned char *l = anon(PS, 0);
	printf("mlock: %s\n", rc(mlock(l, PS)));
	int fd = (int)syscall(SYS_memfd_secret, 0);
	if (fd >= 0 && ftruncate(fd, 2 * PS) == 0) {
		unsigned char *o = mmap(NULL, 2 * PS, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		o[0] = 'O';
		printf("own secret memory: dontfork %s\n", rc(madvise(o, PS, MADV_DONTFORK)));
		printf("own secret memory: wipeonfork %s\n", rc(madvise(o + PS, PS, MADV_WIPEONFORK)));
		printf("child reads it: %s\n", forked(child_reads, o));
		close(fd);
	}

	/* advice the kernel answers for locked pages */
	m = anon(4 * PS, 0);
	memset(m, 'D', 4 * PS);
	printf("mlock: %s\n", rc(mlock(m, 4 * PS)));
	printf("secret %s\n", secret(m, 4 * PS));
	printf("madvise dontneed_locked: %s\n", rc(madvise(m, PS, MADV_DONTNEED_LOCKED)));
	printf("zero %d, next kept %d\n", all(m, PS, 0), all(m + PS, PS, 'D'));
#ifdef MADV_COLD
	printf("madvise cold: %s\n", rc(madvise(m, 4 * PS, MADV_COLD)));
	printf("madvise pageout: %s\n", rc(madvise(m, 4 * PS, MADV_PAGEOUT)));
#endif
	munmap(m, 4 * PS);

	/* at the memory-lock limit (an ordinary user), mmap(MAP_FIXED |
	 * MAP_LOCKED) over data: either it is replaced by zeros or it fails
	 * and the data stays */
	if (geteuid() != 0) {
		unsigned char *d = anon(4 * PS, 0);
		memset(d, 'D', 4 * PS);
		/* up to the limit: 64 KiB at a time, then page by page */
		for (size_t step = 16 * PS; step >= PS; step /= 16)
			for (int i = 0; i < 4096; i++) {
				unsigned char *f = anon(step, 0);
				if (mlock(f, step)) {
					munmap(f, step);
					break;
				}
			}
		unsigned char *x = mmap(d, 4 * PS, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_LOCKED, -1, 0);
		int ok = x == MAP_FAILED ? !faults(d) && all(d, 4 * PS, 'D') : x == d && all(d, 4 * PS, 0);
		printf("mmap(MAP_FIXED | MAP_LOCKED) at the limit: data replaced or kept: %d\n", ok);
	}
	printf("done\n");
	return 0;
}

/* threads: workers map, lock, protect, unmap and free while another thread
 * forks; every child reads a locked range the main thread keeps. */
static volatile int stop_threads;
static unsigned char *kept;

static void *worker(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	long n = 0;

	while (!stop_threads) {
		size_t len = PS * (1 + rand_r(&seed) % 16);
		unsigned char *p = anon(len, 0);
		memset(p, 0x5a, len);
		if (mlock(p, len) != 0)
			return (void *)-1L;
		if (len > 2 * PS && (mprotect(p, PS, PROT_NONE) != 0 || !all(p + PS, len - PS, 0x5a)))
			return (void *)-2L;
		free(malloc(100 + len));
		if (len == PS || rand_r(&seed) % 2)
			munmap(p, len);
		else if (munmap(p + len - PS, PS) != 0 || munmap(p, len - PS) != 0)
			return (void *)-3L;
		n++;
	}
	return (void *)n;
}

static void *forker(void *arg)
{
	long n = 0;

	(void)arg;
	while (!stop_threads) {
		pid_t pid = fork();
		if (pid == 0)
			_exit(all(kept, LEN, 0x77) ? 0 : 3);
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			return (void *)-1L;
		n++;
	}
	return (void *)n;
}

static int threads(void)
{
	pthread_t t[4];
	void *r;
	int bad = 0;

	kept = anon(LEN, 0);
	memset(kept, 0x77, LEN);
	if (mlock(kept, LEN) != 0)
		return 1;
	for (long i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	pthread_create(&t[3], NULL, forker, NULL);
	sleep(3);
	stop_threads = 1;
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], &r);
		printf("%s %d: %ld\n", i < 3 ? "worker" : "forker", i, (long)r);
		bad += (long)r <= 0;
	}
	printf("secret %s\n", secret(kept, LEN));
	return bad ? 1 : 0;
}

/* ---- the test ----------------------------------------------------------- */

static char self[PATH_MAX];

/* Lines of out without the "secret " ones into res; each secret line must
 * end in want (every field "yes" or "no"). */
static void split(const char *out, char *res, size_t len, const char *want, const char *what, int nsecret)
{
	static char copy[65536];
	char *save = NULL;
	int secrets = 0;

	snprintf(copy, sizeof(copy), "%s", out);
	res[0] = '\0';
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (strncmp(l, "secret ", 7) == 0) {
			secrets++;
			const char *v = strrchr(l, ' ') + 1;
			TL_CHECK(strcmp(v, want) == 0, "%s: \"%s\": not %s", what, l, want);
			continue;
		}
		snprintf(res + strlen(res), len - strlen(res), "%s\n", l);
	}
	TL_CHECK(secrets == nsecret, "%s: %d lines about secret memory, not %d", what, secrets, nsecret);
	TL_CHECK(strstr(res, "done\n"), "%s: did not finish:\n%s", what, out);
}

static void calls_both(const char *mode, int nsecret, size_t memlock, const char *who)
{
	/* room for a report line per range still adopted at exit (the
	 * memory-lock limit filled 64 KiB at a time, as an ordinary user) */
	static char plain[65536], heap[65536], rp[65536], rh[65536];
	char what[64];

	int st = hr_run_user(self, mode, 0, NULL, memlock, plain, sizeof(plain));
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s, plain: %s\n%s", who, tl_status_str(st), plain);
	static const char *const report[] = { "SECRETMEM_REPORT=1", NULL };
	st = hr_run_user(self, mode, 1, report, memlock, heap, sizeof(heap));
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s, heap mode: %s\n%s", who, tl_status_str(st), heap);
	TL_CHECK(strlen(plain) < sizeof(plain) - 1 && strlen(heap) < sizeof(heap) - 1, "%s: the output did not fit", who);
	snprintf(what, sizeof(what), "%s, plain", who);
	split(plain, rp, sizeof(rp), "no", what, nsecret);
	snprintf(what, sizeof(what), "%s, heap mode", who);
	/* --report: a line per range still adopted at exit, and who locked it */
	TL_CHECK(strstr(heap, ", adopted ") && strstr(heap, "bytes), locked by "),
		 "%s: the report does not list the adopted ranges:\n%s", what, heap);
	char *cut;
	while ((cut = strstr(heap, "secretmem-heap: ")) != NULL) { /* not the program's */
		char *end = strchr(cut, '\n');
		memmove(cut, end ? end + 1 : cut + strlen(cut), strlen(end ? end + 1 : cut + strlen(cut)) + 1);
	}
	split(heap, rh, sizeof(rh), "yes", what, nsecret);
	if (strcmp(rp, rh) != 0) {
		printf("plain:\n%s\nheap mode:\n%s", rp, rh);
		TL_FAIL("%s, %s: heap mode changed what the calls return", mode, who);
	}
	int lines = 0;
	for (const char *c = rh; *c; c++)
		lines += *c == '\n';
	printf("%s, %s: %d result lines, the same plain and in heap mode; locked memory secret in heap mode\n", mode,
	       who, lines);
}

static unsigned char key[32];

/* Copies of the key (16-byte pieces at 0, 8 and 16) in readable memory of
 * pid; *stack: those in its [stack]. */
static int scan_pid(pid_t pid, int *stack)
{
	char path[64], line[4096];
	int total = 0;

	*stack = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	TL_CHECK(f && fd >= 0, "open maps/mem of %d", (int)pid);
	while (fgets(line, sizeof(line), f)) {
		unsigned long s, e;
		char perms[8];
		if (sscanf(line, "%lx-%lx %7s", &s, &e, perms) != 3 || perms[0] != 'r')
			continue;
		unsigned char *buf = malloc(e - s);
		TL_CHECK(buf, "malloc");
		ssize_t got = pread(fd, buf, e - s, (off_t)s);
		int h = 0;
		for (int o = 0; got > 0 && o <= 16; o += 8)
			h += tl_contains(buf, (size_t)got, key + o, 16);
		if (h) {
			line[strcspn(line, "\n")] = '\0';
			printf("  %d in %s\n", h, line);
			if (strstr(line, "[stack]"))
				*stack += h;
			else
				total += h;
		}
		free(buf);
	}
	fclose(f);
	close(fd);
	return total;
}

static int scan_run(int heap, struct sm_heap_stats *st)
{
	int kp[2], out[2], stack;
	char buf[256] = "";

	TL_CHECK(pipe(kp) == 0 && pipe(out) == 0, "pipe");
	pid_t pid = fork();
	if (pid == 0) {
		char fdarg[16];
		dup2(out[1], 1);
		dup2(kp[1], 9);
		snprintf(fdarg, sizeof(fdarg), "9");
		if (heap)
			setenv("LD_PRELOAD", hr_module(), 1);
		execl(self, self, "scan", fdarg, (char *)NULL);
		_exit(127);
	}
	close(kp[1]);
	close(out[1]);
	TL_CHECK(read(kp[0], key, 32) == 32, "no key from the program");
	ssize_t n = 0, r;
	while (!strstr(buf, "ready") && (r = read(out[0], buf + n, sizeof(buf) - 1 - (size_t)n)) > 0) {
		n += r;
		buf[n] = '\0';
	}
	TL_CHECK(strstr(buf, "ready"), "the program did not get ready: %s", buf);
	printf("%s: %s", heap ? "heap mode" : "control", buf);
	TL_CHECK(strstr(buf, heap ? "mlock yes mlock2 yes map_locked yes" : "mlock no mlock2 no map_locked no"),
		 "%s: the locked ranges are not what they should be", heap ? "heap mode" : "control");
	int hits = scan_pid(pid, &stack);
	printf("%s: %d copies of the key outside the stack, %d on the stack\n", heap ? "heap mode" : "control", hits,
	       stack);
	memset(st, 0, sizeof(*st));
	if (heap) {
		TL_CHECK(hr_stats(pid, st) == 0, "no heap figures page");
		/* secretmem status says it, beside the heap's bytes */
		char cmd[PATH_MAX + 64], line[4096], want[64];
		int seen = 0;
		snprintf(cmd, sizeof(cmd), "%s status", tl_build_path("secretmem"));
		snprintf(want, sizeof(want), "adopted %d bytes in 3 ranges", (14 + 16 + 16) * 4096);
		FILE *f = popen(cmd, "r");
		TL_CHECK(f, "popen");
		while (fgets(line, sizeof(line), f))
			seen += strstr(line, want) != NULL;
		pclose(f);
		TL_CHECK(seen == 1, "secretmem status does not say \"%s\"", want);
		printf("secretmem status: \"%s\"\n", want);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(kp[0]);
	close(out[0]);
	return hits;
}

/* How many times s occurs in out. */
static int count_in(const char *out, const char *s)
{
	int n = 0;

	for (const char *p = strstr(out, s); p; p = strstr(p + 1, s))
		n++;
	return n;
}

/*
 * refused: secret memory refuses a range the program locks, in heap mode.
 * filter: a seccomp filter installed now answers memfd_secret with ENOSYS;
 * the range is the kernel's lock.  limit (run under a 64 KiB limit, the
 * heap holding part of it): a 64 KiB range is refused by secret memory and
 * by the kernel.  over (the same limit, also run plain): a range larger
 * than the limit by itself, which the kernel refuses without the module
 * too.  cycle (1 MiB, also plain): lock 512 KiB, unlock it, lock another
 * 512 KiB: secret memory refuses it in heap mode, with the one warning
 * (secretmem-heap(7), munlock).  Each prints
 * the result; the caller checks the warnings.
 */
static int refused(const char *how)
{
	char *h = malloc(100); /* a heap, in secret memory */
	TL_CHECK(h && (hr_where(h) == 's' || (!hr_active() && (!strcmp(how, "over") || !strcmp(how, "cycle")))),
		 "the heap is not secret memory");
	if (strcmp(how, "filter") == 0) {
		TL_CHECK(tl_seccomp_block(SYS_memfd_secret, ENOSYS) == 0, "seccomp filter");
		unsigned char *m = anon(2 * PS, 0);
		/* the program's own error first: no word (secret memory was
		 * not tried; it took the one warning) */
		unsigned char *gone = anon(PS, 0);
		munmap(gone, PS);
		printf("mlock of unmapped memory under the filter: %s\n", rc(mlock(gone, PS)));
		printf("mlock under the filter: %s\n", rc(mlock(m, 2 * PS)));
		printf("locked %d, secret %s\n", locked_kb(m) == 8, secret(m, 2 * PS));
		printf("mlock again: %s\n", rc(mlock(m, 2 * PS)));
	} else if (strcmp(how, "map") == 0) {
		TL_CHECK(tl_seccomp_block(SYS_memfd_secret, ENOSYS) == 0, "seccomp filter");
		unsigned char *m = mmap(NULL, 2 * PS, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_LOCKED,
					-1, 0);
		printf("MAP_LOCKED under the filter: %s\n", m == MAP_FAILED ? strerror(errno) : "ok");
		printf("locked %d, secret %s\n", m != MAP_FAILED && vm_locked(m) == 1, secret(m, 2 * PS));
	} else if (strcmp(how, "errno") == 0) {
		/* the warning cannot be written (no standard error): the
		 * program's mlock still leaves errno as it was */
		TL_CHECK(tl_seccomp_block(SYS_memfd_secret, ENOSYS) == 0, "seccomp filter");
		unsigned char *m = anon(2 * PS, 0);
		int e2 = dup(2);
		close(2);
		errno = 0;
		int r = mlock(m, 2 * PS);
		int e = errno;
		dup2(e2, 2);
		printf("mlock with standard error closed: %d, errno %d\n", r, e);
	} else if (strcmp(how, "cycle") == 0) {
		/* lock, unlock, lock as much elsewhere (1 MiB limit): the
		 * unlocked range stays secret memory, charged */
		unsigned char *a = anon(128 * PS, 0), *b = anon(128 * PS, 0);
		memset(a, 0x61, 128 * PS);
		printf("mlock a: %s\n", rc(mlock(a, 128 * PS)));
		printf("munlock a: %s\n", rc(munlock(a, 128 * PS)));
		printf("mlock b: %s\n", rc(mlock(b, 128 * PS)));
		printf("a kept %d, b locked %d\n", all(a, 128 * PS, 0x61), locked_kb(b) > 0);
	} else if (strcmp(how, "over") == 0) {
		/* more than the limit by itself: the kernel refuses it without
		 * the module too, and the module says nothing */
		unsigned char *w = anon(34 * PS, 0);
		printf("mlock over the limit alone: %s\n", rc(mlock(w, 34 * PS)));
		printf("locked %d\n", vm_locked(w));
	} else {
		unsigned char *m = anon(16 * PS, 0);
		printf("mlock at the limit: %s\n", rc(mlock(m, 16 * PS)));
		printf("locked %d, secret %s\n", locked_kb(m) > 0, secret(m, 16 * PS));
		/* [32 pages][PROT_NONE][1 page] over the limit: the kernel
		 * checks the whole range first and locks nothing (the walk went
		 * on past the first part's ENOMEM, taking it for the PROT_NONE
		 * page's) */
		unsigned char *w = anon(34 * PS, 0);
		mprotect(w + 32 * PS, PS, PROT_NONE);
		printf("mlock over the limit and a PROT_NONE page: %s\n", rc(mlock(w, 34 * PS)));
		printf("after it: PROT_NONE page locked %d, last page locked %d, secret %s\n", vm_locked(w + 32 * PS),
		       vm_locked(w + 33 * PS), secret(w + 33 * PS, PS));
	}
	free(h);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && strncmp(argv[1], "refused-", 8) == 0)
		return refused(argv[1] + 8);
	if (argc == 3 && strcmp(argv[1], "scan") == 0)
		return scan(atoi(argv[2]));
	if (argc == 2 && strcmp(argv[1], "calls") == 0)
		return calls();
	if (argc == 2 && strcmp(argv[1], "edges") == 0)
		return edges();
	if (argc == 2 && strcmp(argv[1], "threads") == 0)
		return threads();
	tl_need_secretmem();
	hr_module();
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	TL_CHECK(n > 0, "readlink");
	self[n] = '\0';
	const char *me = geteuid() == 0 ? "root" : "this user";
	calls_both("calls", 7, 0, me);
	calls_both("edges", 11, 0, me);
	if (geteuid() == 0) {
		calls_both("calls", 7, (size_t)8192 << 10, "uid 65534, ulimit -l 8192");
		calls_both("edges", 11, (size_t)8192 << 10, "uid 65534, ulimit -l 8192");
	}
	static char out[4096];
	/* secret memory refuses a locked range: the kernel's answer, and the
	 * one warning that says so (there was none) */
	int ws = hr_run_user(self, "refused-filter", 1, NULL, 0, out, sizeof(out));
	printf("%s", out);
	TL_CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0 && strstr(out, "mlock under the filter: 0\n") &&
			 strstr(out, "mlock of unmapped memory under the filter: Cannot allocate memory") &&
			 strstr(out, "locked 1, secret no") && strstr(out, "mlock again: 0\n"),
		 "heap mode, a filter refusing memfd_secret: the range is not the kernel's lock: %s", tl_status_str(ws));
	TL_CHECK(count_in(out, "secretmem-heap: warning: a range the program locked stays in ordinary (locked) memory: "
			       "memfd_secret(2) is not usable here") == 1 && count_in(out, "warning") == 1,
		 "heap mode, a filter refusing memfd_secret: want one warning");
	/* (standard output is line-buffered: the order is the calls') */
	TL_CHECK(strstr(out, "secretmem-heap: warning") > strstr(out, "mlock of unmapped memory under the filter"),
		 "heap mode, a filter refusing memfd_secret: the warning came with the program's own failed mlock");
	ws = hr_run_user(self, "refused-map", 1, NULL, 0, out, sizeof(out));
	printf("%s", out);
	TL_CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0 && strstr(out, "MAP_LOCKED under the filter: ok") &&
			 strstr(out, "locked 1, secret no") &&
			 count_in(out, "secretmem-heap: warning: a range the program locked stays in ordinary (locked) "
				       "memory: memfd_secret(2) is not usable here") == 1 &&
			 count_in(out, "warning") == 1,
		 "heap mode, MAP_LOCKED under a filter refusing memfd_secret: want the kernel's lock and one warning: %s",
		 tl_status_str(ws));
	ws = hr_run_user(self, "refused-errno", 1, NULL, 0, out, sizeof(out));
	printf("%s", out);
	TL_CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0 && strstr(out, "mlock with standard error closed: 0, errno 0\n"),
		 "heap mode: the unwritable warning changed errno: %s", tl_status_str(ws));
	if (geteuid() == 0) {
		ws = hr_run_user(self, "refused-limit", 1, NULL, 64 << 10, out, sizeof(out));
		printf("%s", out);
		TL_CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0 && strstr(out, "mlock at the limit: ") &&
				 !strstr(out, "mlock at the limit: 0\n") && strstr(out, "locked 0, secret no") &&
				 strstr(out, "mlock over the limit and a PROT_NONE page: Cannot allocate memory") &&
				 strstr(out, "after it: PROT_NONE page locked 0, last page locked 0, secret no"),
			 "heap mode, at the limit: %s", tl_status_str(ws));
		TL_CHECK(count_in(out, "secretmem-heap: warning: a range the program locked is neither secret nor locked: "
				       "the memory-lock limit refused it, and the heap's own secret memory counts") == 1 &&
				 count_in(out, "warning") == 1,
			 "heap mode, a lock refused at the limit by secret memory and the kernel: want one warning");
		for (int heap = 0; heap < 2; heap++) {
			ws = hr_run_user(self, "refused-cycle", heap, NULL, 1 << 20, out, sizeof(out));
			printf("%s", out);
			/* heap mode: secret memory refuses b, and says so once;
			 * the kernel then locks it, or refuses it too */
			TL_CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0 && strstr(out, "mlock a: 0\nmunlock a: 0\n") &&
					 (heap ? (strstr(out, "mlock b: 0\na kept 1, b locked 1\n") ||
						  strstr(out, "mlock b: Cannot allocate memory\na kept 1, b locked 0\n")) &&
							 count_in(out, "secretmem-heap: warning: a range the program locked") == 1
					       : strstr(out, "mlock b: 0\na kept 1, b locked 1\n") && !strstr(out, "warning")),
				 "%s, lock, unlock, lock as much elsewhere under a 1 MiB limit", heap ? "heap" : "plain");
			ws = hr_run_user(self, "refused-over", heap, NULL, 64 << 10, out, sizeof(out));
			printf("%s", out);
			TL_CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0 &&
					 strstr(out, "mlock over the limit alone: Cannot allocate memory\nlocked 0\n") &&
					 !strstr(out, "warning"),
				 "%s, a lock over the limit by itself: the kernel's ENOMEM and no warning", heap ? "heap" : "plain");
		}
	}
	ws = hr_run(self, "threads", 1, NULL, out, sizeof(out));
	printf("%s", out);
	TL_CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0 && strstr(out, "secret yes"),
		 "heap mode: locking, unmapping and forking in threads at once: %s", tl_status_str(ws));
	if (geteuid() != 0) {
		printf("the scan skipped: needs root (reads another process through /proc/PID/mem)\n");
		return TL_PASS;
	}
	struct sm_heap_stats st;
	TL_CHECK(scan_run(0, &st) >= 3, "control: the key was not found in all three ranges (the scan is blind)");
	TL_CHECK(scan_run(1, &st) == 0, "heap mode: the key was found outside the stack");
	printf("heap mode: %llu adopted ranges, %llu bytes\n", (unsigned long long)st.adopted_ranges,
	       (unsigned long long)st.adopted_bytes);
	TL_CHECK(st.adopted_ranges == 3 && st.adopted_bytes == (14 + 16 + 16) * 4096,
		 "the figures page does not count the three ranges");
	printf("pass\n");
	return TL_PASS;
}
