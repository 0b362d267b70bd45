//! Two-factor sign-in (issue 43): enrolment, the code step and recovery codes (each opening
//! once), throttling of codes under parallel guesses, `INKLINK_REQUIRE_2FA`, turning it off
//! and an admin's reset, and the sign-in throttle that no longer locks out an enrolled owner.

use crate::admin::{Browser, Page, add_user, csrf_in};
use crate::support::{TestApp, spawn_app, spawn_app_with};
use futures_util::future::join_all;
use inklink::rules::Role;
use inklink::rules::totp::{STEP_SECONDS, TotpSecret};
use inklink::services::signin::NEW_ADDRESS_LIMIT;
use inklink::services::two_factor::{ACCOUNT_LIMIT, PAIR_LIMIT};

fn step_now() -> i64 {
    chrono::Utc::now().timestamp() / STEP_SECONDS
}

fn code(secret: &TotpSecret, step: i64) -> String {
    format!("{:06}", secret.code_at(step))
}

/// The key an enrolment page shows.
fn shown_secret(page: &Page) -> TotpSecret {
    let start = page
        .body
        .find("class=\"secret\">")
        .expect("a key on the page")
        + 15;
    let end = start + page.body[start..].find('<').unwrap();
    TotpSecret::from_base32(&page.body[start..end]).expect("a base32 key")
}

fn recovery_codes(page: &Page) -> Vec<String> {
    page.body
        .split("<li><code>")
        .skip(1)
        .map(|rest| rest[..rest.find('<').unwrap()].to_owned())
        .collect()
}

/// Signs `name` in with the password, then posts `second` at the code step.
async fn sign_in_with(browser: &mut Browser<'_>, name: &str, password: &str, second: &str) -> Page {
    let first = browser.sign_in(name, password).await;
    assert_eq!(first.status, 303, "{}", first.body);
    assert_eq!(first.location.as_deref(), Some("/admin/login/code"));
    let form = browser.get("/admin/login/code").await;
    assert_eq!(form.status, 200, "{}", form.body);
    browser
        .post(
            "/admin/login/code",
            &[("csrf", &csrf_in(&form.body)), ("code", second)],
        )
        .await
}

/// Enrols `name` from "Your settings"; the secret and the recovery codes.
async fn enrol(app: &TestApp, name: &str, password: &str) -> (TotpSecret, Vec<String>, i64) {
    let mut browser = Browser::new(app);
    assert_eq!(browser.sign_in(name, password).await.status, 303);
    let page = browser.get("/admin/account/two-factor").await;
    assert_eq!(page.status, 200);
    let secret = shown_secret(&page);
    let csrf = csrf_in(&page.body);
    let wrong = browser
        .post(
            "/admin/account/two-factor",
            &[
                ("csrf", &csrf),
                ("secret", &secret.base32()),
                ("code", "000000"),
            ],
        )
        .await;
    assert_eq!(wrong.status, 422, "a wrong code enrols nothing");
    let step = step_now();
    let done = browser
        .post(
            "/admin/account/two-factor",
            &[
                ("csrf", &csrf),
                ("secret", &secret.base32()),
                ("code", &code(&secret, step)),
            ],
        )
        .await;
    assert_eq!(done.status, 200, "{}", done.body);
    let codes = recovery_codes(&done);
    assert_eq!(codes.len(), 10);
    (secret, codes, step)
}

#[actix_web::test]
async fn a_second_factor_is_asked_after_the_password_and_each_code_opens_once() {
    let app = spawn_app().await;
    add_user(&app, "mei", "mei-password-1", Role::Operator).await;
    let (secret, codes, enrolled_at) = enrol(&app, "mei", "mei-password-1").await;

    // The password alone opens nothing: no page, whatever path is tried.
    let mut half = Browser::new(&app);
    let first = half.sign_in("mei", "mei-password-1").await;
    assert_eq!(first.location.as_deref(), Some("/admin/login/code"));
    for path in ["/admin/links", "/admin/account", "/admin/login/enrol"] {
        let page = half.get(path).await;
        assert!(
            page.status == 303
                && page
                    .location
                    .as_deref()
                    .unwrap()
                    .starts_with("/admin/login"),
            "{path}: {} {:?}",
            page.status,
            page.location
        );
    }

    // The next code of the app opens; the same code again does not (a replay).
    let next = code(&secret, enrolled_at + 1);
    let mut browser = Browser::new(&app);
    let signed = sign_in_with(&mut browser, "mei", "mei-password-1", &next).await;
    assert_eq!(signed.status, 303, "{}", signed.body);
    assert_eq!(browser.get("/admin/links").await.status, 200);
    let mut again = Browser::speaking(&app, "zh-CN");
    let replay = sign_in_with(&mut again, "mei", "mei-password-1", &next).await;
    assert_eq!(replay.status, 401);
    assert!(replay.body.contains("验证码不正确"), "{}", replay.body);

    // A recovery code opens once, typed in any case and with or without its dash.
    let mut lost_phone = Browser::new(&app);
    let typed = codes[0].to_uppercase().replace('-', " ");
    let recovered = sign_in_with(&mut lost_phone, "mei", "mei-password-1", &typed).await;
    assert_eq!(recovered.status, 303, "{}", recovered.body);
    let mut twice = Browser::new(&app);
    let used = sign_in_with(&mut twice, "mei", "mei-password-1", &codes[0]).await;
    assert_eq!(used.status, 401);
    let malformed = sign_in_with(&mut Browser::new(&app), "mei", "mei-password-1", "12ab").await;
    assert_eq!(malformed.status, 401);
    assert!(malformed.body.contains("neither a 6-digit code"));

    // Turning it off takes the password and a code; then the password alone signs in.
    let page = browser.get("/admin/account/two-factor").await;
    assert!(
        page.body.contains("Recovery codes left: 9"),
        "{}",
        page.body
    );
    let csrf = csrf_in(&page.body);
    let refused = browser
        .post(
            "/admin/account/two-factor/off",
            &[
                ("csrf", &csrf),
                ("password", "wrong-password"),
                ("code", &codes[1]),
            ],
        )
        .await;
    assert_eq!(refused.status, 422);
    let off = browser
        .post(
            "/admin/account/two-factor/off",
            &[
                ("csrf", &csrf),
                ("password", "mei-password-1"),
                ("code", &codes[1]),
            ],
        )
        .await;
    assert_eq!(off.status, 303, "{}", off.body);
    let plain = Browser::new(&app).sign_in("mei", "mei-password-1").await;
    assert_eq!(plain.location.as_deref(), Some("/admin/links"));
}

#[actix_web::test]
async fn code_guesses_in_parallel_are_held_to_the_limits() {
    let app = spawn_app_with(&["--trusted-proxies", "127.0.0.1"]).await;
    add_user(&app, "kai", "kai-password-1", Role::Operator).await;
    let (secret, _, enrolled_at) = enrol(&app, "kai", "kai-password-1").await;
    // Which codes are wrong now: any but the app's around this time.
    let right: Vec<String> = (enrolled_at - 2..=enrolled_at + 3)
        .map(|step| code(&secret, step))
        .collect();
    let wrong: Vec<String> = (0..100_000u32)
        .map(|n| format!("{:06}", n * 7 + 13))
        .filter(|c| !right.contains(c))
        .take(40)
        .collect();

    // One browser past the password; 20 guesses at once from its address.
    let mut browser = Browser::new(&app);
    assert_eq!(browser.sign_in("kai", "kai-password-1").await.status, 303);
    let form = browser.get("/admin/login/code").await;
    let csrf = csrf_in(&form.body);
    let cookie = browser.cookie().unwrap();
    let guess = |n: usize, address: String| {
        let app = &app;
        let (csrf, cookie, guess) = (csrf.clone(), cookie.clone(), wrong[n].clone());
        async move {
            app.client
                .post(app.url("/admin/login/code"))
                .insert_header(("cookie", cookie))
                .insert_header(("x-forwarded-for", address))
                .send_form(&[("csrf", csrf.as_str()), ("code", guess.as_str())])
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    let statuses = join_all((0..20).map(|n| guess(n, "198.51.100.1".into()))).await;
    let wrong_answers = statuses.iter().filter(|s| **s == 401).count();
    assert_eq!(wrong_answers, PAIR_LIMIT as usize, "{statuses:?}");
    assert_eq!(
        statuses.iter().filter(|s| **s == 429).count(),
        20 - PAIR_LIMIT as usize
    );
    // From other addresses, up to the account's limit in all.
    let statuses = join_all((20..40).map(|n| guess(n, format!("198.51.100.{n}")))).await;
    let more = statuses.iter().filter(|s| **s == 401).count();
    assert_eq!(
        PAIR_LIMIT as usize + more,
        ACCOUNT_LIMIT as usize,
        "{statuses:?}"
    );
    // Held: even the right code waits now.
    let held = guess(0, "198.51.100.99".into()).await;
    assert_eq!(held, 429);
}

#[actix_web::test]
async fn with_a_second_factor_strangers_wrong_passwords_do_not_lock_the_owner_out() {
    let app = spawn_app_with(&["--trusted-proxies", "127.0.0.1"]).await;
    add_user(&app, "lin", "lin-password-1", Role::Operator).await;
    add_user(&app, "bo", "bo-password-12", Role::Operator).await;
    enrol(&app, "lin", "lin-password-1").await;
    let attempt = |name: &'static str, password: &'static str, address: String| {
        let app = &app;
        async move {
            let mut browser = Browser::new(app);
            let csrf = browser.csrf("/admin/login").await;
            let request = app
                .client
                .post(app.url("/admin/login"))
                .insert_header(("x-forwarded-for", address))
                .insert_header(("cookie", browser.cookie().unwrap()));
            let response = request
                .send_form(&[
                    ("csrf", csrf.as_str()),
                    ("username", name),
                    ("password", password),
                ])
                .await
                .unwrap();
            (
                response.status().as_u16(),
                response
                    .headers()
                    .get("location")
                    .map(|l| l.to_str().unwrap().to_owned()),
            )
        }
    };
    for name in ["lin", "bo"] {
        for n in 0..=NEW_ADDRESS_LIMIT {
            attempt(name, "not-the-password", format!("203.0.113.{n}")).await;
        }
    }
    // Bo (no second factor) is held at an address he never used; Lin reaches her code step.
    let bo = attempt("bo", "bo-password-12", "192.0.2.50".into()).await;
    assert_eq!(bo.0, 429, "{bo:?}");
    let lin = attempt("lin", "lin-password-1", "192.0.2.51".into()).await;
    assert_eq!(lin, (303, Some("/admin/login/code".to_owned())));
}

#[actix_web::test]
async fn require_2fa_enrols_at_the_next_sign_in_and_an_admin_can_reset_it() {
    let app = spawn_app_with(&["--require-2fa", "true"]).await;
    add_user(&app, "yun", "yun-password-1", Role::Operator).await;
    let mut browser = Browser::speaking(&app, "zh-CN");
    let first = browser.sign_in("yun", "yun-password-1").await;
    assert_eq!(first.location.as_deref(), Some("/admin/login/enrol"));
    assert_eq!(
        browser.get("/admin/links").await.status,
        303,
        "no session yet"
    );
    let page = browser.get("/admin/login/enrol").await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("<svg"), "a QR code");
    assert!(page.body.contains("身份验证器"), "{}", page.body);
    let secret = shown_secret(&page);
    let csrf = csrf_in(&page.body);
    let step = step_now();
    let done = browser
        .post(
            "/admin/login/enrol",
            &[
                ("csrf", &csrf),
                ("secret", &secret.base32()),
                ("code", &code(&secret, step)),
            ],
        )
        .await;
    assert_eq!(done.status, 200, "{}", done.body);
    assert_eq!(recovery_codes(&done).len(), 10);
    assert_eq!(browser.get("/admin/links").await.status, 200, "signed in");

    // The next sign-in asks for a code.
    let again = Browser::new(&app).sign_in("yun", "yun-password-1").await;
    assert_eq!(again.location.as_deref(), Some("/admin/login/code"));

    // An admin (who enrols too, being required to) resets it (a lost phone): audited; the
    // next sign-in enrols again.
    add_user(&app, "ada", "admin-password", Role::Admin).await;
    let mut admin = Browser::new(&app);
    assert_eq!(
        admin
            .sign_in("ada", "admin-password")
            .await
            .location
            .as_deref(),
        Some("/admin/login/enrol")
    );
    let page = admin.get("/admin/login/enrol").await;
    let admin_secret = shown_secret(&page);
    let enrolled = admin
        .post(
            "/admin/login/enrol",
            &[
                ("csrf", &csrf_in(&page.body)),
                ("secret", &admin_secret.base32()),
                ("code", &code(&admin_secret, step_now())),
            ],
        )
        .await;
    assert_eq!(enrolled.status, 200);
    let admin_csrf = admin.csrf("/admin/users").await;
    let users = admin.get("/admin/users").await.body;
    let id = inklink::services::users::find(
        &app.core.db,
        &inklink::rules::Username::parse("yun").unwrap(),
    )
    .await
    .unwrap()
    .unwrap()
    .id;
    assert!(users.contains(&format!("/admin/users/{id}/two-factor-reset")));
    let reset = admin
        .post(
            &format!("/admin/users/{id}/two-factor-reset"),
            &[("csrf", &admin_csrf)],
        )
        .await;
    assert_eq!(reset.status, 303);
    let audit = admin.get("/admin/audit").await.body;
    assert!(
        audit.contains("Two-factor sign-in reset by an admin"),
        "{audit}"
    );
    let after = Browser::new(&app).sign_in("yun", "yun-password-1").await;
    assert_eq!(after.location.as_deref(), Some("/admin/login/enrol"));
}
