/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/* faultin.c - see faultin.h. */
#include <errno.h>
#include <string.h>
#include "faultin.h"
#include "internal.h"
#include "tlib.h"

static void start(struct fi_counts *c)
{
	sm_fault_in_counts(&c->touched, &c->read);
	c->calls = sm_inject_count(OS_OP_FAULT_IN);
}

static void stop(struct fi_counts *c)
{
	size_t t, k;

	sm_fault_in_counts(&t, &k);
	c->touched = t - c->touched;
	c->read = k - c->read;
	c->calls = sm_inject_count(OS_OP_FAULT_IN) - c->calls;
}

void fi_one_secret(size_t *faulted, struct fi_counts *c)
{
	struct secretmem_stats st;

	start(c);
	unsigned char *p = secretmem_malloc(32);
	TL_CHECK(p, "malloc: %s", strerror(errno));
	TL_CHECK(secretmem_stats(&st) == 0, "stats");
	stop(c);
	*faulted = st.pages_faulted;
	secretmem_free(p);
}

void fi_grow(void **blk, int n, struct secretmem_stats *st, struct fi_counts *c)
{
	start(c);
	for (int i = 0; i < n; i++) {
		blk[i] = secretmem_malloc(32);
		TL_CHECK(blk[i], "malloc: %s", strerror(errno));
		memset(blk[i], 1, 32);
	}
	TL_CHECK(secretmem_stats(st) == 0, "stats");
	stop(c);
}

void fi_refuse_once(size_t big, long *calls_refused, struct fi_counts *c)
{
	start(c);
	sm_inject_fault(OS_OP_FAULT_IN, 1, EFAULT, 0);
	errno = 0;
	void *x = secretmem_malloc(big);
	TL_CHECK(!x && errno == ENOMEM, "malloc(%zu) with the fault-in refused: %p, errno %d", big, x, errno);
	*calls_refused = sm_inject_count(OS_OP_FAULT_IN);
	x = secretmem_malloc(big);
	TL_CHECK(x, "malloc(%zu) after a one-shot refusal: %s", big, strerror(errno));
	stop(c);
	c->calls = sm_inject_count(OS_OP_FAULT_IN); /* the injection reset it */
	secretmem_free(x);
}
