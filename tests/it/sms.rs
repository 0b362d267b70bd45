//! SMS segment counting against a table of messages, and the composer over the API.

use crate::api::Api;
use crate::support::spawn_app;
use inklink::rules::sms::{CountRule, Encoding, count};
use inklink::rules::{DomainHost, Protocol, Role};
use inklink::services::{Actor, domains};
use sea_orm::EntityTrait;
use serde_json::json;

fn rep(text: &str, n: usize) -> String {
    text.repeat(n)
}

#[test]
fn segments_are_counted_like_phones_and_chinese_carriers_count_them() {
    use CountRule::{China, Standard};
    use Encoding::{China as Cn, Gsm7, Ucs2};
    let a = |n| rep("a", n);
    let zh = |n| rep("中", n);
    let emoji = |n| rep("😀", n);
    let euro = |n| rep("€", n);
    let table: Vec<(CountRule, String, Encoding, usize, usize)> = vec![
        (Standard, "Hello".into(), Gsm7, 5, 1),
        (Standard, String::new(), Gsm7, 0, 1),
        (Standard, a(160), Gsm7, 160, 1),
        (Standard, a(161), Gsm7, 161, 2),
        (Standard, a(306), Gsm7, 306, 2),
        (Standard, a(307), Gsm7, 307, 3),
        (Standard, a(459), Gsm7, 459, 3),
        (Standard, a(460), Gsm7, 460, 4),
        // Extension characters take two septets ...
        (Standard, euro(80), Gsm7, 160, 1),
        (Standard, euro(81), Gsm7, 162, 2),
        (Standard, "{}[]".into(), Gsm7, 8, 1),
        (Standard, "~^|\\".into(), Gsm7, 8, 1),
        // ... and are never split across two parts.
        (Standard, format!("{}€{}", a(152), a(152)), Gsm7, 306, 3),
        (Standard, format!("{}€{}", a(151), a(152)), Gsm7, 305, 2),
        (Standard, "Ça va? Très bien à 5€".into(), Gsm7, 22, 1),
        (Standard, "Price: $5 @ shop".into(), Gsm7, 16, 1),
        (Standard, "line1\nline2".into(), Gsm7, 11, 1),
        (Standard, "ΔΦΓ".into(), Gsm7, 3, 1),
        // One character outside the GSM alphabet makes the whole message UCS-2.
        (Standard, "Sí".into(), Ucs2, 2, 1),
        (Standard, "tab\there".into(), Ucs2, 8, 1),
        (Standard, "Ελλάδα".into(), Ucs2, 6, 1),
        (Standard, "Hi 中".into(), Ucs2, 4, 1),
        (Standard, format!("{}中", a(69)), Ucs2, 70, 1),
        (Standard, format!("{}中", a(70)), Ucs2, 71, 2),
        (Standard, zh(70), Ucs2, 70, 1),
        (Standard, zh(71), Ucs2, 71, 2),
        (Standard, zh(134), Ucs2, 134, 2),
        (Standard, zh(135), Ucs2, 135, 3),
        // Emoji outside the BMP count twice and are never split.
        (Standard, "😀".into(), Ucs2, 2, 1),
        (Standard, emoji(35), Ucs2, 70, 1),
        (Standard, emoji(36), Ucs2, 72, 2),
        (Standard, format!("{}😀{}", zh(66), zh(66)), Ucs2, 134, 3),
        (Standard, format!("{}😀{}", zh(65), zh(66)), Ucs2, 133, 2),
        // The mainland carriers: 70 / 67 whatever the alphabet, signature included.
        (China, "Hello".into(), Cn, 5, 1),
        (China, a(70), Cn, 70, 1),
        (China, a(71), Cn, 71, 2),
        (China, format!("【测试】{}", a(66)), Cn, 70, 1),
        (China, format!("【测试】{}", a(67)), Cn, 71, 2),
        (China, zh(134), Cn, 134, 2),
        (China, zh(135), Cn, 135, 3),
        (China, emoji(35), Cn, 70, 1),
        (
            China,
            format!("【店】春季大促，全场五折：{}", "https://x.cn/Ab3d"),
            Cn,
            30,
            1,
        ),
    ];
    assert!(table.len() >= 30);
    for (rule, text, encoding, units, segments) in table {
        let counted = count(&text, rule);
        assert_eq!(
            (counted.encoding, counted.units, counted.segments),
            (encoding, units, segments),
            "{rule:?} {text:?}"
        );
        assert!(counted.remaining <= counted.per_segment);
    }
}

#[actix_web::test]
async fn the_composer_picks_the_shortest_domain_and_a_code_length_that_fit() {
    let app = spawn_app().await;
    domains::add(
        &app.core.db,
        &DomainHost::parse("x.cn").unwrap(),
        Protocol::Http,
        false,
        &Actor::Cli,
    )
    .await
    .unwrap();
    let api = Api::with_role(&app, "sms", Role::Operator).await;
    // 【店】 (3) + http://x.cn/ (12) + code + 50: a 5-character code fills 70 exactly.
    let message = format!("{{link}} {}", rep("好", 49));
    let reply = api
        .call(
            "POST",
            "/api/v1/sms",
            Some(json!({
                "message": message, "url": "https://shop.example.com/sale",
                "signature": "店", "rule": "china",
            })),
        )
        .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let body = &reply.body;
    assert_eq!(body["domain"], "x.cn");
    assert_eq!(body["length"], 5);
    assert_eq!(body["count"]["segments"], 1);
    assert_eq!(body["count"]["units"], 70);
    assert_eq!(body["count"]["encoding"], "China");
    let code = body["link"]["code"].as_str().unwrap();
    assert_eq!(code.len(), 5);
    let text = body["text"].as_str().unwrap();
    assert_eq!(text, format!("【店】http://x.cn/{code} {}", rep("好", 49)));
    assert_eq!(body["warnings"].as_array().unwrap().len(), 0);
    assert_eq!(app.fetch(&format!("/{code}")).await.0, 302);

    // Three more characters do not fit one segment even with a 4-character code ...
    let longer = format!("{{link}} {}", rep("好", 52));
    let refused = api
        .call(
            "POST",
            "/api/v1/sms",
            Some(json!({"message": longer, "url": "https://shop.example.com/sale", "signature": "店", "rule": "china"})),
        )
        .await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert_eq!(refused.body["error"]["field"], "message");
    assert!(
        refused.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("shorten it by 2 characters"),
        "{}",
        refused.body
    );
    // ... but fit two, with the configured length; a plan creates nothing.
    let planned = api
        .call(
            "POST",
            "/api/v1/sms",
            Some(
                json!({"message": longer, "url": "https://shop.example.com/sale", "signature": "店",
                        "rule": "china", "segments": 2, "create": false}),
            ),
        )
        .await;
    assert_eq!(planned.status, 200, "{}", planned.body);
    assert_eq!(planned.body["length"], 6);
    assert_eq!(planned.body["count"]["segments"], 2);
    assert!(planned.body["link"].is_null());

    // Text straight after the link would be taken into it by phones.
    let joined = api
        .call(
            "POST",
            "/api/v1/sms",
            Some(json!({"message": "点击{link}，立即领取", "url": "https://shop.example.com/sale", "create": false})),
        )
        .await;
    assert_eq!(joined.status, 200);
    let warnings = joined.body["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].as_str().unwrap().contains('，'));

    for (body, field) in [
        (
            json!({"message": "no placeholder", "url": "https://e.com"}),
            "message",
        ),
        (
            json!({"message": "{link} {link}", "url": "https://e.com"}),
            "message",
        ),
        (json!({"message": "{link}", "url": "e e"}), "url"),
        (
            json!({"message": "{link}", "url": "https://e.com", "segments": 0}),
            "segments",
        ),
        (
            json!({"message": "{link}", "url": "https://e.com", "rule": "mars"}),
            "rule",
        ),
        // Issue 43's finding: control characters were kept in the text returned.
        (
            json!({"message": "领券\u{7}{link}\u{1b}[31m", "url": "https://e.com"}),
            "message",
        ),
        (
            json!({"message": "{link}\tgo", "url": "https://e.com"}),
            "message",
        ),
        (
            json!({"message": "{link}", "url": "https://e.com", "signature": "店\n铺"}),
            "message",
        ),
    ] {
        let reply = api.call("POST", "/api/v1/sms", Some(body.clone())).await;
        assert_eq!(reply.status, 422, "{body}: {}", reply.body);
        assert_eq!(reply.body["error"]["field"], field, "{body}");
    }
    let control = api
        .call(
            "POST",
            "/api/v1/sms",
            Some(json!({"message": "a\u{0}{link}", "url": "https://e.com"})),
        )
        .await;
    assert!(
        control.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("control character"),
        "{}",
        control.body
    );
    // A line break is text: messages of several lines are composed as written.
    let lines = api
        .call(
            "POST",
            "/api/v1/sms",
            Some(json!({"message": "第一行\n{link} 第二行", "url": "https://e.com", "create": false})),
        )
        .await;
    assert_eq!(lines.status, 200, "{}", lines.body);
    assert!(lines.body["text"].as_str().unwrap().contains("第一行\n"));
    let counted = api
        .call(
            "POST",
            "/api/v1/sms/count",
            Some(json!({"message": rep("€", 81)})),
        )
        .await;
    assert_eq!(counted.status, 200);
    assert_eq!(counted.body["segments"], 2);
    assert_eq!(counted.body["units"], 162);
}

/// Issue 40: the composer's link takes a description, tags and UTM parameters as the link form
/// does; the message can be copied; and the form starts over once the link is made, so that a
/// second click does not make a second link.
#[actix_web::test]
async fn the_composer_gives_its_link_tags_description_and_utm_and_starts_over_after() {
    let app = spawn_app().await;
    let mut browser = crate::admin::signed_in(&app).await;
    let page = browser.get("/admin/sms").await;
    let csrf = crate::admin::csrf_in(&page.body);
    let form = [
        ("csrf", csrf.as_str()),
        ("message", "双十一 {link} 回T退订"),
        ("url", "https://shop.example.com/sale"),
        ("signature", "小店"),
        ("rule", "china"),
        ("segments", "1"),
        ("description", "第一波"),
        ("tags", "双十一, sms"),
        ("utm_source", "sms"),
        ("utm_campaign", "1111"),
        ("action", "create"),
    ];
    let done = browser.post("/admin/sms", &form).await;
    assert_eq!(done.status, 200, "{}", done.body);
    let all = inklink::db::entities::url_map::Entity::find()
        .all(&app.core.db)
        .await
        .unwrap();
    assert_eq!(all.len(), 1);
    let link = &all[0];
    assert_eq!(
        link.long_url,
        "https://shop.example.com/sale?utm_source=sms&utm_campaign=1111"
    );
    assert_eq!(link.description.as_deref(), Some("第一波"));
    let tags = inklink::services::tags::tags_of(&app.core.db, &[link.id])
        .await
        .unwrap();
    assert_eq!(tags[&link.id], ["sms", "双十一"]);
    // The next message's tags field suggests the tags in use, as typed.
    let again = browser.get("/admin/sms").await;
    assert!(
        again.body.contains(r#"list="known-tags""#)
            && again.body.contains(r#"<option value="双十一">"#)
            && again.body.contains(r#"<option value="sms">"#),
        "{}",
        again.body
    );
    let text = format!(
        "【小店】双十一 http://localhost:{}/{} 回T退订",
        app.port, link.compression_code
    );
    assert!(
        done.body.contains(&format!(r#"data-copy="{text}""#)),
        "{}",
        done.body
    );
    // The form is empty again but for how messages are signed and counted.
    assert!(
        done.body.contains(r#"name="url" value="""#),
        "{}",
        done.body
    );
    assert!(done.body.contains(r#"name="tags" value="""#));
    assert!(
        done.body
            .contains(r#"id="signature" name="signature" value="小店""#)
    );
    let bad_tags = browser
        .post(
            "/admin/sms",
            &[
                ("csrf", csrf.as_str()),
                ("message", "{link}"),
                ("url", "https://shop.example.com/sale"),
                ("tags", "a|b"),
                ("action", "create"),
            ],
        )
        .await;
    assert_eq!(bad_tags.status, 422);
    let still = inklink::db::entities::url_map::Entity::find()
        .all(&app.core.db)
        .await
        .unwrap();
    assert_eq!(still.len(), 1, "a refused form makes no link");
}
