/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_core_sandbox_lies - seccomp filters that answer for the kernel, and
 * the program's signals, meet the library's memfd_secret calls:
 *  - memfd_secret answered with ERRNO(0) ("descriptor 0"), before and
 *    after first use, while descriptor 0 is a file of the program's: the
 *    file is neither written, truncated nor closed, no secret reaches it
 *    (regions, small and large blocks, a fork's copy), the memory is
 *    fallback memory and says so (secretmem_supported() EPERM, the
 *    backend, one warning after first use), and secretmem_memfd() answers
 *    -EPERM;
 *  - ftruncate answered with ERRNO(0) after first use: a region's creation
 *    fails with ENOMEM or gives memory that can be written (no SIGBUS);
 *  - openat and fstatfs answered with ERRNO(0) after first use: the
 *    program's input at descriptor 0 is neither read nor closed;
 *  - mmap answered with ERRNO(0) (and memfd_secret refused): ENOMEM, page
 *    0 is not used;
 *  - clone refused with EPERM in a process with a thread: EPERM, the
 *    fallback with its warning; with EAGAIN: ENOMEM, no fallback;
 *  - a filter that refuses memfd_secret installed after secretmem_supported()
 *    said 0, but before any secret memory was made: one warning;
 *  - a filter that refuses both memfd_secret and openat after
 *    secretmem_supported() said 0: it says EPERM now;
 *  - a filter that refuses wait4, or answers it ERRNO(0): at most one
 *    child of the library's is left unreaped, however many creations
 *    follow;
 *  - a filter that traps clone or wait4, answered by the program's SIGSYS
 *    handler (x86-64): the process lives;
 *  - SIGUSR1 sent to the process group again and again while a process
 *    with a thread (so the calls go to the library's child) creates
 *    regions: the program's handler runs, and never in the library's child.
 * The filters are raw BPF programs (tl_seccomp_action).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

#ifndef SYS_memfd_secret
#define SYS_memfd_secret 447
#endif

#define KEY "SANDBOX-LIES-KEY-MATERIAL"

static char victim[64];

/* Descriptor 0: an empty file of the program's. */
static void victim_on_stdin(void)
{
	snprintf(victim, sizeof(victim), "/tmp/t_core_sandbox_lies.%d", (int)getpid());
	int fd = open(victim, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	TL_CHECK(fd >= 0, "open %s: %s", victim, strerror(errno));
	TL_CHECK(dup2(fd, 0) == 0, "dup2: %s", strerror(errno));
	close(fd);
}

/* The file at descriptor 0 is still open, still the victim, still empty. */
static void victim_untouched(const char *when)
{
	struct stat a, b;

	TL_CHECK(fcntl(0, F_GETFD) >= 0, "%s: descriptor 0 was closed", when);
	TL_CHECK(fstat(0, &a) == 0 && stat(victim, &b) == 0 && a.st_ino == b.st_ino, "%s: descriptor 0 changed",
		 when);
	TL_CHECK(b.st_size == 0, "%s: the program's file at descriptor 0 has %lld bytes now", when,
		 (long long)b.st_size);
}

static void write_key(void *p)
{
	memcpy(p, KEY, sizeof(KEY));
}

static int memfd_zero(void *arg)
{
	int after_use = arg != NULL;

	if (after_use) {
		tl_need_secretmem();
	} else {
		/* nothing of the library's before the filter, not even a probe */
		long fd = syscall(SYS_memfd_secret, O_CLOEXEC);
		if (fd < 0)
			tl_skip_kernel("no memfd_secret here");
		close((int)fd);
	}
	victim_on_stdin();
	void *early = NULL;
	if (after_use) {
		early = secretmem_malloc(64);
		TL_CHECK(early && secretmem_supported() == 0, "first use");
	}
	TL_CHECK(tl_seccomp_action(SYS_memfd_secret, SECCOMP_RET_ERRNO | 0) == 0, "filter: %s", strerror(errno));

	struct secretmem_region *r = secretmem_region_create(8192, 0);
	TL_CHECK(r, "region: %s", strerror(errno));
	write_key(secretmem_region_data(r));
	TL_CHECK(secretmem_region_backend(r) == SECRETMEM_BACKEND_FALLBACK, "the region's backend is %s",
		 secretmem_backend_name(secretmem_region_backend(r)));
	void *small[2000];
	for (int i = 0; i < 2000; i++) {
		small[i] = secretmem_malloc(512);
		TL_CHECK(small[i], "block %d: %s", i, strerror(errno));
		write_key(small[i]);
	}
	void *large = secretmem_malloc(300 << 10);
	TL_CHECK(large, "large block: %s", strerror(errno));
	write_key(large);
	victim_untouched("after the creations");
	TL_CHECK(secretmem_supported() == -EPERM, "secretmem_supported() = %d, want -EPERM", secretmem_supported());
	TL_CHECK(secretmem_default_backend() == SECRETMEM_BACKEND_FALLBACK, "default backend %s",
		 secretmem_backend_name(secretmem_default_backend()));
	TL_CHECK(secretmem_memfd(0) == -EPERM, "secretmem_memfd() = %d, want -EPERM", secretmem_memfd(0));

	/* a fork: its copies stay out of the file too */
	fflush(NULL);
	pid_t pid = fork();
	TL_CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) /* after first use its copy is refused: its secrets dropped */
		tl_child_exit(0);
	int status;
	TL_CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	TL_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "forked child: %s", tl_status_str(status));
	victim_untouched("after a fork");
	TL_CHECK(!tl_file_contains(victim, KEY, sizeof(KEY) - 1), "the key is in the program's file");
	for (int i = 0; i < 2000; i++)
		secretmem_free(small[i]);
	secretmem_free(large);
	secretmem_free(early);
	secretmem_region_destroy(r);
	unlink(victim);
	printf("memfd_secret ERRNO(0) %s first use: the program's file untouched, fallback memory\n",
	       after_use ? "after" : "before");
	return 0;
}

static int truncate_zero(void *arg)
{
	(void)arg;
	tl_need_secretmem();
	struct secretmem_region *r0 = secretmem_region_create(4096, 0);
	TL_CHECK(r0, "first use");
	TL_CHECK(tl_seccomp_action(SYS_ftruncate, SECCOMP_RET_ERRNO | 0) == 0, "filter: %s", strerror(errno));
	errno = 0;
	struct secretmem_region *r = secretmem_region_create(65536, 0);
	TL_CHECK(r || errno == ENOMEM, "region: NULL with %s, want ENOMEM", strerror(errno));
	if (r) {
		memset(secretmem_region_data(r), 1, 65536); /* SIGBUS here was the defect */
		secretmem_region_destroy(r);
	}
	secretmem_region_destroy(r0);
	printf("ftruncate ERRNO(0): %s, no SIGBUS\n", r ? "a region that can be written" : "ENOMEM");
	return 0;
}

static void *idle(void *arg)
{
	sigset_t all;

	(void)arg;
	sigfillset(&all); /* the process's signals go to the main thread */
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (;;)
		pause();
	return NULL;
}

/* A filter that answers mmap with ERRNO(0) ("address 0") after first use,
 * and refuses memfd_secret (the fallback's mappings, which nothing else
 * checks): a region's creation fails (ENOMEM), it does not use page 0. */
static int mmap_zero(void *arg)
{
	(void)arg;
#ifdef TL_TSAN
	/* ThreadSanitizer's mmap interceptor aborts on address 0 itself */
	printf("mmap ERRNO(0): left out under ThreadSanitizer (its mmap interceptor aborts on address 0)\n");
	return 0;
#endif
	tl_need_secretmem();
	struct secretmem_region *r0 = secretmem_region_create(4096, 0);
	TL_CHECK(r0, "first use");
	TL_CHECK(tl_seccomp_action(SYS_memfd_secret, SECCOMP_RET_ERRNO | EPERM) == 0 &&
		 tl_seccomp_action(SYS_mmap, SECCOMP_RET_ERRNO | 0) == 0, "filter: %s", strerror(errno));
	errno = 0;
	struct secretmem_region *r = secretmem_region_create(8192, 0);
	int err = errno;
	if (r)
		memset(secretmem_region_data(r), 1, 8192); /* at page 0: SIGSEGV */
	TL_CHECK(!r && err == ENOMEM, "region under mmap ERRNO(0): %p (%s), want NULL with ENOMEM", (void *)r,
		 strerror(err));
	printf("mmap ERRNO(0): ENOMEM, page 0 not used\n");
	return 0;
}

/* clone refused with an error (EPERM; or EAGAIN) after first use, in a
 * process with a thread (the calls need the child): EPERM, new memory in
 * the fallback (the warning: main); EAGAIN: the creation fails, nothing
 * falls back. */
static int clone_refused(void *arg)
{
	int err = arg ? EAGAIN : EPERM;
	pthread_t t;

	tl_need_secretmem();
	TL_CHECK(pthread_create(&t, NULL, idle, NULL) == 0, "pthread_create");
	struct secretmem_region *r0 = secretmem_region_create(4096, 0);
	TL_CHECK(r0, "first use");
	TL_CHECK(tl_seccomp_action(SYS_clone, SECCOMP_RET_ERRNO | (unsigned)err) == 0, "filter: %s", strerror(errno));
	errno = 0;
	struct secretmem_region *r = secretmem_region_create(8192, 0);
	int e = errno;
	if (err == EPERM) {
		TL_CHECK(r && secretmem_region_backend(r) == SECRETMEM_BACKEND_FALLBACK,
			 "clone EPERM: region %p (%s), want one in the fallback", (void *)r, strerror(e));
		TL_CHECK(secretmem_supported() == -EPERM, "secretmem_supported() = %d, want -EPERM",
			 secretmem_supported());
	} else {
		TL_CHECK(!r && e == ENOMEM, "clone EAGAIN: region %p (%s), want NULL with ENOMEM", (void *)r,
			 strerror(e));
		TL_CHECK(secretmem_default_backend() == SECRETMEM_BACKEND_SECRET, "default backend %s, want secret",
			 secretmem_backend_name(secretmem_default_backend()));
	}
	printf("clone refused with %s: %s\n", err == EPERM ? "EPERM" : "EAGAIN",
	       err == EPERM ? "EPERM, the fallback" : "ENOMEM, no fallback");
	return 0;
}

/* A filter that answers openat and fstatfs with ERRNO(0), after first
 * use: descriptor 0 (a pipe with the program's input) is neither read nor
 * closed by the library's reads of /proc. */
static int open_fstatfs_zero(void *arg)
{
	static const char input[] = "PROGRAM-INPUT-LINE\n";
	char got[64];
	int p[2];

	(void)arg;
	tl_need_secretmem();
	void *first = secretmem_malloc(64);
	TL_CHECK(first, "first use");
	(void)secretmem_supported();
	TL_CHECK(pipe(p) == 0 && dup2(p[0], 0) == 0, "pipe: %s", strerror(errno));
	TL_CHECK(write(p[1], input, sizeof(input) - 1) == (ssize_t)sizeof(input) - 1, "write");
	close(p[0]);
	close(p[1]);
	TL_CHECK(tl_seccomp_action(SYS_openat, SECCOMP_RET_ERRNO | 0) == 0 &&
		 tl_seccomp_action(SYS_fstatfs, SECCOMP_RET_ERRNO | 0) == 0, "filter: %s", strerror(errno));
	/* the same calls as before the filter: a read of /proc/self/status
	 * left procfs's answer where fstatfs's buffer lies */
	(void)secretmem_supported();
	(void)secretmem_supported();
	struct secretmem_region *r = secretmem_region_create(4096, 0);
	TL_CHECK(r, "region: %s", strerror(errno));
	void *large = secretmem_malloc(300 << 10);
	TL_CHECK(large, "large block: %s", strerror(errno));
	ssize_t n = read(0, got, sizeof(got));
	TL_CHECK(n == (ssize_t)sizeof(input) - 1 && memcmp(got, input, (size_t)n) == 0,
		 "the program's input at descriptor 0: read %zd bytes (%s), want its %zu", n,
		 n < 0 ? strerror(errno) : "", sizeof(input) - 1);
	secretmem_free(large);
	secretmem_region_destroy(r);
	secretmem_free(first);
	printf("openat and fstatfs ERRNO(0): the program's input at descriptor 0 left alone\n");
	return 0;
}

/* No free descriptor after secretmem_supported() said 0: it still says 0
 * (an unreadable status file for want of one is no new sandbox). */
static int probe_then_nofd(void *arg)
{
	(void)arg;
	tl_need_secretmem();
	while (dup(2) >= 0)
		;
	TL_CHECK(errno == EMFILE, "dup: %s", strerror(errno));
	int rc = secretmem_supported();
	TL_CHECK(rc == 0, "secretmem_supported() = %d with no free descriptor, want 0", rc);
	printf("no free descriptor after the probe: secretmem_supported() still says 0\n");
	return 0;
}

static int probe_then_filter(void *arg)
{
	int openat_too = arg != NULL;

	tl_need_secretmem(); /* secretmem_supported() == 0, and nothing made */
	TL_CHECK(tl_seccomp_action(SYS_memfd_secret, SECCOMP_RET_ERRNO | EPERM) == 0, "filter: %s",
		 strerror(errno));
	if (openat_too) {
		TL_CHECK(tl_seccomp_action(SYS_openat, SECCOMP_RET_ERRNO | EPERM) == 0, "filter: %s",
			 strerror(errno));
		TL_CHECK(secretmem_supported() == -EPERM, "secretmem_supported() = %d after the filters, want -EPERM",
			 secretmem_supported());
		printf("memfd_secret and openat refused after the probe: secretmem_supported() says EPERM\n");
		return 0;
	}
	void *p = secretmem_malloc(64);
	TL_CHECK(p, "malloc: %s", strerror(errno));
	secretmem_free(p);
	printf("memfd_secret refused after the probe, before first use: a block in fallback memory\n");
	return 0;
}


/* The text of a small file, NUL-terminated; 0 if it cannot be read. */
static int read_text(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");

	if (!f)
		return 0;
	size_t len = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[len] = '\0';
	return 1;
}

/* This process's children that are zombies (every thread's). */
static int zombies(void)
{
	char path[512], buf[4096], st[256];
	int n = 0;
	DIR *d = opendir("/proc/self/task");

	TL_CHECK(d, "opendir /proc/self/task");
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/children", e->d_name);
		if (!read_text(path, buf, sizeof(buf)))
			continue;
		for (char *s = strtok(buf, " \n"); s; s = strtok(NULL, " \n")) {
			snprintf(path, sizeof(path), "/proc/%s/stat", s);
			if (!read_text(path, st, sizeof(st)))
				continue;
			char *close_paren = strrchr(st, ')');
			if (close_paren && close_paren[1] == ' ' && close_paren[2] == 'Z')
				n++;
		}
	}
	closedir(d);
	return n;
}

static int wait4_refused(void *arg)
{
	int err = arg ? 0 : EPERM; /* ERRNO(0): a made-up success */
	pthread_t t;

	tl_need_secretmem();
	/* a thread: the library's calls go to its child */
	TL_CHECK(pthread_create(&t, NULL, idle, NULL) == 0, "pthread_create");
	TL_CHECK(tl_seccomp_action(SYS_wait4, SECCOMP_RET_ERRNO | (unsigned)err) == 0, "filter: %s", strerror(errno));
	for (int i = 0; i < 30; i++) {
		struct secretmem_region *r = secretmem_region_create(4096, 0);
		TL_CHECK(r, "region %d: %s", i, strerror(errno));
		secretmem_region_destroy(r);
	}
	int z = zombies();
	TL_CHECK(z <= 1, "%d of the library's children left unreaped after 30 creations", z);
	printf("wait4 %s: %d child unreaped after 30 creations\n", err ? "refused" : "ERRNO(0)", z);
	return 0;
}

#if defined(__x86_64__)
#include <ucontext.h>
static volatile sig_atomic_t trapped;

/* A sandbox's answer to a trapped call: ENOSYS, in the interrupted
 * thread's return register. */
static void answer_enosys(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	(void)si;
	trapped++;
	((ucontext_t *)ctx)->uc_mcontext.gregs[REG_RAX] = -ENOSYS;
}

/* clone or wait4 trapped, the program's SIGSYS handler answering: the
 * process lives, its memory is fallback memory. */
static int trap_answered(void *arg)
{
	long nr = arg ? SYS_wait4 : SYS_clone;
	struct sigaction sa;
	pthread_t t;

	tl_need_secretmem();
	TL_CHECK(pthread_create(&t, NULL, idle, NULL) == 0, "pthread_create");
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = answer_enosys;
	sa.sa_flags = SA_SIGINFO;
	TL_CHECK(sigaction(SIGSYS, &sa, NULL) == 0, "sigaction");
	TL_CHECK(tl_seccomp_action(nr, SECCOMP_RET_TRAP) == 0, "filter: %s", strerror(errno));
	struct secretmem_region *r = secretmem_region_create(4096, 0);
	TL_CHECK(r, "region: %s", strerror(errno));
	secretmem_region_destroy(r);
	TL_CHECK(trapped > 0, "the handler never ran");
	printf("%s trapped, the program's handler answering: the process lives\n", arg ? "wait4" : "clone");
	return 0;
}
#endif

static volatile pid_t main_pid;
static volatile sig_atomic_t handled, handled_elsewhere;

static void on_usr1(int sig)
{
	(void)sig;
	handled++;
	if ((pid_t)syscall(SYS_getpid) != main_pid)
		handled_elsewhere++;
}

static int signals(void *arg)
{
	(void)arg;
	pthread_t t;
	struct sigaction sa;

	tl_need_secretmem();
	TL_CHECK(setpgid(0, 0) == 0, "setpgid: %s", strerror(errno));
	main_pid = getpid();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	TL_CHECK(sigaction(SIGUSR1, &sa, NULL) == 0, "sigaction");
	TL_CHECK(pthread_create(&t, NULL, idle, NULL) == 0, "pthread_create");
	pid_t sender = fork();
	TL_CHECK(sender >= 0, "fork");
	if (sender == 0) {
		signal(SIGUSR1, SIG_IGN);
		for (;;) {
			kill(-main_pid, SIGUSR1);
			usleep(50);
		}
	}
	for (int i = 0; i < 1500; i++) {
		struct secretmem_region *r = secretmem_region_create(4096, 0);
		TL_CHECK(r, "region %d: %s", i, strerror(errno));
		secretmem_region_destroy(r);
	}
	kill(sender, SIGKILL);
	waitpid(sender, NULL, 0);
	TL_CHECK(handled > 0, "the handler never ran: the test saw no signal");
	TL_CHECK(handled_elsewhere == 0, "the program's handler ran %d of %d times in the library's child",
		 (int)handled_elsewhere, (int)handled);
	printf("signals to the process group: the handler ran %d times, never in the library's child\n",
	       (int)handled);
	return 0;
}

int main(void)
{
	static const struct {
		const char *name;
		int (*fn)(void *);
		void *arg;
	} cases[] = {
		{ "memfd_secret ERRNO(0) before first use", memfd_zero, NULL },
		{ "memfd_secret ERRNO(0) after first use", memfd_zero, "" },
		{ "ftruncate ERRNO(0)", truncate_zero, NULL },
		{ "openat and fstatfs ERRNO(0)", open_fstatfs_zero, NULL },
		{ "mmap ERRNO(0)", mmap_zero, NULL },
		{ "clone refused (EPERM)", clone_refused, NULL },
		{ "clone refused (EAGAIN)", clone_refused, "" },
		{ "no free descriptor after the probe", probe_then_nofd, NULL },
		{ "memfd_secret refused after the probe", probe_then_filter, NULL },
		{ "memfd_secret and openat refused after the probe", probe_then_filter, "" },
		{ "wait4 refused", wait4_refused, NULL },
		{ "wait4 ERRNO(0)", wait4_refused, "" },
#if defined(__x86_64__)
		{ "clone trapped, answered", trap_answered, NULL },
		{ "wait4 trapped, answered", trap_answered, "" },
#endif
		{ "signals to the process group", signals, NULL },
	};
	static char out[65536];

	if (tl_under_valgrind())
		tl_skip("valgrind answers memfd_secret(2) itself; a filter's action does not reach it");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int st = tl_run_child(cases[i].fn, cases[i].arg, out, sizeof(out));
		if (WIFEXITED(st) && WEXITSTATUS(st) == TL_SKIP) {
			fputs(out, stdout);
			tl_skip_kernel("no memfd_secret here");
		}
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "case %s: %s\n%s", cases[i].name, tl_status_str(st),
			 out);
		const char *w = "secretmem: warning: secret memory became unavailable after first use";
		int warned = strstr(out, w) != NULL;
		/* one warning once secret memory worked (or the probe said so)
		 * and new memory goes to the fallback; none if it never worked */
		int want = cases[i].fn == probe_then_filter ? cases[i].arg == NULL
			   : cases[i].fn == memfd_zero ? cases[i].arg != NULL
			   : cases[i].fn == clone_refused ? cases[i].arg == NULL : -1;
		TL_CHECK(want < 0 || warned == want, "case %s: the fallback warning %s, want it %s:\n%s", cases[i].name,
			 warned ? "printed" : "missing", want ? "printed" : "not printed", out);
		fputs(out, stdout);
	}
	return TL_PASS;
}
