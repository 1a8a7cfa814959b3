/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * fake.c - the kernel the conformance cases talk to: memfd_secret(2) and
 * the memory-lock charge, real or fake (see cli.h).
 *
 * The fakes exist to test `secretmem check` itself: a case run against
 * ordinary memory (the "plain" fake) must FAIL, and the fault-time
 * memory-lock regime, which our kernels do not have, runs against a small
 * user-space model of it.  The model keeps its state in one shared
 * anonymous page created per case (cli_fake_reset), so the processes a case
 * forks see the same charge, as they would see the same user's charge.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "secretmem.h"
#include "cli.h"

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001U
#endif

static const char *const fake_names[] = {
	[CLI_FAKE_NONE] = "none",
	[CLI_FAKE_PLAIN] = "plain",
	[CLI_FAKE_TOUCH] = "charge-at-touch",
	[CLI_FAKE_TOUCH_NOSIGBUS] = "charge-at-touch-nosigbus",
	[CLI_FAKE_TOUCH_UNCHARGE] = "charge-at-touch-uncharge",
	[CLI_FAKE_INVALID] = "invalid",
};

const char *cli_fake_name(int fake)
{
	if (fake < CLI_FAKE_NONE || fake > CLI_FAKE_INVALID)
		return "invalid";
	return fake_names[fake];
}

int cli_fake_kernel(void)
{
	static int fake = -1;

	if (fake < 0) {
		const char *v = secure_getenv("SECRETMEM_CHECK_FAKE_KERNEL");
		fake = CLI_FAKE_NONE;
		if (v && *v) {
			fake = CLI_FAKE_INVALID;
			for (int i = CLI_FAKE_PLAIN; i < CLI_FAKE_INVALID; i++)
				if (strcmp(v, fake_names[i]) == 0)
					fake = i;
		}
	}
	return fake;
}

static int fake_touch_model(void)
{
	int f = cli_fake_kernel();

	return f == CLI_FAKE_TOUCH || f == CLI_FAKE_TOUCH_NOSIGBUS || f == CLI_FAKE_TOUCH_UNCHARGE;
}

/* ---- the model of the fault-time regime ------------------------------ */

#define MODEL_PAGES 1024

struct model {
	unsigned long charged;              /* pages charged                 */
	unsigned long long ino[MODEL_PAGES]; /* (file, page) charged, 0: free */
	unsigned long long pg[MODEL_PAGES];
};

static struct model *model;

void cli_fake_reset(void)
{
	if (!fake_touch_model())
		return;
	if (model)
		munmap(model, sizeof(*model));
	model = mmap(NULL, sizeof(*model), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (model == MAP_FAILED)
		model = NULL;
}

/* The file (inode) and file page of addr, from /proc/self/maps. */
static int file_page(const void *addr, unsigned long long *ino, unsigned long long *pg)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	uintptr_t a = (uintptr_t)addr;
	int rc = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, end;
		unsigned long long off, inode;
		char perms[8];
		unsigned mj, mn;
		if (sscanf(line, "%lx-%lx %7s %llx %x:%x %llu", &start, &end, perms, &off, &mj, &mn,
			   &inode) == 7 && start <= a && a < end) {
			size_t page = (size_t)sysconf(_SC_PAGESIZE);
			*ino = inode;
			*pg = (off + (a - start)) / page;
			rc = 0;
			break;
		}
	}
	fclose(f);
	return rc;
}

/* Charges the page at p unless charged; 0, or -EFAULT over the limit. */
static int model_charge(const void *p)
{
	unsigned long long ino, pg;
	struct rlimit rl;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	int free_slot = -1;

	if (!model || file_page(p, &ino, &pg) != 0)
		return -EFAULT;
	for (int i = 0; i < MODEL_PAGES; i++) {
		if (model->ino[i] == ino + 1 && model->pg[i] == pg)
			return 0; /* already charged: the page is in the file */
		if (model->ino[i] == 0 && free_slot < 0)
			free_slot = i;
	}
	/* root is not exempt in this regime: no CAP_IPC_LOCK test */
	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    (model->charged + 1) * page > rl.rlim_cur &&
	    cli_fake_kernel() != CLI_FAKE_TOUCH_NOSIGBUS)
		return -EFAULT;
	if (free_slot < 0)
		return -EFAULT;
	model->ino[free_slot] = ino + 1;
	model->pg[free_slot] = pg;
	model->charged++;
	return 0;
}

/* ---- the operations -------------------------------------------------- */

int cli_memfd_secret(unsigned int flags)
{
	if (cli_fake_kernel() != CLI_FAKE_NONE) {
		unsigned int mfd = flags & ~(unsigned int)O_CLOEXEC;
		if (flags & O_CLOEXEC)
			mfd |= MFD_CLOEXEC;
		return memfd_create("secretmem-fake", mfd);
	}
#ifdef CLI_NR_MEMFD_SECRET
	return (int)syscall(CLI_NR_MEMFD_SECRET, flags);
#else
	errno = ENOSYS;
	return -1;
#endif
}

int cli_is_secret_mapping(const void *addr)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	uintptr_t a = (uintptr_t)addr;
	int rc = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, end;
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2 && start <= a && a < end) {
			/* the charge-at-touch fakes model a secretmem kernel */
			const char *name = fake_touch_model() ? "/memfd:secretmem-fake (deleted)" :
								CLI_SECRETMEM_NAME;
			line[strcspn(line, "\n")] = '\0';
			size_t n = strlen(line), k = strlen(name);
			rc = n >= k && strcmp(line + n - k, name) == 0;
			break;
		}
	}
	fclose(f);
	return rc;
}

int cli_mapping_locked(const void *addr)
{
	char flags[256];
	int rc;

	if (fake_touch_model())
		return 0;
	rc = cli_vmflags_of(addr, flags, sizeof(flags));
	if (rc < 0)
		return rc;
	return cli_has_word(flags, "lo");
}

int cli_kernel_fault(unsigned char *p, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	if (fake_touch_model()) {
		for (size_t off = 0; off < len; off += page) {
			int rc = model_charge(p + off);
			if (rc < 0)
				return rc;
			memset(p + off, 0, len - off < page ? len - off : page);
		}
		return 0;
	}
	int z = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	if (z < 0)
		return -errno;
	ssize_t n = read(z, p, len);
	int err = errno;
	close(z);
	if (n < 0)
		return -err;
	return (size_t)n == len ? 0 : -EIO;
}

void cli_touch(unsigned char *p)
{
	if (fake_touch_model() && model_charge(p) < 0) {
		signal(SIGBUS, SIG_DFL);
		raise(SIGBUS);
	}
	*(volatile unsigned char *)p = 1;
}

int cli_unmap(void *p, size_t len)
{
	if (cli_fake_kernel() == CLI_FAKE_TOUCH_UNCHARGE && model) {
		memset(model, 0, sizeof(*model));
	}
	return munmap(p, len) == 0 ? 0 : -errno;
}
