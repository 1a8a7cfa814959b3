/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_cli_status_prom.c - what `secretmem status --prometheus FILE` does to
 * FILE, by its kind (secretmem(1), SECRETMEM STATUS), every node made in a
 * temporary directory of this test: a regular file is replaced atomically
 * (a new inode, no temporary file left); a symbolic link to this process's
 * standard output (as /dev/stdout is), a link to a regular file, a FIFO
 * that a process reads and a character device (1:3, like /dev/null) are
 * written through and stay what they were; a FIFO nobody reads and a
 * character device that refuses the write (1:7, like /dev/full) are 71
 * and stay; a directory, a block device (never opened) and a link to
 * nothing are refused with 64; another user's link (to a file of root's)
 * is not followed but replaced.  Before, each was replaced by a regular
 * file (as root, that once replaced the machine's /dev/full).  The device
 * nodes need root (mknod); without it those cases are left out.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include "cli_run.h"

static char dir[64];
static char out[1 << 20];

/* Also on a failed check: the directory and its nodes go. */
static void cleanup(void)
{
	DIR *d = dir[0] ? opendir(dir) : NULL;
	char path[512];

	for (struct dirent *e; d && (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

static const char *at(const char *name)
{
	static char path[4][512];
	static int i;

	i = (i + 1) % 4;
	snprintf(path[i], sizeof(path[i]), "%s/%s", dir, name);
	return path[i];
}

/* status --quiet --prometheus dir/name: its wait status, output in out. */
static int prom(const char *name)
{
	char *args[] = { NULL, "status", "--quiet", "--prometheus", (char *)(uintptr_t)at(name), NULL };
	int st = run_cli(args, out, sizeof(out), 1, NULL);

	printf("--prometheus %s: %s\n%s", name, tl_status_str(st), out);
	return st;
}

/* No "*.tmp.*" file is left in dir. */
static void no_tmp(const char *after)
{
	DIR *d = opendir(dir);

	TL_CHECK(d != NULL, "opendir %s: %s", dir, strerror(errno));
	for (struct dirent *e; (e = readdir(d));)
		TL_CHECK(strstr(e->d_name, ".tmp.") == NULL, "after %s a temporary file is left: %s", after,
			 e->d_name);
	closedir(d);
}

/* path's contents into out; 1, or 0 when unreadable. */
static int slurp(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, out, sizeof(out) - 1) : -1;

	if (fd >= 0)
		close(fd);
	out[n > 0 ? n : 0] = '\0';
	return n >= 0;
}

static mode_t kind(const char *name)
{
	struct stat st;

	TL_CHECK(lstat(at(name), &st) == 0, "lstat %s: %s", name, strerror(errno));
	return st.st_mode & S_IFMT;
}

/* The scan's exit status with --quiet: 0, 1 or 2. */
static int scanned(int st)
{
	return WIFEXITED(st) && WEXITSTATUS(st) <= 2;
}

static int exited(int st, int code)
{
	return WIFEXITED(st) && WEXITSTATUS(st) == code;
}

static const char *exposition = "# TYPE secretmem_holders gauge\nsecretmem_holders ";

int main(void)
{
	struct stat before, after;
	int st, fd;

	snprintf(dir, sizeof(dir), "/tmp/t_cli_status_prom-XXXXXX");
	TL_CHECK(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
	atexit(cleanup);

	/* a regular file: replaced atomically, a new inode */
	fd = open(at("file"), O_WRONLY | O_CREAT | O_EXCL, 0644);
	TL_CHECK(fd >= 0 && fstat(fd, &before) == 0, "create file: %s", strerror(errno));
	close(fd);
	st = prom("file");
	TL_CHECK(scanned(st), "regular file: %s", tl_status_str(st));
	TL_CHECK(stat(at("file"), &after) == 0 && S_ISREG(after.st_mode) && after.st_ino != before.st_ino &&
		 after.st_size > 0, "the regular file was not replaced by a new one");
	no_tmp("a regular file");

	/* a link to standard output (/dev/stdout): written through */
	TL_CHECK(symlink("/proc/self/fd/1", at("stdout")) == 0, "symlink: %s", strerror(errno));
	st = prom("stdout");
	TL_CHECK(scanned(st), "link to stdout: %s", tl_status_str(st));
	TL_CHECK(kind("stdout") == S_IFLNK, "the link to stdout is no longer a link");
	TL_CHECK(strncmp(out, "# HELP ", 7) == 0 && strstr(out, exposition) != NULL,
		 "standard output is not the exposition alone");
	no_tmp("a link to stdout");

	/* a link to a regular file: the file is written, the link stays */
	fd = open(at("target"), O_WRONLY | O_CREAT | O_EXCL, 0644);
	TL_CHECK(fd >= 0 && write(fd, "old old old\n", 12) == 12 && fstat(fd, &before) == 0, "target: %s",
		 strerror(errno));
	close(fd);
	TL_CHECK(symlink("target", at("link")) == 0, "symlink: %s", strerror(errno));
	st = prom("link");
	TL_CHECK(scanned(st), "link to a file: %s", tl_status_str(st));
	TL_CHECK(kind("link") == S_IFLNK, "the link to a file is no longer a link");
	TL_CHECK(stat(at("target"), &after) == 0 && after.st_ino == before.st_ino,
		 "the link's target was replaced, not written");
	TL_CHECK(slurp(at("target")) && strncmp(out, "# HELP ", 7) == 0 &&
		 strstr(out, "old old") == NULL, "the link's target does not hold the exposition alone:\n%s", out);
	no_tmp("a link to a file");

	/* another user's link to root's file: not followed, replaced */
	if (geteuid() == 0) {
		fd = open(at("victim"), O_WRONLY | O_CREAT | O_EXCL, 0600);
		TL_CHECK(fd >= 0 && write(fd, "root's\n", 7) == 7, "victim: %s", strerror(errno));
		close(fd);
		TL_CHECK(symlink("victim", at("planted")) == 0 && lchown(at("planted"), 65534, 65534) == 0,
			 "planted link: %s", strerror(errno));
		st = prom("planted");
		TL_CHECK(scanned(st), "another user's link: %s", tl_status_str(st));
		TL_CHECK(slurp(at("victim")) && strcmp(out, "root's\n") == 0, "another user's link was followed:\n%s",
			 out);
		TL_CHECK(kind("planted") == S_IFREG, "another user's link was not replaced");
		no_tmp("another user's link");
	}

	/* a FIFO that a process reads: written through */
	TL_CHECK(mkfifo(at("fifo"), 0600) == 0, "mkfifo: %s", strerror(errno));
	int rd = open(at("fifo"), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	TL_CHECK(rd >= 0, "open the FIFO: %s", strerror(errno));
	st = prom("fifo");
	TL_CHECK(scanned(st), "FIFO with a reader: %s", tl_status_str(st));
	ssize_t n = read(rd, out, sizeof(out) - 1);
	out[n > 0 ? n : 0] = '\0';
	close(rd);
	TL_CHECK(strstr(out, exposition) != NULL, "the exposition did not come through the FIFO:\n%s", out);
	TL_CHECK(kind("fifo") == S_IFIFO, "the FIFO is no longer a FIFO");

	/* a FIFO nobody reads: 71 at once, not a hang */
	st = prom("fifo");
	TL_CHECK(exited(st, 71) && strstr(out, "a FIFO that no process reads"), "FIFO without a reader: %s",
		 tl_status_str(st));
	TL_CHECK(kind("fifo") == S_IFIFO, "the FIFO is no longer a FIFO");
	no_tmp("a FIFO");

	/* a directory, a link to nothing: refused, 64 */
	TL_CHECK(mkdir(at("dir"), 0700) == 0, "mkdir: %s", strerror(errno));
	st = prom("dir");
	TL_CHECK(exited(st, 64) && strstr(out, ": a directory: "), "directory: %s", tl_status_str(st));
	TL_CHECK(kind("dir") == S_IFDIR, "the directory is no longer one");
	rmdir(at("dir"));
	TL_CHECK(symlink("nothing", at("dangling")) == 0, "symlink: %s", strerror(errno));
	st = prom("dangling");
	TL_CHECK(exited(st, 64) && strstr(out, ": a symbolic link to nothing: "), "link to nothing: %s",
		 tl_status_str(st));
	TL_CHECK(kind("dangling") == S_IFLNK && access(at("nothing"), F_OK) != 0,
		 "the link to nothing was replaced or its target made");
	no_tmp("a refusal");

	/* device nodes of our own (never the machine's /dev) */
	if (mknod(at("null"), S_IFCHR | 0600, makedev(1, 3)) != 0) {
		printf("mknod: %s: device nodes left out\n", strerror(errno));
		return TL_PASS;
	}
	st = prom("null");
	TL_CHECK(scanned(st), "character device 1:3: %s", tl_status_str(st));
	TL_CHECK(kind("null") == S_IFCHR, "the character device 1:3 is no longer one");
	TL_CHECK(mknod(at("full"), S_IFCHR | 0600, makedev(1, 7)) == 0, "mknod: %s", strerror(errno));
	st = prom("full");
	TL_CHECK(exited(st, 71) && strstr(out, "ENOSPC"), "character device 1:7: %s", tl_status_str(st));
	TL_CHECK(kind("full") == S_IFCHR, "the character device 1:7 is no longer one");
	TL_CHECK(mknod(at("block"), S_IFBLK | 0600, makedev(7, 0)) == 0, "mknod: %s", strerror(errno));
	st = prom("block");
	TL_CHECK(exited(st, 64) && strstr(out, ": a block device: "), "block device: %s", tl_status_str(st));
	TL_CHECK(kind("block") == S_IFBLK, "the block device is no longer one");
	no_tmp("a device");
	return TL_PASS;
}
