/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/* scan.c - find private key material in a process or a file; see scan.h. */
#ifndef _GNU_SOURCE /* the Makefile also passes -D_GNU_SOURCE */
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "scan.h"

#define SCAN_CHUNK (4u << 20)
#define SCAN_MAX_FRAGS 512
#define SCAN_BLOOM_BITS 16
#define SCAN_MAX_REGION (64ull << 30)

struct frag {
	int needle;
	size_t off;   /* offset of the fragment in the needle */
	size_t len;
	uint64_t key; /* its first 8 bytes */
};

struct matcher {
	const struct scan_key *key;
	struct frag frag[SCAN_MAX_FRAGS];
	int nfrag;
	uint8_t bloom[(1u << SCAN_BLOOM_BITS) / 8];
};

/* ---- key material ------------------------------------------------------ */

static const struct {
	const char *field; /* as printed by `openssl pkey -text` */
	const char *group;
	int required;
	int both_orders;
} fields[] = {
	{ "privateExponent", "d", 1, 1 },
	{ "prime1", "p", 1, 1 },
	{ "prime2", "q", 1, 1 },
	{ "exponent1", "dP", 0, 1 },
	{ "exponent2", "dQ", 0, 1 },
	{ "coefficient", "qInv", 0, 1 },
	{ "priv", "ed25519", 1, 0 },
};

int scan_key_add(struct scan_key *key, const char *name, const char *group, int required,
		 const unsigned char *bytes, size_t len, int reverse)
{
	struct scan_needle *n;

	if (key->count >= SCAN_MAX_NEEDLES || len < 8)
		return -1;
	n = &key->needle[key->count];
	n->bytes = malloc(len);
	if (!n->bytes)
		return -1;
	for (size_t i = 0; i < len; i++)
		n->bytes[i] = reverse ? bytes[len - 1 - i] : bytes[i];
	n->len = len;
	n->required = required;
	snprintf(n->name, sizeof(n->name), "%s", name);
	snprintf(n->group, sizeof(n->group), "%s", group);
	key->count++;
	return 0;
}

static int add_needle(struct scan_key *key, const char *group, const char *order, int required,
		      const unsigned char *bytes, size_t len, int reverse)
{
	char name[sizeof(key->needle[0].name)];

	if (order)
		snprintf(name, sizeof(name), "%s(%s)", group, order);
	else
		snprintf(name, sizeof(name), "%s", group);
	return scan_key_add(key, name, group, required, bytes, len, reverse);
}

static int finish_field(struct scan_key *key, const char *field, unsigned char *buf, size_t len)
{
	size_t skip = 0;

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		if (strcmp(field, fields[i].field) != 0)
			continue;
		if (fields[i].both_orders)
			while (skip < len && buf[skip] == 0) /* DER's sign byte */
				skip++;
		if (!fields[i].both_orders)
			return add_needle(key, fields[i].group, NULL, fields[i].required, buf, len, 0);
		if (add_needle(key, fields[i].group, "be", fields[i].required, buf + skip, len - skip, 0) ||
		    add_needle(key, fields[i].group, "le", fields[i].required, buf + skip, len - skip, 1))
			return -1;
	}
	return 0;
}

int scan_key_load(struct scan_key *key, const char *path)
{
	char cmd[4200], line[512], field[64] = "";
	unsigned char buf[1024];
	size_t len = 0;
	FILE *p;
	int rc = 0;

	memset(key, 0, sizeof(*key));
	snprintf(cmd, sizeof(cmd), "openssl pkey -in '%s' -text -noout 2>&1", path);
	p = popen(cmd, "r");
	if (!p) {
		fprintf(stderr, "scan: popen: %s\n", strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), p)) {
		if (line[0] == ' ') {
			/* "    00:c5:1a:..." continues the current field */
			for (char *s = line; *s;) {
				unsigned v;
				int used;

				while (*s == ' ' || *s == ':' || *s == '\n')
					s++;
				if (!*s || sscanf(s, "%2x%n", &v, &used) != 1)
					break;
				if (len < sizeof(buf))
					buf[len++] = (unsigned char)v;
				s += used;
			}
			continue;
		}
		if (field[0] && len && finish_field(key, field, buf, len))
			rc = -1;
		field[0] = '\0';
		len = 0;
		size_t l = strcspn(line, "\n");
		if (l > 1 && l < sizeof(field) && line[l - 1] == ':') {
			memcpy(field, line, l - 1);
			field[l - 1] = '\0';
		}
	}
	if (field[0] && len && finish_field(key, field, buf, len))
		rc = -1;
	if (pclose(p) != 0 || key->count == 0) {
		fprintf(stderr, "scan: could not read the private key %s with openssl pkey\n", path);
		rc = -1;
	}
	/* The key file's text itself (its base64 encodes everything above). */
	FILE *f = fopen(path, "re");
	if (f) {
		unsigned char text[8192];
		size_t n = fread(text, 1, sizeof(text), f);

		fclose(f);
		if (n > 0 && add_needle(key, "pem", NULL, 0, text, n, 0))
			rc = -1;
	}
	if (rc)
		scan_key_free(key);
	return rc;
}

void scan_key_free(struct scan_key *key)
{
	for (int i = 0; i < key->count; i++)
		free(key->needle[i].bytes);
	memset(key, 0, sizeof(*key));
}

/* ---- matching ---------------------------------------------------------- */

static uint64_t load64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static unsigned bloom_hash(uint64_t k)
{
	return (unsigned)((k * 0x9e3779b97f4a7c15ull) >> (64 - SCAN_BLOOM_BITS));
}

static void matcher_init(struct matcher *m, const struct scan_key *key)
{
	memset(m, 0, sizeof(*m));
	m->key = key;
	for (int i = 0; i < key->count; i++) {
		const struct scan_needle *n = &key->needle[i];

		for (size_t off = 0; off < n->len && m->nfrag < SCAN_MAX_FRAGS; off += SCAN_FRAG) {
			struct frag *f = &m->frag[m->nfrag++];

			f->needle = i;
			f->len = n->len < SCAN_FRAG ? n->len : SCAN_FRAG;
			f->off = off + f->len <= n->len ? off : n->len - f->len;
			f->key = load64(n->bytes + f->off);
			m->bloom[bloom_hash(f->key) / 8] |= (uint8_t)(1u << (bloom_hash(f->key) % 8));
		}
	}
}

static int record(struct scan_result *res, const struct frag *f, uint64_t start, const char *where,
		  const unsigned char *before)
{
	for (int i = 0; i < res->count; i++) {
		struct scan_copy *c = &res->copy[i];

		if (c->needle == f->needle && c->start == start) {
			c->fragments++;
			return 0;
		}
	}
	if (res->count == res->cap) {
		int cap = res->cap ? res->cap * 2 : 16;
		struct scan_copy *v = realloc(res->copy, (size_t)cap * sizeof(*v));

		if (!v)
			return -1;
		res->copy = v;
		res->cap = cap;
	}
	struct scan_copy *c = &res->copy[res->count++];
	memset(c, 0, sizeof(*c));
	c->needle = f->needle;
	c->start = start;
	c->fragments = 1;
	snprintf(c->where, sizeof(c->where), "%s", where);
	if (before) {
		memcpy(c->before, before, sizeof(c->before));
		c->have_before = 1;
	}
	return 0;
}

/*
 * Match in buf[0, len), reporting hits that start before limit (the rest
 * overlaps the next chunk).  base: address or file offset of buf[0];
 * region_base / desc: the mapping, for the "where" text.
 */
static void match_buf(const struct matcher *m, struct scan_result *res, const unsigned char *buf,
		      size_t len, size_t limit, uint64_t base, uint64_t region_base, const char *desc)
{
	if (len < 8)
		return;
	for (size_t pos = 0; pos + 8 <= len && pos < limit; pos++) {
		uint64_t k = load64(buf + pos);
		unsigned h = bloom_hash(k);

		if (!(m->bloom[h / 8] & (1u << (h % 8))))
			continue;
		for (int i = 0; i < m->nfrag; i++) {
			const struct frag *f = &m->frag[i];
			char where[160];

			if (f->key != k || pos + f->len > len || memcmp(buf + pos, m->key->needle[f->needle].bytes + f->off, f->len))
				continue;
			uint64_t start = base + pos - f->off;
			snprintf(where, sizeof(where), "%s +0x%" PRIx64, desc, start - region_base);
			record(res, f, start, where,
			       pos >= f->off + 8 ? buf + pos - f->off - 8 : NULL);
		}
	}
}

/* Scan [off, off+size) of fd (pread), chunk by chunk; -errno on a read error. */
static int scan_range(const struct matcher *m, struct scan_result *res, int fd, uint64_t off,
		      uint64_t size, const char *desc, unsigned char *buf)
{
	for (uint64_t done = 0; done < size;) {
		size_t want = size - done > SCAN_CHUNK + 64 ? SCAN_CHUNK + 64 : (size_t)(size - done);
		size_t got = 0;

		while (got < want) {
			ssize_t n = pread(fd, buf + got, want - got, (off_t)(off + done + got));

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				return got ? 0 : -errno;
			if (n == 0)
				break;
			got += (size_t)n;
		}
		if (got == 0)
			return 0;
		res->bytes += got < SCAN_CHUNK ? got : SCAN_CHUNK;
		match_buf(m, res, buf, got, SCAN_CHUNK, off + done, off, desc);
		if (got < want)
			return 0;
		done += SCAN_CHUNK;
	}
	return 0;
}

struct region_info {
	uint64_t start, end;
	char perms[8];
	char name[160];
	long kb;  /* Rss + Swap: 0 means no page holds any data */
};

/* The mappings of pid with their resident and swapped size (smaps). */
static struct region_info *read_regions(pid_t pid, size_t *count)
{
	char path[64], line[1024];
	struct region_info *v = NULL, *cur = NULL;
	size_t n = 0, cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f)) {
		uint64_t start, end;
		char perms[8];
		int name_at = 0;
		long kb;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %*s %*s %*s %n", &start, &end, perms, &name_at) >= 3 &&
		    name_at > 0) {
			if (n == cap) {
				size_t ncap = cap ? cap * 2 : 128;
				struct region_info *nv = realloc(v, ncap * sizeof(*nv));

				if (!nv)
					break;
				v = nv;
				cap = ncap;
			}
			cur = &v[n++];
			memset(cur, 0, sizeof(*cur));
			cur->start = start;
			cur->end = end;
			snprintf(cur->perms, sizeof(cur->perms), "%s", perms);
			line[strcspn(line, "\n")] = '\0';
			snprintf(cur->name, sizeof(cur->name), "%s", line + name_at);
		} else if (cur && (sscanf(line, "Rss: %ld kB", &kb) == 1 || sscanf(line, "Swap: %ld kB", &kb) == 1)) {
			cur->kb += kb;
		}
	}
	fclose(f);
	*count = n;
	if (!v)
		v = calloc(1, sizeof(*v)); /* no mappings at all: not an error */
	return v;
}

int scan_pid(const struct scan_key *key, pid_t pid, struct scan_result *res, const char *label)
{
	char path[64];
	struct region_info *regions;
	struct matcher *m;
	unsigned char *buf;
	size_t count = 0;
	int fd, rc = 0;

	memset(res, 0, sizeof(*res));
	m = malloc(sizeof(*m));
	buf = malloc(SCAN_CHUNK + 64);
	regions = read_regions(pid, &count);
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (!m || !buf || !regions || fd < 0) {
		fprintf(stderr, "scan: cannot read process %d: %s\n", (int)pid, strerror(errno));
		rc = -1;
		goto out;
	}
	matcher_init(m, key);
	for (size_t i = 0; i < count; i++) {
		const struct region_info *r = &regions[i];
		char desc[220];

		if (strncmp(r->name, "/secretmem ", 11) == 0)
			res->secret_regions++;
		if (r->perms[0] != 'r' || strncmp(r->name, "[vvar", 5) == 0 || strcmp(r->name, "[vsyscall]") == 0)
			continue;
		/*
		 * Anonymous memory without a single page resident or swapped
		 * holds nothing (a file mapping would still show the file).
		 */
		if (r->kb == 0 && (r->name[0] == '\0' || r->name[0] == '['))
			continue;
		snprintf(desc, sizeof(desc), "%" PRIx64 "-%" PRIx64 " %s %s", r->start, r->end, r->perms,
			 r->name[0] ? r->name : "[anon]");
		/*
		 * Terabyte-sized reservations (the shadow of ASan or TSan when
		 * the module is built with a sanitizer) cannot be read in a
		 * test's time; they hold shadow bytes, not data.  Reported.
		 */
		if (r->end - r->start > SCAN_MAX_REGION) {
			res->skipped++;
			if (label)
				fprintf(stderr, "%s: skipped %s (%" PRIu64 " GiB)\n", label, desc,
					(r->end - r->start) >> 30);
			continue;
		}
		res->regions++;
		if (scan_range(m, res, fd, r->start, r->end - r->start, desc, buf) < 0)
			res->unreadable++;
	}
	rc = res->count;
	if (label)
		for (int i = 0; i < res->count; i++) {
			const struct scan_copy *c = &res->copy[i];
			const struct scan_needle *n = &key->needle[c->needle];
			int total = (int)((n->len + SCAN_FRAG - 1) / SCAN_FRAG);

			fprintf(stderr, "%s: found %s (%zu bytes, %d/%d fragments) at 0x%" PRIx64 " in %s",
				label, n->name, n->len, c->fragments, total, c->start, c->where);
			if (c->have_before) {
				fprintf(stderr, "; preceded by");
				for (int j = 0; j < 8; j++)
					fprintf(stderr, " %02x", c->before[j]);
			}
			fputc('\n', stderr);
		}
out:
	free(regions);
	if (fd >= 0)
		close(fd);
	free(buf);
	free(m);
	return rc;
}

int scan_file(const struct scan_key *key, const char *path, struct scan_result *res, const char *label)
{
	struct matcher *m;
	unsigned char *buf;
	char desc[300];
	int fd, rc;
	off_t size;

	memset(res, 0, sizeof(*res));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "scan: open %s: %s\n", path, strerror(errno));
		return -1;
	}
	size = lseek(fd, 0, SEEK_END);
	m = malloc(sizeof(*m));
	buf = malloc(SCAN_CHUNK + 64);
	if (!m || !buf || size < 0) {
		free(m);
		free(buf);
		close(fd);
		return -1;
	}
	matcher_init(m, key);
	snprintf(desc, sizeof(desc), "file %s", path);
	res->regions = 1;
	scan_range(m, res, fd, 0, (uint64_t)size, desc, buf);
	rc = res->count;
	if (label)
		for (int i = 0; i < res->count; i++)
			fprintf(stderr, "%s: found %s at offset 0x%" PRIx64 " of %s\n", label,
				key->needle[res->copy[i].needle].name, res->copy[i].start, path);
	free(buf);
	free(m);
	close(fd);
	return rc;
}

void scan_result_free(struct scan_result *res)
{
	free(res->copy);
	memset(res, 0, sizeof(*res));
}

int scan_found(const struct scan_result *res, int i)
{
	int n = 0;

	for (int j = 0; j < res->count; j++)
		if (i < 0 || res->copy[j].needle == i)
			n++;
	return n;
}

int scan_all_required_found(const struct scan_key *key, const struct scan_result *res)
{
	int rc = 0;

	for (int i = 0; i < key->count; i++) {
		const struct scan_needle *n = &key->needle[i];
		int found = 0;

		if (!n->required)
			continue;
		for (int j = 0; j < key->count; j++)
			if (strcmp(key->needle[j].group, n->group) == 0)
				found += scan_found(res, j);
		if (!found) {
			fprintf(stderr, "scan: %s not found\n", n->name);
			rc = -1;
		}
	}
	return rc;
}

void scan_report(const struct scan_key *key, const struct scan_result *res, const char *label)
{
	fprintf(stderr, "%s: %zu regions, %zu bytes scanned, %zu unreadable, %zu secretmem mappings, "
		"%zu skipped\n", label, res->regions, res->bytes, res->unreadable, res->secret_regions,
		res->skipped);
	for (int i = 0; i < key->count; i++)
		fprintf(stderr, "%s:   %-12s %4zu bytes: %d cop%s\n", label, key->needle[i].name,
			key->needle[i].len, scan_found(res, i), scan_found(res, i) == 1 ? "y" : "ies");
}
