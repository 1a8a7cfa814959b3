/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * zero.c - zeroing freed memory, and the write-after-free checks.
 *
 * Owns: sm_zero (a memset the compiler may not drop), sm_is_zero (whether a
 * freed slot or sample is still all zero, with AVX2 where the CPU has it)
 * and sm_sample_zero (the sampled check of a reused run or large block).
 * In a lazy region resident.c calls them on the pages that hold memory.
 * No state but the CPU feature flag, set once by sm_zero_init.
 */
#define _GNU_SOURCE
#include <string.h>
#include "slabint.h"

void sm_zero(void *p, size_t len)
{
	memset(p, 0, len);
	__asm__ __volatile__("" : : "r"(p) : "memory"); /* not a dead store */
}

/*
 * The write-after-free check: whether len bytes at p, a freed slot or a
 * sample of a freed run about to be handed out again, are all zero.  It
 * reads only memory the allocator zeroed (a non-zero byte is fatal), never
 * a live secret, so vector registers are fine here, unlike in nosimd.c's
 * copies: 32 bytes per load, two accumulators, with AVX2 where the CPU has
 * it (the 16 KiB class is checked four times faster than with 8-byte words).
 */
typedef uint64_t sm_vec __attribute__((vector_size(32), may_alias, aligned(1)));

static inline __attribute__((always_inline)) int is_zero_body(const unsigned char *p, size_t len)
{
	sm_vec a = { 0, 0, 0, 0 }, b = { 0, 0, 0, 0 };
	size_t i = 0;

	if (len < 32) {
		uint64_t w = 0;
		for (; i + 8 <= len; i += 8)
			w |= *(const sm_word *)(const void *)(p + i);
		for (; i < len; i++)
			w |= p[i];
		return w == 0;
	}
	for (; i + 64 <= len; i += 64) {
		a |= *(const sm_vec *)(const void *)(p + i);
		b |= *(const sm_vec *)(const void *)(p + i + 32);
	}
	if (i + 32 <= len)
		a |= *(const sm_vec *)(const void *)(p + i);
	/* the last 32 bytes, overlapping what was read */
	b |= *(const sm_vec *)(const void *)(p + len - 32);
	a |= b;
	return (a[0] | a[1] | a[2] | a[3]) == 0;
}

#define SAMPLE 64 /* bytes checked at each sampled place */

/*
 * A cheap write-after-free check of a reused block (a run's, a kept
 * region's, a small slot of more than 64 bytes): SAMPLE bytes at its start,
 * at its end, and at the start of each page that begins inside it, ORed
 * together (len >= SAMPLE).  Up to 2 * SAMPLE = SM_CHECK_FULL_MAX bytes the
 * first and the last SAMPLE bytes are every byte.  A call of sm_is_zero per
 * sample made the check 99 instructions per operation of the random
 * 16-512 B workload, 44 with one call (callgrind); its CPU time 1.31 ->
 * 1.22x glibc+bzero (bench/RESULTS.md, issue 32 part 2).
 */
static inline __attribute__((always_inline)) void sample_or(const unsigned char *p, size_t len, sm_vec *or)
{
	sm_vec a = *(const sm_vec *)(const void *)p | *(const sm_vec *)(const void *)(p + 32);
	sm_vec b = *(const sm_vec *)(const void *)(p + len - 64) | *(const sm_vec *)(const void *)(p + len - 32);
	uintptr_t pg = ((uintptr_t)p + sm_page_size - 1) & ~(uintptr_t)(sm_page_size - 1);
	for (; pg + SAMPLE <= (uintptr_t)p + len; pg += sm_page_size) {
		a |= *(const sm_vec *)(const void *)pg;
		b |= *(const sm_vec *)(const void *)(pg + 32);
	}
	*or = a | b;
}

static inline __attribute__((always_inline)) int sample_body(const unsigned char *p, size_t len)
{
	if (len < SAMPLE)
		return is_zero_body(p, len);
	sm_vec a;
	sample_or(p, len, &a);
	return (a[0] | a[1] | a[2] | a[3]) == 0;
}

static __attribute__((noinline, cold, noreturn)) void slot_modified(void)
{
	sm_fatal("freed block was modified (write after free)");
}

/*
 * A freed small slot of more than 64 bytes zeroed: up to SLOT_STORES bytes
 * in 32-byte stores, the first and the last 64 bytes up to 128, else four
 * a turn and the last 128 bytes (overlapping); above, memset.  The empty
 * asm in the loop keeps the compiler from making it a memset call.
 */
#define SLOT_STORES 1024u
static inline __attribute__((always_inline)) void slot_zero_body(void *p, size_t len)
{
	unsigned char *b = p;
	const sm_vec z = { 0, 0, 0, 0 };

	if (len > SLOT_STORES) {
		sm_zero(p, len);
		return;
	}
	if (len > 128) {
		for (size_t i = 0; i + 128 < len; i += 128) {
			*(sm_vec *)(void *)(b + i) = z;
			*(sm_vec *)(void *)(b + i + 32) = z;
			*(sm_vec *)(void *)(b + i + 64) = z;
			*(sm_vec *)(void *)(b + i + 96) = z;
			__asm__("" : : "r"(b + i) : "memory");
		}
		*(sm_vec *)(void *)(b + len - 128) = z;
		*(sm_vec *)(void *)(b + len - 96) = z;
	} else {
		*(sm_vec *)(void *)b = z;
		*(sm_vec *)(void *)(b + 32) = z;
	}
	*(sm_vec *)(void *)(b + len - 64) = z;
	*(sm_vec *)(void *)(b + len - 32) = z;
	__asm__ __volatile__("" : : "r"(p) : "memory"); /* not dead stores */
}

static int is_zero_generic(const unsigned char *p, size_t len)
{
	return is_zero_body(p, len);
}

void *sm_slot_checked_generic(void *p, size_t len)
{
	if (SM_UNLIKELY(!sample_body(p, len)))
		slot_modified();
	return p;
}

void sm_slot_zero_generic(void *p, size_t len)
{
	slot_zero_body(p, len);
}

static int sample_generic(const unsigned char *p, size_t len)
{
	return sample_body(p, len);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

int sm_have_avx2;

__attribute__((target("avx2"))) static int is_zero_avx2(const unsigned char *p, size_t len)
{
	return is_zero_body(p, len);
}

__attribute__((target("avx2"))) static int sample_avx2(const unsigned char *p, size_t len)
{
	return sample_body(p, len);
}

/* One vptest for the OR of the samples (len > 64). */
__attribute__((target("avx2"))) void *sm_slot_checked_avx2(void *p, size_t len)
{
	sm_vec v;
	sample_or(p, len, &v);
	__m256i a = (__m256i)v;

	if (SM_UNLIKELY(!_mm256_testz_si256(a, a)))
		slot_modified();
	return p;
}

__attribute__((target("avx2"))) void sm_slot_zero_avx2(void *p, size_t len)
{
	slot_zero_body(p, len);
}

void sm_zero_init(void)
{
	__builtin_cpu_init();
	sm_have_avx2 = __builtin_cpu_supports("avx2") != 0;
}

int sm_is_zero(const void *p, size_t len)
{
	return sm_have_avx2 ? is_zero_avx2(p, len) : is_zero_generic(p, len);
}

int sm_sample_zero(const void *p, size_t len)
{
	return sm_have_avx2 ? sample_avx2(p, len) : sample_generic(p, len);
}
#else
int sm_have_avx2; /* 0: the generic versions only */

void *sm_slot_checked_avx2(void *p, size_t len)
{
	return sm_slot_checked_generic(p, len);
}

void sm_slot_zero_avx2(void *p, size_t len)
{
	sm_slot_zero_generic(p, len);
}

void sm_zero_init(void)
{
}

int sm_is_zero(const void *p, size_t len)
{
	return is_zero_generic(p, len);
}

int sm_sample_zero(const void *p, size_t len)
{
	return sample_generic(p, len);
}
#endif
