/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_lock_gpg - issue 29's proof on a real program: `gpg --decrypt`
 * keeps the session key of a message in libgcrypt's secure memory pool
 * (mmap()ed and mlock()ed by libgcrypt, not malloc), which heap mode must
 * cover.  In a temporary GNUPGHOME, a fresh key without passphrase
 * (--quick-gen-key; its agent is started plainly and serves every run
 * below) and a message encrypted to it; `gpg --show-session-key` tells the
 * session key.  gpg decrypts the message plain and under heap mode: both
 * must write the message exactly and print the same messages.  Then gpg
 * runs under gdb, stopped at gcry_cipher_close, i.e. right after the
 * decryption (the message is decrypted, its cipher context, which holds
 * the key, not yet closed), and a root process scans it through
 * /proc/PID/mem.  Control (no module): the session key is found outside
 * the stack (in libgcrypt's pool, three times); heap mode: no copy outside
 * the stack.  Without root only the output comparison runs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "heapscan.h"
#include "lockrig.h"
#include "tlib.h"

static char home[300];

static void kill_agent(void)
{
	if (home[0])
		rig_sh("gpgconf --homedir '%s' --kill gpg-agent >/dev/null 2>&1", home);
}

static int hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* `gpg --decrypt` to a file, plain or heap mode; fails the test unless it
 * succeeds.  Its messages (stderr) into msgs. */
static void decrypt(char *msg, int heap, char *msgs, size_t len)
{
	const char *dir = rig_tmpdir(), *m = heap ? "heap" : "plain";
	char out[300], log[300];
	char *argv[] = { "gpg", "--homedir", home, "--batch", "--no-autostart", "--pinentry-mode", "loopback",
			 "--passphrase", "", "--decrypt", "-o", out, msg, NULL };

	snprintf(out, sizeof(out), "%s/decrypted-%s.txt", dir, m);
	snprintf(log, sizeof(log), "%s/decrypt-%s.log", dir, m);
	pid_t pid = rig_spawn(argv, heap ? heap_env() : NULL, log, dir, 0);
	int st = lr_wait(pid, 60000);
	if (st != 0) {
		rig_cat(log);
		TL_FAIL("gpg --decrypt (%s): %s", m, st == -1 ? "did not end in 60 s" : tl_status_str(st));
	}
	if (rig_sh("cmp '%s/message.txt' '%s'", dir, out) != 0)
		TL_FAIL("gpg --decrypt (%s) did not write the message", m);
	TL_CHECK(lr_read_file(log, msgs, len) > 0, "gpg --decrypt (%s) printed nothing", m);
	printf("gpg --decrypt, %s: message decrypted exactly\n", m);
}

/* gpg stopped at gcry_cipher_close, scanned: the copies outside the stack. */
static int scan(const struct scan_key *key, char *msg, int heap)
{
	const char *m = heap ? "heap" : "plain";
	char out[300], label[80];
	char *prog[] = { "gpg", "--homedir", home, "--batch", "--no-autostart", "--pinentry-mode", "loopback",
			 "--passphrase", "", "--decrypt", "-o", out, msg, NULL };
	struct gdbstop g;

	snprintf(out, sizeof(out), "%s/stopped-%s.txt", rig_tmpdir(), m);
	heap_gdbstop_start(&g, "gpg", heap, "break gcry_cipher_close", prog);
	snprintf(label, sizeof(label), "gpg --decrypt %s, at gcry_cipher_close", m);
	struct heap_hits h = heap_scan_pid(key, g.pid, label, heap ? NULL : "session", heap);
	if (!heap) {
		/* the control must see the pool itself, not only gpg's malloc
		 * heap (which heap mode covers already) */
		struct scan_result res;
		int pool = 0;

		TL_CHECK(scan_pid(key, g.pid, &res, NULL) >= 0, "scan of gpg");
		for (int i = 0; i < res.count; i++)
			pool += !strstr(res.copy[i].where, " [heap] ") && !strstr(res.copy[i].where, " [stack] ");
		scan_result_free(&res);
		TL_CHECK(pool > 0, "%s: control: the session key is not in anonymous memory outside the heap "
				   "(libgcrypt's pool): the scan or the stop point is wrong", label);
		printf("%s: %d copies in mappings other than [heap] and [stack] (libgcrypt's pool)\n", label, pool);
	}
	gdbstop_end(&g);
	if (heap && rig_file_has(g.log, "secretmem-heap:")) {
		rig_cat(g.log);
		TL_FAIL("%s: the module complained", label);
	}
	printf("%s: %d copies of the session key outside the stack, %d on the stack\n", label, h.other, h.stack);
	return h.other;
}

int main(void)
{
	const char *dir;
	char msg[300], log[300], line[512], plain_msgs[8192], heap_msgs[8192];
	unsigned char sk[64];
	size_t sklen = 0;
	struct scan_key key;
	FILE *f;

	rig_need("gpg");
	rig_need("gpg-agent");
	rig_need("gpgconf");
	dir = rig_tmpdir();
	snprintf(home, sizeof(home), "%s/gnupg", dir);
	if (rig_sh("mkdir -m 700 '%s'", home) != 0)
		TL_FAIL("mkdir %s", home);
	atexit(kill_agent);
	snprintf(log, sizeof(log), "%s/setup.log", dir);
	snprintf(msg, sizeof(msg), "%s/message.gpg", dir);
	if (rig_sh("{ gpg --homedir '%s' --batch --pinentry-mode loopback --passphrase '' "
		   "--quick-gen-key 'lock <lock@test>' default default never && "
		   "head -c 3000 /dev/urandom | base64 > '%s/message.txt' && "
		   "gpg --homedir '%s' --batch --trust-model always -r lock@test -e -o '%s' '%s/message.txt' && "
		   "gpg --homedir '%s' --batch --pinentry-mode loopback --passphrase '' --show-session-key "
		   "-d -o /dev/null '%s'; } >'%s' 2>&1",
		   home, dir, home, msg, dir, home, msg, log) != 0) {
		rig_cat(log);
		TL_FAIL("cannot make the key, the message or decrypt it");
	}
	/* "gpg: session key: '9:HEX'" */
	f = fopen(log, "re");
	TL_CHECK(f != NULL, "%s: %s", log, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "session key: '");
		if (!p || !(p = strchr(p, ':')) || !(p = strchr(p + 1, ':')))
			continue;
		for (p++; hexval(p[0]) >= 0 && hexval(p[1]) >= 0 && sklen < sizeof(sk); p += 2)
			sk[sklen++] = (unsigned char)(hexval(p[0]) << 4 | hexval(p[1]));
	}
	fclose(f);
	if (sklen < 16) {
		rig_cat(log);
		TL_FAIL("no session key in gpg --show-session-key's output");
	}
	printf("session key: %zu bytes\n", sklen);
	memset(&key, 0, sizeof(key));
	TL_CHECK(scan_key_add(&key, "session", "session", 1, sk, sklen, 0) == 0, "scan_key_add");

	decrypt(msg, 0, plain_msgs, sizeof(plain_msgs));
	if (geteuid() == 0) {
		rig_need("gdb");
		scan(&key, msg, 0);
	}
	heap_need_module("t_heap_lock_gpg");
	decrypt(msg, 1, heap_msgs, sizeof(heap_msgs));
	if (strcmp(plain_msgs, heap_msgs) != 0)
		TL_FAIL("gpg --decrypt printed other messages under heap mode:\n--- plain:\n%s--- heap:\n%s", plain_msgs,
			heap_msgs);
	printf("gpg --decrypt: the same messages plain and in heap mode\n");
	tl_need_root("gdb stops gpg and a root process reads its memory; the decryption plain and in heap mode "
		     "gave the same output");
	int found = scan(&key, msg, 1);
	scan_key_free(&key);
	TL_CHECK(found == 0, "heap mode: %d copies of the session key outside the stack (listed above)", found);
	printf("gpg --decrypt: the session key found in libgcrypt's pool without the module; none outside the stack "
	       "in heap mode\n");
	return 0;
}
