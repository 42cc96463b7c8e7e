//! HTTP/2 (RFC 9113) protocol cores, sans-IO.

pub mod hpack;
