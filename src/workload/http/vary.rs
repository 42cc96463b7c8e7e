//! The requests of an HTTP workload whose head varies: the path and header values rendered per
//! request, over HTTP/1.1 written in place and over HTTP/2 and HTTP/3 into each client's copy
//! of the call.

use bytes::{BufMut, BytesMut};

use crate::client::grpc::Call;
use wirebench_wire::vary::{Draw, Template, decimal};

/// A head with placeholders, read once: method, path and headers (each header a template,
/// fixed ones too, so they go in order).
#[derive(Debug)]
pub(super) struct VaryHead {
    pub(super) method: String,
    pub(super) path: Template,
    pub(super) headers: Vec<(String, Template)>,
    /// by the HTTP/2 call's metadata index: the header it carries (HTTP/2 leaves some out)
    pub(super) h2_headers: Vec<usize>,
    /// an empty body goes without a Content-Length line (a method that anticipates none)
    pub(super) omit_empty_length: bool,
}

impl VaryHead {
    /// Whether a part reads the request's time.
    pub(super) fn uses_clock(&self) -> bool {
        self.path.uses_clock() || self.headers.iter().any(|(_, t)| t.uses_clock())
    }

    /// The metadata indices of `call` whose values vary, and whether the path does.
    pub(super) fn varying_parts(&self) -> (bool, Vec<usize>) {
        let values = self
            .h2_headers
            .iter()
            .enumerate()
            .filter(|&(_, &h)| !self.headers[h].1.is_fixed())
            .map(|(i, _)| i)
            .collect();
        (!self.path.is_fixed(), values)
    }

    /// Appends the request for `host` with `body` to `dst`, as `RequestTemplate::encode` writes
    /// a fixed one; returns its head length.
    pub(super) fn encode_h1(
        &self,
        d: &mut Draw,
        host: &str,
        body: &[u8],
        dst: &mut BytesMut,
    ) -> usize {
        let start = dst.len();
        dst.reserve(256 + body.len());
        dst.put_slice(self.method.as_bytes());
        dst.put_u8(b' ');
        self.path.render(d, dst);
        dst.put_slice(b" HTTP/1.1\r\nHost: ");
        dst.put_slice(host.as_bytes());
        dst.put_slice(b"\r\n");
        for (name, value) in &self.headers {
            dst.put_slice(name.as_bytes());
            dst.put_slice(b": ");
            value.render(d, dst);
            dst.put_slice(b"\r\n");
        }
        if !(body.is_empty() && self.omit_empty_length) {
            let mut digits = [0u8; 20];
            dst.put_slice(b"Content-Length: ");
            dst.put_slice(decimal(body.len() as u64, &mut digits));
            dst.put_slice(b"\r\n");
        }
        dst.put_slice(b"\r\n");
        let head = dst.len() - start;
        dst.put_slice(body);
        head
    }

    /// Renders this request's path and varying header values into `call` (a
    /// [`Call::varying`] made from this head).
    pub(super) fn render_call(&self, d: &mut Draw, call: &mut Call) {
        let Some(v) = call.varied() else {
            return;
        };
        if let Some(path) = &mut v.path {
            path.clear();
            self.path.render(d, path);
        }
        for (slot, &h) in v.values.iter_mut().zip(&self.h2_headers) {
            if let Some(value) = slot {
                value.clear();
                self.headers[h].1.render(d, value);
            }
        }
        call.measure();
    }
}
