// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the secretmem authors
//! tests/readme.rs - the Rust example of the top README.md is made of lines
//! of bindings/rust/README.md's example, which cargo test compiles (a
//! doctest): so the top README's lines compile too.
use std::fs;
use std::path::Path;

/// The code of each line (before a `//` comment), trimmed, of the first
/// ```rust block after the heading.
fn code_lines(text: &str, heading: &str) -> Vec<String> {
    let from = text.find(heading).unwrap_or_else(|| panic!("no {:?}", heading));
    let rest = &text[from..];
    let start = rest.find("```rust").expect("a ```rust block");
    let body = &rest[start..];
    let body = &body[body.find('\n').unwrap() + 1..];
    let end = body.find("```").expect("the end of the block");
    body[..end]
        .lines()
        .map(|l| l.split("//").next().unwrap().trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn top_readme_example_is_the_bindings_one() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let top = dir.join("../../../README.md");
    let top = match fs::read_to_string(&top) {
        Ok(t) => t,
        Err(e) => {
            println!("secretmem-skip: {}: {} (not in the source tree)", top.display(), e);
            return;
        }
    };
    let ours = fs::read_to_string(dir.join("../README.md")).unwrap();
    let ours = code_lines(&ours, "# secretmem for Rust");
    let lines = code_lines(&top, "\n## Rust\n");
    assert!(lines.len() >= 3 && lines.len() <= 10, "{:?}", lines);
    for l in &lines {
        assert!(ours.contains(l), "README.md's Rust example line {:?} is not in bindings/rust/README.md's", l);
    }
}
