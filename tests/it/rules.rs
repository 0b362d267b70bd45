//! Target URL, host, account and redirect-status rules.

use crate::support::Case;
use inklink::rules::account::AccountError;
use inklink::rules::host::HostError;
use inklink::rules::{
    DomainHost, OwnHost, Password, RedirectStatus, TargetUrl, TargetUrlError, UrlRules, Username,
};

fn own() -> Vec<OwnHost> {
    vec![
        OwnHost {
            host: "s.example.cn".into(),
            port: None,
        },
        OwnHost {
            host: "localhost".into(),
            port: Some(8080),
        },
    ]
}

fn parse(input: &str) -> Result<TargetUrl, TargetUrlError> {
    let own = own();
    TargetUrl::parse(
        input,
        &UrlRules {
            max_length: 4096,
            own_hosts: &own,
        },
    )
}

#[test]
fn bad_target_urls_are_refused_with_their_reason() {
    use TargetUrlError as E;
    let long = format!("https://example.com/{}", "a".repeat(4100));
    let long_after_encoding = format!("https://example.com/{}", "é".repeat(1000));
    let cases: Vec<Case<TargetUrlError>> = vec![
        ("", |e| matches!(e, E::Empty)),
        ("   ", |e| matches!(e, E::Empty)),
        (
            "javascript:alert(1)",
            |e| matches!(e, E::Scheme(s) if s == "javascript"),
        ),
        (
            "JavaScript:alert(1)",
            |e| matches!(e, E::Scheme(s) if s == "javascript"),
        ),
        (
            "data:text/html,<script>alert(1)</script>",
            |e| matches!(e, E::Scheme(s) if s == "data"),
        ),
        (
            "file:///etc/passwd",
            |e| matches!(e, E::Scheme(s) if s == "file"),
        ),
        (
            "ftp://example.com/file",
            |e| matches!(e, E::Scheme(s) if s == "ftp"),
        ),
        ("mailto:someone@example.com", |e| matches!(e, E::Scheme(_))),
        ("vbscript:msgbox", |e| matches!(e, E::Scheme(_))),
        ("weixin://dl/business", |e| matches!(e, E::Scheme(_))),
        ("https://user:pass@example.com/", |e| {
            matches!(e, E::Credentials)
        }),
        ("https://user@example.com/", |e| matches!(e, E::Credentials)),
        ("https://:secret@example.com/", |e| {
            matches!(e, E::Credentials)
        }),
        ("https://example.com/\r\nSet-Cookie: x=1", |e| {
            matches!(e, E::ControlCharacter { .. })
        }),
        ("https://example.com/a\nb", |e| {
            matches!(e, E::ControlCharacter { .. })
        }),
        ("https://exa\tmple.com/", |e| {
            matches!(e, E::ControlCharacter { position: 12 })
        }),
        ("https://example.com/\u{0}", |e| {
            matches!(e, E::ControlCharacter { .. })
        }),
        ("https://example.com/\u{7f}", |e| {
            matches!(e, E::ControlCharacter { .. })
        }),
        ("https://example.com/\u{85}", |e| {
            matches!(e, E::ControlCharacter { .. })
        }),
        (long.as_str(), |e| matches!(e, E::TooLong { max: 4096, .. })),
        (long_after_encoding.as_str(), |e| {
            matches!(e, E::TooLong { .. })
        }),
        ("/relative/path", |e| matches!(e, E::Relative(_))),
        ("example.com/page", |e| matches!(e, E::Relative(_))),
        ("//example.com/page", |e| matches!(e, E::Relative(_))),
        ("www.example.com", |e| matches!(e, E::Relative(_))),
        ("https://", |e| matches!(e, E::NoHost)),
        ("https://example.com:-1/", |e| matches!(e, E::InvalidPort)),
        ("https://exa mple.com/", |e| matches!(e, E::InvalidHost(_))),
        ("https://example.com:99999/", |e| {
            matches!(e, E::InvalidPort)
        }),
        ("https://example.com:port/", |e| matches!(e, E::InvalidPort)),
        ("https://[::1/", |e| matches!(e, E::InvalidHost(_))),
        ("https://256.256.256.256/", |e| {
            matches!(e, E::InvalidHost(_))
        }),
        (
            "https://s.example.cn/abc",
            |e| matches!(e, E::OwnDomain(h) if h == "s.example.cn"),
        ),
        ("http://S.Example.CN:81/abc", |e| {
            matches!(e, E::OwnDomain(_))
        }),
        (
            "http://localhost:8080/abc",
            |e| matches!(e, E::OwnDomain(h) if h == "localhost:8080"),
        ),
        ("https://xn--/", |e| matches!(e, E::InvalidHost(_))),
    ];
    assert!(cases.len() >= 30);
    for (input, expected) in cases {
        match parse(input) {
            Ok(url) => panic!("{input:?} was accepted as {url}"),
            Err(err) => {
                assert!(expected(&err), "{input:?} gave {err:?}");
                assert!(err.to_string().len() > 10, "{input:?}: message too thin");
            }
        }
    }
}

#[test]
fn good_target_urls_are_kept_normalised() {
    let cases = [
        ("https://example.com", "https://example.com/"),
        ("http://example.com/a?x=1", "http://example.com/a?x=1"),
        (
            "  https://example.com/padded  ",
            "https://example.com/padded",
        ),
        ("HTTPS://EXAMPLE.COM/Path", "https://example.com/Path"),
        (
            "https://例子.中国/路径",
            "https://xn--fsqu00a.xn--fiqs8s/%E8%B7%AF%E5%BE%84",
        ),
        ("https://bücher.de/", "https://xn--bcher-kva.de/"),
        ("http://[2001:db8::1]:8080/x", "http://[2001:db8::1]:8080/x"),
        ("http://[::1]/", "http://[::1]/"),
        ("http://192.168.1.10:3000/", "http://192.168.1.10:3000/"),
        ("https://example.com:8443/a", "https://example.com:8443/a"),
        (
            "https://example.com/a?utm_source=sms&utm_medium=cn",
            "https://example.com/a?utm_source=sms&utm_medium=cn",
        ),
        (
            "https://example.com/page#section-2",
            "https://example.com/page#section-2",
        ),
        (
            "https://example.com/a%20b?q=%E4%BD%A0",
            "https://example.com/a%20b?q=%E4%BD%A0",
        ),
        ("https://example.com/a b", "https://example.com/a%20b"),
        (
            "https://example.com/?q=你好",
            "https://example.com/?q=%E4%BD%A0%E5%A5%BD",
        ),
        ("http://localhost:3000/", "http://localhost:3000/"),
        ("https://sub.s.example.cn/x", "https://sub.s.example.cn/x"),
        (
            "https://example.com/a;b,c!d$e'f(g)h*i+j",
            "https://example.com/a;b,c!d$e'f(g)h*i+j",
        ),
    ];
    for (input, stored) in cases {
        let url = parse(input).unwrap_or_else(|err| panic!("{input:?} refused: {err}"));
        assert_eq!(url.as_str(), stored, "{input:?}");
    }
}

#[test]
fn the_url_length_limit_is_configurable() {
    let rules = UrlRules {
        max_length: 30,
        own_hosts: &[],
    };
    assert!(TargetUrl::parse("https://example.com/short", &rules).is_ok());
    let err = TargetUrl::parse("https://example.com/much-too-long-path", &rules).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the URL is 38 bytes long; the limit is 30 bytes"
    );
}

#[test]
fn domain_hosts() {
    let good = [
        ("s.example.com", "s.example.com"),
        ("S.Example.COM", "s.example.com"),
        ("localhost:8080", "localhost:8080"),
        ("短.中国", "xn--s7y.xn--fiqs8s"),
        ("[::1]:8080", "[::1]:8080"),
        ("[2001:db8::2]", "[2001:db8::2]"),
        ("127.0.0.1:9000", "127.0.0.1:9000"),
    ];
    for (input, stored) in good {
        let host = DomainHost::parse(input).unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(host.to_string(), stored);
    }
    let bad: Vec<Case<HostError>> = vec![
        ("", |e| matches!(e, HostError::Empty)),
        ("https://s.example.com", |e| {
            matches!(e, HostError::NotAHost('/'))
        }),
        ("s.example.com/path", |e| {
            matches!(e, HostError::NotAHost('/'))
        }),
        ("user@s.example.com", |e| {
            matches!(e, HostError::NotAHost('@'))
        }),
        ("s.example.com:0", |e| matches!(e, HostError::Port)),
        ("s.example.com:70000", |e| matches!(e, HostError::Port)),
        ("s.example.com:http", |e| matches!(e, HostError::Port)),
        ("bad host.com", |e| matches!(e, HostError::NotAHost(' '))),
        ("exa%mple.com", |e| matches!(e, HostError::Invalid(_))),
        ("[::1", |e| matches!(e, HostError::Invalid(_))),
    ];
    for (input, expected) in bad {
        let err = DomainHost::parse(input).unwrap_err();
        assert!(expected(&err), "{input:?} gave {err:?}");
    }
}

#[test]
fn usernames_passwords_and_statuses() {
    assert_eq!(Username::parse("Alice").unwrap().as_str(), "alice");
    assert_eq!(
        Username::parse("ops.team-1_x").unwrap().as_str(),
        "ops.team-1_x"
    );
    for bad in ["", "a b", "名字", "x".repeat(65).as_str(), "a/b"] {
        assert_eq!(
            Username::parse(bad).unwrap_err(),
            AccountError::Username,
            "{bad:?}"
        );
    }
    assert!(Password::parse("12345678").is_ok());
    assert!(Password::parse("密码密码密码密码").is_ok());
    assert_eq!(
        Password::parse("short").unwrap_err(),
        AccountError::PasswordTooShort
    );
    assert_eq!(
        Password::parse(&"x".repeat(1025)).unwrap_err(),
        AccountError::PasswordTooLong
    );
    assert!(!format!("{:?}", Password::parse("hunter22!").unwrap()).contains("hunter"));
    for (text, code) in [("301", 301), ("302", 302), ("307", 307), ("308", 308)] {
        assert_eq!(text.parse::<RedirectStatus>().unwrap().code(), code);
    }
    for bad in ["200", "303", "abc", ""] {
        let err = bad.parse::<RedirectStatus>().unwrap_err();
        assert!(err.to_string().contains("301, 302, 307 or 308"));
    }
}

#[test]
fn client_addresses_are_believed_only_from_trusted_proxies() {
    use inklink::net::client::TrustedProxies;
    use std::net::IpAddr;
    let trusted: TrustedProxies = "127.0.0.1, 10.0.0.0/8, ::1".parse().unwrap();
    let ip = |s: &str| s.parse::<IpAddr>().unwrap();
    let cases: [(&str, Option<&str>, Option<&str>, &str); 15] = [
        // An untrusted peer's headers are ignored, however convincing.
        (
            "203.0.113.9",
            Some("1.2.3.4"),
            Some("5.6.7.8"),
            "203.0.113.9",
        ),
        ("127.0.0.1", Some("198.51.100.7"), None, "198.51.100.7"),
        // The right-most untrusted hop is the client; what it prepended is not believed.
        (
            "127.0.0.1",
            Some("6.6.6.6, 198.51.100.7"),
            None,
            "198.51.100.7",
        ),
        (
            "127.0.0.1",
            Some("198.51.100.7, 10.1.2.3"),
            None,
            "198.51.100.7",
        ),
        ("127.0.0.1", None, Some("198.51.100.8"), "198.51.100.8"),
        (
            "127.0.0.1",
            Some("garbage"),
            Some("198.51.100.8"),
            "198.51.100.8",
        ),
        ("127.0.0.1", None, None, "127.0.0.1"),
        ("::ffff:127.0.0.1", Some("2001:db8::5"), None, "2001:db8::5"),
        ("::1", Some("10.0.0.2, 10.0.0.3"), None, "10.0.0.2"),
        // Proxies that add the client's port, and IPv6 in brackets.
        (
            "127.0.0.1",
            Some("115.82.82.248:40001"),
            None,
            "115.82.82.248",
        ),
        ("127.0.0.1", Some("[2001:db8::7]:4711"), None, "2001:db8::7"),
        ("127.0.0.1", Some("[2001:db8::8]"), None, "2001:db8::8"),
        (
            "127.0.0.1",
            Some("\"[2001:db8::9]:80\", 10.0.0.2:1234"),
            None,
            "2001:db8::9",
        ),
        ("127.0.0.1", None, Some("198.51.100.9:5555"), "198.51.100.9"),
        ("127.0.0.1", Some("1.2.3.4:notaport"), None, "127.0.0.1"),
    ];
    for (peer, forwarded, real, expected) in cases {
        assert_eq!(
            trusted.client_ip(ip(peer), forwarded, real),
            ip(expected),
            "{peer} {forwarded:?} {real:?}"
        );
    }
    assert!(trusted.forwarded_https(ip("127.0.0.1"), Some("https")));
    assert!(trusted.forwarded_https(ip("127.0.0.1"), Some("HTTPS, http")));
    assert!(!trusted.forwarded_https(ip("203.0.113.9"), Some("https")));
    assert!(!trusted.forwarded_https(ip("127.0.0.1"), None));
    assert_eq!(
        "".parse::<TrustedProxies>().unwrap(),
        TrustedProxies::default()
    );
    let err = "10.0.0.0/33".parse::<TrustedProxies>().unwrap_err();
    assert!(err.contains("10.0.0.0/33"), "{err}");
}
