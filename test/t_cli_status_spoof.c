/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_cli_status_spoof.c - what any user's process can make `secretmem status`
 * say, and must not:
 *   - a mapping of an ordinary file whose path is longer than the tool's
 *     line buffer (4096 bytes), with a fake smaps header
 *     ("START-END rw-s 0 DEV INODE /secretmem (deleted)", DEV the secretmem
 *     device) where the buffer splits the line: the process is not listed
 *     (it was, as a holder of secret memory);
 *   - the same file mapped right after a real secretmem mapping: the holder
 *     is listed with that one mapping and its bytes only, not the file's
 *     (the Size lines after the long line are not the secret mapping's);
 *   - escape sequences in the texts a process writes itself reach the
 *     terminal escaped (\xNN), as its name does: SECRETMEM_OPENSSL of its
 *     environment, shown as the preload module's mode, and the reason of a
 *     heap module figures page (an inactive module's), shown on the "heap:"
 *     line of a holder and on the "heap mode without secret memory:" line
 *     of a process that holds none.  They reached it raw.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include "secretmem.h"
#include "cli_run.h"
#include "../heap/heapstats.h"

/* `secretmem status` reads smaps lines into 4096 bytes: fgets() returns
 * 4095 characters of a longer line, and the rest as the next line. */
#define SPLIT_AT 4095
#define FILE_PAGES 16

/* escape sequences that clear the screen, set a colour, set the title */
#define ESC_MODE "\033[31mX\033[0m"
#define ESC_REASON "x\033[2J\033]0;title\007\033[0m"

static char base[64];
static char long_path[4200];
static pid_t kids[4];

static void cleanup(void)
{
	char cmd[128];
	int st;

	for (size_t i = 0; i < sizeof(kids) / sizeof(kids[0]); i++)
		if (kids[i] > 0) {
			kill(kids[i], SIGKILL);
			waitpid(kids[i], &st, 0);
			kids[i] = 0;
		}
	if (base[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
		if (system(cmd) != 0)
			printf("note: could not remove %s\n", base);
		base[0] = '\0';
	}
}

/* The column where the kernel starts the path in a maps/smaps header. */
static size_t name_column(void)
{
	char line[4096];
	size_t col = 0;
	FILE *f = fopen("/proc/self/maps", "re");

	TL_CHECK(f != NULL, "/proc/self/maps: %s", strerror(errno));
	while (!col && fgets(line, sizeof(line), f)) {
		char *slash = strchr(line, '/');
		if (slash)
			col = (size_t)(slash - line);
	}
	fclose(f);
	TL_CHECK(col > 0 && col < 200, "no path in /proc/self/maps");
	return col;
}

/*
 * Makes base/d.../FAKE/secretmem (deleted), an ordinary file, such that
 * FAKE, a header naming the secretmem device, begins where the tool's
 * buffer splits the file's smaps line.
 */
static void make_long_file(void)
{
	size_t col = name_column(), target = SPLIT_AT - col, len;
	char fake[128];
	struct stat st;
	int fd = secretmem_memfd(O_CLOEXEC);

	TL_CHECK(fd >= 0 && fstat(fd, &st) == 0, "secretmem_memfd: %s", strerror(errno));
	close(fd);
	snprintf(fake, sizeof(fake), "7f0000000000-7f0000100000 rw-s 00000000 %02x:%02x 1 ",
		 major(st.st_dev), minor(st.st_dev));
	snprintf(base, sizeof(base), "/tmp/t_cli_status_spoof-XXXXXX");
	TL_CHECK(mkdtemp(base) != NULL, "mkdtemp: %s", strerror(errno));
	snprintf(long_path, sizeof(long_path), "%s", base);
	/* directories up to target - 1, so that FAKE follows at target (no
	 * component longer than NAME_MAX, none left one character short) */
	while ((len = strlen(long_path)) < target - 1) {
		size_t r = target - 1 - len, n = r <= 201 ? r - 1 : (r - 3 < 200 ? r - 3 : 200);
		memset(long_path + len, 'd', n + 1);
		long_path[len] = '/';
		long_path[len + 1 + n] = '\0';
		TL_CHECK(mkdir(long_path, 0755) == 0, "mkdir (%zu bytes): %s", strlen(long_path), strerror(errno));
	}
	len = strlen(long_path);
	snprintf(long_path + len, sizeof(long_path) - len, "/%s", fake);
	TL_CHECK(mkdir(long_path, 0755) == 0, "mkdir: %s", strerror(errno));
	len = strlen(long_path);
	snprintf(long_path + len, sizeof(long_path) - len, "/secretmem (deleted)");
	TL_CHECK(strstr(long_path, fake) == long_path + target, "the fake header is not at the split");
	fd = open(long_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	TL_CHECK(fd >= 0 && ftruncate(fd, FILE_PAGES * sysconf(_SC_PAGESIZE)) == 0, "the long file: %s",
		 strerror(errno));
	close(fd);
}

/* A process that maps the long file (after a secret page, if secret). */
static pid_t start(int secret)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), fsize = FILE_PAGES * page;
	int p[2];
	char c;

	TL_CHECK(pipe(p) == 0, "pipe");
	fflush(NULL);
	pid_t pid = fork();
	TL_CHECK(pid >= 0, "fork");
	if (pid == 0) {
		int fd = open(long_path, O_RDWR | O_CLOEXEC);
		/* one reservation, so that the secret page comes right before
		 * the file in smaps */
		char *at = mmap(NULL, page + fsize, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		c = 'x';
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (fd >= 0 && at != MAP_FAILED &&
		    mmap(at + page, fsize, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) != MAP_FAILED) {
			memset(at + page, 'x', fsize);
			c = 'r';
		}
		if (c == 'r' && secret) {
			int sfd = secretmem_memfd(O_CLOEXEC);
			c = 'x';
			if (sfd >= 0 && ftruncate(sfd, (off_t)page) == 0 &&
			    mmap(at, page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, sfd, 0) != MAP_FAILED) {
				memset(at, 's', page);
				close(sfd);
				c = 'r';
			}
		}
		if (write(p[1], &c, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	TL_CHECK(read(p[0], &c, 1) == 1 && c == 'r', "the %s process could not map its memory",
		 secret ? "mixed" : "spoofing");
	close(p[0]);
	return pid;
}

/*
 * "escape" mode, the program of a process started with ESC_MODE as its
 * SECRETMEM_OPENSSL: publishes a heap module figures page with ESC_REASON,
 * maps the preload module (a file of that name is all status looks for)
 * and, if secret is "1", holds a secretmem fd.
 */
static int escape(const char *preload, const char *secret)
{
	int fd = memfd_create(SM_HEAP_STATS_NAME, MFD_CLOEXEC), pfd = open(preload, O_RDONLY | O_CLOEXEC);
	struct sm_heap_stats *s;
	char c = 'x';

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (fd >= 0 && pfd >= 0 && ftruncate(fd, sysconf(_SC_PAGESIZE)) == 0 &&
	    (s = mmap(NULL, sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) != MAP_FAILED &&
	    mmap(NULL, sysconf(_SC_PAGESIZE), PROT_READ, MAP_PRIVATE, pfd, 0) != MAP_FAILED) {
		s->magic = SM_HEAP_STATS_MAGIC;
		s->size = sizeof(*s);
		s->state = SM_HEAP_INACTIVE;
		snprintf(s->reason, sizeof(s->reason), "%s", ESC_REASON);
		c = strcmp(secret, "1") != 0 || secretmem_memfd(0) >= 0 ? 'r' : 'x';
	}
	if (write(3, &c, 1) != 1)
		return 1;
	for (;;)
		pause();
}

static pid_t start_escape(const char *self, const char *preload, const char *secret)
{
	char *env[] = { "SECRETMEM_OPENSSL=" ESC_MODE, NULL };
	char *args[] = { (char *)(uintptr_t)self, "escape", (char *)(uintptr_t)preload,
			 (char *)(uintptr_t)secret, NULL };
	int p[2];
	char c;

	TL_CHECK(pipe(p) == 0, "pipe");
	fflush(NULL);
	pid_t pid = fork();
	TL_CHECK(pid >= 0, "fork");
	if (pid == 0) {
		dup2(p[1], 3);
		execve(self, args, env);
		_exit(127);
	}
	close(p[1]);
	TL_CHECK(read(p[0], &c, 1) == 1 && c == 'r', "the escape process could not start");
	close(p[0]);
	return pid;
}

int main(int argc, char **argv)
{
	static char out[1 << 20];
	char *json[] = { NULL, "status", "--json", NULL };
	char *text[] = { NULL, "status", NULL };
	char gone[32], want[512], self[1024], preload[4096];
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	if (argc == 4 && strcmp(argv[1], "escape") == 0)
		return escape(argv[2], argv[3]);
	tl_need_secretmem();
	atexit(cleanup);
	make_long_file();
	kids[0] = start(0);
	kids[1] = start(1);

	int st = run_cli(json, out, sizeof(out), 0, NULL);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status --json: %s", tl_status_str(st));
	snprintf(gone, sizeof(gone), "-%d", (int)kids[0]);
	snprintf(want, sizeof(want), "+%d:%zu:%zu:1:0:1", (int)kids[1], page, page);
	char *file = save_tmp(out);
	char *py[] = { "python3", "test/cli_json.py", "status", file, gone, want, NULL };
	int ok = json_ok(py);
	unlink(file);
	TL_CHECK(ok, "a fake header in a long path was taken for secret memory:\n%s", out);

	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	TL_CHECK(n > 0 && n < (ssize_t)sizeof(self) - 1, "readlink /proc/self/exe");
	self[n] = '\0';
	TL_CHECK(realpath(tl_build_path("libsecretmem-preload.so"), preload) != NULL,
		 "no %s (make builds it)", tl_build_path("libsecretmem-preload.so"));
	kids[2] = start_escape(self, preload, "1");
	kids[3] = start_escape(self, preload, "0");
	st = run_cli(text, out, sizeof(out), 0, NULL);
	printf("%s", out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status: %s", tl_status_str(st));
	TL_CHECK(strpbrk(out, "\033\007") == NULL, "an escape sequence of another process reached the output");
	TL_CHECK(strstr(out, "\n         libsecretmem: preload module (SECRETMEM_OPENSSL=\\x1b[31mX\\x1b[0m)\n"),
		 "the preload module's mode is not shown escaped");
	TL_CHECK(strstr(out, "\n         heap: inactive (x\\x1b[2J\\x1b]0;title\\x07\\x1b[0m): "),
		 "the heap module's reason is not shown escaped on a holder's heap line");
	snprintf(want, sizeof(want), "heap mode without secret memory: %d t_cli_status_sp (", (int)kids[3]);
	char *at = strstr(out, want);
	TL_CHECK(at && strstr(at, "): inactive (x\\x1b[2J\\x1b]0;title\\x07\\x1b[0m): "),
		 "the heap module's reason is not shown escaped for a process without secret memory");

	cleanup();
	return TL_PASS;
}
