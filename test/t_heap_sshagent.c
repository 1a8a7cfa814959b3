/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * ssh-agent (OpenSSH's own code, not only OpenSSL) with an Ed25519 and an
 * RSA-2048 key added by ssh-add.  Debian's ssh-agent is set-group-ID
 * (_ssh), which makes the loader ignore LD_PRELOAD: the test runs a copy
 * without the bit from its temporary directory.  For each key, gdb attaches
 * to the agent and stops it inside a signature requested with
 * `ssh-keygen -Y sign` (Ed25519: at the second SHA-512 of
 * crypto_sign_ed25519, when the expanded secret "az" - also searched - is
 * on the stack; RSA: at the modular exponentiation of RSA_sign); a root
 * process scans the agent's memory there and gdb writes a core (gcore:
 * ssh-agent sets PR_SET_DUMPABLE 0 and RLIMIT_CORE 0, so a crash leaves
 * none); the memory and a gcore dump are scanned again after both
 * signatures and a third one (Ed25519, not stopped).  Between uses ssh-agent
 * keeps its keys encrypted ("shielded"), so only the scans inside a
 * signature must find them.  Control (no module): each key is found outside
 * the stack inside its signature.  Heap mode (libsecretmem-heap.so
 * preloaded): nothing outside the stack; and once the agent waits again
 * after the signatures, nothing on its stack nor in the core's register
 * notes either (the module clears dead frames and vector registers before
 * a wait).  Inside a signature, the signing function's live frame is on
 * the stack under either: reported, not counted.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "heapscan.h"
#include "tlib.h"

static char agent_bin[300], rsa_key[300], ed_key[300];

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static int wait_file(const char *path, int ms)
{
	for (int i = 0; i < ms / 10; i++) {
		if (access(path, F_OK) == 0)
			return 0;
		sleep_ms(10);
	}
	return access(path, F_OK) == 0 ? 0 : -1;
}

/* Wait for a rig_spawn()ed process; its exit status, or -1 after ms. */
static int wait_exit(pid_t pid, int ms)
{
	int st;

	for (int i = 0; i < ms / 10; i++) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		if (r < 0 && errno != EINTR)
			return -1;
		sleep_ms(10);
	}
	return -1;
}

/*
 * Stop the agent inside a signature with key (its .pub file is used by
 * ssh-keygen -Y sign), scan it there, let the signature finish.
 */
static struct heap_hits sign_and_scan(const struct scan_key *key, pid_t agent, const char *sock,
				      const char *which, int heap)
{
	const char *dir = rig_tmpdir(), *m = heap ? "heap" : "plain";
	char cmds[300], log[300], attached[300], ready[300], go[300], pub[320], data[300], slog[300];
	char label[80], pidarg[16], env_sock[350], core[300];
	const char *require = heap ? NULL : strcmp(which, "rsa") == 0 ? "d,p,q" : "ed25519";
	struct heap_hits h;
	FILE *f;

	snprintf(cmds, sizeof(cmds), "%s/gdb-%s-%s.cmd", dir, which, m);
	snprintf(log, sizeof(log), "%s/gdb-%s-%s.log", dir, which, m);
	snprintf(attached, sizeof(attached), "%s/attached-%s-%s", dir, which, m);
	snprintf(ready, sizeof(ready), "%s/ready-%s-%s", dir, which, m);
	snprintf(go, sizeof(go), "%s/go-%s-%s", dir, which, m);
	snprintf(data, sizeof(data), "%s/data-%s-%s", dir, which, m);
	snprintf(slog, sizeof(slog), "%s/sign-%s-%s.log", dir, which, m);
	snprintf(core, sizeof(core), "%s/core-%s-%s", dir, which, m);
	snprintf(pub, sizeof(pub), "%s.pub", strcmp(which, "rsa") == 0 ? rsa_key : ed_key);
	snprintf(pidarg, sizeof(pidarg), "%d", (int)agent);
	snprintf(env_sock, sizeof(env_sock), "SSH_AUTH_SOCK=%s", sock);
	if (rig_sh("echo 'data signed by the agent' > '%s'", data) != 0)
		TL_FAIL("cannot write %s", data);
	f = fopen(cmds, "we");
	if (!f)
		TL_FAIL("%s: %s", cmds, strerror(errno));
	fprintf(f, "set pagination off\nset confirm off\n");
	if (strcmp(which, "rsa") == 0) {
		/* RSA_sign -> rsa_ossl_private_encrypt -> the CRT exponentiation */
		fprintf(f, "break BN_mod_exp_mont_consttime_x2\nbreak BN_mod_exp_mont_consttime\n"
			   "shell touch '%s'\ncontinue\n", attached);
	} else {
		/*
		 * crypto_sign_ed25519: SHA-512 of the 32-byte seed (EVP_Digest,
		 * length in rsi), then of the expanded key's second half and
		 * the message: stop at that second hash.
		 */
		fprintf(f, "break EVP_Digest if $rsi == 32\nshell touch '%s'\ncontinue\n"
			   "delete\nbreak EVP_Digest\ncontinue\n", attached);
	}
	fprintf(f, "bt 8\ngcore %s\nshell touch '%s'\nshell while [ ! -e '%s' ]; do sleep 0.05; done\n"
		   "detach\nquit\n", core, ready, go);
	fclose(f);
	char *gdb_argv[] = { "gdb", "-nx", "-batch", "-x", cmds, "-p", pidarg, NULL };
	pid_t gdb = rig_spawn(gdb_argv, NULL, log, dir, 0);
	if (wait_file(attached, 60000) != 0) {
		rig_cat(log);
		TL_FAIL("%s, %s: gdb did not attach to ssh-agent", which, m);
	}
	char *sign_argv[] = { "ssh-keygen", "-Y", "sign", "-f", pub, "-n", "file", data, NULL };
	const char *sign_env[] = { env_sock, NULL };
	pid_t signer = rig_spawn(sign_argv, sign_env, slog, dir, 0);
	if (wait_file(ready, 60000) != 0) {
		rig_cat(log);
		rig_cat(slog);
		TL_FAIL("%s, %s: ssh-agent did not stop inside the signature", which, m);
	}
	TL_CHECK(rig_file_has(log, "Breakpoint "), "%s, %s: gdb stopped elsewhere", which, m);
	rig_cat(log);
	snprintf(label, sizeof(label), "ssh-agent %s %s, inside the %s signature", m, which, which);
	h = heap_scan_pid(key, agent, label, require, heap);
	snprintf(label, sizeof(label), "ssh-agent %s %s, gcore inside the signature", m, which);
	struct heap_hits c = heap_scan_file(key, core, agent, label, require);
	h.other += c.other;
	h.stack += c.stack + c.regs;
	remove(core);
	rig_sh("touch '%s'", go);
	if (wait_exit(gdb, 60000) != 0) {
		rig_cat(log);
		TL_FAIL("%s, %s: gdb did not detach", which, m);
	}
	int st = wait_exit(signer, 60000);
	if (st != 0) {
		rig_cat(slog);
		TL_FAIL("%s, %s: ssh-keygen -Y sign through the agent failed (%d)", which, m, st);
	}
	char sig[320];
	snprintf(sig, sizeof(sig), "%s.sig", data);
	TL_CHECK(access(sig, R_OK) == 0, "%s, %s: no signature %s", which, m, sig);
	return h;
}

/*
 * The Ed25519 signing scalar and nonce prefix: SHA-512 of the seed, its
 * first half clamped (crypto_sign_ed25519 keeps it in a local array while
 * it signs).  Searched too, not required.
 */
static void add_expanded(struct scan_key *key)
{
	char seedf[320], azf[320];
	unsigned char az[64];
	FILE *f;
	int i;

	for (i = 0; i < key->count; i++)
		if (strcmp(key->needle[i].group, "ed25519") == 0)
			break;
	TL_CHECK(i < key->count, "no Ed25519 seed");
	snprintf(seedf, sizeof(seedf), "%s/seed", rig_tmpdir());
	snprintf(azf, sizeof(azf), "%s/az", rig_tmpdir());
	f = fopen(seedf, "we");
	TL_CHECK(f && fwrite(key->needle[i].bytes, 1, 32, f) == 32 && fclose(f) == 0, "write %s", seedf);
	TL_CHECK(rig_sh("openssl dgst -sha512 -binary < '%s' > '%s'", seedf, azf) == 0, "openssl dgst");
	f = fopen(azf, "re");
	TL_CHECK(f && fread(az, 1, 64, f) == 64, "read %s", azf);
	fclose(f);
	remove(seedf);
	remove(azf);
	az[0] &= 248;
	az[31] &= 63;
	az[31] |= 64;
	TL_CHECK(scan_key_add(key, "ed25519-az", "az", 0, az, 64, 0) == 0, "too many needles");
}

/* Returns the copies found outside the stack, and after the signatures
 * anywhere. */
static int run(const struct scan_key *key, int heap)
{
	const char *dir = rig_tmpdir(), *m = heap ? "heap" : "plain";
	char sock[300], log[300], label[80], core[300], corefile[350];
	struct heap_hits h;
	int other = 0, stack = 0;

	snprintf(sock, sizeof(sock), "%s/agent-%s.sock", dir, m);
	snprintf(log, sizeof(log), "%s/agent-%s.log", dir, m);
	char *argv[] = { agent_bin, "-D", "-a", sock, NULL };
	pid_t agent = rig_spawn(argv, heap ? heap_env() : NULL, log, dir, 0);
	for (int i = 0; i < 1000 && access(sock, F_OK) != 0; i++)
		sleep_ms(10);
	if (access(sock, F_OK) != 0) {
		rig_cat(log);
		TL_FAIL("ssh-agent (%s) did not start", m);
	}
	if (rig_sh("SSH_AUTH_SOCK='%s' ssh-add '%s' '%s' >>'%s' 2>&1 && SSH_AUTH_SOCK='%s' ssh-add -l >>'%s' 2>&1",
		   sock, ed_key, rsa_key, log, sock, log) != 0) {
		rig_cat(log);
		TL_FAIL("ssh-add to the agent (%s) failed", m);
	}

	h = sign_and_scan(key, agent, sock, "ed25519", heap);
	other += h.other;
	stack += h.stack;
	h = sign_and_scan(key, agent, sock, "rsa", heap);
	other += h.other;
	stack += h.stack;

	/* a third signature, not stopped */
	char pub[320], data[320];
	snprintf(pub, sizeof(pub), "%s.pub", ed_key);
	snprintf(data, sizeof(data), "%s/third-%s", dir, m);
	if (rig_sh("echo third > '%s' && SSH_AUTH_SOCK='%s' ssh-keygen -Y sign -f '%s' -n file '%s' >>'%s' 2>&1",
		   data, sock, pub, data, log) != 0) {
		rig_cat(log);
		TL_FAIL("the third signature (%s) failed", m);
	}
	/* Between uses ssh-agent keeps its keys shielded (encrypted with a key
	 * derived from a 16 KiB random "prekey"): nothing is required here. */
	snprintf(label, sizeof(label), "ssh-agent %s, after the signatures", m);
	h = heap_scan_pid(key, agent, label, NULL, heap);
	other += h.other;
	int idle = h.stack;

	snprintf(core, sizeof(core), "%s/agent-%s.gcore", dir, m);
	if (rig_gcore(agent, core, corefile, sizeof(corefile)) != 0)
		TL_FAIL("gcore of ssh-agent (%s) failed", m);
	snprintf(label, sizeof(label), "ssh-agent %s, gcore", m);
	h = heap_scan_file(key, corefile, agent, label, NULL);
	other += h.other;
	idle += h.stack + h.regs;
	remove(corefile);
	if (rig_file_has(log, "secretmem-heap:")) {
		rig_cat(log);
		if (heap)
			TL_FAIL("ssh-agent (heap): the module complained");
	}
	rig_stop(agent);
	fprintf(stderr, "ssh-agent %s: %d copies outside the stack; on the stack or in registers %d inside the "
		"signatures, %d after them\n", m, other, stack, idle);
	return other + idle;
}

int main(void)
{
	struct scan_key key, ed;
	const char *dir;

#if !defined(__x86_64__)
	tl_skip("the gdb stop inside the Ed25519 signature reads an argument register of x86-64");
#endif
	tl_need_root("gdb attaches to ssh-agent, which is not dumpable");
	rig_need("openssl");
	rig_need("ssh-agent");
	rig_need("ssh-add");
	rig_need("ssh-keygen");
	rig_need("gdb");
	rig_need("gcore");
	dir = rig_tmpdir();
	/* A copy of the binary without the set-group-ID bit (cp drops it). */
	snprintf(agent_bin, sizeof(agent_bin), "%s/ssh-agent", dir);
	if (rig_sh("cp \"$(command -v ssh-agent)\" '%s' && chmod 0755 '%s'", agent_bin, agent_bin) != 0)
		TL_FAIL("cannot copy ssh-agent");
	snprintf(rsa_key, sizeof(rsa_key), "%s/id_rsa", dir);
	snprintf(ed_key, sizeof(ed_key), "%s/id_ed25519", dir);
	/* RSA in PKCS#8 PEM (which ssh-add reads and scan_key_load parses),
	 * Ed25519 in OpenSSH's format (ssh-add reads no Ed25519 PEM). */
	if (rig_sh("openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out '%s' 2>/dev/null && "
		   "chmod 600 '%s' && ssh-keygen -y -f '%s' > '%s.pub' && "
		   "ssh-keygen -q -t ed25519 -N '' -C test -f '%s'", rsa_key, rsa_key, rsa_key, rsa_key, ed_key) != 0)
		TL_FAIL("cannot make the keys");
	if (scan_key_load(&key, rsa_key) != 0)
		TL_FAIL("cannot read the RSA key's numbers");
	memset(&ed, 0, sizeof(ed));
	if (heap_key_openssh_ed25519(&ed, ed_key) != 0 || heap_key_merge(&key, &ed) != 0)
		TL_FAIL("cannot read the Ed25519 key");
	add_expanded(&key);

	run(&key, 0);
	heap_need_module("t_heap_sshagent");
	int found = run(&key, 1);
	scan_key_free(&key);
	TL_CHECK(found == 0, "heap mode: %d copies of the keys found in ssh-agent outside the stack, or after the "
		 "signatures (listed above)", found);
	printf("ssh-agent: keys found without the module; under heap mode none outside the stack during the "
	       "signatures, none anywhere after them, nor in its core\n");
	return 0;
}
