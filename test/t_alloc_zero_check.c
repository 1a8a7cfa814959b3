/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_zero_check - the write-after-free check itself (sm_is_zero, the
 * vector-register version in zero.c): for every length from 1 to 1100
 * bytes, every start offset 0..31 and every position of one non-zero byte
 * (each of the values 0x01 and 0x80), the check says "not zero"; on the
 * all-zero range it says "zero"; bytes just outside the range never count.
 * Then the class sizes of slots up to 16 KiB, with the byte at the start,
 * the end and every 61st position.  The sampled check (sm_sample_zero)
 * sees every byte of its sample for the lengths 64 to 1100 (every byte up
 * to 128).  The fast paths' slot functions: the zeroing of a freed slot
 * (sm_slot_zero) clears exactly its bytes for the lengths 65 to 1100 and
 * the class sizes up to 16 KiB.  Those two at the offsets OFFS,
 * and the check of a slot handed out (sm_slot_checked) returns it when it
 * is all zero (its fatal error: t_alloc_abort_uaf).  All of it twice where
 * the CPU has AVX2: the AVX2 versions, then the generic ones.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "internal.h"
#include "slab.h"
#include "secretmem.h"
#include "tlib.h"

static unsigned char buf[16384 + 128] __attribute__((aligned(64)));
static const size_t offs[] = { 0, 1, 3, 4, 8, 16, 28, 31 }; /* OFFS */
#define NOFFS (sizeof(offs) / sizeof(offs[0]))

static int check(size_t off, size_t len, size_t at)
{
	for (int v = 0; v < 2; v++) {
		unsigned char val = v ? 0x80 : 0x01;
		buf[off + at] = val;
		int z = sm_is_zero(buf + off, len);
		buf[off + at] = 0;
		if (z) {
			printf("FAIL: byte %zu = 0x%02x of a %zu-byte range at offset %zu not seen\n", at, val, len, off);
			return 0;
		}
	}
	return 1;
}

/* Whether byte at of a len-byte range at p lies in the sampled check's
 * sample: its first and last 64 bytes, the first 64 of each page that
 * begins inside it. */
static int in_sample(const unsigned char *p, size_t len, size_t at)
{
	uintptr_t a = (uintptr_t)(p + at), ps = (uintptr_t)os_page_size();

	if (at < 64 || at >= len - 64)
		return 1;
	return a % ps < 64 && a - a % ps >= (uintptr_t)p && a - a % ps + 64 <= (uintptr_t)(p + len);
}

static int sample_sees(void)
{
	/* a page begins 600 bytes into base: inside the ranges above 664 */
	uintptr_t ps = (uintptr_t)os_page_size();
	unsigned char *base = (unsigned char *)(((uintptr_t)buf + 600 + ps - 1) & ~(ps - 1)) - 600;

	for (size_t o = 0; o < NOFFS; o++) {
		size_t off = offs[o];
		for (size_t len = 64; len <= 1100; len++) {
			unsigned char *p = base + off;
			if (!sm_sample_zero(p, len)) {
				printf("FAIL: sampled check: an all-zero %zu-byte range at offset %zu is not zero\n", len,
				       off);
				return 0;
			}
			for (size_t at = 0; at < len; at++) {
				if (!in_sample(p, len, at))
					continue;
				p[at] = 0x80;
				int z = sm_sample_zero(p, len);
				p[at] = 0;
				if (z) {
					printf("FAIL: sampled check: byte %zu of a %zu-byte range at offset %zu not seen\n",
					       at, len, off);
					return 0;
				}
			}
		}
	}
	printf("sampled check, lengths 64..1100: every byte of the sample seen\n");
	return 1;
}

/* sm_slot_zero clears [off, off+len) of a buffer of 0xff bytes, and only it. */
static int slot_zero_exact(size_t off, size_t len)
{
	memset(buf, 0xff, sizeof(buf));
	sm_slot_zero(buf + off, len);
	for (size_t i = 0; i < sizeof(buf); i++) {
		int inside = i >= off && i < off + len;
		if (buf[i] != (inside ? 0 : 0xff)) {
			printf("FAIL: zeroing a %zu-byte slot at offset %zu: byte %ld is 0x%02x\n", len, off,
			       (long)i - (long)off, buf[i]);
			return 0;
		}
	}
	if (sm_slot_checked(buf + off, len) != buf + off) {
		printf("FAIL: the check of a zeroed %zu-byte slot at offset %zu did not return it\n", len, off);
		return 0;
	}
	return 1;
}

static int slots(void)
{
	static const size_t sizes[] = { 1280, 2048, 3584, 4096, 5120, 8192, 10240, 14336, 16384 };

	for (size_t o = 0; o < NOFFS; o++) {
		size_t off = offs[o];
		for (size_t len = 65; len <= 1100; len++)
			if (!slot_zero_exact(off, len))
				return 0;
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			if (!slot_zero_exact(off, sizes[i]))
				return 0;
	}
	memset(buf, 0, sizeof(buf));
	printf("slot zeroing, lengths 65..1100 and class sizes to 16384: exactly the slot\n");
	return 1;
}

static int all_checks(void)
{
	for (size_t off = 0; off < 32; off++) {
		for (size_t len = 1; len <= 1100; len++) {
			if (!sm_is_zero(buf + off, len)) {
				printf("FAIL: an all-zero %zu-byte range at offset %zu is not zero\n", len, off);
				return TL_FAILED;
			}
			/* just outside the range: below and above */
			if (off > 0) {
				buf[off - 1] = 0xff;
				int z = sm_is_zero(buf + off, len);
				buf[off - 1] = 0;
				if (!z) {
					printf("FAIL: the byte before a %zu-byte range at offset %zu counted\n", len, off);
					return TL_FAILED;
				}
			}
			buf[off + len] = 0xff;
			int z = sm_is_zero(buf + off, len);
			buf[off + len] = 0;
			if (!z) {
				printf("FAIL: the byte after a %zu-byte range at offset %zu counted\n", len, off);
				return TL_FAILED;
			}
			for (size_t at = 0; at < len; at++)
				if (!check(off, len, at))
					return TL_FAILED;
		}
	}
	printf("lengths 1..1100 at offsets 0..31: every byte seen\n");
	static const size_t sizes[] = { 1280, 2048, 3584, 4096, 5120, 8192, 10240, 14336, 16384 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		for (size_t off = 0; off < 8; off += 4) {
			for (size_t at = 0; at < sizes[i]; at += 61)
				if (!check(off, sizes[i], at))
					return TL_FAILED;
			if (!check(off, sizes[i], sizes[i] - 1) || !check(off, sizes[i], 0))
				return TL_FAILED;
		}
	}
	printf("class sizes 1280..16384: start, end and every 61st byte seen\n");
	return sample_sees() && slots() ? TL_PASS : TL_FAILED;
}

int main(void)
{
	/* the allocator's start-up picks the implementation (AVX2 or not) */
	secretmem_free(secretmem_malloc(1));
	int avx2 = sm_have_avx2;
	printf("AVX2 versions: %s\n", avx2 ? "yes" : "no (the generic ones only)");
	int rc = all_checks();
	if (rc == TL_PASS && avx2) {
		sm_have_avx2 = 0;
		printf("the generic versions:\n");
		rc = all_checks();
		sm_have_avx2 = avx2;
	}
	return rc;
}
