//! The `wirebench` binary: allocator, arguments, exit code; everything else is in the library.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(wirebench::cli::main_with_args(std::env::args_os()));
}
