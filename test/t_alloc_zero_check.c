/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_zero_check - the write-after-free check itself (sm_is_zero, the
 * vector-register version in zero.c): for every length from 1 to 1100
 * bytes, every start offset 0..31 and every position of one non-zero byte
 * (each of the values 0x01 and 0x80), the check says "not zero"; on the
 * all-zero range it says "zero"; bytes just outside the range never count.
 * Then the class sizes of slots up to 16 KiB, with the byte at the start,
 * the end and every 61st position.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "internal.h"
#include "secretmem.h"
#include "tlib.h"

static unsigned char buf[16384 + 128] __attribute__((aligned(64)));

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

int main(void)
{
	/* the allocator's start-up picks the implementation (AVX2 or not) */
	secretmem_free(secretmem_malloc(1));
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
	return TL_PASS;
}
