//! Compiles the small C helper that gives libc-exact float parsing and formatting.
fn main() {
    println!("cargo:rerun-if-changed=csrc/numbers.c");
    cc::Build::new().file("csrc/numbers.c").opt_level(2).compile("vmnumbers");
}
