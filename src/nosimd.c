/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * nosimd.c - the library's own bulk reads of secret bytes: copy and string
 * length.  (The all-zero check of freed memory reads no secret: it is in
 * zero.c and uses vector registers.)  glibc's memcpy/strnlen use vector
 * registers, which keep up to 512 bytes of the data after they return; one signal
 * delivery, a lazily bound call or a core dump then writes them to ordinary
 * memory.  These routines never touch a vector register: the Makefile
 * builds this file with -mgeneral-regs-only where the compiler has it
 * (x86-64, arm64), the copy is `rep movsb` on x86, and the copy and strnlen
 * loops read through volatile so that no compiler turns them back into
 * library calls.
 * What the program copies itself, and the general registers saved in a
 * signal frame, are out of this file's reach (see secretmem(7)).
 */
#include <stddef.h>
#include <stdint.h>
#include "internal.h"

void sm_copy(void *dst, const void *src, size_t n)
{
#if defined(__x86_64__) || defined(__i386__)
	/* the microcode moves the bytes: no register holds them */
	__asm__ __volatile__("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
#else
	volatile unsigned char *d = dst;
	const volatile unsigned char *s = src;

	for (size_t i = 0; i < n; i++)
		d[i] = s[i];
#endif
}

size_t sm_strnlen(const char *s, size_t n)
{
	const volatile char *p = s;
	size_t i = 0;

	while (i < n && p[i])
		i++;
	return i;
}
