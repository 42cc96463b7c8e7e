//! etcd v3's HTTP face, the grpc-gateway: its JSON (`gateway`: request bodies, response
//! checks, its error, lease keepalive lines, prost -> gateway JSON) and its watch stream's lines
//! (`watch`).

pub mod gateway;
pub mod watch;
