// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the secretmem authors
//! vec-push-secret - the Vec<u8> push loop (src/vec_push.rs) with the whole
//! heap on secretmem::Allocator.
#[global_allocator]
static A: secretmem::Allocator = secretmem::Allocator;

include!("../vec_push.rs");
