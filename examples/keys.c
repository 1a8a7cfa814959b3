/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * keys.c - a few keys and a token in secret memory with the secretmem
 * allocator, and what they cost.
 *
 *   keys [count]     make count 32-byte keys (default 8)
 *
 * Small secrets are packed many per page: the eight keys share one page
 * (the token, of another size class, sits on a second one), not one page
 * and one file each.  The allocator maps secret memory in chunks - the
 * first is 16 pages (64 KiB) in one mapping, less under a small memory-lock
 * limit - and faults their pages in only as they are needed: so the
 * statistics below show 16 pages mapped and 2 faulted in, the two that hold
 * the secrets, where the kernel charges the memory-lock limit at mmap (up
 * to 32 more on kernels that charge at the first touch, where the library
 * faults ahead to make fewer calls: secretmem(7)).  Every block is zeroed
 * by secretmem_free().
 *
 * Build: cc keys.c $(pkg-config --cflags --libs secretmem)
 */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <secretmem.h>

#define KEY_LEN 32
#define MAX_KEYS 100000

static void print_stats(const char *when)
{
	struct secretmem_stats st;
	int rc = secretmem_stats(&st);

	if (rc) {
		fprintf(stderr, "secretmem_stats: %s\n", strerror(-rc));
		return;
	}
	printf("%s:\n", when);
	printf("  live blocks     %zu (%zu bytes)\n", st.live_allocations, st.bytes_in_use);
	printf("  secret mapped   %zu pages in %zu mappings (%zu bytes)\n", st.pages_mapped,
	       st.regions, st.bytes_mapped);
	printf("  pages faulted   %zu, released %zu (lifetime)\n", st.pages_faulted,
	       st.pages_released);
	printf("  backend         %s (%zu bytes secret, %zu fallback)\n", secretmem_backend_name(st.backend),
	       st.secret_bytes, st.fallback_bytes);
	if (st.memlock_unlimited)
		printf("  memory lock     unlimited\n");
	else
		printf("  memory lock     %zu of %zu bytes left\n", st.memlock_left, st.memlock_limit);
}

/* Fill buf with len random bytes; 0 or -errno. */
static int random_bytes(void *buf, size_t len)
{
	unsigned char *p = buf;

	while (len > 0) {
		ssize_t n = getrandom(p, len, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int main(int argc, char **argv)
{
	size_t count = 8;

	if (argc > 2 || (argc == 2 && (sscanf(argv[1], "%zu", &count) != 1 || count == 0 ||
				       count > MAX_KEYS))) {
		fprintf(stderr, "usage: %s [count 1..%d]\n", argv[0], MAX_KEYS);
		return 64;
	}
	if (secretmem_default_backend() != SECRETMEM_BACKEND_SECRET)
		fprintf(stderr, "warning: no secret memory here, using the %s backend\n",
		       secretmem_backend_name(secretmem_default_backend()));

	/* The array of pointers is not secret: ordinary memory is fine. */
	unsigned char **keys = calloc(count, sizeof(*keys));
	if (!keys) {
		perror("calloc");
		return 1;
	}
	int status = 0;
	size_t made = 0;
	for (size_t i = 0; i < count; i++, made++) {
		keys[i] = secretmem_malloc(KEY_LEN); /* zero-filled */
		if (!keys[i]) {
			/* ENOMEM at the memory-lock limit: an error, never SIGBUS */
			fprintf(stderr, "secretmem_malloc: key %zu: %s\n", i, strerror(errno));
			status = 1;
			break;
		}
		int rc = random_bytes(keys[i], KEY_LEN);
		if (rc) {
			fprintf(stderr, "getrandom: %s\n", strerror(-rc));
			status = 1;
			break;
		}
	}

	/* A token copied in from a literal: in a real program it would come
	 * from read(2) into secret memory, since the source stays readable. */
	char *token = secretmem_strdup("api-token-0123456789abcdef");
	if (!token) {
		perror("secretmem_strdup");
		status = 1;
	}

	if (made > 0)
		printf("%zu keys of %d bytes; the first at %p, usable size %zu, owned: %s\n", made,
		       KEY_LEN, (void *)keys[0], secretmem_usable_size(keys[0]),
		       secretmem_owns(keys[0]) ? "yes" : "no");
	print_stats("while holding the keys");

	secretmem_free(token); /* NULL is a no-op */
	for (size_t i = 0; i < count; i++)
		secretmem_free(keys[i]); /* zeroed, then free for reuse */
	free(keys);

	long released = secretmem_trim();
	if (released < 0)
		fprintf(stderr, "secretmem_trim: %s\n", strerror((int)-released));
	else
		printf("trim released %ld bytes\n", released);
	print_stats("after freeing and trimming");
	return status;
}
