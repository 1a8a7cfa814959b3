/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/* heapscan.c - the rig of the heap-mode proofs; see heapscan.h. */
#ifndef _GNU_SOURCE /* the Makefile also passes -D_GNU_SOURCE */
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <elf.h>
#include <fcntl.h>
#include <inttypes.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include "heapscan.h"
#include "tlib.h"

const char *heap_module(void)
{
	static char path[PATH_MAX];

	if (!realpath(tl_build_path("libsecretmem-heap.so"), path))
		return NULL;
	return path;
}

void heap_need_module(const char *test)
{
	char msg[400], cmd[PATH_MAX + 64];
	const char *mod = heap_module();

	if (!mod) {
		snprintf(msg, sizeof(msg),
			 "%s: control passed (the scan finds the keys); heap mode not checked: "
			 "%s not built", test, tl_build_path("libsecretmem-heap.so"));
		tl_skip(msg);
	}
	snprintf(cmd, sizeof(cmd), "ldd '%s' 2>/dev/null | grep -q 'libasan\\|libtsan'", mod);
	if (rig_sh("%s", cmd) == 0) {
		snprintf(msg, sizeof(msg), "%s: control passed; the heap module is built with a sanitizer, whose "
			 "runtime replaces malloc itself: heap mode is checked in normal builds", test);
		tl_skip(msg);
	}
	tl_need_secretmem();
}

const char *const *heap_env(void)
{
	static char preload[PATH_MAX + 16];
	static const char *env[4];
	const char *mod = heap_module();

	if (!mod)
		TL_FAIL("heap_env: the heap module is not built");
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", mod);
	env[0] = preload;
	env[1] = "G_SLICE=always-malloc";
	env[2] = NULL;
	return env;
}

void heap_key_random(struct scan_key *needles, unsigned char key[32], char hex[65], char *keyfile, size_t len)
{
	TL_CHECK(getrandom(key, 32, 0) == 32, "getrandom");
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", key[i]);
	memset(needles, 0, sizeof(*needles));
	TL_CHECK(scan_key_add(needles, "key", "key", 1, key, 32, 0) == 0 &&
			 scan_key_add(needles, "hex", "hex", 1, (const unsigned char *)hex, 64, 0) == 0,
		 "needles");
	snprintf(keyfile, len, "%s/key.bin", rig_tmpdir());
	FILE *f = fopen(keyfile, "we");
	TL_CHECK(f && fwrite(key, 1, 32, f) == 32 && fclose(f) == 0, "%s", keyfile);
}

/* The syscall thread tid of pid is in (/proc/PID/task/TID/syscall), or -1. */
long heap_in_syscall(pid_t pid, long tid)
{
	char path[96];
	long nr = -1;

	snprintf(path, sizeof(path), "/proc/%d/task/%ld/syscall", (int)pid, tid);
	FILE *f = fopen(path, "re");
	if (f) {
		if (fscanf(f, "%ld", &nr) != 1)
			nr = -1;
		fclose(f);
	}
	return nr;
}

void heap_stackkey_setup(const char *test, struct scan_key *key, char *helper, char *keyfile)
{
	unsigned char k[32];
	char hex[65];

	heap_need_module(test);
	if (!realpath(tl_build_path("test/helpers/heap_stackkey"), helper))
		tl_skip("test/helpers/heap_stackkey is not built");
	heap_key_random(key, k, hex, keyfile, PATH_MAX);
	/* the unprivileged run reads the key file too (a test key) */
	TL_CHECK(chmod(rig_tmpdir(), 0755) == 0 && chmod(keyfile, 0644) == 0, "chmod");
}

void heap_hits_count(const struct scan_result *res, struct heap_hits *h)
{
	h->stack = h->other = h->regs = 0;
	for (int i = 0; i < res->count; i++)
		if (strstr(res->copy[i].where, " [stack] "))
			h->stack++;
		else
			h->other++;
}

/* 1 if group is named in the comma-separated list (or the list is "*"). */
static int in_list(const char *list, const char *group)
{
	size_t n = strlen(group);

	if (strcmp(list, "*") == 0)
		return 1;
	for (const char *p = list; *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
		if (strncmp(p, group, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return 1;
		if (!p[strcspn(p, ",")])
			break;
	}
	return 0;
}

/*
 * 0 when every required number of the groups in require was found outside
 * the stack (in either byte order), else -1 with the missing ones printed.
 */
static int required_outside_stack(const struct scan_key *key, const struct scan_result *res, const char *require)
{
	int rc = 0;

	for (int i = 0; i < key->count; i++) {
		const struct scan_needle *n = &key->needle[i];
		int found = 0;

		/* "*": the required numbers; a named group: each of its needles */
		if (!in_list(require, n->group) || (strcmp(require, "*") == 0 && !n->required))
			continue;
		for (int j = 0; j < res->count; j++)
			if (strcmp(key->needle[res->copy[j].needle].group, n->group) == 0 &&
			    !strstr(res->copy[j].where, " [stack] "))
				found++;
		if (!found) {
			fprintf(stderr, "scan: %s not found outside the stack\n", n->name);
			rc = -1;
		}
	}
	return rc;
}

struct heap_hits heap_scan_pid(const struct scan_key *key, pid_t pid, const char *label, const char *require,
			       int heap)
{
	struct scan_result res;
	struct heap_hits h;
	int n = scan_pid(key, pid, &res, label);

	scan_report(key, &res, label);
	if (n < 0)
		TL_FAIL("%s: the scan of process %d failed", label, (int)pid);
	heap_hits_count(&res, &h);
	fprintf(stderr, "%s: %d copies (heap/other %d, stack %d), secret memory %ld KiB in %zu mappings\n",
		label, n, h.other, h.stack, rig_secret_rss_kb(pid), res.secret_regions);
	if (require && required_outside_stack(key, &res, require) != 0)
		TL_FAIL("%s: control: the scanner did not find the key outside the stack", label);
	if (heap && res.secret_regions == 0)
		TL_FAIL("%s: heap mode, but the process has no secret memory mapping", label);
	scan_result_free(&res);
	return h;
}

/* The [stack] range of pid (0, 0 if not found). */
static void stack_range(pid_t pid, uint64_t *lo, uint64_t *hi)
{
	char path[64], line[512];
	FILE *f;

	*lo = *hi = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "[stack]") && sscanf(line, "%" SCNx64 "-%" SCNx64, lo, hi) == 2)
			break;
	fclose(f);
}

/* The address a core file's offset was dumped from (0: none). */
static uint64_t core_vaddr(int fd, uint64_t off)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;

	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64)
		return 0;
	for (int i = 0; i < eh.e_phnum; i++) {
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)) !=
		    (ssize_t)sizeof(ph))
			return 0;
		if (ph.p_type == PT_LOAD && off >= ph.p_offset && off < ph.p_offset + ph.p_filesz)
			return ph.p_vaddr + (off - ph.p_offset);
	}
	return 0;
}

struct heap_hits heap_scan_file(const struct scan_key *key, const char *path, pid_t pid, const char *label,
				const char *require)
{
	struct scan_result res;
	struct heap_hits h = { 0, 0, 0 };
	uint64_t lo = 0, hi = 0;
	int n = scan_file(key, path, &res, label), fd = open(path, O_RDONLY | O_CLOEXEC);

	scan_report(key, &res, label);
	if (n < 0 || fd < 0)
		TL_FAIL("%s: the scan of %s failed", label, path);
	if (pid > 0)
		stack_range(pid, &lo, &hi);
	for (int i = 0; i < res.count; i++) {
		uint64_t va = core_vaddr(fd, res.copy[i].start);

		if (!va) {
			/* not memory: the notes, where the registers are (SIMD
			 * registers keep what the last copies moved) */
			h.regs++;
			snprintf(res.copy[i].where, sizeof(res.copy[i].where), "core notes [stack] ");
		} else if (va >= lo && va < hi) {
			h.stack++;
			/* so that required_outside_stack() sees where it is */
			snprintf(res.copy[i].where, sizeof(res.copy[i].where), "core at 0x%" PRIx64 " [stack] ", va);
		} else {
			h.other++;
			snprintf(res.copy[i].where, sizeof(res.copy[i].where), "core at 0x%" PRIx64, va);
		}
		fprintf(stderr, "%s: %s of the core: %s\n", label, key->needle[res.copy[i].needle].name,
			res.copy[i].where);
	}
	close(fd);
	fprintf(stderr, "%s: %d copies in the core file (heap/other %d, stack %d, registers %d)\n", label, n,
		h.other, h.stack, h.regs);
	if (require && required_outside_stack(key, &res, require) != 0)
		TL_FAIL("%s: control: the scanner did not find the key in the core file", label);
	scan_result_free(&res);
	return h;
}

void heap_gdbstop_start(struct gdbstop *g, const char *name, int heap, const char *stop, char *const prog[])
{
	gdbstop_run(g, name, heap ? "heap" : "plain", heap ? heap_env() : NULL, stop, prog, 60000);
}

/* ---- key material -------------------------------------------------------- */


/* Both byte orders of a big-endian number (leading zero bytes dropped). */
static int add_number(struct scan_key *key, const char *group, int required, const unsigned char *be, size_t len)
{
	char name[24];

	while (len > 0 && be[0] == 0) {
		be++;
		len--;
	}
	snprintf(name, sizeof(name), "%s(be)", group);
	if (scan_key_add(key, name, group, required, be, len, 0))
		return -1;
	snprintf(name, sizeof(name), "%s(le)", group);
	return scan_key_add(key, name, group, required, be, len, 1);
}

/*
 * The text of a key file, without "-----BEGIN/END ...-----" lines: those
 * are constants that programs carry (ssh-agent's binary has OpenSSH's),
 * the rest encodes the key.
 */
static int add_text(struct scan_key *key, const char *name, const char *path)
{
	char text[8192], line[1024];
	FILE *f = fopen(path, "re");
	size_t n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		size_t l = strlen(line);

		if (strncmp(line, "-----", 5) == 0 || n + l >= sizeof(text))
			continue;
		memcpy(text + n, line, l);
		n += l;
	}
	fclose(f);
	return n > 0 ? scan_key_add(key, name, "text", 0, (const unsigned char *)text, n, 0) : -1;
}

static int b64val(int c)
{
	const char *tab = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *p = c ? strchr(tab, c) : NULL;

	return p ? (int)(p - tab) : -1;
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Read an SSH "string" at *pos of blob[0, len): its bytes and length. */
static const unsigned char *ssh_string(const unsigned char *blob, size_t len, size_t *pos, size_t *slen)
{
	if (*pos + 4 > len)
		return NULL;
	*slen = be32(blob + *pos);
	if (*slen > len - *pos - 4)
		return NULL;
	*pos += 4 + *slen;
	return blob + *pos - *slen;
}

int heap_key_openssh_ed25519(struct scan_key *key, const char *path)
{
	char line[256];
	unsigned char blob[4096];
	size_t len = 0, pos = 15, slen;
	unsigned acc = 0;
	int bits = 0, in = 0;
	const unsigned char *s;
	FILE *f = fopen(path, "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, "BEGIN OPENSSH PRIVATE KEY")) {
			in = 1;
			continue;
		}
		if (strstr(line, "END OPENSSH PRIVATE KEY"))
			break;
		for (char *c = line; in && *c; c++) {
			int v = b64val((unsigned char)*c);

			if (v < 0)
				continue;
			acc = (acc << 6) | (unsigned)v;
			bits += 6;
			if (bits >= 8 && len < sizeof(blob)) {
				bits -= 8;
				blob[len++] = (unsigned char)(acc >> bits);
			}
		}
	}
	fclose(f);
	if (len < 15 || memcmp(blob, "openssh-key-v1", 15) != 0)
		goto bad;
	/* cipher, kdf, kdf options, key count, public key, private block */
	if (!(s = ssh_string(blob, len, &pos, &slen)) || slen != 4 || memcmp(s, "none", 4) != 0)
		goto bad; /* encrypted */
	if (!ssh_string(blob, len, &pos, &slen) || !ssh_string(blob, len, &pos, &slen) || pos + 4 > len ||
	    be32(blob + pos) != 1)
		goto bad;
	pos += 4;
	size_t plen, ppos = 8;
	const unsigned char *priv;
	if (!ssh_string(blob, len, &pos, &slen) || !(priv = ssh_string(blob, len, &pos, &plen)))
		goto bad;
	/* checkint x2, key type, public key (32), secret key (seed || public key) */
	if (!(s = ssh_string(priv, plen, &ppos, &slen)) || slen != 11 || memcmp(s, "ssh-ed25519", 11) != 0 ||
	    !ssh_string(priv, plen, &ppos, &slen) || !(s = ssh_string(priv, plen, &ppos, &slen)) || slen != 64)
		goto bad;
	if (scan_key_add(key, "ed25519", "ed25519", 1, s, 32, 0) || add_text(key, "openssh-text", path))
		return -1;
	return 0;
bad:
	fprintf(stderr, "heapscan: %s is not an unencrypted OpenSSH Ed25519 key\n", path);
	return -1;
}

int heap_key_gpg(struct scan_key *key, const char *path)
{
	static const char *const rsa[] = { "d", "p", "q", "u" };
	char text[16384];
	size_t n;
	int ecc, found = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return -1;
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	ecc = strstr(text, "(private-key (ecc") != NULL;
	if (!ecc && !strstr(text, "(private-key (rsa")) {
		fprintf(stderr, "heapscan: %s: not an unprotected RSA or ECC key of gpg-agent\n", path);
		return -1;
	}
	for (int i = 0; i < (ecc ? 1 : 4); i++) {
		char tok[8], *p;
		unsigned char num[1024];
		size_t len = 0;
		char group[12];

		snprintf(tok, sizeof(tok), "(%s", rsa[i]);
		for (p = strstr(text, tok); p; p = strstr(p + 1, tok))
			if (isspace((unsigned char)p[2]) || p[2] == '#')
				break;
		if (!p || !(p = strchr(p, '#')))
			continue;
		for (p++; *p && *p != '#'; p++) {
			unsigned v;

			if (isspace((unsigned char)*p))
				continue;
			if (!isxdigit((unsigned char)p[0]) || !isxdigit((unsigned char)p[1]) ||
			    sscanf(p, "%2x", &v) != 1 || len >= sizeof(num))
				break;
			num[len++] = (unsigned char)v;
			p++;
		}
		snprintf(group, sizeof(group), "%s%s", ecc ? "ed" : "", rsa[i]);
		if (add_number(key, group, i < 3, num, len))
			return -1;
		found++;
	}
	if (found != (ecc ? 1 : 4)) {
		fprintf(stderr, "heapscan: %s: secret numbers not found\n", path);
		return -1;
	}
	return add_text(key, ecc ? "gpgkey-text(ecc)" : "gpgkey-text(rsa)", path);
}

int heap_key_merge(struct scan_key *dst, struct scan_key *src)
{
	if (dst->count + src->count > SCAN_MAX_NEEDLES)
		return -1;
	for (int i = 0; i < src->count; i++)
		dst->needle[dst->count++] = src->needle[i];
	memset(src, 0, sizeof(*src));
	return 0;
}

struct heap_mem heap_mem_of(pid_t pid)
{
	struct heap_mem m = { -1, -1, -1 };
	char path[64], line[512];
	int kind = 0; /* 1 secret, 2 heap, 3 anon */
	FILE *f;
	long v;

	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return m;
	m.secret_kb = m.heap_kb = m.anon_kb = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b;
		int name = 0;

		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &a, &b, &name) >= 2 && name > 0) {
			const char *nm = line + name;

			kind = strncmp(nm, "/secretmem", 10) == 0 ? 1 : strncmp(nm, "[heap]", 6) == 0 ? 2 :
			       (*nm == '\n' || *nm == '\0') ? 3 : 0;
		} else if (kind && sscanf(line, "Rss: %ld kB", &v) == 1) {
			if (kind == 1)
				m.secret_kb += v;
			else if (kind == 2)
				m.heap_kb += v;
			else
				m.anon_kb += v;
		}
	}
	fclose(f);
	return m;
}
