/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * dynobj.c - symbols and relocations of a loaded object (dynobj.h).
 *
 * Everything is read from the object's dynamic section as mapped: the
 * symbol table and its hash table (DT_GNU_HASH or DT_HASH) for the symbols
 * it exports, DT_RELA and DT_JMPREL for the symbols it imports.  Some
 * architectures' dynamic linkers store the dynamic section's addresses
 * relocated, others not: an address below the load bias is an offset.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "dynobj.h"

#if __ELF_NATIVE_CLASS == 64
#define SYM_BIND ELF64_ST_BIND
#define SYM_VIS ELF64_ST_VISIBILITY
#define REL_SYM ELF64_R_SYM
#define REL_TYPE ELF64_R_TYPE
#else
#define SYM_BIND ELF32_ST_BIND
#define SYM_VIS ELF32_ST_VISIBILITY
#define REL_SYM ELF32_R_SYM
#define REL_TYPE ELF32_R_TYPE
#endif

static uintptr_t dyn_addr(uintptr_t base, uintptr_t v)
{
	return v < base ? v + base : v;
}

int sm_dyn_open(const struct dl_phdr_info *info, struct sm_dynobj *o)
{
	const ElfW(Dyn) *dyn = NULL;
	size_t relasz = 0, pltsz = 0;
	uintptr_t rela = 0, jmprel = 0;
	long pltrel = 0;
	long ps = sysconf(_SC_PAGESIZE);

	memset(o, 0, sizeof(*o));
	o->base = info->dlpi_addr;
	o->name = info->dlpi_name ? info->dlpi_name : "";
	o->phdr = info->dlpi_phdr;
	o->phnum = info->dlpi_phnum;
	o->lo = UINTPTR_MAX;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)a;
		else if (ph->p_type == PT_LOAD) {
			if (a < o->lo)
				o->lo = a;
			if (a + ph->p_memsz > o->hi)
				o->hi = a + ph->p_memsz;
		} else if (ph->p_type == PT_GNU_RELRO && ps > 0) {
			o->relro_lo = a & ~((uintptr_t)ps - 1);
			o->relro_hi = (a + ph->p_memsz) & ~((uintptr_t)ps - 1); /* the loader rounds down */
		}
	}
	if (!dyn || o->hi <= o->lo)
		return -1;
	for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
		uintptr_t v = (uintptr_t)d->d_un.d_ptr;

		switch (d->d_tag) {
		case DT_SYMTAB: o->symtab = (const ElfW(Sym) *)dyn_addr(o->base, v); break;
		case DT_STRTAB: o->strtab = (const char *)dyn_addr(o->base, v); break;
		case DT_STRSZ: o->strsz = (size_t)d->d_un.d_val; break;
		case DT_GNU_HASH: o->gnu_hash = (const uint32_t *)dyn_addr(o->base, v); break;
		case DT_HASH: o->hash = (const uint32_t *)dyn_addr(o->base, v); break;
		case DT_RELA: rela = dyn_addr(o->base, v); break;
		case DT_RELASZ: relasz = (size_t)d->d_un.d_val; break;
		case DT_JMPREL: jmprel = dyn_addr(o->base, v); break;
		case DT_PLTRELSZ: pltsz = (size_t)d->d_un.d_val; break;
		case DT_PLTREL: pltrel = (long)d->d_un.d_val; break;
		default: break;
		}
	}
	if (!o->symtab || !o->strtab)
		return -1;
	if (rela && relasz) {
		o->rela = (const ElfW(Rela) *)rela;
		o->nrela = relasz / sizeof(ElfW(Rela));
	}
	if (jmprel && pltsz && pltrel == DT_RELA) {
		o->jmprel = (const ElfW(Rela) *)jmprel;
		o->njmprel = pltsz / sizeof(ElfW(Rela));
	}
	return 0;
}

static const char *sym_name(const struct sm_dynobj *o, const ElfW(Sym) *s)
{
	return s->st_name < o->strsz ? o->strtab + s->st_name : "";
}

/* An exported definition: defined, global or weak, visible. */
static int exported(const ElfW(Sym) *s)
{
	int bind = SYM_BIND(s->st_info), vis = SYM_VIS(s->st_other);

	return s->st_shndx != SHN_UNDEF && (bind == STB_GLOBAL || bind == STB_WEAK) &&
	       (vis == STV_DEFAULT || vis == STV_PROTECTED);
}

static uint32_t gnu_hash(const char *s)
{
	uint32_t h = 5381;

	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		h = h * 33 + *p;
	return h;
}

static uint32_t elf_hash(const char *s)
{
	uint32_t h = 0, g;

	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		h = (h << 4) + *p;
		g = h & 0xf0000000u;
		if (g)
			h ^= g >> 24;
		h &= ~g;
	}
	return h;
}

const ElfW(Sym) *sm_dyn_defines(const struct sm_dynobj *o, const char *name)
{
	if (o->gnu_hash) {
		const uint32_t *h = o->gnu_hash;
		uint32_t nbuckets = h[0], symoffset = h[1], bloom_size = h[2];
		const ElfW(Addr) *bloom = (const ElfW(Addr) *)(h + 4);
		const uint32_t *buckets = (const uint32_t *)(bloom + bloom_size);
		const uint32_t *chain = buckets + nbuckets;
		uint32_t hv = gnu_hash(name);

		if (!nbuckets)
			return NULL;
		for (uint32_t i = buckets[hv % nbuckets]; i >= symoffset && i; i++) {
			uint32_t h2 = chain[i - symoffset];
			const ElfW(Sym) *s = &o->symtab[i];

			if ((h2 | 1) == (hv | 1) && strcmp(sym_name(o, s), name) == 0 && exported(s))
				return s;
			if (h2 & 1)
				break;
		}
		return NULL;
	}
	if (o->hash) {
		uint32_t nbucket = o->hash[0], nchain = o->hash[1];
		const uint32_t *bucket = o->hash + 2, *chain = bucket + nbucket;

		if (!nbucket)
			return NULL;
		for (uint32_t i = bucket[elf_hash(name) % nbucket], n = 0; i && i < nchain && n < nchain;
		     i = chain[i], n++) {
			const ElfW(Sym) *s = &o->symtab[i];

			if (strcmp(sym_name(o, s), name) == 0 && exported(s))
				return s;
		}
	}
	return NULL;
}

/* ---- relocations ----------------------------------------------------------- */

#if defined(__x86_64__)
#define REL_SLOT R_X86_64_JUMP_SLOT
#define REL_GOT R_X86_64_GLOB_DAT
#define REL_ABS R_X86_64_64
#elif defined(__aarch64__)
#define REL_SLOT R_AARCH64_JUMP_SLOT
#define REL_GOT R_AARCH64_GLOB_DAT
#define REL_ABS R_AARCH64_ABS64
#endif

int sm_dyn_can_rebind(void)
{
#ifdef REL_SLOT
	return 1;
#else
	return 0;
#endif
}

/* Index in names of the symbol relocation r refers to, or -1. */
static int rel_match(const struct sm_dynobj *o, const ElfW(Rela) *r, const char *const *names, size_t n)
{
	size_t sym = REL_SYM(r->r_info);

	if (!sym)
		return -1;
	const char *s = sym_name(o, &o->symtab[sym]);
	for (size_t i = 0; i < n; i++)
		if (s[0] == names[i][0] && strcmp(s, names[i]) == 0)
			return (int)i;
	return -1;
}

int sm_dyn_refers(const struct sm_dynobj *o, const char *const *names, size_t n)
{
	for (size_t i = 0; i < o->nrela; i++)
		if (rel_match(o, &o->rela[i], names, n) >= 0)
			return 1;
	for (size_t i = 0; i < o->njmprel; i++)
		if (rel_match(o, &o->jmprel[i], names, n) >= 0)
			return 1;
	return 0;
}

#ifdef REL_SLOT
/* 1 if slot lies in a writable PT_LOAD segment of the object. */
static int in_writable(const struct sm_dynobj *o, uintptr_t slot)
{
	for (int i = 0; i < o->phnum; i++) {
		const ElfW(Phdr) *ph = &o->phdr[i];
		uintptr_t a = o->base + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && slot >= a && slot + sizeof(uintptr_t) <= a + ph->p_memsz)
			return (ph->p_flags & PF_W) != 0;
	}
	return 0;
}

/* Write one slot; RELRO pages are opened for it and closed again. */
static int put(const struct sm_dynobj *o, uintptr_t slot, uintptr_t v)
{
	long ps = sysconf(_SC_PAGESIZE);
	uintptr_t page = slot & ~((uintptr_t)ps - 1);
	int ro = slot >= o->relro_lo && slot < o->relro_hi;

	if (slot % sizeof(v) || !in_writable(o, slot))
		return 0; /* not a slot of the object's data: leave it */
	if (__atomic_load_n((uintptr_t *)slot, __ATOMIC_RELAXED) == v)
		return 0;
	if (ro && mprotect((void *)page, (size_t)ps, PROT_READ | PROT_WRITE) != 0)
		return -1;
	__atomic_store_n((uintptr_t *)slot, v, __ATOMIC_RELEASE);
	if (ro)
		mprotect((void *)page, (size_t)ps, PROT_READ);
	return 1;
}

static int rebind_table(const struct sm_dynobj *o, const ElfW(Rela) *t, size_t nt, const char *const *names,
			void *const *to, size_t n)
{
	int done = 0;

	for (size_t i = 0; i < nt; i++) {
		unsigned type = (unsigned)REL_TYPE(t[i].r_info);
		int k;

		if ((type != REL_SLOT && type != REL_GOT && type != REL_ABS) || (k = rel_match(o, &t[i], names, n)) < 0)
			continue;
		uintptr_t v = (uintptr_t)to[k] + (type == REL_ABS ? (uintptr_t)t[i].r_addend : 0);
		int rc = put(o, o->base + t[i].r_offset, v);
		if (rc < 0)
			return -1;
		done += rc;
	}
	return done;
}
#endif

int sm_dyn_rebind(const struct sm_dynobj *o, const char *const *names, void *const *to, size_t n)
{
#ifdef REL_SLOT
	int a = rebind_table(o, o->rela, o->nrela, names, to, n);
	if (a < 0)
		return -1;
	int b = rebind_table(o, o->jmprel, o->njmprel, names, to, n);
	return b < 0 ? -1 : a + b;
#else
	(void)o;
	(void)names;
	(void)to;
	(void)n;
	errno = ENOSYS;
	return -1;
#endif
}

/* ---- around a dlopen() with RTLD_DEEPBIND ------------------------------- */

struct collect {
	struct sm_dyn_set *s;
	size_t cap;
	int failed;
};

static int collect_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct collect *c = arg;
	struct sm_dynobj o;

	(void)size;
	if (sm_dyn_open(info, &o) != 0)
		return 0;
	if (c->s->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		uintptr_t *v = realloc(c->s->lo, cap * sizeof(*v));
		if (!v) {
			c->failed = 1;
			return 1;
		}
		c->s->lo = v;
		c->cap = cap;
	}
	c->s->lo[c->s->n++] = o.lo;
	return 0;
}

int sm_dyn_snapshot(struct sm_dyn_set *s)
{
	struct collect c = { s, 0, 0 };

	s->lo = NULL;
	s->n = 0;
	dl_iterate_phdr(collect_one, &c);
	if (c.failed) {
		sm_dyn_set_free(s);
		return -1;
	}
	return 0;
}

void sm_dyn_set_free(struct sm_dyn_set *s)
{
	free(s->lo);
	s->lo = NULL;
	s->n = 0;
}

struct own {
	uintptr_t self;
	const char *const *names;
	void **to;
	size_t n;
};

static int own_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct own *w = arg;
	struct sm_dynobj o;

	(void)size;
	if (sm_dyn_open(info, &o) != 0 || w->self < o.lo || w->self >= o.hi)
		return 0;
	for (size_t i = 0; i < w->n; i++) {
		const ElfW(Sym) *s = sm_dyn_defines(&o, w->names[i]);
		w->to[i] = s ? (void *)(o.base + s->st_value) : NULL;
	}
	return 1;
}

void sm_dyn_own(const void *self, const char *const *names, void **to, size_t n)
{
	struct own w = { (uintptr_t)self, names, to, n };

	memset(to, 0, n * sizeof(*to));
	dl_iterate_phdr(own_one, &w);
}

struct renew {
	const struct sm_dyn_set *before;
	uintptr_t self;
	const char *const *names;
	void *const *to;
	size_t n;
	int slots, objects, failed, err;
};

static int renew_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct renew *r = arg;
	struct sm_dynobj o;

	(void)size;
	if (sm_dyn_open(info, &o) != 0 || (r->self >= o.lo && r->self < o.hi))
		return 0;
	for (size_t i = 0; i < r->before->n; i++)
		if (r->before->lo[i] == o.lo)
			return 0;
	int k = sm_dyn_rebind(&o, r->names, r->to, r->n);
	if (k < 0) {
		r->failed = 1;
		r->err = errno;
		return 0;
	}
	r->slots += k;
	r->objects += k > 0;
	return 0;
}

int sm_dyn_rebind_new(const struct sm_dyn_set *before, const void *self, const char *const *names,
		      void *const *to, size_t n, int *objects)
{
	struct renew r = { before, (uintptr_t)self, names, to, n, 0, 0, 0, 0 };

	dl_iterate_phdr(renew_one, &r);
	*objects = r.objects;
	if (r.failed) {
		errno = r.err;
		return -1;
	}
	return r.slots;
}
