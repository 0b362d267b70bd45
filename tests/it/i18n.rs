//! Two languages everywhere: every text of the admin UI and every message a person can read
//! there has its Chinese, and the Chinese keeps the values of the English.

use inklink::i18n::Lang;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Literals of the scanned code that no person reads: `expect` reasons, SQL, sample rows.
const INTERNAL: &[&str] = &[
    // An export's read task that panicked: logged, never shown.
    "{what} a page of the export failed: {err}",
    // Single sign-on: SQL, a lock's expectation, protocol values, and a start-up error (the
    // CLI speaks English).
    "DELETE FROM sso_state WHERE expires_at < ?",
    "INSERT INTO sso_state (digest, expires_at) VALUES (?, ?)",
    "SELECT user_id FROM user_identity WHERE issuer = ? AND subject = ?",
    "INSERT INTO user_identity (issuer, subject, user_id, created_at) VALUES (?, ?, ?, ?)",
    "not poisoned",
    "SELECT user_id, subject FROM user_identity WHERE issuer = ?",
    "UPDATE webhook_turn SET taken = taken WHERE id = 1",
    "openid profile email",
    "Basic {}",
    "INKLINK_OIDC_ISSUER is set but INKLINK_OIDC_CLIENT_ID is not",
    "INSERT INTO domain_change (domain_id, at, state, reason) VALUES (?, ?, ?, ?)",
    "DELETE FROM domain_change WHERE at < ?",
    "health check",
    "UPDATE domain_health SET rotated_at = ? WHERE domain_id = ?",
    "UPDATE probe_lease SET holder = ?, until = ? WHERE id = 1 AND (until < ? OR holder = ?)",
    "SELECT domain_id, at, state FROM domain_change WHERE at >= ? ORDER BY at",
    "SELECT creator_kind, creator_id FROM campaign_batch WHERE id = ?",
    "SELECT {COLUMNS} FROM webhook WHERE enabled = TRUE AND events LIKE ? ORDER BY id",
    "a webhook's outbox is full; its oldest batches of clicks were dropped",
    "SELECT id, creator_kind, creator_id FROM url_map WHERE id",
    "UPDATE webhook_message SET state = ? WHERE id IN ({marks})",
    "SELECT {COLUMNS} FROM webhook WHERE id IN ({marks})",
    "UPDATE webhook SET robot_next_at = ? WHERE id = ? AND robot_next_at <= ?",
    "UPDATE webhook_message SET next_at = ?, lease_until = 0 WHERE id = ? AND state = ?",
    "DELETE FROM webhook_message WHERE created_at < ? AND state <> ?",
    "UPDATE webhook_turn SET taken = taken + 1 WHERE id = 1",
    "SELECT COUNT(*) AS n FROM webhook WHERE owner_kind = ? AND owner_id = ?",
    "SELECT COUNT(*) AS n FROM webhook",
    "SELECT {COLUMNS} FROM webhook WHERE secret = ? ORDER BY id DESC LIMIT 1",
    " WHERE owner_kind = ? AND owner_id = ?",
    "SELECT {COLUMNS} FROM webhook{filter} ORDER BY id",
    "SELECT {COLUMNS} FROM webhook WHERE id = ?",
    "DELETE FROM webhook_message WHERE webhook_id = ?",
    "SELECT id FROM webhook_message WHERE webhook_id = ? ORDER BY id FOR UPDATE",
    "SELECT id FROM webhook_message WHERE id IN ({marks}) ORDER BY id",
    "DELETE FROM webhook_message WHERE id IN ({marks})",
    "DELETE FROM webhook WHERE id = ?",
    " AND webhook_id = ?",
    "UPDATE campaign_batch SET purged_at = ? WHERE id = ? AND purged_at IS NULL",
    "SELECT id, compression_code, long_url, description FROM url_map WHERE id IN ({})",
    "c.at >= ? AND c.at < ?",
    " AND (c.at > ? OR (c.at = ? AND c.event_key > ?))",
    " AND c.at >= ? AND (c.at > ? OR (c.at = ? AND c.event_key > ?))",
    " AND (c.at, c.event_key) > (?, ?)",
    " AND c.link = ?",
    " AND c.link IN (SELECT link_id FROM link_tag WHERE tag = ?)",
    " AND c.link IN (SELECT id FROM url_map WHERE creator_kind = ? AND creator_id = ?)",
    // The links' clicks at a glance: SQL.
    "SELECT url_map_id, {pv} AS pv FROM visit_statistics WHERE url_map_id",
    " GROUP BY url_map_id",
    "SELECT url_map_id, stat_date, pv FROM visit_statistics WHERE url_map_id",
    " AND stat_date >= ? AND stat_date <= ?",
    "DELETE FROM recovery_code WHERE user_id = ?",
    "INSERT INTO recovery_code (user_id, digest) VALUES {}",
    "SELECT COUNT(*) AS n FROM recovery_code WHERE user_id = ? AND used_at IS NULL",
    "UPDATE users SET totp_secret = ?, totp_step = ? WHERE id = ? AND totp_secret IS NULL",
    "UPDATE users SET totp_secret = NULL, totp_step = NULL WHERE id = ?",
    "a new nonce each time",
    "any key length",
    "gezd gnbv gy3t qojq gezd gnbv gy3t qojq",
    "the system's random source",
    "ANALYZE batch_recipient",
    "ANALYZE TABLE batch_recipient",
    "DELETE FROM {table} WHERE batch_id = ?",
    "INSERT INTO batch_recipient (batch_id, number, token, phone, vars) VALUES {}",
    " AND first_click IS NOT NULL",
    " AND first_click IS NULL",
    "SELECT phone, batch_id, number FROM batch_recipient WHERE phone",
    " AND batch_id = ?",
    "deleted the phone numbers of batches past their retention",
    "AppState is registered",
    "the cookie just added",
    "a target URL parses",
    "url_map_id IN (SELECT link_id FROM link_tag WHERE tag = ?)",
    "SELECT link_id FROM link_tag WHERE tag = ?",
    "the system random source",
    "value outside the code space",
    "alphabet is ASCII",
    "domain out of range",
    "{x} is outside the permutation's domain",
    "{y} is outside the permutation's domain",
    "code length {length} outside 1..=12",
    "a result per valid row",
    "writing to memory",
    "Spring sale, SMS 1",
    "every item has a result",
    "at least one length",
    "16 bytes fit a salt",
    "argon2id with default parameters hashes any password",
    "argon2id with default parameters hashes any secret",
    "the semaphore is never closed",
    "argon2 does not panic",
    "a failure has a reason",
    "a valid name",
    "user {id}",
    // The apps' names as the user-agent rules give them (the pages translate them as words).
    "Weibo",
    "Douyin",
    "Toutiao",
    "Xiaohongshu",
    "Alipay",
    "Taobao",
    // An SMS counting rule's identifier (`Encoding::words` says it to people).
    "China",
    // What an export of a batch holds, in its audit entry's data.
    "recipients who did not click",
    "recipients who clicked",
    // A command-line setting's error (the CLI speaks English).
    "the checker URL needs {url} or {host} where the domain goes",
    "'{text}' is not an http:// or https:// URL",
    // A stored domain's protocol that is neither (read with a default, never shown).
    "unknown protocol '{other}'",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The files of `dir` and its folders ending in `.ext`.
fn files(dir: &str, ext: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut folders = vec![root().join(dir)];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == ext) {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The string literal starting at the `"` at `start` of `text`, unescaped, and where it ends.
fn literal(text: &str, start: usize) -> Option<(String, usize)> {
    let mut out = String::new();
    let mut chars = text[start + 1..].char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, start + 1 + i + 1)),
            '\\' => match chars.next()?.1 {
                'n' => out.push('\n'),
                other => out.push(other),
            },
            c => out.push(c),
        }
    }
    None
}

/// Does a literal read like words a person reads (`the file is empty`, `Countries`)?
fn reads_as_words(s: &str) -> bool {
    let capitalised_word = s.len() > 2
        && s.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && s.chars().skip(1).all(|c| c.is_ascii_lowercase());
    let words = s.as_bytes().windows(4).any(|w| {
        w[0].is_ascii_alphabetic()
            && w[1].is_ascii_alphabetic()
            && w[2] == b' '
            && (w[3].is_ascii_lowercase() || w[3] == b'{')
    });
    capitalised_word || words
}

/// The messages of the code a person can read on an admin page: the errors of the rules and
/// services, and the admin UI's own texts.
fn code_messages() -> Vec<(String, String)> {
    let mut sources: Vec<PathBuf> = ["src/admin", "src/services", "src/rules"]
        .iter()
        .flat_map(|dir| files(dir, "rs"))
        .collect();
    sources.push(root().join("src/stats/report.rs"));
    sources
        .iter()
        .flat_map(|path| {
            let name = path.strip_prefix(root()).unwrap().display().to_string();
            sentences_in(&name, &std::fs::read_to_string(path).unwrap())
        })
        .collect()
}

/// Does `line` call `t!` as `call` writes it (not `format!`, whose name ends the same)?
fn text_macro(line: &str, call: &str) -> bool {
    line.match_indices(call).any(|(at, _)| {
        !line[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// The literals of `text` (the Rust file `name`) that read as words and are neither a text
/// (`t!`), an error's text (`#[error]`), a log line nor listed as internal.
fn sentences_in(name: &str, text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    {
        let mut previous = "";
        for (number, line) in text.lines().enumerate() {
            let trimmed = line.trim_start();
            // An error's text (`#[error]` of a `#[derive(Says)]`) and a page's (`t!`, its
            // literal on the line after when rustfmt breaks it) do not compile without their
            // Chinese.
            let checked = |l: &str| text_macro(l, "t!(\"") || l.contains("#[error(");
            let opened = text_macro(previous.trim_end(), "t!(")
                && previous.trim_end().ends_with("t!(")
                || previous.trim() == "#[error(";
            previous = line;
            // The unit tests at the end of a file are not shown to anyone.
            if trimmed.starts_with("#[cfg(test)]") {
                break;
            }
            if trimmed.starts_with("//")
                || line.contains("tracing::")
                || line.contains("panic!")
                || line.contains(".expect(\"")
                || checked(line)
                || opened
            {
                continue;
            }
            let mut from = 0;
            while let Some(at) = line[from..].find('"') {
                let start = from + at;
                // Skip char literals like '"' and raw strings.
                if start > 0 && line.as_bytes()[start - 1] == b'\'' {
                    from = start + 1;
                    continue;
                }
                let Some((text, end)) = literal(line, start) else {
                    break;
                };
                if reads_as_words(&text) && !INTERNAL.contains(&text.as_str()) {
                    out.push((format!("{name}:{}", number + 1), text));
                }
                from = end;
            }
        }
    }
    out
}

/// The texts of pages are `t!("…")` and errors' are their `#[error]`, which do not compile
/// without their Chinese (the catalog is their list: the tests below check each entry). A
/// sentence written as a plain string would reach a page as English in every language: there
/// is none (what is listed in `INTERNAL` is for logs, SQL and invariants).
#[test]
fn no_sentence_a_person_reads_is_made_at_run_time() {
    let mut made: Vec<String> = code_messages()
        .into_iter()
        .map(|(place, english)| format!("{place}: {english:?}"))
        .collect();
    made.sort();
    made.dedup();
    assert!(
        made.is_empty(),
        "{} sentences are made as English at run time; write them as t!(…) or an error's \
         #[error(…)]:\n{}",
        made.len(),
        made.join("\n")
    );
    // And the scan itself finds what it should: the sentence outside `t!` and `#[error]`.
    let probe = r#"
        #[error(
            "the probe reads as a sentence"
        )]
        let empty = t!("the probe reads as a sentence");
        let text = t!(
            "the probe reads as a sentence"
        );
        return Err(format!("the probe reads as a sentence"));
    "#;
    assert_eq!(
        sentences_in("probe.rs", probe),
        [(
            "probe.rs:9".to_owned(),
            "the probe reads as a sentence".to_owned()
        )]
    );
}

fn placeholders(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    let mut position = 0;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        let name = rest[open + 1..open + close].split(':').next().unwrap_or("");
        if name.is_empty() {
            out.insert(position.to_string());
            position += 1;
        } else {
            out.insert(name.to_owned());
        }
        rest = &rest[open + close + 1..];
    }
    out
}

#[test]
fn every_translation_keeps_the_values_of_its_english() {
    for text in Lang::translated() {
        let (english, chinese) = (text.english(), Lang::ZhCn.t(text));
        assert_ne!(chinese.trim(), "", "{english:?} has an empty translation");
        let (from, to) = (placeholders(english), placeholders(chinese));
        // `{}` in the Chinese may stand for a positional value by its number.
        let to: BTreeSet<String> = to.into_iter().collect();
        assert_eq!(
            from, to,
            "{english:?} → {chinese:?} changes the values it shows"
        );
    }
}

/// Issue 40: Chinese sentences use full-width punctuation (，：；！？（）) beside Chinese
/// characters; half-width marks stay only in what is typed or code (`?r=`, `{0}:`, `, ; |`).
#[test]
fn chinese_sentences_use_full_width_punctuation() {
    let is_chinese = |c: char| ('\u{4e00}'..='\u{9fff}').contains(&c);
    let mut wrong = Vec::new();
    let visitor = Lang::ZhCn
        .keys()
        .into_iter()
        .map(|key| Lang::ZhCn.text(key));
    for chinese in Lang::translated()
        .into_iter()
        .map(|text| Lang::ZhCn.t(text))
        .chain(visitor)
    {
        let chars: Vec<char> = chinese.chars().collect();
        for (i, c) in chars.iter().enumerate() {
            if !",:;!?()".contains(*c) {
                continue;
            }
            // A mark after a Chinese character and before Chinese, a space or the end is a
            // sentence's; anything else (`?r=`, `https:`) is code or typed.
            let before = i > 0 && is_chinese(chars[i - 1]);
            let after = chars
                .get(i + 1)
                .is_none_or(|next| is_chinese(*next) || next.is_whitespace());
            if (before && after)
                || (*c == '(' && after && chars.get(i + 1).is_some_and(|n| is_chinese(*n)))
            {
                wrong.push(chinese.to_owned());
                break;
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "half-width punctuation in Chinese: {wrong:#?}"
    );
}

#[test]
fn messages_with_values_come_out_in_chinese() {
    use inklink::i18n::{Message, Says};
    use inklink::rules::{TargetUrl, TargetUrlError, UrlRules};
    let zh = Lang::ZhCn;
    assert_eq!(zh.t(inklink::t!("Links")), "链接");
    let created = Message::new(inklink::t!("Created {}")).data("", "http://s.example/abc");
    assert_eq!(created.show(zh), "已创建 http://s.example/abc");
    assert_eq!(created.show(Lang::En), "Created http://s.example/abc");
    // Values are data: a link whose code is `Edit`, a user called `operator` stay as typed.
    let disabled = Message::new(inklink::t!("Disabled {}")).data("", "Edit");
    assert_eq!(disabled.show(zh), "已停用 Edit");
    let added = Message::new(inklink::t!("Added {} ({})"))
        .data("", "operator")
        .word("", inklink::t!("operator"));
    assert_eq!(added.show(zh), "已添加 operator（运营）");
    // An error inside an error is a message itself: translated in turn, from its structure.
    let rules = UrlRules {
        max_length: 2048,
        own_hosts: &[],
    };
    for (url, chinese) in [
        ("http://256.1.1.1/x", "网址的主机名无效：IPv4 地址无效"),
        (
            "https://a..example.com/x",
            "网址的主机名无效：其中有空的标签（两个点相连）；DNS 名称中不能有",
        ),
    ] {
        let err = TargetUrl::parse(url, &rules).unwrap_err();
        assert!(matches!(err, TargetUrlError::InvalidHost(_)), "{url}");
        assert_eq!(err.says().show(zh), chinese, "{url}");
        assert_eq!(err.says().show(Lang::En), err.to_string(), "{url}");
    }
    assert_eq!(
        zh.fill(inklink::t!("Disable {links}?"), &[("links", "3 个链接")]),
        "停用 3 个链接？"
    );
    let _ = Path::new("");
}

use crate::admin::{Browser, add_user, csrf_in};
use crate::support::spawn_app;
use inklink::rules::Role;

#[actix_web::test]
async fn the_admin_ui_speaks_the_browsers_language_until_the_person_chooses_one() {
    let app = spawn_app().await;
    add_user(&app, "ada", "admin-password", Role::Admin).await;

    // Before sign-in: the browser's language.
    let mut english = Browser::speaking(&app, "en-US,en;q=0.9");
    let login = english.get("/admin/login").await;
    assert!(login.body.contains("Sign in to inklink") && login.body.contains("lang=\"en\""));
    let mut chinese = Browser::speaking(&app, "zh-CN,zh;q=0.9,en;q=0.8");
    let login = chinese.get("/admin/login").await;
    assert!(login.body.contains("登录 inklink") && login.body.contains("lang=\"zh-CN\""));
    assert!(
        login.body.contains("href=\"/lang/en\""),
        "the switch is on the page"
    );
    let wrong = chinese.sign_in("ada", "not-the-password").await;
    assert_eq!(wrong.status, 401);
    assert!(wrong.body.contains("用户名或密码错误"), "{}", wrong.body);

    // Signed in: every text, message and error of the pages in Chinese.
    let page = chinese.sign_in("ada", "admin-password").await;
    assert_eq!(page.status, 303);
    let list = chinese.get("/admin/links").await;
    assert!(list.body.contains("新建链接") && list.body.contains("还没有链接"));
    assert!(!list.body.contains("New link"));
    let csrf = csrf_in(&list.body);
    let refused = chinese
        .post(
            "/admin/links",
            &[("csrf", &csrf), ("url", "ftp://example.com/x")],
        )
        .await;
    assert_eq!(refused.status, 422);
    assert!(
        refused
            .body
            .contains("不允许“ftp:”协议；只能缩短 http 和 https 网址"),
        "{}",
        refused.body
    );
    assert!(
        refused.body.contains("ftp://example.com/x"),
        "the input is kept"
    );
    let created = chinese
        .post(
            "/admin/links",
            &[
                ("csrf", &csrf),
                ("url", "https://example.com/促销"),
                ("code", "sale"),
            ],
        )
        .await;
    assert_eq!(created.status, 303);
    let list = chinese.get("/admin/links").await;
    assert!(
        list.body.contains("已创建 http://"),
        "the flash is Chinese too"
    );
    assert!(list.body.contains("1 个链接"));
    // One word for one thing on the link form: 活动 is the UTM campaign; the link's settings
    // are 推广设置 and its tags 标签.
    let form = chinese.get("/admin/links/new").await;
    assert!(form.body.contains("推广设置"), "{}", form.body);
    for (at, _) in form.body.match_indices("活动") {
        let around: String = form.body[at.saturating_sub(300)..]
            .chars()
            .take(400)
            .collect();
        assert!(around.contains("utm_"), "活动 for something else: {around}");
    }
    let missing = chinese.get("/admin/links/nothing-here").await;
    assert_eq!(missing.status, 404);
    assert!(missing.body.contains("此地址没有内容"), "{}", missing.body);
    let confirm = chinese
        .post(
            "/admin/links/selection",
            &[("csrf", &csrf), ("action", "disable"), ("codes", "sale")],
        )
        .await;
    assert!(confirm.body.contains("停用 1 个链接？"), "{}", confirm.body);

    // The switch: this person's choice from now on, on every device, whatever the browser.
    let mut desk = Browser::speaking(&app, "en-US,en;q=0.9");
    desk.sign_in("ada", "admin-password").await;
    let dashboard = desk.get("/admin/dashboard").await;
    assert!(dashboard.body.contains("Visits per day"));
    desk.referer = Some(app.url("/admin/dashboard?range=30"));
    let switched = desk
        .post(
            "/admin/language",
            &[("csrf", &csrf_in(&dashboard.body)), ("lang", "zh-CN")],
        )
        .await;
    assert_eq!(
        (switched.status, switched.location.as_deref()),
        (303, Some("/admin/dashboard?range=30")),
        "back to the page the switch was on"
    );
    assert!(desk.get("/admin/dashboard").await.body.contains("每日访问"));
    let mut phone = Browser::speaking(&app, "en");
    phone.sign_in("ada", "admin-password").await;
    assert!(
        phone.cookie().unwrap().contains("inklink_lang=zh-CN"),
        "sign-in brings the setting along"
    );
    let account = phone.get("/admin/account").await;
    assert!(account.body.contains("个人设置"));
    assert!(
        account
            .body
            .contains("value=\"zh-CN\" lang=\"zh-CN\" selected")
    );

    // Back to "the browser's language" on the settings page.
    let saved = phone
        .post(
            "/admin/account",
            &[
                ("csrf", &csrf_in(&account.body)),
                ("time_zone", ""),
                ("language", ""),
            ],
        )
        .await;
    assert_eq!(saved.status, 303);
    let mut laptop = Browser::speaking(&app, "en");
    laptop.sign_in("ada", "admin-password").await;
    assert!(laptop.get("/admin/links").await.body.contains("New link"));
    // A language inklink does not have is refused with a reason, and nothing changes.
    let links = laptop.get("/admin/links").await;
    let odd = laptop
        .post(
            "/admin/language",
            &[("csrf", &csrf_in(&links.body)), ("lang", "fr")],
        )
        .await;
    assert_eq!(odd.status, 400);
    assert!(odd.body.contains("is not a language of inklink"));
    let audit = laptop.get("/admin/audit?action=user.language").await;
    assert!(audit.body.contains("user.language"));
}

#[actix_web::test]
async fn visitor_pages_switch_language_with_a_cookie_and_go_back_where_they_were() {
    let app = spawn_app().await;
    let mut visitor = Browser::speaking(&app, "en");
    let page = visitor.get("/no-such-code").await;
    assert_eq!(page.status, 404);
    assert!(page.body.contains("This short link does not exist"));
    assert!(
        page.body.contains("href=\"/lang/zh-CN\""),
        "a switch on the page"
    );
    visitor.referer = Some(app.url("/no-such-code"));
    let switched = visitor.get("/lang/zh-CN").await;
    assert_eq!(
        (switched.status, switched.location.as_deref()),
        (303, Some("/no-such-code"))
    );
    let cookie = switched
        .headers
        .get("set-cookie")
        .unwrap()
        .to_str()
        .unwrap();
    assert!(cookie.starts_with("inklink_lang=zh-CN") && cookie.contains("Path=/"));
    let page = visitor.get("/no-such-code").await;
    assert!(
        page.body.contains("此短链接不存在"),
        "the cookie beats Accept-Language"
    );
    assert!(visitor.get("/").await.body.contains("此地址提供短链接服务"));
    // Never back to another site, and only our languages.
    visitor.referer = Some("https://evil.example/phish".into());
    let elsewhere = visitor.get("/lang/en").await;
    assert_eq!(elsewhere.location.as_deref(), Some("/"));
    assert_eq!(visitor.get("/lang/fr").await.status, 404);
    assert!(
        visitor
            .get("/no-such-code")
            .await
            .body
            .contains("This short link")
    );
}

/// Issue 40: what people typed is never translated. A link whose code is `Edit`, tagged
/// `Disabled`, described in UI words, made by a user called `operator`, and a campaign value
/// `Disabled` read verbatim on every page, flash and confirmation, in both languages; the
/// words around them are in the reader's language, and the audit log says what happened in
/// words, not `link.create`.
#[actix_web::test]
async fn what_people_typed_is_shown_verbatim_on_every_page_in_both_languages() {
    let app = spawn_app().await;
    add_user(&app, "operator", "operator-pass", Role::Operator).await;
    add_user(&app, "ada", "admin-password", Role::Admin).await;
    let host = format!("localhost:{}", app.port);
    let description = "Disabled Expired Edit";

    let mut zh = Browser::speaking(&app, "zh-CN,zh;q=0.9");
    assert_eq!(zh.sign_in("operator", "operator-pass").await.status, 303);
    let csrf = csrf_in(&zh.get("/admin/links/new").await.body);
    let created = zh
        .post(
            "/admin/links",
            &[
                ("csrf", &csrf),
                ("url", "https://example.com/Edit"),
                ("domain", &host),
                ("code", "Edit"),
                ("tags", "Disabled"),
                ("description", description),
            ],
        )
        .await;
    assert_eq!(created.status, 303, "{}", created.body);
    let flashed = zh.get("/admin/links").await.body;
    assert!(
        flashed.contains(&format!("已创建 http://{host}/Edit")),
        "{flashed}"
    );

    // A visit that brought a campaign value made of a UI word.
    let visit = app
        .client
        .get(app.url("/Edit?utm_campaign=Disabled"))
        .insert_header(("user-agent", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36"))
        .send()
        .await
        .unwrap();
    assert_eq!(visit.status().as_u16(), 302);
    crate::analytics::wait_written(&app, 1).await;
    inklink::stats::tally::drain(&app.core.db, app.core.settings.timezone)
        .await
        .unwrap();

    // A display name in any script, beside the sign-in name; a line break in it is refused.
    let account = zh.get("/admin/account").await.body;
    let account_csrf = csrf_in(&account);
    let bad_name = zh
        .post(
            "/admin/account",
            &[
                ("csrf", &account_csrf),
                ("display_name", "王\n小美"),
                ("language", ""),
                ("time_zone", ""),
            ],
        )
        .await;
    assert_eq!(bad_name.status, 422);
    assert!(bad_name.body.contains("显示名称最多"), "{}", bad_name.body);
    let named = zh
        .post(
            "/admin/account",
            &[
                ("csrf", &account_csrf),
                ("display_name", "王小美"),
                ("language", ""),
                ("time_zone", ""),
            ],
        )
        .await;
    assert_eq!(named.status, 303);
    let greeted = zh.get("/admin/links").await.body;
    assert!(greeted.contains(">王小美</a>"), "{greeted}");

    let mut en = Browser::speaking(&app, "en");
    assert_eq!(en.sign_in("operator", "operator-pass").await.status, 303);
    for (browser, words) in [
        (
            &mut zh,
            [
                "为 1 个链接添加标签 Disabled？",
                "已停用 Edit",
                "已启用 Edit",
            ],
        ),
        (
            &mut en,
            [
                "Add the tags Disabled to 1 link?",
                "Disabled Edit",
                "Enabled Edit",
            ],
        ),
    ] {
        let list = browser.get("/admin/links").await.body;
        assert!(list.contains(description), "{list}");
        assert!(list.contains(">disabled</a>"), "the tag as stored: {list}");
        let page = browser.get("/admin/links/Edit").await.body;
        for verbatim in [
            format!("<td>{description}</td>"),
            "<td>operator</td>".to_owned(),
            ">disabled</a>".to_owned(),
        ] {
            assert!(page.contains(&verbatim), "{verbatim}: {page}");
        }
        // Times carry their offset, never an ambiguous zone abbreviation such as CST.
        assert!(
            page.contains(" UTC</td>") && !page.contains("CST"),
            "{page}"
        );
        let stats = browser.get("/admin/links/Edit/stats").await.body;
        assert!(stats.contains("<td>Disabled</td>"), "{stats}");

        let csrf = csrf_in(&list);
        let asked = browser
            .post(
                "/admin/links/selection",
                &[
                    ("csrf", &csrf),
                    ("action", "tag"),
                    ("tags", "Disabled"),
                    ("codes", "Edit"),
                ],
            )
            .await;
        assert_eq!(asked.status, 200);
        assert!(asked.body.contains(words[0]), "{}", asked.body);

        let disabled = browser
            .post("/admin/links/Edit/disable", &[("csrf", &csrf)])
            .await;
        assert_eq!(disabled.status, 303);
        let flash = browser.get("/admin/links").await.body;
        assert!(flash.contains(words[1]), "{flash}");
        browser
            .post("/admin/links/Edit/enable", &[("csrf", &csrf)])
            .await;
        let flash = browser.get("/admin/links").await.body;
        assert!(flash.contains(words[2]), "{flash}");

        let composed = browser
            .post(
                "/admin/sms",
                &[
                    ("csrf", &csrf),
                    ("message", "Edit Disabled {link} operator"),
                    ("url", "https://example.com/sms"),
                    ("rule", "china"),
                    ("segments", "1"),
                    ("action", "preview"),
                ],
            )
            .await;
        assert_eq!(composed.status, 200, "{}", composed.body);
        assert!(
            composed.body.contains("Edit Disabled http://"),
            "{}",
            composed.body
        );
    }

    let mut admin = Browser::speaking(&app, "zh-CN");
    assert_eq!(admin.sign_in("ada", "admin-password").await.status, 303);
    let users = admin.get("/admin/users").await.body;
    assert!(
        users.contains("王小美 <span class=\"muted\">(operator)</span>"),
        "{users}"
    );
    let audit = admin.get("/admin/audit").await.body;
    for shown in [
        "operator",
        "链接 Edit",
        "创建链接",
        "停用链接",
        "修改显示名称",
    ] {
        assert!(audit.contains(shown), "{shown}: {audit}");
    }
    // What a person reads (the filter's values are the identifiers, for links to it).
    let text: String = audit
        .split('<')
        .map(|part| part.split_once('>').map_or("", |(_, text)| text))
        .collect();
    for raw in ["link.create", "link.disable", "user operator"] {
        assert!(!text.contains(raw), "{raw} shown raw: {text}");
    }
}

/// The admin UI's API page lists every operation by its summary: each has its Chinese.
#[test]
fn every_api_operation_summary_has_its_chinese() {
    use utoipa::OpenApi;
    let doc = inklink::api::openapi::ApiDoc::openapi();
    let mut missing = Vec::new();
    for (path, item) in &doc.paths.paths {
        for operation in [&item.get, &item.post, &item.patch, &item.delete]
            .into_iter()
            .flatten()
        {
            let summary = operation.summary.clone().unwrap_or_default();
            if inklink::i18n::Text::find(&summary).is_none() {
                missing.push(format!("{path}: {summary:?}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "no Chinese for:\n{}",
        missing.join("\n")
    );
}

/// An error's message is its structure (`#[derive(Says)]`): in English it is the error's text,
/// in Chinese what the catalog makes of it, with what people typed left as they typed it, even
/// where their input reads like the words of a message.
#[test]
fn an_errors_message_reads_as_its_text_in_both_languages_and_keeps_what_was_typed() {
    use inklink::i18n::{Message, Says};
    use inklink::rules::*;
    let rules = UrlRules {
        max_length: 64,
        own_hosts: &[],
    };
    let mut errors: Vec<(String, Message)> = Vec::new();
    let mut keep = |err: &dyn std::fmt::Display, message: Message| {
        errors.push((err.to_string(), message));
    };
    for url in [
        "",
        "example.com/a",
        "ftp://example.com/a",
        "https://",
        "https://exa mple.com/",
        "https://example.com/a\tb",
        "https://-bad-.example/",
        "https://example.com/a-very-long-path-that-goes-on-and-on-and-on-and-on-and-on",
        "javascript:alert(1)",
    ] {
        if let Err(err) = TargetUrl::parse(url, &rules) {
            keep(&err, err.says());
        }
    }
    for host in ["", "exa mple.com", "-x-.com", "a..b"] {
        if let Err(err) = DomainHost::parse(host) {
            keep(&err, err.says());
        }
    }
    for code in ["", "a b", "Edit!", &"x".repeat(40)] {
        if let Err(err) = ShortCode::parse(code) {
            keep(&err, err.says());
        }
    }
    for tags in ["a,,b", &"t".repeat(80), "Disabled\u{7}"] {
        if let Err(err) = Tag::parse_list(tags) {
            keep(&err, err.says());
        }
    }
    for name in ["", "a b", &"n".repeat(70)] {
        if let Err(err) = Username::parse(name) {
            keep(&err, err.says());
        }
    }
    // Files people send: a recipients' file, its rows, a receipts' file and its lines, read
    // with our words (not the CSV reader's English).
    use inklink::services::batches::{read::RecipientFile, receipts};
    let long_row = format!("phone,name\n13800000001,{}\n", "n".repeat(5000));
    for file in [
        &b"phone\n\xff\xfe\x80\n"[..],
        b"name\nada\n",
        long_row.as_bytes(),
    ] {
        match RecipientFile::parse(file) {
            Err(err) => keep(&err, err.says()),
            Ok(parsed) => {
                for (_, err) in parsed.rows().filter_map(Result::err) {
                    keep(&err, err.says());
                }
            }
        }
    }
    for file in [
        &b"phone,delivered\n13800000001,true\n13800000002,\xff\n"[..],
        b"phone\n1\n",
    ] {
        match receipts::from_csv(file) {
            Err(err) => keep(&err, err.says()),
            Ok(lines) => {
                for message in lines.into_iter().filter_map(Result::err) {
                    keep(&message, message.clone());
                }
            }
        }
    }
    if let Err(err) = Password::parse("short") {
        keep(&err, err.says());
    }
    for role in ["owner", "Disabled"] {
        if let Err(err) = role.parse::<Role>() {
            keep(&err, err.says());
        }
    }
    assert!(errors.len() >= 25, "{} errors", errors.len());
    let english: Vec<&str> = errors.iter().map(|(e, _)| e.as_str()).collect();
    for expected in [
        "the recipients' file is not valid: it is neither UTF-8 nor GB18030 text; save it as CSV UTF-8",
        "the row is 5011 bytes long; at most 4096 are allowed",
        "line 3 is not UTF-8 text; save the file as CSV UTF-8",
        "the recipients' file is not valid: the first line must name the columns: phone (or key), delivered, and optionally error_code and at",
    ] {
        assert!(
            english.contains(&expected),
            "{expected:?} not in {english:#?}"
        );
    }
    for (english, message) in &errors {
        assert_eq!(&message.show(Lang::En), english);
        let chinese = message.show(Lang::ZhCn);
        assert_ne!(&chinese, english, "{english:?} has no Chinese");
        assert!(
            chinese
                .chars()
                .any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c)),
            "{english:?} → {chinese:?}"
        );
    }
    // A role typed as a word of the UI stays as typed.
    let typed = "Disabled".parse::<Role>().unwrap_err().says();
    assert!(
        typed.show(Lang::ZhCn).contains("“Disabled”"),
        "{}",
        typed.show(Lang::ZhCn)
    );
}
