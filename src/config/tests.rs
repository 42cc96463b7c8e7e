use super::*;

#[test]
fn an_http_spec_describes_its_bodies() {
    let spec = |bodies: &[&[u8]]| {
        let head = std::sync::Arc::new(HttpHead {
            method: "POST".into(),
            path: "/x".into(),
            headers: Vec::new(),
        });
        let one = |body: Option<&[u8]>| HttpRequestSpec {
            head: head.clone(),
            body: body.map(bytes::Bytes::copy_from_slice),
        };
        let requests = if bodies.is_empty() {
            vec![one(None)]
        } else {
            bodies.iter().map(|b| one(Some(b))).collect()
        };
        WorkloadSpec::Http(HttpSpec {
            requests,
            weights: Vec::new(),
            ok_status: (200, 299),
        })
        .describe()
    };
    assert_eq!(spec(&[]), "http POST /x: no body");
    assert_eq!(spec(&[b""]), "http POST /x: body 0 B");
    assert_eq!(spec(&[b"ab", b"cd"]), "http POST /x: 2 bodies of 2 B");
    assert_eq!(
        spec(&[b"a", b"bcd", b""]),
        "http POST /x: 3 bodies of 0-3 B"
    );
}

#[test]
fn urls_split_into_endpoint_and_path() {
    let (e, path) = parse_url("http://127.0.0.1:8080/a/b?x=1#frag").unwrap();
    assert_eq!(
        (e.authority.as_str(), path.as_str()),
        ("127.0.0.1:8080", "/a/b?x=1")
    );
    assert_eq!(e.addr, "127.0.0.1:8080".parse().unwrap());
    assert!(!e.tls);
    // the scheme's port, the authority as written (the Host header), `/` by default
    let (e, path) = parse_url("https://localhost").unwrap();
    assert_eq!(
        (e.authority.as_str(), e.host.as_str()),
        ("localhost", "localhost")
    );
    assert_eq!((e.addr.port(), e.tls, path.as_str()), (443, true, "/"));
    let (e, path) = parse_url("http://[::1]?q").unwrap();
    assert_eq!((e.addr.port(), path.as_str()), (80, "/?q"));
    for bad in [
        "127.0.0.1:80/x",
        "ftp://h/x",
        "http:///x",
        "http://u@h:1/",
        "http://h:x/",
    ] {
        assert!(parse_url(bad).is_err(), "{bad}");
    }
}

#[test]
fn durations() {
    assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
    assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
    assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
    assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
    assert_eq!(parse_duration("3").unwrap(), Duration::from_secs(3));
    assert!(parse_duration("10x").is_err());
    assert!(parse_duration("").is_err());
    assert!(parse_duration("-1s").is_err());
}

#[test]
fn sizes() {
    assert_eq!(parse_size("64k").unwrap(), 65536);
    assert_eq!(parse_size("1M").unwrap(), 1 << 20);
    assert_eq!(parse_size("100").unwrap(), 100);
    assert!(parse_size("1T").is_err());
    assert!(parse_size("99999999999999999999G").is_err());
}

#[test]
fn unix_endpoints() {
    for url in ["unix:///run/echo.sock", "unix:/run/echo.sock"] {
        let e = Endpoint::parse(url).unwrap();
        assert_eq!(
            e.unix.as_deref(),
            Some(std::path::Path::new("/run/echo.sock"))
        );
        assert_eq!((e.authority.as_str(), e.tls), ("localhost", false));
        assert_eq!(
            e.dest(),
            crate::net::Dest::Unix(std::path::Path::new("/run/echo.sock").into())
        );
    }
    let e = Endpoint::parse("unix:echo.sock").unwrap();
    assert_eq!(e.unix.as_deref(), Some(std::path::Path::new("echo.sock")));
    for bad in ["unix:", "unix://", "unix:///run/"] {
        assert!(Endpoint::parse(bad).is_err(), "{bad}");
    }
    let e = Endpoint::parse("http://127.0.0.1:2379").unwrap();
    assert_eq!(e.dest(), crate::net::Dest::Inet(e.addr));
}

#[test]
fn endpoints() {
    let e = Endpoint::parse("http://127.0.0.1:2379").unwrap();
    assert_eq!(e.authority, "127.0.0.1:2379");
    assert_eq!(e.addr, "127.0.0.1:2379".parse().unwrap());
    let e = Endpoint::parse("[::1]:2379").unwrap();
    assert_eq!(e.addr, "[::1]:2379".parse().unwrap());
    assert!(Endpoint::parse("http://127.0.0.1").is_err());
    let e = Endpoint::parse("https://localhost:2379").unwrap();
    assert!(e.tls);
    assert_eq!(e.host, "localhost");
    assert!(Endpoint::parse("ftp://x:1").is_err());
    assert!(Endpoint::parse("http://127.0.0.1:2379/v3").is_err());
}
