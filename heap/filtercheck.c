/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * filtercheck.c - a seccomp filter read before the program installs it:
 * would it let the library make new secret memory?
 *
 * Making secret memory takes system calls that a program's own filter has
 * no reason to allow: memfd_secret in a short-lived child (clone, wait4),
 * the memory-lock figures (prlimit64, capget, /proc/self/status), sysinfo,
 * ftruncate and the fstat that checks the size it made (glibc's fstat is
 * newfstatat(fd, "", AT_EMPTY_PATH) on x86_64 and arm64), mlock for the
 * fallback, mlock2 for a fork child's copy of it.  A filter that kills at
 * any of them (OpenSSH's privilege-separated child: kill by default)
 * would kill the program at its next heap growth or fork, where glibc's
 * malloc would only have mapped memory.  So sandbox.c hands every filter the program
 * installs through prctl or seccomp (also through syscall(2)) to
 * hp_filter_check() once the kernel took it, which runs the filter's
 * classic BPF program here on each of those calls, as the kernel would for
 * this architecture, with the arguments the library gives it (calls[]).
 * A result other than
 * ALLOW, LOG or ERRNO (KILL, TRAP, TRACE, USER_NOTIF, an instruction or a
 * jump this interpreter does not take) for any of them: the library makes
 * no new secret memory from then on (sm_secret_new_off: no call at all;
 * new blocks go to ordinary memory after one warning, or NULL under
 * SECRETMEM_REQUIRE=1, and fork() fails with ENOMEM).  When that call is
 * write(2) on stderr, the warnings themselves go unsaid (sm_warnings_off).
 * An ERRNO answer is what the library already handles as a refusal.
 *
 * The calls the memory the library already has needs (mmap, munmap,
 * mprotect, madvise, mremap) are glibc's own, which a filter that lets the
 * program allocate allows; mincore, which no systemd group allows, the
 * library stops asking once any filter is seen (sm_filter_seen).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "internal.h"
#include "hp.h"

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#endif

/*
 * The system calls of new secret memory, of a fork's copy and of their
 * warning, each with the arguments the library gives it (a pointer as
 * P, a descriptor as 3, a length as a page, a pid as 2), one row per
 * form: a filter may look at the arguments (clone's flags, mmap's
 * protection).
 */
#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT 1
#endif
#define P 0x10000ul
#define PG 4096ul
#define NOFD ((uint64_t)-1)
#define ANON_NONE (MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE)
static const struct call {
	int nr;
	uint64_t a[6];
} calls[] = {
	{ SYS_memfd_secret, { O_CLOEXEC } },
	{ SYS_memfd_secret, { 0 } },
	{ SYS_clone, { CLONE_VM | CLONE_VFORK | CLONE_FILES, P, 0, 0, 0 } },
	{ SYS_wait4, { 2, P, __WALL, 0 } },
	{ SYS_exit, { 0 } },
	{ SYS_exit, { 1 } },
	{ SYS_rt_sigaction, { SIGSYS, P, 0, 8 } },
	{ SYS_rt_sigprocmask, { SIG_BLOCK, P, P, 8 } },
	{ SYS_rt_sigprocmask, { SIG_SETMASK, P, 0, 8 } },
	{ SYS_prlimit64, { 0, RLIMIT_MEMLOCK, 0, P } },
	{ SYS_prlimit64, { 0, RLIMIT_CORE, P, 0 } },
	{ SYS_capget, { P, P } },
	{ SYS_sysinfo, { P } },
	{ SYS_openat, { (uint64_t)(int64_t)AT_FDCWD, P, O_RDONLY | O_CLOEXEC, 0 } },
	{ SYS_read, { 3, P, PG } },
	{ SYS_close, { 3 } },
	{ SYS_fstatfs, { 3, P } },
	{ SYS_ftruncate, { 3, PG } },
	/* os_truncate's fstat(3): newfstatat in glibc 2.33 and later, fstat
	 * before (the path is "", a pointer) */
#ifdef SYS_newfstatat
	{ SYS_newfstatat, { 3, P, P, AT_EMPTY_PATH } },
#endif
#ifdef SYS_fstat
	{ SYS_fstat, { 3, P } },
#endif
	{ SYS_mmap, { 0, PG, PROT_NONE, ANON_NONE, NOFD, 0 } },
	{ SYS_mmap, { P, PG, PROT_NONE, ANON_NONE | MAP_FIXED, NOFD, 0 } },
	{ SYS_mmap, { P, PG, PROT_NONE, ANON_NONE | MAP_FIXED_NOREPLACE, NOFD, 0 } },
	{ SYS_mmap, { P, PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, 3, 0 } },
	{ SYS_mmap, { P, PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, 3, PG } },
	{ SYS_mmap, { 0, PG, PROT_READ | PROT_WRITE, MAP_SHARED, 3, 0 } },
	{ SYS_mmap, { P, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, NOFD, 0 } },
	{ SYS_mmap, { 0, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, NOFD, 0 } },
	{ SYS_munmap, { P, PG } },
	{ SYS_mprotect, { P, PG, PROT_NONE } },
	{ SYS_mprotect, { P, PG, PROT_READ } },
	{ SYS_mprotect, { P, PG, PROT_READ | PROT_WRITE } },
	{ SYS_madvise, { P, PG, MADV_NORMAL } },
	{ SYS_madvise, { P, PG, MADV_DONTNEED } },
	{ SYS_madvise, { P, PG, MADV_DONTFORK } },
	{ SYS_madvise, { P, PG, MADV_DOFORK } },
	{ SYS_madvise, { P, PG, MADV_DONTDUMP } },
	{ SYS_madvise, { P, PG, MADV_DODUMP } },
	{ SYS_madvise, { P, PG, MADV_WIPEONFORK } },
	{ SYS_madvise, { P, PG, MADV_KEEPONFORK } },
	{ SYS_madvise, { P, PG, MADV_COLD } },
	{ SYS_madvise, { P, PG, MADV_POPULATE_WRITE } },
	{ SYS_mremap, { P, 0, PG, MREMAP_MAYMOVE, 0 } },
	{ SYS_mremap, { P, PG, PG, MREMAP_MAYMOVE | MREMAP_FIXED, P } },
	{ SYS_mlock, { P, PG } },
#ifdef SYS_mlock2
	{ SYS_mlock2, { P, PG, MLOCK_ONFAULT } }, /* a fork child's copy of the fallback (os.c) */
#endif
	{ SYS_munlock, { P, PG } },
	{ SYS_getpid, { 0 } },
	{ SYS_gettid, { 0 } },
	{ SYS_sched_yield, { 0 } },
	{ SYS_getrandom, { P, PG, 0 } }, /* the fault-in without /dev/zero (os.c) */
	{ SYS_write, { 2, P, PG } },
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

	int all = 1;

	if (!prog || !prog->filter || !prog->len || prog->len > BPF_MAXINSNS)
		return 0;
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		memset(&d, 0, sizeof(d));
		d.nr = calls[i].nr;
		d.arch = NATIVE_ARCH;
		memcpy(d.args, calls[i].a, sizeof(d.args));
		if (harmless(run(prog, &d)))
			continue;
		all = 0;
		if (d.nr == SYS_write) /* the warnings' own call: they go unsaid */
			sm_warnings_off();
	}
	return all;
#else
	(void)fprog;
	return 0;
#endif
}
