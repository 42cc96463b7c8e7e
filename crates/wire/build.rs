//! Compiles `proto/` with protox + prost-build, so building needs no `protoc`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files = [
        "proto/etcd.proto",
        "proto/echo.proto",
        "proto/health.proto",
        "proto/stream.proto",
    ];
    for f in files {
        println!("cargo:rerun-if-changed={f}");
    }
    let fds = protox::compile(files, ["proto"])?;
    // the schemas themselves, for the built-in server's reflection service
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out.join("descriptors.bin"),
        prost::Message::encode_to_vec(&fds),
    )?;
    prost_build::Config::new()
        // Bytes fields decode as slices of the received buffer instead of fresh Vecs.
        .bytes(["."])
        .compile_fds(fds)?;
    Ok(())
}
