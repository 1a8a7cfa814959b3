/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * seccomp_allow.h - a seccomp filter that allows the listed system calls and
 * kills the process at any other (and on another architecture), as a
 * sandboxed program's own filter does; shared by the test helpers and the
 * tests that install one (header only: the helpers link no test library).
 */
#ifndef SECRETMEM_SECCOMP_ALLOW_H
#define SECRETMEM_SECCOMP_ALLOW_H

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { ALLOW_PRCTL, ALLOW_SYSCALL, ALLOW_SYSCALL_TSYNC };

/* Install the filter (after PR_SET_NO_NEW_PRIVS) through prctl, through
 * syscall(SYS_seccomp), or that with TSYNC (every thread); 0 or -1. */
static inline int seccomp_allow_only(const int *allowed, int n, int how)
{
	struct sock_filter f[64 + 6];
	int k = 0;

	if (n > 64)
		return -1;
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
	f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
	for (int i = 0; i < n; i++) /* allowed[i]: jump to the last (ALLOW) */
		f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)allowed[i],
						      (unsigned char)(n - i), 0);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	struct sock_fprog prog = { (unsigned short)k, f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	if (how == ALLOW_PRCTL)
		return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
	return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, how == ALLOW_SYSCALL_TSYNC ? SECCOMP_FILTER_FLAG_TSYNC : 0,
		       &prog) == 0 ? 0 : -1;
}

#endif
