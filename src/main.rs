//! The `wirebench` binary: allocator, arguments, exit code; everything else is in the library.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // No transparent huge pages: the allocator asks for them (madvise), and each first touch
    // of one zeroes 2 MiB, most of it never used; that is CPU the client would spend on
    // itself and memory the per-connection figures would count.
    // SAFETY: prctl with PR_SET_THP_DISABLE takes plain integers and changes only this
    // process's page-fault policy; an error (an old kernel) leaves it as it was.
    unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    std::process::exit(wirebench::cli::main_with_args(std::env::args_os()));
}
