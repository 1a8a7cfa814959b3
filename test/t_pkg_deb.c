/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_pkg_deb - the Debian packages: `make deb` builds libsecretmem1,
 * libsecretmem-dev, secretmem and python3-secretmem with the right files,
 * dependencies and symbols file; lintian reports no error; a program
 * compiled through pkg-config against the extracted -dev package runs
 * against the extracted library, the extracted `secretmem check` runs, and
 * /usr/bin/python3 imports the extracted module, which loads the extracted
 * library.  The work is done by test/t_pkg_deb.sh; skips (77) where
 * dpkg-buildpackage, debhelper, lintian, pkg-config, dh-python or pybuild is
 * missing, or any other build dependency of debian/control.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "tlib.h"

int main(void)
{
	execlp("sh", "sh", "test/t_pkg_deb.sh", (char *)NULL);
	TL_FAIL("cannot run sh test/t_pkg_deb.sh: %s", strerror(errno));
}
