// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the secretmem authors
/*
 * lock_botan KEYFILE once|wait - Botan 2's locking allocator (its pool:
 * mmap()ed pages between guard pages, mlock()ed) holding a key in a
 * Botan::secure_vector<uint8_t> (test/t_heap_lock_botan; lockkeys.h says
 * what is printed).  VmLck > 0 in /proc/self/status shows that the pool
 * is active (the figure itself goes to stderr: heap mode's secret memory
 * counts as locked too, so it differs between the modes).
 */
#include <botan/secmem.h>
#include <botan/version.h>
#include "lockkeys.h"

static Botan::secure_vector<uint8_t> *vec;

static long vmlck_kb(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	long kb = -1;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmLck: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

static int load(int fd)
{
	printf("Botan %d\n", (int)Botan::version_major());
	vec = new Botan::secure_vector<uint8_t>(LK_KEYLEN);
	if (lk_read(fd, vec->data()) != 0)
		return -1;
	long kb = vmlck_kb();
	fprintf(stderr, "VmLck: %ld kB\n", kb);
	printf("VmLck > 0: %s\n", kb > 0 ? "yes" : "no");
	return 0;
}

static uint64_t sum(int)
{
	return lk_sum(vec->data(), LK_KEYLEN);
}

static void scribble(int)
{
	memset(vec->data(), 0x5a, LK_KEYLEN);
}

static void finish(void)
{
	delete vec;
	printf("released\n");
}

int main(int argc, char **argv)
{
	static const struct lk_ops ops = { 1, { "vector" }, load, sum, scribble, finish };

	return lk_main(argc, argv, &ops);
}
