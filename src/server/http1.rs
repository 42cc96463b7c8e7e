//! The HTTP/1.1 side of the echo server: `POST /v1/echo` with `{"ping": "..."}`, keepalive.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Write as _;
use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime};

use bytes::{Buf, BytesMut};
use serde::Deserialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::server::{MAX_REQUEST, Rewind, ServeConfig, echo_response, echo_response_json};
use wirebench_wire::http1::MAX_HEAD_BYTES;

const MAX_REQUEST_HEADERS: usize = 64;

#[derive(Deserialize)]
struct EchoBody<'a> {
    #[serde(borrow, default)]
    ping: Cow<'a, str>,
}

/// A parsed request head: what the handler needs, owned so the buffer can move on.
struct Head {
    method_post: bool,
    path_is_echo: bool,
    close: bool,
    content_length: usize,
    chunked: bool,
    headers: HashMap<String, String>,
    len: usize,
}

enum Parsed {
    Partial,
    Bad(&'static str),
    Done(Head),
}

fn parse(buf: &[u8]) -> Parsed {
    let mut hs = [httparse::EMPTY_HEADER; MAX_REQUEST_HEADERS];
    let mut req = httparse::Request::new(&mut hs);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(httparse::Error::TooManyHeaders) => return Parsed::Bad("too many headers"),
        Err(_) => return Parsed::Bad("malformed request head"),
    };
    let mut headers: HashMap<String, String> = HashMap::new();
    let mut content_length = 0usize;
    let mut close = req.version == Some(0);
    let mut chunked = false;
    for h in req.headers.iter() {
        let name = h.name.to_ascii_lowercase();
        let value = String::from_utf8_lossy(h.value).into_owned();
        match name.as_str() {
            "content-length" => match value.trim().parse() {
                Ok(n) => content_length = n,
                Err(_) => return Parsed::Bad("invalid Content-Length"),
            },
            "transfer-encoding" => chunked = true,
            "connection" => {
                let v = value.to_ascii_lowercase();
                if v.split(',').any(|t| t.trim() == "close") {
                    close = true;
                }
                if v.split(',').any(|t| t.trim() == "keep-alive") {
                    close = false;
                }
            }
            _ => {}
        }
        headers
            .entry(name)
            .and_modify(|v| {
                v.push(',');
                v.push_str(&value);
            })
            .or_insert(value);
    }
    let path = req.path.unwrap_or("");
    Parsed::Done(Head {
        method_post: req.method == Some("POST"),
        path_is_echo: path == "/v1/echo",
        close,
        content_length,
        chunked,
        headers,
        len,
    })
}

pub(super) async fn serve(
    mut io: Rewind,
    peer: SocketAddr,
    cfg: &ServeConfig,
    age: Option<Duration>,
) {
    let born = Instant::now();
    let mut buf = BytesMut::with_capacity(8192);
    let mut out = Vec::with_capacity(1024);
    loop {
        // Read a complete head (bounded) and then the body.
        let head = loop {
            match parse(&buf) {
                Parsed::Done(h) => break h,
                Parsed::Bad(why) => {
                    respond(&mut out, 400, &error_json(why), true);
                    let _ = io.write_all(&out).await;
                    return;
                }
                Parsed::Partial if buf.len() >= MAX_HEAD_BYTES => {
                    respond(&mut out, 431, &error_json("request head too large"), true);
                    let _ = io.write_all(&out).await;
                    return;
                }
                Parsed::Partial => {
                    let read = match cfg.max_conn_idle {
                        Some(d) if buf.is_empty() => {
                            match tokio::time::timeout(d, io.read_buf(&mut buf)).await {
                                Ok(r) => r,
                                Err(_) => return,
                            }
                        }
                        _ => io.read_buf(&mut buf).await,
                    };
                    match read {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {}
                    }
                }
            }
        };
        let received_at = SystemTime::now();
        if head.chunked {
            respond(
                &mut out,
                411,
                &error_json("chunked request bodies are not supported"),
                true,
            );
            let _ = io.write_all(&out).await;
            return;
        }
        if head.content_length > MAX_REQUEST {
            respond(&mut out, 413, &error_json("request body too large"), true);
            let _ = io.write_all(&out).await;
            return;
        }
        buf.advance(head.len);
        while buf.len() < head.content_length {
            match io.read_buf(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
        let body = buf.split_to(head.content_length);
        let close = head.close || age.is_some_and(|a| born.elapsed() >= a);
        if !head.path_is_echo {
            respond(&mut out, 404, &error_json("not found"), close);
        } else if !head.method_post {
            respond(
                &mut out,
                405,
                &error_json("method not allowed: use POST"),
                close,
            );
        } else {
            match serde_json::from_slice::<EchoBody>(&body) {
                Ok(req) => {
                    let resp =
                        echo_response(head.headers, req.ping.into_owned(), peer, received_at);
                    let json = echo_response_json(&resp).to_string();
                    respond(&mut out, 200, &json, close);
                }
                Err(e) => respond(
                    &mut out,
                    400,
                    &error_json(&format!("malformed JSON: {e}")),
                    close,
                ),
            }
        }
        if io.write_all(&out).await.is_err() || close {
            let _ = io.shutdown().await;
            return;
        }
    }
}

fn error_json(message: &str) -> String {
    serde_json::json!({ "error": message }).to_string()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        411 => "Length Required",
        413 => "Payload Too Large",
        431 => "Request Header Fields Too Large",
        _ => "Error",
    }
}

fn respond(out: &mut Vec<u8>, status: u16, body: &str, close: bool) {
    out.clear();
    let _ = write!(
        out,
        "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{}\r\n",
        reason(status),
        body.len(),
        if close { "Connection: close\r\n" } else { "" }
    );
    out.extend_from_slice(body.as_bytes());
}
