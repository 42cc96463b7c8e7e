//! Any unary gRPC method (`wirebench grpc TARGET Service/Method`): the same encoded request on
//! every call; a call is OK when it ends with grpc-status 0 and exactly one message, as ghz
//! counts it (the message's content is not judged; the sample shows it as JSON when the schema
//! is known).

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use http::Uri;
use http::header::{HeaderName, HeaderValue};
use prost_reflect::{DynamicMessage, MessageDescriptor};
use serde_json::Value;

use crate::client::grpc::Call;
use crate::config::{Endpoint, GrpcSpec};
use crate::outcome::FailureKind;

#[derive(Debug)]
struct Shared {
    calls: Vec<Call>,
    frame: Bytes,
    response: Option<MessageDescriptor>,
}

/// One client's view: everything is shared and read-only.
#[derive(Debug, Clone)]
pub struct GrpcWorkload {
    shared: Arc<Shared>,
}

impl GrpcWorkload {
    pub fn new(spec: &GrpcSpec, endpoints: &[Endpoint]) -> Result<GrpcWorkload, String> {
        let mut metadata = Vec::with_capacity(spec.metadata.len());
        for (k, v) in &spec.metadata {
            let name = HeaderName::from_bytes(k.to_ascii_lowercase().as_bytes())
                .map_err(|_| format!("invalid metadata name {k:?}"))?;
            let value =
                HeaderValue::from_str(v).map_err(|_| format!("invalid metadata value for {k}"))?;
            metadata.push((name, value));
        }
        let mut calls = Vec::with_capacity(endpoints.len());
        for ep in endpoints {
            let authority = spec.authority.as_deref().unwrap_or(&ep.authority);
            let scheme = if ep.tls { "https" } else { "http" };
            let uri: Uri = format!("{scheme}://{authority}{}", spec.path)
                .parse()
                .map_err(|e| format!("{authority}{}: {e}", spec.path))?;
            calls.push(Call::new(uri, metadata.clone(), FailureKind::GrpcStatus));
        }
        let mut frame =
            BytesMut::with_capacity(wirebench_wire::grpc::PREFIX_LEN + spec.request.len());
        let len = u32::try_from(spec.request.len())
            .map_err(|_| "the request message is larger than 4 GiB".to_string())?;
        frame.extend_from_slice(&[0]);
        frame.extend_from_slice(&len.to_be_bytes());
        frame.extend_from_slice(&spec.request);
        Ok(GrpcWorkload {
            shared: Arc::new(Shared {
                calls,
                frame: frame.freeze(),
                response: spec.response.clone(),
            }),
        })
    }

    pub fn for_client(&self) -> GrpcWorkload {
        self.clone()
    }

    pub fn call(&self, ep: usize) -> &Call {
        &self.shared.calls[ep]
    }

    /// The framed request, the same for every call.
    pub fn grpc_request(&self) -> &Bytes {
        &self.shared.frame
    }

    /// The response as JSON through the schema (proto3 JSON mapping), or its size when there
    /// is no schema or it does not decode.
    pub fn sample_grpc(&self, message: &Bytes) -> Value {
        let Some(desc) = &self.shared.response else {
            return Value::String(format!("{} B (no schema)", message.len()));
        };
        match DynamicMessage::decode(desc.clone(), message.clone()) {
            Ok(m) => serde_json::to_value(&m)
                .unwrap_or_else(|e| Value::String(format!("not representable as JSON: {e}"))),
            Err(e) => Value::String(format!("undecodable as {}: {e}", desc.full_name())),
        }
    }
}
