/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * dlfrom.c - dlopen() on behalf of the module's caller (dlfrom.h).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "dlfrom.h"

/* Does the object at caller have its own DT_RPATH or DT_RUNPATH? */
static struct link_map *caller_with_path(const void *caller)
{
	Dl_info info;
	struct link_map *lm = NULL;

	if (!caller || !dladdr1(caller, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm || !lm->l_ld)
		return NULL;
	for (const ElfW(Dyn) *d = lm->l_ld; d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_RPATH || d->d_tag == DT_RUNPATH)
			return lm;
	return NULL;
}

/* Search the caller's path (dlinfo(RTLD_DI_SERINFO) of the caller) and
 * open by path. */
static void *open_as(struct link_map *lm, const char *file, int flags, void *(*real)(const char *, int))
{
	Dl_serinfo size, *si;
	void *h, *ret = NULL;

	h = real(file, RTLD_LAZY | RTLD_NOLOAD);
	if (h) { /* already loaded: the name finds it */
		dlclose(h);
		return real(file, flags);
	}
	h = real(lm->l_name && lm->l_name[0] ? lm->l_name : NULL, RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		return real(file, flags);
	if (dlinfo(h, RTLD_DI_SERINFOSIZE, &size) == 0 && (si = malloc(size.dls_size)) != NULL) {
		*si = size;
		if (dlinfo(h, RTLD_DI_SERINFO, si) == 0)
			for (unsigned i = 0; i < si->dls_cnt && !ret; i++) {
				char path[4096];

				if ((size_t)snprintf(path, sizeof(path), "%s/%s", si->dls_serpath[i].dls_name, file) >=
				    sizeof(path) || access(path, R_OK) != 0)
					continue;
				ret = real(path, flags);
			}
		free(si);
	}
	dlclose(h);
	return ret ? ret : real(file, flags);
}

void *sm_dlopen_from(const void *caller, const char *file, int flags, void *(*real)(const char *, int))
{
	struct link_map *lm;

	if (file && !strchr(file, '/') && (lm = caller_with_path(caller)) != NULL)
		return open_as(lm, file, flags, real);
	return real(file, flags);
}
