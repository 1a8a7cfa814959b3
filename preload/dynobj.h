/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * dynobj.h - a loaded object as the dynamic linker sees it: the symbols it
 * exports, the symbols its relocations refer to, and rebinding those
 * relocations.  Shared by both modules (libsecretmem-preload.so and
 * libsecretmem-heap.so link dynobj.o and dlfrom.o); no allocation, no
 * locks of its own, nothing but reads of mapped memory - except
 * sm_dyn_rebind, which writes relocation slots.
 */
#ifndef SECRETMEM_DYNOBJ_H
#define SECRETMEM_DYNOBJ_H

#include <link.h>
#include <stddef.h>
#include <stdint.h>

struct sm_dynobj {
	uintptr_t base;             /* load bias (dlpi_addr)                  */
	const char *name;           /* its path; "" for the program           */
	uintptr_t lo, hi;           /* the mapped range of its PT_LOADs       */
	uintptr_t relro_lo, relro_hi; /* PT_GNU_RELRO, page-rounded (0: none)  */
	const ElfW(Phdr) *phdr;
	int phnum;
	const ElfW(Sym) *symtab;
	const char *strtab;
	size_t strsz;
	const uint32_t *gnu_hash;   /* DT_GNU_HASH, else                      */
	const uint32_t *hash;       /* DT_HASH (one of them, or neither)      */
	const ElfW(Rela) *rela;     /* DT_RELA                                */
	size_t nrela;
	const ElfW(Rela) *jmprel;   /* DT_JMPREL when DT_PLTREL is DT_RELA    */
	size_t njmprel;
};

/* Fill o from one dl_iterate_phdr() entry: 0, or -1 when the object has no
 * dynamic section or symbol table (the vDSO has one; a static program not). */
int sm_dyn_open(const struct dl_phdr_info *info, struct sm_dynobj *o);

/* The object's own exported definition of name (a global or weak symbol
 * that is defined, not a program's canonical PLT entry), or NULL. */
const ElfW(Sym) *sm_dyn_defines(const struct sm_dynobj *o, const char *name);

/* 1 if one of the object's dynamic relocations refers to one of names[n]
 * by symbol (a call or an address the dynamic linker binds), else 0. */
int sm_dyn_refers(const struct sm_dynobj *o, const char *const *names, size_t n);

/* 1 on the architectures where sm_dyn_rebind works (RELA relocations of
 * x86-64 and AArch64), else 0. */
int sm_dyn_can_rebind(void);

/*
 * Bind every relocation of the object against names[i] (a call slot, a GOT
 * entry or an absolute address) to to[i], as the dynamic linker would have
 * had to[i] been found first: what a library opened with RTLD_DEEPBIND
 * bound to its own dependencies instead.  Read-only (RELRO) pages are made
 * writable for the write and read-only again.  Returns the number of slots
 * written, or -1 (errno) when a page could not be made writable (slots
 * written before stay written) or the architecture is not supported.
 */
int sm_dyn_rebind(const struct sm_dynobj *o, const char *const *names, void *const *to, size_t n);

/* ---- around a dlopen() with RTLD_DEEPBIND ------------------------------- */

/* The objects loaded at one moment (their load bias and lowest address). */
struct sm_dyn_set {
	uintptr_t *lo;
	size_t n;
};

/* Take the set of loaded objects (malloc'd; free with sm_dyn_set_free):
 * 0, or -1 when memory runs out. */
int sm_dyn_snapshot(struct sm_dyn_set *s);
void sm_dyn_set_free(struct sm_dyn_set *s);

/* The definitions of names[n] in the object that contains self (the
 * calling module's own): into to[i], NULL for a name it does not define. */
void sm_dyn_own(const void *self, const char *const *names, void **to, size_t n);

/*
 * sm_dyn_rebind() in every object loaded since before, except the object
 * containing self.  *objects gets the number of objects with a slot
 * written; returns the slots written, or -1 (errno) when one could not be
 * written (the others are).
 */
int sm_dyn_rebind_new(const struct sm_dyn_set *before, const void *self, const char *const *names,
		      void *const *to, size_t n, int *objects);

#endif
