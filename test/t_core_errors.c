/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_core_errors - the error model of the core API.
 *
 * Functions returning int give 0 / -errno and leave errno alone (checked
 * with a sentinel, on success and on failure); functions returning pointers
 * give NULL and set errno.  Invalid arguments: size 0, unknown flags, sizes
 * that overflow, a bad access mode, NULL handles.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "secretmem.h"
#include "tlib.h"

#define SENTINEL 4242

#define INT_CALL(expr, want)                                                                    \
	do {                                                                                    \
		errno = SENTINEL;                                                               \
		int got_ = (expr);                                                              \
		TL_CHECK(got_ == (want), "%s = %d, want %d", #expr, got_, (int)(want));         \
		TL_CHECK(errno == SENTINEL, "%s changed errno to %d (%s)", #expr, errno,        \
			 strerror(errno));                                                      \
	} while (0)

#define PTR_FAILS(expr, want)                                                                   \
	do {                                                                                    \
		errno = SENTINEL;                                                               \
		void *got_ = (void *)(expr);                                                    \
		TL_CHECK(got_ == NULL, "%s = %p, want NULL", #expr, got_);                      \
		TL_CHECK(errno == (want), "%s: errno %d (%s), want %s", #expr, errno,           \
			 strerror(errno), strerror(want));                                      \
	} while (0)

int main(void)
{
	tl_need_secretmem();

	INT_CALL(secretmem_supported(), 0);
	INT_CALL(secretmem_default_backend(), SECRETMEM_BACKEND_SECRET);
	INT_CALL(secretmem_set_require(2), -EINVAL);
	INT_CALL(secretmem_set_require(-1), -EINVAL);
	INT_CALL(secretmem_set_require(1), 0);
	INT_CALL(secretmem_default_backend(), SECRETMEM_BACKEND_SECRET); /* secret memory works here */
	INT_CALL(secretmem_set_require(0), 0);

	TL_CHECK(strcmp(secretmem_backend_name(SECRETMEM_BACKEND_SECRET), "secret") == 0, "name secret");
	TL_CHECK(strcmp(secretmem_backend_name(SECRETMEM_BACKEND_FALLBACK), "fallback") == 0, "name fallback");
	TL_CHECK(strcmp(secretmem_backend_name(SECRETMEM_BACKEND_NONE), "none") == 0, "name none");
	TL_CHECK(strcmp(secretmem_backend_name(42), "unknown") == 0, "name 42");
	TL_CHECK(strcmp(secretmem_backend_name(-1), "unknown") == 0, "name -1");

	/* pointer functions: NULL and errno */
	PTR_FAILS(secretmem_region_create(0, 0), EINVAL);
	PTR_FAILS(secretmem_region_create(0, SECRETMEM_REGION_REQUIRE_SECRET), EINVAL);
	PTR_FAILS(secretmem_region_create(4096, 0x2), EINVAL);
	PTR_FAILS(secretmem_region_create(4096, 0x80000000u), EINVAL);
	PTR_FAILS(secretmem_region_create(4096, SECRETMEM_REGION_REQUIRE_SECRET | 0x100), EINVAL);
	PTR_FAILS(secretmem_region_create(SIZE_MAX, 0), EINVAL);
	PTR_FAILS(secretmem_region_create(SIZE_MAX - 4096, 0), EINVAL);
	PTR_FAILS(secretmem_region_create(SIZE_MAX / 2 + 1, 0), EINVAL);

	/* NULL handles */
	INT_CALL(secretmem_region_destroy(NULL), 0);
	INT_CALL(secretmem_region_protect(NULL, SECRETMEM_READONLY), -EINVAL);
	TL_CHECK(secretmem_region_data(NULL) == NULL, "data(NULL)");
	TL_CHECK(secretmem_region_size(NULL) == 0, "size(NULL)");
	INT_CALL(secretmem_region_backend(NULL), SECRETMEM_BACKEND_NONE);

	/* a live region: int calls keep errno on success and on failure */
	errno = SENTINEL;
	struct secretmem_region *r = secretmem_region_create(5000, 0);
	TL_CHECK(r != NULL, "create(5000): %s", strerror(errno));
	TL_CHECK(secretmem_region_size(r) == 8192, "size %zu, want 8192", secretmem_region_size(r));
	TL_CHECK(((uintptr_t)secretmem_region_data(r) & 4095) == 0, "data not page aligned");
	INT_CALL(secretmem_region_backend(r), SECRETMEM_BACKEND_SECRET);
	INT_CALL(secretmem_region_protect(r, 3), -EINVAL);
	INT_CALL(secretmem_region_protect(r, -1), -EINVAL);
	INT_CALL(secretmem_region_protect(r, SECRETMEM_NOACCESS), 0);
	INT_CALL(secretmem_region_protect(r, SECRETMEM_READONLY), 0);
	INT_CALL(secretmem_region_protect(r, SECRETMEM_READWRITE), 0);
	INT_CALL(secretmem_region_destroy(r), 0);

	r = secretmem_region_create(1, SECRETMEM_REGION_REQUIRE_SECRET);
	TL_CHECK(r != NULL && secretmem_region_size(r) == 4096, "create(1, REQUIRE_SECRET)");
	INT_CALL(secretmem_region_protect(r, SECRETMEM_NOACCESS), 0);
	INT_CALL(secretmem_region_destroy(r), 0); /* destroy in NOACCESS mode */

	errno = SENTINEL;
	int fd = secretmem_memfd(0x4);
	TL_CHECK(fd == -EINVAL && errno == SENTINEL, "secretmem_memfd(4) = %d errno %d", fd, errno);
	printf("error model holds\n");
	return TL_PASS;
}
