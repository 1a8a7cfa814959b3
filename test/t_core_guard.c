/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_core_guard - guard pages, access modes and zeroed reuse of regions.
 *
 * For each backend (secret; fallback, with memfd_secret filtered to ENOSYS
 * in a child), in children with SIGSEGV at its default action:
 *  - one byte before the data and one byte after data+size: read and write
 *    die with SIGSEGV; the first and last data bytes work (control);
 *  - NOACCESS: read and write die; READONLY: write dies, read works and sees
 *    the contents; back to READWRITE: read and write work;
 * and in the process itself: the guard pages are anonymous PROT_NONE
 * mappings, not part of the data mapping and not locked; a region is zero
 * filled after destroy-and-recreate of the same size, whatever the access
 * mode at destroy time.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

#ifndef SYS_memfd_secret
#define SYS_memfd_secret 447
#endif

#define SEED 0x6a4d6a4d6a4dull

enum op {
	OP_CONTROL,       /* first and last byte, read and write: lives */
	OP_READ_BEFORE,
	OP_READ_AFTER,
	OP_WRITE_BEFORE,
	OP_WRITE_AFTER,
	OP_NOACCESS_READ,
	OP_NOACCESS_WRITE,
	OP_READONLY_WRITE,
	OP_READONLY_READ, /* lives, sees the pattern */
	OP_READWRITE_AGAIN, /* NOACCESS then READWRITE: lives */
	OP_COUNT
};

static const char *const op_names[OP_COUNT] = {
	"control (first/last byte)", "read 1 byte before", "read 1 byte after",
	"write 1 byte before", "write 1 byte after", "NOACCESS read", "NOACCESS write",
	"READONLY write", "READONLY read", "NOACCESS then READWRITE",
};

struct job {
	int fallback;
	enum op op;
};

static struct secretmem_region *make(int fallback, size_t len)
{
	struct secretmem_region *r = secretmem_region_create(len, fallback ? 0 : SECRETMEM_REGION_REQUIRE_SECRET);
	int want = fallback ? SECRETMEM_BACKEND_FALLBACK : SECRETMEM_BACKEND_SECRET;

	if (!r)
		TL_FAIL("secretmem_region_create(%zu): %s", len, strerror(errno));
	TL_CHECK(secretmem_region_backend(r) == want, "backend %d, want %d", secretmem_region_backend(r), want);
	return r;
}

static int access_case(void *arg)
{
	const struct job *j = arg;
	struct secretmem_region *r = make(j->fallback, 3 * 4096);
	volatile unsigned char *d = secretmem_region_data(r);
	size_t size = secretmem_region_size(r);
	unsigned char v = 0;

	tl_fill((void *)(uintptr_t)d, size, SEED);
	tl_signal_default(SIGSEGV);
	tl_signal_default(SIGBUS);
	switch (j->op) {
	case OP_CONTROL:
		v = d[0];
		d[0] = v;
		v = d[size - 1];
		d[size - 1] = v;
		break;
	case OP_READ_BEFORE:
		v = d[-1];
		break;
	case OP_READ_AFTER:
		v = d[size];
		break;
	case OP_WRITE_BEFORE:
		d[-1] = 1;
		break;
	case OP_WRITE_AFTER:
		d[size] = 1;
		break;
	case OP_NOACCESS_READ:
	case OP_NOACCESS_WRITE:
		if (secretmem_region_protect(r, SECRETMEM_NOACCESS) != 0)
			return 20;
		if (j->op == OP_NOACCESS_READ)
			v = d[size / 2];
		else
			d[size / 2] = 1;
		break;
	case OP_READONLY_WRITE:
		if (secretmem_region_protect(r, SECRETMEM_READONLY) != 0)
			return 20;
		d[size / 2] = 1;
		break;
	case OP_READONLY_READ:
		if (secretmem_region_protect(r, SECRETMEM_READONLY) != 0)
			return 20;
		if (!tl_check((const void *)(uintptr_t)d, size, SEED))
			return 21;
		break;
	case OP_READWRITE_AGAIN:
		if (secretmem_region_protect(r, SECRETMEM_NOACCESS) != 0 ||
		    secretmem_region_protect(r, SECRETMEM_READWRITE) != 0)
			return 20;
		if (!tl_check((const void *)(uintptr_t)d, size, SEED))
			return 21;
		d[size / 2] ^= 0xff;
		d[size / 2] ^= 0xff;
		break;
	default:
		return 22;
	}
	(void)v;
	if (secretmem_region_destroy(r) != 0)
		return 23;
	return 0;
}

static int lives(enum op op)
{
	return op == OP_CONTROL || op == OP_READONLY_READ || op == OP_READWRITE_AGAIN;
}

static void check_guard_mapping(const char *what, const void *addr, const char *data_line)
{
	char line[512];

	int rc = tl_maps_line(addr, line, sizeof(line));
	TL_CHECK(rc == 0, "%s guard page at %p is not mapped at all (reserved addresses expected)", what, addr);
	TL_CHECK(strcmp(line, data_line) != 0, "%s guard page is part of the data mapping: %s", what, line);
	TL_CHECK(strstr(line, " ---p ") != NULL, "%s guard page is not private PROT_NONE: %s", what, line);
	TL_CHECK(strstr(line, "secretmem") == NULL, "%s guard page is mapped from the secret fd: %s", what, line);
	rc = tl_has_vmflag(addr, "lo");
	TL_CHECK(rc == 0, "%s guard page is locked (or smaps unreadable: %d): %s", what, rc, line);
}

static int suite(void *arg)
{
	int fallback = *(const int *)arg;
	const char *name = fallback ? "fallback" : "secret";

	if (fallback && tl_seccomp_block(SYS_memfd_secret, ENOSYS) != 0)
		TL_FAIL("seccomp filter: %s", strerror(errno));

	for (int op = 0; op < OP_COUNT; op++) {
		struct job j = { fallback, (enum op)op };
		int st = tl_run_child(access_case, &j, NULL, 0);
		if (lives((enum op)op))
			TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s backend, %s: %s, want exit 0", name,
				 op_names[op], tl_status_str(st));
		else
			TL_CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "%s backend, %s: %s, want SIGSEGV",
				 name, op_names[op], tl_status_str(st));
	}

	/* the guard pages as the kernel sees them */
	struct secretmem_region *r = make(fallback, 2 * 4096);
	unsigned char *d = secretmem_region_data(r);
	size_t size = secretmem_region_size(r);
	char data_line[512];
	TL_CHECK(tl_maps_line(d, data_line, sizeof(data_line)) == 0, "data not in /proc/self/maps");
	TL_CHECK(strstr(data_line, " rw") != NULL, "data mapping not read-write: %s", data_line);
	if (!fallback)
		TL_CHECK(strstr(data_line, "secretmem") != NULL, "data is not a secretmem mapping: %s", data_line);
	check_guard_mapping("lower", d - 1, data_line);
	check_guard_mapping("upper", d + size, data_line);
	TL_CHECK(secretmem_region_destroy(r) == 0, "destroy");

	/* destroy and recreate: always zero, whatever the mode at destroy */
	static const int modes[3] = { SECRETMEM_READWRITE, SECRETMEM_READONLY, SECRETMEM_NOACCESS };
	for (int i = 0; i < 60; i++) {
		r = make(fallback, 3 * 4096);
		d = secretmem_region_data(r);
		size = secretmem_region_size(r);
		for (size_t k = 0; k < size; k++)
			TL_CHECK(d[k] == 0, "%s backend, round %d: byte %zu of a new region is %#x", name, i, k, d[k]);
		tl_fill(d, size, SEED + (uint64_t)i);
		int rc = secretmem_region_protect(r, modes[i % 3]);
		TL_CHECK(rc == 0, "protect: %s", strerror(-rc));
		rc = secretmem_region_destroy(r);
		TL_CHECK(rc == 0, "%s backend: destroy in mode %d: %s", name, modes[i % 3], strerror(-rc));
	}
	printf("%s backend: guard pages, access modes and zeroed reuse hold\n", name);
	return 0;
}

int main(void)
{
	tl_need_secretmem();
	for (int fallback = 0; fallback < 2; fallback++) {
		int st = tl_run_child(suite, &fallback, NULL, 0);
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s backend: %s",
			 fallback ? "fallback" : "secret", tl_status_str(st));
	}
	return TL_PASS;
}
