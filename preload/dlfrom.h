/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * dlfrom.h - dlopen() on behalf of a caller, for a module that exports
 * dlopen() (both modules do; shared like dynobj.h).
 */
#ifndef SECRETMEM_DLFROM_H
#define SECRETMEM_DLFROM_H

/*
 * The real dlopen() sees the module as its caller, so a name without a
 * slash would be searched without the caller's own DT_RPATH/DT_RUNPATH:
 * with caller (a return address in the object that called the module's
 * dlopen) having one, the name is searched there first (dlinfo
 * RTLD_DI_SERINFO of the caller) and opened by path.  real: the real
 * dlopen().  Returns what real returns.
 */
void *sm_dlopen_from(const void *caller, const char *file, int flags, void *(*real)(const char *, int));

#endif
