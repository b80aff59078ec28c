use super::*;

/// Pebble 2.4 (Debian's) driven through one order by a Python client: every body as it
/// came (testdata/pebble/README).
fn pebble(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/testdata/pebble/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

#[test]
fn pebbles_documents() {
    let d: Directory = read(&pebble("directory.json")).unwrap();
    assert_eq!(d.new_order, "https://127.0.0.1:14000/order-plz");
    assert_eq!(d.renewal_info, None);
    assert_eq!(d.meta.unwrap().external_account_required, Some(false));
    let a: Account = read(&pebble("account.json")).unwrap();
    assert_eq!(a.status, AccountStatus::Valid);
    let o: Order = read(&pebble("order-pending.json")).unwrap();
    assert_eq!(o.status, OrderStatus::Pending);
    assert_eq!(o.authorizations.len(), 2);
    assert_eq!(o.identifiers.len(), 2);
    assert!(parse_time(o.expires.as_deref().unwrap()).is_some());
    for i in 0..2 {
        let z: Authorization = read(&pebble(&format!("authz-{i}.json"))).unwrap();
        assert_eq!(z.status, AuthzStatus::Pending);
        for kind in ["http-01", "tls-alpn-01", "dns-01"] {
            let c = z.challenge(kind).unwrap();
            assert!(token_ok(c.token.as_deref().unwrap()));
        }
        let c: Challenge = read(&pebble(&format!("challenge-{i}.json"))).unwrap();
        assert_eq!(c.kind, "http-01");
    }
    let o: Order = read(&pebble("order-ready.json")).unwrap();
    assert_eq!(o.status, OrderStatus::Ready);
    let o: Order = read(&pebble("order-valid.json")).unwrap();
    assert_eq!(o.status, OrderStatus::Valid);
    assert!(o.certificate.is_some());
    let p: Problem = read(&pebble("problem-badnonce.json")).unwrap();
    assert!(p.is_bad_nonce());
    let p: Problem = read(&pebble("problem-rejected.json")).unwrap();
    assert!(!p.is_bad_nonce());
    assert!(p
        .summary()
        .starts_with("malformed: Order included DNS identifier"));
}

#[test]
fn a_hostile_cas_documents_are_refused_with_a_reason() {
    let dir = |new_order: &str| {
        format!(
            "{{\"newNonce\":\"https://ca.test/n\",\"newAccount\":\"https://ca.test/a\",\
             \"newOrder\":\"{new_order}\"}}"
        )
    };
    for good in [
        "https://ca.test/o",
        "https://ca.test",
        "https://127.0.0.1:14000/order-plz",
        "https://[2001:db8::1]:443/o?x#y",
        "https://[::1]/o",
    ] {
        assert!(read::<Directory>(dir(good).as_bytes()).is_ok(), "{good}");
    }
    for bad in [
        "http://ca.test/o",
        "https:///o",
        "https://ca.test/o o",
        "file:///etc/passwd",
        "https://ca.test/\\u0000",
        "https://?x",
        "https://:443/",
        "https://@",
        "https://user:pw@10.0.0.1/",
        "https://ca.test:44x/",
        "https://[::1/",
        "https://[::1]x/",
    ] {
        assert_eq!(
            read::<Directory>(dir(bad).as_bytes()),
            Err(DocError::Bad("newOrder URL")),
            "{bad}"
        );
    }
    let long = format!("https://ca.test/{}", "a".repeat(MAX_URL));
    assert!(read::<Directory>(dir(&long).as_bytes()).is_err());
    assert!(matches!(
        read::<Directory>(b"{\"newNonce\":"),
        Err(DocError::Json(_))
    ));
    assert!(matches!(read::<Directory>(b"[]"), Err(DocError::Json(_))));
    assert_eq!(
        read::<Directory>(&vec![b' '; MAX_DOCUMENT + 1]),
        Err(DocError::TooLarge)
    );
    let challenge = |token: &str| {
        format!("{{\"type\":\"http-01\",\"url\":\"https://ca.test/c\",\"status\":\"pending\",\"token\":\"{token}\"}}")
    };
    assert!(
        read::<Challenge>(challenge("vqjo61Y5ozTrXwYkiYrsr2q90SutyD_H3S3bGVaGYjw").as_bytes())
            .is_ok()
    );
    for bad in [
        "../../etc/passwd_aaaaaaaaaaaaaaaa",
        "short",
        "a/b_aaaaaaaaaaaaaaaaaaaaaaaaa",
        "tok.en_aaaaaaaaaaaaaaaaaaaaa",
    ] {
        assert_eq!(
            read::<Challenge>(challenge(bad).as_bytes()),
            Err(DocError::Bad("challenge token")),
            "{bad}"
        );
    }
    let no_token = "{\"type\":\"http-01\",\"url\":\"https://ca.test/c\",\"status\":\"pending\"}";
    assert_eq!(
        read::<Challenge>(no_token.as_bytes()),
        Err(DocError::Bad("challenge without a token"))
    );
    let unknown = "{\"type\":\"http-01\",\"url\":\"https://ca.test/c\",\"status\":\"weird\"}";
    assert!(matches!(
        read::<Challenge>(unknown.as_bytes()),
        Err(DocError::Json(_))
    ));
    // A valid order must say where its certificate is; an order needs authorizations.
    let order = |status: &str, authz: &str| {
        format!(
            "{{\"status\":\"{status}\",\"identifiers\":[],\"authorizations\":[{authz}],\
             \"finalize\":\"https://ca.test/f\"}}"
        )
    };
    assert_eq!(
        read::<Order>(order("valid", "\"https://ca.test/z\"").as_bytes()),
        Err(DocError::Bad("valid order without a certificate URL"))
    );
    assert_eq!(
        read::<Order>(order("pending", "").as_bytes()),
        Err(DocError::Bad("authorizations list"))
    );
    let many = vec!["\"https://ca.test/z\""; MAX_AUTHORIZATIONS + 1].join(",");
    assert_eq!(
        read::<Order>(order("pending", &many).as_bytes()),
        Err(DocError::Bad("authorizations list"))
    );
    // A problem's words are bounded and lose control characters.
    let p: Problem = read(
        format!(
            "{{\"type\":\"x\",\"detail\":\"a\\u001b[31m{}\"}}",
            "b".repeat(500)
        )
        .as_bytes(),
    )
    .unwrap();
    let s = p.summary();
    assert!(!s.contains('\u{1b}') && s.chars().count() <= 202, "{s}");
}

#[test]
fn renewal_information() {
    // RFC 9773 §4.2's example.
    let body = b"{\"suggestedWindow\":{\"start\":\"2025-01-02T04:00:00Z\",\
        \"end\":\"2025-01-03T04:00:00Z\"},\"explanationURL\":\"https://acme.example.com/docs/ari\"}";
    let r: RenewalInfo = read(body).unwrap();
    assert_eq!(r.window(), Some((1_735_790_400, 1_735_876_800)));
    let backwards = b"{\"suggestedWindow\":{\"start\":\"2025-01-03T04:00:00Z\",\
        \"end\":\"2025-01-02T04:00:00Z\"}}";
    assert_eq!(
        read::<RenewalInfo>(backwards),
        Err(DocError::Bad("renewal window"))
    );
}

#[test]
fn rfc3339_times() {
    assert_eq!(parse_time("1970-01-01T00:00:00Z"), Some(0));
    assert_eq!(parse_time("2026-11-30T09:52:10Z"), Some(1_796_032_330));
    assert_eq!(
        parse_time("2026-11-30T09:52:10.123456789Z"),
        Some(1_796_032_330)
    );
    assert_eq!(parse_time("2026-11-30T10:52:10+01:00"), Some(1_796_032_330));
    assert_eq!(parse_time("2026-11-30t08:52:10-01:00"), Some(1_796_032_330));
    assert_eq!(
        parse_time("2016-12-31T23:59:60Z"),
        parse_time("2016-12-31T23:59:59Z")
    );
    for bad in [
        "",
        "2026-11-30",
        "2026-11-30T09:52:10",
        "2026-13-30T09:52:10Z",
        "2026-02-30T09:52:10Z",
        "2026-11-30T25:52:10Z",
        "2026-11-30T09:52:10.Z",
        "2026-11-30T09:52:10+1:00",
        "2026-11-30T09:52:10+01:00x",
        "1969-12-31T23:59:59Z",
        "+026-11-30T09:52:10Z",
        "2026-11-30T09:52:10ZZ",
        "2026-11-30T09:52:99Z",
        "2026-11-30T09:52:61Z",
        "2026-11-30T09:52:10++1:00",
        "2026-11-30T09:52:10+-1:00",
    ] {
        assert_eq!(parse_time(bad), None, "{bad}");
    }
}

#[test]
fn payloads() {
    let ids = [Identifier::dns("acme.test")];
    assert_eq!(
        payload(&NewOrder {
            identifiers: &ids,
            replaces: None
        }),
        b"{\"identifiers\":[{\"type\":\"dns\",\"value\":\"acme.test\"}]}"
    );
    assert_eq!(
        payload(&NewAccount {
            terms_of_service_agreed: true,
            contact: &[]
        }),
        b"{\"termsOfServiceAgreed\":true}"
    );
    assert_eq!(payload(&Finalize { csr: "MIIB" }), b"{\"csr\":\"MIIB\"}");
}
