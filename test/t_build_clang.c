/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/* t_build_clang - runs test/build_clang.sh (see there). */
#include "tlib.h"

int main(void)
{
#ifdef TL_SANITIZED
	tl_skip("the clang build is compared with the plain gcc build");
#endif
	return tl_run_script("test/build_clang.sh");
}
