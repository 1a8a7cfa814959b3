/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_scan - the proof of heap mode on a program of our own
 * (test/helpers/heap_keyholder: a random key and its hex text in malloc()ed
 * and strdup()ed buffers).  A root process reads every readable mapping of
 * the running program through /proc/PID/mem, and the core file of its
 * abort() is searched too, for the key and for its hex text (whole, and in
 * 16-byte pieces).  Without the module (control) both find them; under the
 * heap module neither finds anything in the process's memory, nor in the
 * memory segments of the core file.  The core file's notes (the registers
 * of the thread that aborted, SIMD registers included) are reported apart:
 * strdup() copies through vector registers, so pieces of the text it copied
 * last are there - registers are not heap memory (README, secret memory's
 * "not protected" list).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "heaprig.h"
#include "tlib.h"

static char helper[PATH_MAX];
static unsigned char key[32];
static char hex[65];

static void needles(void)
{
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", key[i]);
}

/* Hits of key or hex pieces (16 bytes at 0, 8, 16 of the key; 16 chars at
 * 0, 16, 32, 48 of the text) in buf. */
static int hits(const unsigned char *buf, size_t len)
{
	int n = 0;

	for (int o = 0; o <= 16; o += 8)
		n += tl_contains(buf, len, key + o, 16);
	for (int o = 0; o <= 48; o += 16)
		n += tl_contains(buf, len, hex + o, 16);
	return n;
}

static int scan_pid(pid_t pid, char *where, size_t wlen)
{
	char path[64], line[4096];
	int total = 0;

	where[0] = '\0';
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
		if (got > 0) {
			int h = hits(buf, (size_t)got);
			if (h) {
				line[strcspn(line, "\n")] = '\0';
				snprintf(where + strlen(where), wlen - strlen(where), "  %d in %s\n", h, line);
			}
			total += h;
		}
		free(buf);
	}
	fclose(f);
	close(fd);
	return total;
}

static void start(int heap, int pfd[2], const char *mode)
{
	char fdarg[16];

	dup2(pfd[1], 9);
	snprintf(fdarg, sizeof(fdarg), "9");
	if (heap)
		setenv("LD_PRELOAD", hr_module(), 1);
	execl(helper, helper, fdarg, mode, (char *)NULL);
	_exit(127);
}

static int live(int heap)
{
	int pfd[2], out[2];
	char buf[16], where[8192];

	TL_CHECK(pipe(pfd) == 0 && pipe(out) == 0, "pipe");
	pid_t pid = fork();
	if (pid == 0) {
		dup2(out[1], 1);
		start(heap, pfd, "wait");
	}
	close(pfd[1]);
	close(out[1]);
	TL_CHECK(read(pfd[0], key, 32) == 32 && read(out[0], buf, 6) == 6, "no key from the helper");
	needles();
	int n = scan_pid(pid, where, sizeof(where));
	printf("%s, running: %d hits\n%s", heap ? "heap" : "control", n, where);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(pfd[0]);
	close(out[0]);
	return n;
}

static int core_pipe[2], core_heap;

static int core_child(void *arg)
{
	(void)arg;
	int devnull = open("/dev/null", O_WRONLY);
	dup2(devnull, 1);
	start(core_heap, core_pipe, "abort");
	return 1;
}

/* Hits in the core file's PT_LOAD segments (memory); *notes: in PT_NOTE. */
static int core_hits(const char *path, int *notes)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), n = 0;
	Elf64_Ehdr eh;

	*notes = 0;
	TL_CHECK(fd >= 0 && pread(fd, &eh, sizeof(eh), 0) == (ssize_t)sizeof(eh) &&
		 memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64, "core %s", path);
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		TL_CHECK(pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * eh.e_phentsize)) == (ssize_t)sizeof(ph), "phdr");
		if ((ph.p_type != PT_LOAD && ph.p_type != PT_NOTE) || !ph.p_filesz)
			continue;
		unsigned char *buf = malloc(ph.p_filesz);
		TL_CHECK(buf && pread(fd, buf, ph.p_filesz, (off_t)ph.p_offset) == (ssize_t)ph.p_filesz, "segment");
		if (ph.p_type == PT_NOTE)
			*notes += hits(buf, ph.p_filesz);
		else
			n += hits(buf, ph.p_filesz);
		free(buf);
	}
	close(fd);
	return n;
}

static int core(int heap)
{
	char path[PATH_MAX], why[256];
	int st, notes;

	core_heap = heap;
	TL_CHECK(pipe(core_pipe) == 0, "pipe");
	int rc = tl_core_dump(core_child, NULL, path, sizeof(path), &st, why, sizeof(why));
	if (rc < 0 && rc != -ENOENT)
		tl_skip(why);
	TL_CHECK(rc == 0, "no core file (%s)", tl_status_str(st));
	close(core_pipe[1]);
	TL_CHECK(read(core_pipe[0], key, 32) == 32, "no key from the helper");
	close(core_pipe[0]);
	needles();
	int n = core_hits(path, &notes);
	printf("%s, core file: %d hits in memory segments, %d in the register notes\n", heap ? "heap" : "control", n,
	       notes);
	tl_core_remove(path);
	return n;
}

int main(void)
{
	tl_need_secretmem();
	tl_need_root("reads another process through /proc/PID/mem and sets core_pattern");
	hr_module();
	if (!realpath(tl_build_path("test/helpers/heap_keyholder"), helper))
		tl_skip("test/helpers/heap_keyholder is not built");
	TL_CHECK(live(0) >= 7, "control: the key was not found in the running program (the scan is blind)");
	TL_CHECK(live(1) == 0, "heap: the key was found in the running program");
	TL_CHECK(core(0) >= 7, "control: the key was not found in the core file");
	TL_CHECK(core(1) == 0, "heap: the key was found in the core file");
	printf("pass\n");
	return 0;
}
