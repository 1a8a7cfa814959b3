/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * exec_alloc.c - `secretmem exec --mode heap`: is another malloc preloaded?
 *
 * The heap module serves the program's malloc only when it is the one the
 * process binds and no other allocator is in the process
 * (secretmem-heap(7), ANOTHER ALLOCATOR).  Before it runs the program, exec
 * looks at what the dynamic linker will preload besides the module - each
 * entry of LD_PRELOAD (after the module, which exec puts first) and of
 * /etc/ld.so.preload - and at the ELF dynamic symbol table of each file: a
 * defined malloc or free makes it another allocator (jemalloc, tcmalloc,
 * mimalloc, a sanitizer runtime, glibc's libc_malloc_debug.so ...).
 *
 * A name without a slash is found as the dynamic linker finds it: in
 * LD_LIBRARY_PATH, then in /etc/ld.so.cache (an entry whose file has this
 * program's ELF class and machine), then in the default directories; the
 * tokens $LIB and $PLATFORM are expanded first (expand_dst), and an entry
 * exec cannot expand ($ORIGIN), or whose expansion is not there, gets a
 * warning.  The C library this process runs with is not another allocator
 * (the module, first in LD_PRELOAD, overrides its malloc).  A file that
 * cannot be found or read, or is not an ELF shared object of this machine,
 * is not an allocator here: the dynamic linker says what it makes of it.
 * Every read is bounded by the file's size.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli.h"

/* Debian's multiarch directory of this machine (a default directory). */
#if defined(__x86_64__)
#define MULTIARCH "x86_64-linux-gnu"
#elif defined(__aarch64__)
#define MULTIARCH "aarch64-linux-gnu"
#elif defined(__i386__)
#define MULTIARCH "i386-linux-gnu"
#else
#define MULTIARCH ""
#endif

#define MAX_TABLE ((size_t)64 << 20) /* a dynamic symbol or string table */
#define MAX_CACHE ((size_t)16 << 20)

/* The ELF class and machine of this program: the ones a library must have. */
static int self_kind(unsigned char *cls, uint16_t *machine)
{
	unsigned char h[EI_NIDENT + 4];
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	ssize_t n = pread(fd, h, sizeof(h), 0);
	close(fd);
	if (n != (ssize_t)sizeof(h) || memcmp(h, ELFMAG, SELFMAG) != 0)
		return -1;
	*cls = h[EI_CLASS];
	memcpy(machine, h + EI_NIDENT + 2, sizeof(*machine)); /* e_machine, after e_type */
	return 0;
}

/* n bytes at off of fd into a new buffer, if the file holds them. */
static void *read_at(int fd, off_t size, uint64_t off, uint64_t n)
{
	if (n == 0 || n > MAX_TABLE || off > (uint64_t)size || n > (uint64_t)size - off)
		return NULL;
	void *p = malloc(n);
	if (p && pread(fd, p, n, (off_t)off) != (ssize_t)n) {
		free(p);
		return NULL;
	}
	return p;
}

/* A section header, whatever the class. */
struct sec {
	uint32_t type, link;
	uint64_t off, size, entsize;
};

static int get_sec(int cls, const unsigned char *t, unsigned i, struct sec *s)
{
	if (cls == ELFCLASS64) {
		Elf64_Shdr h;
		memcpy(&h, t + (size_t)i * sizeof(h), sizeof(h));
		*s = (struct sec){ h.sh_type, h.sh_link, h.sh_offset, h.sh_size, h.sh_entsize };
	} else {
		Elf32_Shdr h;
		memcpy(&h, t + (size_t)i * sizeof(h), sizeof(h));
		*s = (struct sec){ h.sh_type, h.sh_link, h.sh_offset, h.sh_size, h.sh_entsize };
	}
	return 0;
}

/*
 * Does the file at path define malloc or free in its dynamic symbol table?
 * 1 (name into which), 0 no, -1 not an ELF file of this machine or
 * unreadable.
 */
int exec_defines_malloc(const char *path, const char **which)
{
	unsigned char cls, id[EI_NIDENT];
	uint16_t machine, want_machine;
	struct stat st;
	int rc = -1;

	if (self_kind(&cls, &want_machine) != 0)
		return -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || pread(fd, id, sizeof(id), 0) != (ssize_t)sizeof(id) ||
	    memcmp(id, ELFMAG, SELFMAG) != 0 || id[EI_CLASS] != cls ||
	    id[EI_DATA] != (__BYTE_ORDER == __LITTLE_ENDIAN ? ELFDATA2LSB : ELFDATA2MSB)) {
		close(fd);
		return -1;
	}
	uint64_t shoff;
	unsigned shnum, shentsize, want = cls == ELFCLASS64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);
	if (cls == ELFCLASS64) {
		Elf64_Ehdr e;
		if (pread(fd, &e, sizeof(e), 0) != (ssize_t)sizeof(e))
			goto out;
		shoff = e.e_shoff, shnum = e.e_shnum, shentsize = e.e_shentsize, machine = e.e_machine;
	} else {
		Elf32_Ehdr e;
		if (pread(fd, &e, sizeof(e), 0) != (ssize_t)sizeof(e))
			goto out;
		shoff = e.e_shoff, shnum = e.e_shnum, shentsize = e.e_shentsize, machine = e.e_machine;
	}
	if (machine != want_machine || shentsize != want || shnum == 0)
		goto out;
	unsigned char *shdrs = read_at(fd, st.st_size, shoff, (uint64_t)shnum * want);
	if (!shdrs)
		goto out;
	rc = 0;
	for (unsigned i = 0; i < shnum && rc == 0; i++) {
		struct sec sym, str;
		get_sec(cls, shdrs, i, &sym);
		if (sym.type != SHT_DYNSYM || sym.link >= shnum)
			continue;
		get_sec(cls, shdrs, sym.link, &str);
		size_t esz = cls == ELFCLASS64 ? sizeof(Elf64_Sym) : sizeof(Elf32_Sym);
		unsigned char *syms = read_at(fd, st.st_size, sym.off, sym.size);
		char *strs = read_at(fd, st.st_size, str.off, str.size);
		for (size_t k = 0; syms && strs && (k + 1) * esz <= sym.size; k++) {
			uint32_t name;
			uint16_t shndx;
			unsigned char info;
			if (cls == ELFCLASS64) {
				Elf64_Sym s;
				memcpy(&s, syms + k * esz, sizeof(s));
				name = s.st_name, shndx = s.st_shndx, info = s.st_info;
			} else {
				Elf32_Sym s;
				memcpy(&s, syms + k * esz, sizeof(s));
				name = s.st_name, shndx = s.st_shndx, info = s.st_info;
			}
			int bind = ELF64_ST_BIND(info), type = ELF64_ST_TYPE(info);
			if (shndx == SHN_UNDEF || name >= str.size || (bind != STB_GLOBAL && bind != STB_WEAK) ||
			    (type != STT_FUNC && type != STT_GNU_IFUNC))
				continue;
			const char *nm = strs + name;
			size_t room = str.size - name;
			if ((room > 6 && memcmp(nm, "malloc", 7) == 0) || (room > 4 && memcmp(nm, "free", 5) == 0)) {
				*which = nm[0] == 'm' ? "malloc" : "free";
				rc = 1;
				break;
			}
		}
		free(syms);
		free(strs);
	}
	free(shdrs);
out:
	close(fd);
	return rc;
}

/* dir/name into out if it is an ELF file of this machine (the dynamic
 * linker skips others too). */
static int in_dir(const char *dir, size_t dlen, const char *name, char *out, size_t len)
{
	const char *which;

	if ((size_t)snprintf(out, len, "%.*s%s%s", (int)dlen, dir, dlen ? "/" : "", name) >= len)
		return -1;
	if (access(out, R_OK) != 0)
		return -1;
	return exec_defines_malloc(out, &which) >= 0 ? 0 : -1;
}

/* name in /etc/ld.so.cache (glibc's format "glibc-ld.so.cache1.1", possibly
 * after the old "ld.so-1.7.0" table). */
static int in_cache(const char *name, char *out, size_t len)
{
	static const char newmagic[] = "glibc-ld.so.cache1.1";
	int fd = open("/etc/ld.so.cache", O_RDONLY | O_CLOEXEC);
	struct stat st;
	int found = -1;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || st.st_size < 48 || (size_t)st.st_size > MAX_CACHE) {
		close(fd);
		return -1;
	}
	size_t size = (size_t)st.st_size;
	unsigned char *c = malloc(size + 1);
	if (!c || pread(fd, c, size, 0) != (ssize_t)size) {
		free(c);
		close(fd);
		return -1;
	}
	close(fd);
	c[size] = '\0';
	size_t start = 0;
	if (memcmp(c, "ld.so-1.7.0", 11) == 0) {
		uint32_t nold;
		memcpy(&nold, c + 12, sizeof(nold));
		start = ((size_t)16 + (size_t)nold * 12 + 7) & ~(size_t)7;
	}
	if (start + 48 <= size && memcmp(c + start, newmagic, sizeof(newmagic) - 1) == 0) {
		uint32_t nlibs;
		memcpy(&nlibs, c + start + 20, sizeof(nlibs));
		for (size_t i = 0; i < nlibs && start + 48 + (i + 1) * 24 <= size && found != 0; i++) {
			uint32_t key, value;
			memcpy(&key, c + start + 48 + i * 24 + 4, sizeof(key));
			memcpy(&value, c + start + 48 + i * 24 + 8, sizeof(value));
			if (start + key >= size || start + value >= size ||
			    strcmp((const char *)c + start + key, name) != 0)
				continue;
			found = in_dir("", 0, (const char *)c + start + value, out, len);
		}
	}
	free(c);
	return found;
}

/* The file the dynamic linker would preload for entry, into out. */
static int resolve(const char *entry, char *out, size_t len)
{
	static const char *const defaults[] = { "/lib/" MULTIARCH, "/usr/lib/" MULTIARCH, "/lib64", "/usr/lib64",
						"/lib", "/usr/lib" };
	const char *llp = getenv("LD_LIBRARY_PATH");

	if (strchr(entry, '/'))
		return (size_t)snprintf(out, len, "%s", entry) < len ? 0 : -1;
	for (const char *p = llp ? llp : ""; *p;) {
		size_t l = strcspn(p, ":;");
		if (l && in_dir(p, l, entry, out, len) == 0)
			return 0;
		p += l;
		while (*p == ':' || *p == ';')
			p++;
	}
	if (in_cache(entry, out, len) == 0)
		return 0;
	for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
		if (in_dir(defaults[i], strlen(defaults[i]), entry, out, len) == 0)
			return 0;
	return -1;
}

/* dl_iterate_phdr(): the path of this process's C library (libc.so.N). */
static int libc_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	const char *name = info->dlpi_name, *base;

	(void)size;
	if (!name || !*name)
		return 0;
	base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
	if (strncmp(base, "libc.so.", 8) != 0)
		return 0;
	*(const char **)data = name;
	return 1;
}

static const char *self_libc(void)
{
	const char *name = NULL;

	dl_iterate_phdr(libc_cb, &name);
	return name;
}

/* 1 if path is the C library this process runs with: glibc's own malloc,
 * which the heap module (first in LD_PRELOAD) overrides. */
static int is_own_libc(const char *path)
{
	const char *libc = self_libc();
	struct stat a, b;

	return libc && stat(libc, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/*
 * The k-th expansion of the dynamic string tokens of entry, as glibc's
 * dynamic linker expands them in LD_PRELOAD and /etc/ld.so.preload, into
 * out: $LIB (or ${LIB}) is the directory of the C library without its
 * leading / and usr/ (lib/x86_64-linux-gnu on Debian, lib64 on Fedora);
 * $PLATFORM is AT_PLATFORM, or on x86-64 also "haswell" and "xeon_phi",
 * the names glibc before 2.37 gives some Intel CPUs (every one is checked).
 * A token is followed by '/' or the end; another $NAME stays as it is.
 * 1; 0 no more expansions (k too large, or no token: k 0 is entry
 * itself); -1 a token exec cannot expand ($ORIGIN: the program's
 * directory, or $LIB without a known C library).
 */
static int expand_dst(const char *entry, unsigned k, char *out, size_t len)
{
	static const char *const tokens[] = { "ORIGIN", "LIB", "PLATFORM" };
	const char *platforms[3] = { (const char *)getauxval(AT_PLATFORM) };
	unsigned nplat = 1, used_plat = 0, any = 0;
	size_t o = 0;
	char lib[PATH_MAX];

#if defined(__x86_64__)
	platforms[nplat++] = "haswell";
	platforms[nplat++] = "xeon_phi";
#endif
	lib[0] = '\0';
	for (const char *p = entry; *p;) {
		const char *val = NULL;
		size_t skip = 0;

		if (*p == '$') {
			for (size_t t = 0; t < sizeof(tokens) / sizeof(tokens[0]) && !skip; t++) {
				size_t tl = strlen(tokens[t]);
				if (p[1] == '{' && strncmp(p + 2, tokens[t], tl) == 0 && p[2 + tl] == '}')
					skip = tl + 3;
				else if (strncmp(p + 1, tokens[t], tl) == 0 && (p[1 + tl] == '/' || !p[1 + tl]))
					skip = tl + 1;
				if (!skip)
					continue;
				if (t == 0)
					return -1;
				if (t == 1) {
					const char *libc = self_libc(), *slash = libc ? strrchr(libc, '/') : NULL;
					if (!slash || slash == libc || (size_t)(slash - libc) >= sizeof(lib))
						return -1;
					snprintf(lib, sizeof(lib), "%.*s", (int)(slash - libc), libc);
					val = lib;
					while (*val == '/')
						val++;
					if (strncmp(val, "usr/", 4) == 0)
						val += 4;
				} else {
					used_plat = 1;
					val = k < nplat ? platforms[k] : NULL;
					if (!val)
						return k < nplat ? -1 : 0;
				}
			}
		}
		if (skip) {
			any = 1;
			size_t vl = strlen(val);
			if (o + vl >= len)
				return -1;
			memcpy(out + o, val, vl);
			o += vl;
			p += skip;
		} else {
			if (o + 1 >= len)
				return -1;
			out[o++] = *p++;
		}
	}
	out[o] = '\0';
	if (!any)
		return k == 0 ? 1 : 0;
	return used_plat || k == 0 ? 1 : 0;
}

/* Is the file the dynamic linker loads for entry another allocator? */
static int check_entry(const char *entry, const char *what, char *why, size_t len, int *exists)
{
	char path[PATH_MAX];
	const char *which;

	if (resolve(entry, path, sizeof(path)) != 0)
		return 0;
	if (access(path, F_OK) == 0)
		*exists = 1;
	if (exec_defines_malloc(path, &which) != 1 || is_own_libc(path))
		return 0;
	snprintf(why, len, "%s loads %s, which defines %s: another allocator would hold the heap "
		 "and the heap module would stay inactive", what, path, which);
	return 1;
}

/* The first allocator among the entries of list (':' or white space). */
static int scan_list(const char *list, const char *what, char *why, size_t len)
{
	for (const char *p = list; *p;) {
		size_t l = strcspn(p, ": \t\n");
		char entry[PATH_MAX], expanded[PATH_MAX];

		if (l && l < sizeof(entry)) {
			int rc, exists = 0, tokens = 0;

			memcpy(entry, p, l);
			entry[l] = '\0';
			for (unsigned k = 0; (rc = expand_dst(entry, k, expanded, sizeof(expanded))) > 0; k++) {
				tokens |= strcmp(entry, expanded) != 0;
				if (check_entry(expanded, what, why, len, &exists))
					return 1;
			}
			/* a token exec cannot expand, or an expansion that is not
			 * there: the dynamic linker may find another file */
			if (rc < 0 || (tokens && !exists))
				fprintf(stderr, "secretmem: exec: warning: %s entry %s: exec cannot tell which file the "
					"dynamic linker loads for it (%s), so it is not checked for another allocator\n",
					what, entry, rc < 0 ? "a token it cannot expand" : "its expansion is not found");
		}
		p += l;
		while (*p == ':' || *p == ' ' || *p == '\t' || *p == '\n')
			p++;
	}
	return 0;
}

int exec_other_allocator(char *why, size_t len)
{
	const char *pre = getenv("LD_PRELOAD");
	char buf[4096];

	if (pre && scan_list(pre, "LD_PRELOAD", why, len))
		return 1;
	int fd = open("/etc/ld.so.preload", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	for (char *c = strchr(buf, '#'); c; c = strchr(c, '#')) /* comments, to the end of the line */
		while (*c && *c != '\n')
			*c++ = ' ';
	return scan_list(buf, "/etc/ld.so.preload", why, len);
}
