// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the secretmem authors
//! vec-push-system - the Vec<u8> push loop (src/vec_push.rs) on the system
//! allocator (glibc malloc), the baseline.
#[global_allocator]
static A: std::alloc::System = std::alloc::System;

include!("../vec_push.rs");
