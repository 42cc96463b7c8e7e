//! Pure codecs on `bytes::BytesMut`: no tokio, no clock, no IO.

pub mod grpc;
pub mod h2sniff;
pub mod http1;
pub mod json;
pub mod watch;
