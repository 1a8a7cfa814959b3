/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * filtercheck.c - a seccomp filter read before the program installs it:
 * would it let the library make new secret memory?
 *
 * Making secret memory takes system calls that a program's own filter has
 * no reason to allow: memfd_secret in a short-lived child (clone, wait4),
 * the memory-lock figures (prlimit64, capget, /proc/self/status), sysinfo,
 * ftruncate, mlock for the fallback.  A filter that kills at any of them
 * (OpenSSH's privilege-separated child: kill by default) would kill the
 * program at its next heap growth or fork, where glibc's malloc would only
 * have mapped memory.  So sandbox.c hands every filter the program
 * installs through prctl or seccomp (also through syscall(2)) to
 * hp_filter_check() first, which runs the filter's classic BPF program
 * here on each of those calls, as the kernel would for this architecture,
 * with every argument 0 and again with every bit set.  A result other than
 * ALLOW, LOG or ERRNO (KILL, TRAP, TRACE, USER_NOTIF, an instruction or a
 * jump this interpreter does not take) for any of them: the library makes
 * no new secret memory from then on (sm_secret_new_off: no call at all;
 * new blocks go to ordinary memory after one warning, or NULL under
 * SECRETMEM_REQUIRE=1, and fork() fails with ENOMEM).  An ERRNO answer is
 * what the library already handles as a refusal.
 *
 * The calls the memory the library already has needs (mmap, munmap,
 * mprotect, madvise, mremap) are glibc's own, which a filter that lets the
 * program allocate allows; mincore, which no systemd group allows, the
 * library stops asking once any filter is seen (sm_filter_seen).
 */
#define _GNU_SOURCE
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include "internal.h"
#include "hp.h"

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#endif

/* The system calls of new secret memory, a fork's copy and their warning. */
static const int needed[] = {
	SYS_memfd_secret, SYS_clone, SYS_wait4, SYS_exit, SYS_rt_sigaction, SYS_rt_sigprocmask,
	SYS_prlimit64, SYS_capget, SYS_sysinfo, SYS_openat, SYS_read, SYS_close, SYS_fstatfs,
	SYS_ftruncate, SYS_mmap, SYS_munmap, SYS_mprotect, SYS_madvise, SYS_mremap, SYS_mlock,
	SYS_munlock, SYS_getpid, SYS_gettid, SYS_write,
};

#define RUN_UNKNOWN 0xffffffffu /* not a result: the filter was not understood */

/* The filter's answer for d, as the kernel's classic BPF would give it. */
static uint32_t run(const struct sock_fprog *prog, const struct seccomp_data *d)
{
	uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = { 0 };
	unsigned n = prog->len;

	for (unsigned pc = 0; pc < n; pc++) {
		const struct sock_filter *f = &prog->filter[pc];
		uint32_t k = f->k, src = BPF_SRC(f->code) == BPF_X ? x : k;
		switch (f->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			if (k % 4 || k > sizeof(*d) - 4)
				return RUN_UNKNOWN;
			memcpy(&a, (const char *)d + k, 4);
			continue;
		case BPF_LD | BPF_W | BPF_LEN:
			a = sizeof(*d);
			continue;
		case BPF_LDX | BPF_W | BPF_LEN:
			x = sizeof(*d);
			continue;
		case BPF_LD | BPF_IMM:
			a = k;
			continue;
		case BPF_LDX | BPF_IMM:
			x = k;
			continue;
		case BPF_LD | BPF_MEM:
		case BPF_LDX | BPF_MEM:
		case BPF_ST:
		case BPF_STX:
			if (k >= BPF_MEMWORDS)
				return RUN_UNKNOWN;
			if (f->code == BPF_ST)
				mem[k] = a;
			else if (f->code == BPF_STX)
				mem[k] = x;
			else if (f->code == (BPF_LD | BPF_MEM))
				a = mem[k];
			else
				x = mem[k];
			continue;
		case BPF_MISC | BPF_TAX:
			x = a;
			continue;
		case BPF_MISC | BPF_TXA:
			a = x;
			continue;
		case BPF_RET | BPF_K:
			return k;
		case BPF_RET | BPF_A:
			return a;
		case BPF_JMP | BPF_JA:
			if (k >= n - pc - 1)
				return RUN_UNKNOWN;
			pc += k;
			continue;
		default:
			break;
		}
		if (BPF_CLASS(f->code) == BPF_ALU) {
			switch (BPF_OP(f->code)) {
			case BPF_ADD: a += src; continue;
			case BPF_SUB: a -= src; continue;
			case BPF_MUL: a *= src; continue;
			case BPF_DIV: if (!src) return 0; a /= src; continue; /* the kernel: returns 0 */
			case BPF_MOD: if (!src) return 0; a %= src; continue;
			case BPF_AND: a &= src; continue;
			case BPF_OR: a |= src; continue;
			case BPF_XOR: a ^= src; continue;
			case BPF_LSH: a = src < 32 ? a << src : 0; continue;
			case BPF_RSH: a = src < 32 ? a >> src : 0; continue;
			case BPF_NEG: a = -a; continue;
			default: return RUN_UNKNOWN;
			}
		}
		if (BPF_CLASS(f->code) == BPF_JMP) {
			int t;
			switch (BPF_OP(f->code)) {
			case BPF_JEQ: t = a == src; break;
			case BPF_JGT: t = a > src; break;
			case BPF_JGE: t = a >= src; break;
			case BPF_JSET: t = (a & src) != 0; break;
			default: return RUN_UNKNOWN;
			}
			unsigned off = t ? f->jt : f->jf;
			if (off >= n - pc - 1)
				return RUN_UNKNOWN;
			pc += off;
			continue;
		}
		return RUN_UNKNOWN;
	}
	return RUN_UNKNOWN; /* fell off the end: the kernel refuses such a filter */
}

/* 1 when the answer lets the call run or fail with an error the library
 * handles; 0 when it would kill, trap, or hand the call to someone else. */
static int harmless(uint32_t r)
{
	uint32_t action = r & SECCOMP_RET_ACTION_FULL;

	return r != RUN_UNKNOWN &&
	       (action == SECCOMP_RET_ALLOW || action == SECCOMP_RET_LOG || action == SECCOMP_RET_ERRNO);
}

int hp_filter_check(const void *fprog)
{
#ifdef NATIVE_ARCH
	const struct sock_fprog *prog = fprog;
	struct seccomp_data d;

	if (!prog || !prog->filter || !prog->len || prog->len > BPF_MAXINSNS)
		return 0;
	for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++)
		for (int bits = 0; bits < 2; bits++) {
			memset(&d, bits ? 0xff : 0, sizeof(d));
			d.nr = needed[i];
			d.arch = NATIVE_ARCH;
			if (!harmless(run(prog, &d)))
				return 0;
		}
	return 1;
#else
	(void)fprog;
	return 0;
#endif
}
