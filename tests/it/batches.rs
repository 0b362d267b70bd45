//! Campaign batches end to end over HTTP: recipients in (JSON and CSV), messages out, receipts
//! in three formats, clicks from people, bots, preview fetchers and HEAD requests, and the
//! funnel checked against a recount made here from what the test sent.

use crate::analytics::GEOIP;
use crate::api::{Api, Reply};
use crate::support::{TestApp, TestDb, spawn_app_with, spawn_on};
use inklink::rules::Role;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

const BROWSER: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1";
const DESKTOP: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36";
const BOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
const PREVIEW: &str = "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)";

/// Addresses of the GeoIP and carrier fixtures, their provinces in Chinese ("" for none) and
/// their carriers.
const PLACES: [(&str, &str, &str); 6] = [
    ("36.110.1.2", "北京市", "中国电信"),
    ("116.228.3.4", "上海市", "中国电信"),
    ("113.108.5.6", "广东省", "中国移动"),
    ("58.100.7.8", "浙江省", "中国联通"),
    ("203.0.113.9", "加利福尼亚州", "other"),
    ("100.64.1.1", "", "中国广电"),
];

pub const CARRIERS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/carrier-test.mmdb"
);

const EXTRA: [&str; 10] = [
    "--geoip-db",
    GEOIP,
    "--carrier-db",
    CARRIERS,
    "--geoip-lang",
    "zh-CN",
    "--trusted-proxies",
    "127.0.0.1",
    "--stats-interval",
    "1",
];

fn phone(i: usize) -> String {
    format!("1380{:07}", i)
}

/// The path (and query) of a short URL.
fn path_of(url: &str) -> String {
    let rest = url.split_once("://").unwrap().1;
    rest[rest.find('/').unwrap()..].to_owned()
}

async fn csv_of(app: &TestApp, key: &str, path: &str) -> (u16, String) {
    let mut response = app
        .client
        .get(app.url(path))
        .insert_header(("authorization", format!("Bearer {key}")))
        .send()
        .await
        .unwrap();
    let body = response.body().limit(256 << 20).await.unwrap();
    (
        response.status().as_u16(),
        String::from_utf8(body.to_vec()).unwrap(),
    )
}

fn rows_of(csv_text: &str) -> Vec<HashMap<String, String>> {
    let text = csv_text.trim_start_matches('\u{feff}');
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_owned)
        .collect();
    reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            header
                .iter()
                .cloned()
                .zip(r.iter().map(str::to_owned))
                .collect()
        })
        .collect()
}

/// What the test knows about each recipient (by phone).
#[derive(Clone, Debug, Default)]
struct Known {
    /// (at, delivered, error code) of the receipt that counts.
    receipt: Option<(i64, bool, String)>,
    first_province: Option<String>,
    first_carrier: Option<String>,
    clicks: i64,
    /// Page views by carrier (every click by a person, counted in the daily statistics).
    views: BTreeMap<String, i64>,
}

impl Known {
    fn receive(&mut self, at: i64, delivered: bool, code: &str) {
        let newer = self.receipt.as_ref().is_none_or(|(t, _, _)| at > *t);
        if newer {
            let code = if delivered {
                String::new()
            } else {
                code.to_owned()
            };
            self.receipt = Some((at, delivered, code));
        }
    }
}

/// The funnel a recount of `known` gives, in the API's shape (by province only).
fn recount(sent: usize, known: &HashMap<String, Known>) -> Value {
    let delivered = known
        .values()
        .filter(|k| matches!(k.receipt, Some((_, true, _))))
        .count();
    let failed = known
        .values()
        .filter(|k| matches!(k.receipt, Some((_, false, _))))
        .count();
    let clicked = known.values().filter(|k| k.clicks > 0).count();
    let clicks: i64 = known.values().map(|k| k.clicks).sum();
    let mut by_code: BTreeMap<String, i64> = BTreeMap::new();
    let mut by_province: BTreeMap<String, [i64; 3]> = BTreeMap::new();
    let mut by_carrier: BTreeMap<String, [i64; 3]> = BTreeMap::new();
    for k in known.values() {
        let is_delivered = matches!(k.receipt, Some((_, true, _)));
        if let Some((_, false, code)) = &k.receipt {
            *by_code.entry(code.clone()).or_default() += 1;
        }
        if is_delivered || k.clicks > 0 {
            for (map, value) in [
                (&mut by_province, k.first_province.clone()),
                (&mut by_carrier, k.first_carrier.clone()),
            ] {
                let row = map.entry(value.unwrap_or_default()).or_default();
                row[0] += i64::from(is_delivered);
                row[1] += i64::from(k.clicks > 0);
                row[2] += k.clicks;
            }
        }
    }
    json!({
        "sent": sent, "delivered": delivered, "failed": failed, "clicked": clicked,
        "clicks": clicks,
        "failed_by": by_code,
        "province": by_province,
        "carrier": by_carrier,
    })
}

/// The API's funnel in the recount's shape.
fn shape(funnel: &Value) -> Value {
    let mut by_code: BTreeMap<String, i64> = BTreeMap::new();
    for f in funnel["failed_by"].as_array().unwrap() {
        by_code.insert(
            f["error_code"].as_str().unwrap().into(),
            f["failed"].as_i64().unwrap(),
        );
    }
    let by = |name: &str| -> BTreeMap<String, [i64; 3]> {
        funnel["by"][name]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["value"].as_str().unwrap().to_owned(),
                    [
                        r["delivered"].as_i64().unwrap(),
                        r["clicked"].as_i64().unwrap(),
                        r["clicks"].as_i64().unwrap(),
                    ],
                )
            })
            .collect()
    };
    json!({
        "sent": funnel["sent"], "delivered": funnel["delivered"], "failed": funnel["failed"],
        "clicked": funnel["clicked"], "clicks": funnel["clicks"],
        "failed_by": by_code, "province": by("province"), "carrier": by("carrier"),
    })
}

/// Polls the funnel until it equals `expected` (counting runs every second).
async fn funnel_settles(api: &Api<'_>, id: i64, expected: &Value) -> Value {
    let mut last = Value::Null;
    for _ in 0..120 {
        let reply = api
            .call("GET", &format!("/api/v1/batches/{id}/funnel"), None)
            .await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        last = reply.body;
        if &shape(&last) == expected {
            return last;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    panic!(
        "the funnel\n{}\nnever became the recount\n{}",
        shape(&last),
        expected
    );
}

async fn click(app: &TestApp, path: &str, ip: &str, agent: &str, head: bool) -> u16 {
    let request = if head {
        app.client.head(app.url(path))
    } else {
        app.client.get(app.url(path))
    };
    request
        .insert_header(("x-forwarded-for", ip))
        .insert_header(("user-agent", agent))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// Sends the clicks of recipient `i` (by the messages CSV's `url`): people from a place, and
/// a bot, a preview fetcher and a HEAD request now and then, which never count.
async fn clicks_of(app: &TestApp, i: usize, url: &str, known: &mut Known) {
    let path = path_of(url);
    let (ip, province, carrier) = PLACES[i % PLACES.len()];
    if i.is_multiple_of(5) {
        assert_eq!(click(app, &path, ip, PREVIEW, false).await, 302);
        assert_eq!(click(app, &path, ip, BROWSER, true).await, 302);
    }
    if i.is_multiple_of(7) {
        assert_eq!(click(app, &path, ip, BOT, false).await, 302);
        return;
    }
    let people = 1 + i % 3;
    for n in 0..people {
        let (ip, agent, seen_carrier) = match n {
            0 => (ip, BROWSER, carrier),
            _ => {
                let (ip, _, carrier) = PLACES[(i + n) % PLACES.len()];
                (ip, DESKTOP, carrier)
            }
        };
        assert_eq!(click(app, &path, ip, agent, false).await, 302);
        *known.views.entry(seen_carrier.to_owned()).or_default() += 1;
    }
    known.first_province = Some(province.to_owned());
    known.first_carrier = Some(carrier.to_owned());
    known.clicks += people as i64;
}

#[actix_web::test]
async fn a_batch_funnel_in_either_mode_equals_a_recount_of_what_was_sent_received_and_clicked() {
    let app = spawn_app_with(&EXTRA).await;
    let api = Api::with_role(&app, "crm", Role::Operator).await;
    let total = 10_000;

    // Code mode, recipients as JSON, with bad rows among them.
    let mut recipients: Vec<Value> = (0..total)
        .map(|i| json!({"phone": phone(i), "name": format!("客户{i}")}))
        .collect();
    recipients.push(json!({"phone": "12345"}));
    recipients.push(json!({"phone": phone(3)}));
    recipients.push(json!({"name": "no phone"}));
    let reply = api
        .call(
            "POST",
            "/api/v1/batches",
            Some(json!({
                "name": "双十一 第一波", "url": "https://shop.example.com/sale?from=sms",
                "mode": "code", "template": "【小店】{name}您好，双十一低至5折 {link} 回T退订",
                "recipients": recipients,
            })),
        )
        .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let batch = reply.body["id"].as_i64().unwrap();
    assert_eq!(reply.body["recipients"], total);
    let rejected: Vec<(i64, String)> = reply.body["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["row"].as_i64().unwrap(),
                r["error"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(rejected.len(), 3, "{rejected:?}");
    assert_eq!(rejected[0].0, total as i64);
    assert!(
        rejected[1].1.contains("already in this batch (row 3)"),
        "{rejected:?}"
    );
    assert!(rejected[2].1.contains("no phone"), "{rejected:?}");

    // The messages: one per recipient, personal text, own link, a key for out_id.
    let (status, text) = csv_of(
        &app,
        &api_key(&api),
        &format!("/api/v1/batches/{batch}/messages"),
    )
    .await;
    assert_eq!(status, 200);
    assert!(text.starts_with('\u{feff}'), "Excel needs the BOM");
    let messages = rows_of(&text);
    assert_eq!(messages.len(), total);
    let mut urls: HashMap<String, (String, String)> = HashMap::new();
    for (i, m) in messages.iter().enumerate() {
        assert_eq!(m["phone"], phone(i));
        assert_eq!(
            m["text"],
            format!(
                "【小店】客户{i}您好，双十一低至5折 {} 回T退订",
                m["short_url"]
            )
        );
        assert!(m["key"].starts_with(&format!("{batch}-")));
        urls.insert(
            m["phone"].clone(),
            (m["short_url"].clone(), m["key"].clone()),
        );
    }
    let distinct: std::collections::HashSet<&String> = urls.values().map(|(u, _)| u).collect();
    assert_eq!(
        distinct.len(),
        total,
        "every recipient has a link of their own"
    );

    // Receipts: Aliyun by out_id, Tencent by phone, our CSV by phone; duplicates, an unknown
    // phone and failure codes among them.
    let mut known: HashMap<String, Known> =
        (0..total).map(|i| (phone(i), Known::default())).collect();
    let aliyun: Vec<Value> = (0..6000)
        .map(|i| {
            let ok = i % 10 != 0;
            known.get_mut(&phone(i)).unwrap().receive(at("2026-11-26 10:00:00"), ok, "isv.MOBILE_NUMBER_ILLEGAL");
            json!({"phone_number": phone(i), "success": ok, "err_code": if ok {"DELIVERED"} else {"isv.MOBILE_NUMBER_ILLEGAL"},
                   "err_msg": "", "report_time": "2026-11-26 10:00:00", "biz_id": "1", "out_id": urls[&phone(i)].1})
        })
        .chain([json!({"phone_number": "13999999999", "success": true, "report_time": "2026-11-26 10:00:00"})])
        .collect();
    let reply = api
        .call("POST", "/api/v1/receipts/aliyun", Some(json!(aliyun)))
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(
        (
            reply.body["recorded"].as_i64(),
            reply.body["unmatched"].as_i64()
        ),
        (Some(6000), Some(1))
    );
    assert_eq!(reply.body["code"], 0);
    // The same delivery again changes nothing.
    let again = api
        .call("POST", "/api/v1/receipts/aliyun", Some(json!(aliyun)))
        .await;
    assert_eq!(again.body["duplicates"], 6000, "{}", again.body);
    let tencent: Vec<Value> = (5000..8000)
        .map(|i| {
            let ok = i % 4 != 0;
            known.get_mut(&phone(i)).unwrap().receive(at("2026-11-26 11:00:00"), ok, "MK:0012");
            json!({"user_receive_time": "2026-11-26 11:00:00", "nationcode": "86", "mobile": phone(i),
                   "report_status": if ok {"SUCCESS"} else {"FAIL"}, "errmsg": if ok {"DELIVRD"} else {"MK:0012"},
                   "description": "", "sid": "x"})
        })
        .collect();
    let reply = api
        .call(
            "POST",
            &format!("/api/v1/receipts/tencent?batch={batch}"),
            Some(json!(tencent)),
        )
        .await;
    assert_eq!(
        (reply.status, reply.body["recorded"].as_i64()),
        (200, Some(3000)),
        "{}",
        reply.body
    );
    let mut receipts_csv = String::from("phone,delivered,error_code,at\n");
    for i in 8000..8500 {
        let ok = i % 3 != 0;
        known
            .get_mut(&phone(i))
            .unwrap()
            .receive(at("2026-11-26 12:00:00"), ok, "E:5");
        receipts_csv.push_str(&format!(
            "+86 {},{},{},2026-11-26 12:00:00\n",
            phone(i),
            if ok { "true" } else { "false" },
            if ok { "" } else { "E:5" }
        ));
    }
    receipts_csv.push_str("13812345678,maybe,,\n");
    let mut response = app
        .client
        .post(app.url(&format!("/api/v1/batches/{batch}/receipts")))
        .insert_header(("authorization", format!("Bearer {}", api_key(&api))))
        .insert_header(("content-type", "text/csv"))
        .send_body(receipts_csv)
        .await
        .unwrap();
    let body: Value = serde_json::from_slice(&response.body().await.unwrap()).unwrap();
    assert_eq!(
        (body["recorded"].as_i64(), body["invalid"].as_i64()),
        (Some(500), Some(1)),
        "{body}"
    );
    assert_eq!(body["problems"][0]["row"], 502, "{body}");

    // Clicks of 400 recipients, spread over receipts' states.
    for i in (0..total).step_by(25) {
        let url = urls[&phone(i)].0.clone();
        clicks_of(&app, i, &url, known.get_mut(&phone(i)).unwrap()).await;
    }
    let expected = recount(total, &known);
    let funnel = funnel_settles(&api, batch, &expected).await;
    let delivered = expected["delivered"].as_f64().unwrap();
    let ctr = funnel["ctr"].as_f64().unwrap();
    assert!((ctr - expected["clicked"].as_f64().unwrap() / delivered).abs() < 1e-9);
    assert!(funnel["median_minutes_to_first_click"].is_i64(), "{funnel}");

    // Those who did not click, for the next wave.
    let reply = api
        .call(
            "GET",
            &format!("/api/v1/batches/{batch}/recipients?clicked=false&format=json"),
            None,
        )
        .await;
    let items = reply.body["items"].as_array().unwrap();
    let clicked = expected["clicked"].as_u64().unwrap() as usize;
    assert_eq!(items.len(), total - clicked);
    assert!(
        items
            .iter()
            .all(|r| known[r["phone"].as_str().unwrap()].clicks == 0)
    );
    let (_, csv_text) = csv_of(
        &app,
        &api_key(&api),
        &format!("/api/v1/batches/{batch}/recipients?clicked=false"),
    )
    .await;
    assert_eq!(rows_of(&csv_text).len(), total - clicked);

    // Param mode from a CSV upload: one fixed link and ?r=.
    let mut file = String::from("\u{feff}phone,姓名\n");
    for i in 0..total {
        file.push_str(&format!("{},{}\n", phone(20_000 + i), i));
    }
    file.push_str(&format!("{},x\n", "x".repeat(5000)));
    let reply = upload_batch(
        &app,
        &api,
        &[
            ("name", "param"),
            ("url", "https://shop.example.com/b"),
            ("mode", "param"),
            ("length", "5"),
            ("template", "{姓名}：{link}"),
        ],
        file,
    )
    .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let second = reply.body["id"].as_i64().unwrap();
    assert_eq!(reply.body["recipients"], total);
    assert_eq!(reply.body["rejected"][0]["row"], total as i64 + 2);
    let (_, text) = csv_of(
        &app,
        &api_key(&api),
        &format!("/api/v1/batches/{second}/messages"),
    )
    .await;
    let messages = rows_of(&text);
    let fixed = messages[0]["short_url"]
        .split_once("?r=")
        .unwrap()
        .0
        .to_owned();
    let mut known2: HashMap<String, Known> = HashMap::new();
    for (i, m) in messages.iter().enumerate() {
        let (link, token) = m["short_url"].split_once("?r=").unwrap();
        assert_eq!(link, fixed);
        assert_eq!(token.len(), 5);
        known2.insert(m["phone"].clone(), Known::default());
        if i % 40 == 0 {
            clicks_of(
                &app,
                i,
                &m["short_url"],
                known2.get_mut(&m["phone"]).unwrap(),
            )
            .await;
        }
    }
    // The fixed link without a recipient counts for nobody.
    assert_eq!(
        click(&app, &path_of(&fixed), PLACES[0].0, BROWSER, false).await,
        302
    );
    let tencent: Vec<Value> = (0..total)
        .step_by(2)
        .map(|i| {
            known2.get_mut(&phone(20_000 + i)).unwrap().receive(at("2026-11-26 11:00:00"), true, "");
            json!({"user_receive_time": "2026-11-26 11:00:00", "nationcode": "86", "mobile": phone(20_000 + i), "report_status": "SUCCESS"})
        })
        .collect();
    let reply = api
        .call("POST", "/api/v1/receipts/tencent", Some(json!(tencent)))
        .await;
    assert_eq!(reply.body["recorded"], total / 2, "{}", reply.body);
    funnel_settles(&api, second, &recount(total, &known2)).await;
    // The first batch's figures were not touched by the second's.
    funnel_settles(&api, batch, &expected).await;
    // Carriers are a dimension of the daily statistics too: page views of all links by
    // carrier, the fixed link's one view (from a China Telecom address) included.
    let mut views: BTreeMap<String, i64> = BTreeMap::new();
    for k in known.values().chain(known2.values()) {
        for (carrier, n) in &k.views {
            *views.entry(carrier.clone()).or_default() += n;
        }
    }
    *views.entry("中国电信".to_owned()).or_default() += 1;
    use sea_orm::ConnectionTrait;
    let db = &app.core.db;
    let sql = "SELECT value, CAST(SUM(pv) AS BIGINT) AS pv FROM visit_statistics_breakdown \
               WHERE dimension = 'carrier' AND url_map_id = -1 GROUP BY value";
    let sql = match db.get_database_backend() {
        sea_orm::DbBackend::MySql => sql.replace("BIGINT", "SIGNED"),
        _ => sql.to_owned(),
    };
    // The fixed link's view counts in no funnel, so the funnels settling does not say it
    // has been counted: it may be in a later counting turn.
    let mut stored: BTreeMap<String, i64> = BTreeMap::new();
    for _ in 0..100 {
        stored = db
            .query_all_raw(sea_orm::Statement::from_string(
                db.get_database_backend(),
                sql.clone(),
            ))
            .await
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r.try_get("", "value").unwrap(),
                    r.try_get("", "pv").unwrap(),
                )
            })
            .collect();
        if stored == views {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(stored, views);
}

fn at(text: &str) -> i64 {
    use chrono::TimeZone;
    let naive = chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S").unwrap();
    chrono_tz::Asia::Shanghai
        .from_local_datetime(&naive)
        .unwrap()
        .timestamp()
}

fn api_key(api: &Api<'_>) -> String {
    api.key().to_owned()
}

async fn upload_batch(
    app: &TestApp,
    api: &Api<'_>,
    fields: &[(&str, &str)],
    file: String,
) -> Reply {
    let boundary = "inklinkboundary7";
    let mut body = String::new();
    for (name, value) in fields {
        body.push_str(&format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
        ));
    }
    body.push_str(&format!("--{boundary}\r\nContent-Disposition: form-data; name=\"recipients\"; filename=\"r.csv\"\r\nContent-Type: text/csv\r\n\r\n{file}\r\n--{boundary}--\r\n"));
    let mut response = app
        .client
        .post(app.url("/api/v1/batches"))
        .insert_header(("authorization", format!("Bearer {}", api.key())))
        .insert_header((
            "content-type",
            format!("multipart/form-data; boundary={boundary}"),
        ))
        .send_body(body)
        .await
        .unwrap();
    let status = response.status().as_u16();
    let bytes = response.body().limit(64 << 20).await.unwrap();
    Reply {
        status,
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        headers: response.headers().clone(),
    }
}

#[actix_web::test]
async fn two_instances_ingesting_receipts_and_counting_clicks_at_once_count_each_once() {
    let db = Arc::new(TestDb::create().await);
    let one = spawn_on(db.clone(), &EXTRA).await;
    let two = spawn_on(db.clone(), &EXTRA).await;
    let api_one = Api::with_role(&one, "one", Role::Admin).await;
    let api_two = Api::with_key(&two, api_one.key());
    let total = 2_000;
    let recipients: Vec<Value> = (0..total).map(|i| json!({"phone": phone(i)})).collect();
    let reply = api_one
        .call("POST", "/api/v1/batches", Some(json!({"name": "together", "url": "https://example.com/t", "template": "{link}", "recipients": recipients})))
        .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let batch = reply.body["id"].as_i64().unwrap();
    let (_, text) = csv_of(
        &one,
        api_one.key(),
        &format!("/api/v1/batches/{batch}/messages"),
    )
    .await;
    let messages = rows_of(&text);
    let mut known: HashMap<String, Known> = messages
        .iter()
        .map(|m| (m["phone"].clone(), Known::default()))
        .collect();
    // Every receipt goes to both instances at once (a provider retrying), in chunks.
    let receipts: Vec<Value> = (0..total)
        .map(|i| {
            let ok = i % 6 != 0;
            known.get_mut(&phone(i)).unwrap().receive(at("2026-11-26 10:00:00"), ok, "E1");
            json!({"phone_number": phone(i), "success": ok, "err_code": "E1", "report_time": "2026-11-26 10:00:00"})
        })
        .collect();
    let mut clicks_known: Vec<(usize, Known)> = (0..total)
        .step_by(10)
        .map(|i| (i, Known::default()))
        .collect();
    let sends = receipts.chunks(250).map(|chunk| {
        let (a, b) = (&api_one, &api_two);
        let chunk = json!(chunk);
        async move {
            let (x, y) = tokio::join!(
                a.call("POST", "/api/v1/receipts/aliyun", Some(chunk.clone())),
                b.call("POST", "/api/v1/receipts/aliyun", Some(chunk))
            );
            assert_eq!((x.status, y.status), (200, 200), "{} {}", x.body, y.body);
            x.body["recorded"].as_i64().unwrap() + y.body["recorded"].as_i64().unwrap()
        }
    });
    let clicks = futures_util::future::join_all(clicks_known.iter_mut().map(|(i, k)| {
        let app = if *i % 20 == 0 { &one } else { &two };
        let url = messages[*i]["short_url"].clone();
        async move { clicks_of(app, *i, &url, k).await }
    }));
    let (recorded, _) = tokio::join!(futures_util::future::join_all(sends), clicks);
    assert_eq!(
        recorded.iter().sum::<i64>(),
        total as i64,
        "each receipt recorded once"
    );
    for (i, k) in clicks_known {
        let entry = known.get_mut(&phone(i)).unwrap();
        entry.clicks = k.clicks;
        entry.first_province = k.first_province;
        entry.first_carrier = k.first_carrier;
    }
    funnel_settles(&api_one, batch, &recount(total, &known)).await;
}

#[actix_web::test]
async fn bad_batches_and_receipts_get_clear_errors_and_operators_see_only_their_own() {
    let app = spawn_app_with(&EXTRA).await;
    let admin = Api::with_role(&app, "admin", Role::Admin).await;
    let operator = Api::with_role(&app, "operator", Role::Operator).await;
    let good = json!({"name": "b", "url": "https://example.com/x", "template": "{link}", "recipients": [{"phone": "13800000001"}]});
    for (change, field) in [
        (json!({"template": "no link here"}), "template"),
        (json!({"template": "{link} {link}"}), "template"),
        (json!({"template": "{name} {link}"}), "template"),
        (json!({"mode": "sms"}), "mode"),
        (json!({"mode": "param", "length": 9}), "length"),
        (json!({"name": " "}), "name"),
        (json!({"url": "ftp://example.com"}), "url"),
        (json!({"recipients": []}), "recipients"),
        (json!({"recipients": [{"phone": "12"}]}), "recipients"),
    ] {
        let mut body = good.clone();
        for (k, v) in change.as_object().unwrap() {
            body[k] = v.clone();
        }
        let reply = admin.call("POST", "/api/v1/batches", Some(body)).await;
        assert_eq!(reply.status, 422, "{change}: {}", reply.body);
        assert_eq!(
            reply.body["error"]["field"], field,
            "{change}: {}",
            reply.body
        );
    }
    let reply = admin.raw("POST", "/api/v1/batches", "{\"name\": ").await;
    assert_eq!(reply.status, 400, "{}", reply.body);
    let reply = admin
        .raw("POST", "/api/v1/receipts/aliyun", "[{\"success\": 3}]")
        .await;
    assert_eq!(
        (reply.status, reply.body["invalid"].as_i64()),
        (200, Some(1)),
        "{}",
        reply.body
    );
    // A list of anything but receipt objects is not what a provider sends: refused whole.
    for path in ["/api/v1/receipts/aliyun", "/api/v1/receipts/tencent"] {
        let reply = admin
            .raw("POST", path, "[{\"success\": true}, \"x\"]")
            .await;
        assert_eq!(reply.status, 400, "{path}: {}", reply.body);
        assert_eq!(
            reply.body["error"]["field"], "[1]",
            "{path}: {}",
            reply.body
        );
    }
    let reply = admin
        .call("POST", "/api/v1/batches/999/receipts", Some(json!([])))
        .await;
    assert_eq!(reply.status, 404, "{}", reply.body);

    let reply = admin
        .call("POST", "/api/v1/batches", Some(good.clone()))
        .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let id = reply.body["id"].as_i64().unwrap();
    // An operator's key sees neither the batch nor its numbers.
    for path in ["", "/funnel", "/messages", "/recipients"] {
        let reply = operator
            .call("GET", &format!("/api/v1/batches/{id}{path}"), None)
            .await;
        assert_eq!(reply.status, 403, "{path}: {}", reply.body);
    }
    let list = operator.call("GET", "/api/v1/batches", None).await;
    assert_eq!(list.body["items"].as_array().unwrap().len(), 0);
    // The callback URL's secret stands in for a key, for its batch only.
    let url = reply.body["receipt_urls"]["aliyun"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = path_of(&url);
    let anonymous = Api::with_key(&app, "");
    let receipt = json!([{"phone_number": "13800000001", "success": true, "report_time": "2026-11-26 10:00:00"}]);
    let reply = anonymous.call("POST", &path, Some(receipt.clone())).await;
    assert_eq!(
        (reply.status, reply.body["recorded"].as_i64()),
        (200, Some(1)),
        "{}",
        reply.body
    );
    let wrong = path.replace("secret=", "secret=0");
    let reply = anonymous.call("POST", &wrong, Some(receipt.clone())).await;
    assert_eq!(reply.status, 401, "{}", reply.body);
    let reply = anonymous
        .call("POST", "/api/v1/receipts/aliyun", Some(receipt))
        .await;
    assert_eq!(reply.status, 401, "{}", reply.body);

    // A file of more rows than a batch may hold is refused before anything is made.
    let mut file = String::from("phone\n");
    for i in 0..=inklink::services::batches::MAX_RECIPIENTS {
        file.push_str(&format!("{}\n", 13_000_000_000u64 + i as u64));
    }
    let reply = upload_batch(
        &app,
        &admin,
        &[
            ("name", "huge"),
            ("url", "https://example.com/h"),
            ("template", "{link}"),
        ],
        file,
    )
    .await;
    assert_eq!(reply.status, 422, "{}", reply.body);
    assert_eq!(reply.body["error"]["field"], "recipients");
    let all = admin.call("GET", "/api/v1/batches", None).await;
    assert_eq!(all.body["items"].as_array().unwrap().len(), 1);

    // After the retention period the numbers go and the figures stay.
    let backend = app.core.db.get_database_backend();
    use sea_orm::ConnectionTrait;
    app.core
        .db
        .execute_raw(sea_orm::Statement::from_string(
            backend,
            format!("UPDATE campaign_batch SET created_at = '2020-01-01 00:00:00' WHERE id = {id}"),
        ))
        .await
        .unwrap();
    // Every instance purges on its own schedule: two purges at once record the batch once.
    let (one, two) = tokio::join!(
        inklink::services::batches::retention::purge(&app.core.db, 90),
        inklink::services::batches::retention::purge(&app.core.db, 90),
    );
    assert_eq!(one.unwrap() + two.unwrap(), 1);
    use sea_orm::EntityTrait;
    let entries = inklink::db::entities::audit_log::Entity::find()
        .all(&app.core.db)
        .await
        .unwrap();
    assert_eq!(
        entries.iter().filter(|e| e.action == "batch.purge").count(),
        1
    );
    let reply = admin
        .call("GET", &format!("/api/v1/batches/{id}/messages"), None)
        .await;
    assert_eq!(reply.status, 409, "{}", reply.body);
    let funnel = admin
        .call("GET", &format!("/api/v1/batches/{id}/funnel"), None)
        .await;
    assert_eq!(
        (
            funnel.body["sent"].as_i64(),
            funnel.body["delivered"].as_i64()
        ),
        (Some(1), Some(1))
    );
    let phones: Vec<Option<String>> = {
        use sea_orm::ConnectionTrait;
        app.core
            .db
            .query_all_raw(sea_orm::Statement::from_string(
                backend,
                "SELECT phone FROM batch_recipient".to_owned(),
            ))
            .await
            .unwrap()
            .iter()
            .map(|r| r.try_get("", "phone").unwrap())
            .collect()
    };
    assert_eq!(phones, vec![None]);
}

#[actix_web::test]
async fn a_stats_rebuild_leaves_the_funnel_as_it_was_and_recipient_codes_stay_theirs() {
    let app = spawn_app_with(&EXTRA).await;
    let api = Api::with_role(&app, "crm", Role::Operator).await;
    let total = 200;
    let recipients: Vec<Value> = (0..total).map(|i| json!({"phone": phone(i)})).collect();
    let reply = api
        .call("POST", "/api/v1/batches", Some(json!({"name": "r", "url": "https://example.com/r", "template": "{link}", "recipients": recipients})))
        .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let batch = reply.body["id"].as_i64().unwrap();
    let (_, text) = csv_of(
        &app,
        api.key(),
        &format!("/api/v1/batches/{batch}/messages"),
    )
    .await;
    let messages = rows_of(&text);
    let mut known: HashMap<String, Known> = messages
        .iter()
        .map(|m| (m["phone"].clone(), Known::default()))
        .collect();
    let receipts: Vec<Value> = (0..total)
        .map(|i| {
            known
                .get_mut(&phone(i))
                .unwrap()
                .receive(at("2026-11-26 10:00:00"), true, "");
            json!({"phone_number": phone(i), "success": true, "report_time": "2026-11-26 10:00:00"})
        })
        .collect();
    api.call("POST", "/api/v1/receipts/aliyun", Some(json!(receipts)))
        .await;
    for i in (0..total).step_by(3) {
        let url = messages[i]["short_url"].clone();
        clicks_of(&app, i, &url, known.get_mut(&phone(i)).unwrap()).await;
    }
    let expected = recount(total, &known);
    let before = funnel_settles(&api, batch, &expected).await;
    // Counting the day again counts each recipient's clicks once, as before.
    let today = chrono::Utc::now().date_naive();
    inklink::stats::recount::recompute_day(&app.core.db, chrono_tz::UTC, today)
        .await
        .unwrap();
    let after = funnel_settles(&api, batch, &expected).await;
    assert_eq!(before, after);

    // A new link cannot take a recipient's code.
    let code = path_of(&messages[0]["short_url"])
        .trim_start_matches('/')
        .to_owned();
    let reply = api
        .call(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://example.com/other", "code": code})),
        )
        .await;
    assert_eq!(reply.status, 409, "{}", reply.body);
    assert_eq!(reply.body["error"]["code"], "code_taken");
    let (status, location, _) = app.fetch(&format!("/{code}")).await;
    assert_eq!(
        (status, location.as_deref()),
        (302, Some("https://example.com/r"))
    );
}

/// Issue 40: a place is shown in the reader's language whatever language the clicks stored it
/// in (`INKLINK_GEOIP_LANG`): an English page shows Beijing, a Chinese one 北京, on the
/// dashboard (tables and charts) and in a batch's funnel; carriers likewise (China Telecom,
/// 中国电信).
#[actix_web::test]
async fn places_are_named_in_the_readers_language_whatever_language_stored_them() {
    use crate::admin::{Browser, signed_in_admin};
    for stored_in in ["zh-CN", "en"] {
        let mut extra = EXTRA.to_vec();
        extra[5] = stored_in;
        let app = spawn_app_with(&extra).await;
        let api = Api::with_role(&app, "key", Role::Admin).await;
        let reply = api
            .call("POST", "/api/v1/batches", Some(json!({"name": "places", "url": "https://example.com/p", "template": "{link}", "recipients": [{"phone": phone(1)}]})))
            .await;
        assert_eq!(reply.status, 201, "{}", reply.body);
        let batch = reply.body["id"].as_i64().unwrap();
        let (_, text) = csv_of(
            &app,
            api.key(),
            &format!("/api/v1/batches/{batch}/messages"),
        )
        .await;
        let url = rows_of(&text)[0]["short_url"].clone();
        assert_eq!(
            click(&app, &path_of(&url), "36.110.1.2", BROWSER, false).await,
            302
        );
        assert_eq!(
            click(&app, &path_of(&url), "203.0.113.9", DESKTOP, false).await,
            302
        );
        let admin = signed_in_admin(&app).await;
        let cookie = admin.cookie().unwrap();
        let mut english = Browser::with_cookie(&app, Some(format!("{cookie}; inklink_lang=en")));
        let mut chinese = Browser::with_cookie(&app, Some(format!("{cookie}; inklink_lang=zh-CN")));
        let mut counted = false;
        for _ in 0..120 {
            let page = english.get("/admin/dashboard?range=7").await;
            if page.body.contains("San Francisco") {
                counted = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
        assert!(counted, "the clicks were counted (stored in {stored_in})");
        let english_words = [
            "China",
            "Beijing",
            "United States",
            "California",
            "San Francisco",
            "China Telecom",
        ];
        let chinese_words = [
            "中国",
            "北京市",
            "北京",
            "美国",
            "加利福尼亚州",
            "旧金山",
            "中国电信",
        ];
        let page = english.get("/admin/dashboard?range=7").await;
        for word in english_words {
            assert!(
                page.body.contains(&format!(">{word}<")),
                "English page shows {word} ({stored_in})"
            );
        }
        for word in chinese_words {
            assert!(
                !page.body.contains(word),
                "English page has no {word} ({stored_in})"
            );
        }
        let page = chinese.get("/admin/dashboard?range=7").await;
        for word in chinese_words {
            assert!(
                page.body.contains(&format!(">{word}<")),
                "Chinese page shows {word} ({stored_in})"
            );
        }
        for word in english_words {
            assert!(
                !page.body.contains(&format!(">{word}<")),
                "Chinese page has no {word} ({stored_in})"
            );
        }
        // The maps: the world's countries and China's provinces, each place's values in its
        // title (hover and tap), in the reader's language.
        let page = english.get("/admin/dashboard?range=7").await;
        assert_eq!(
            page.body.matches("<svg class=\"map\"").count(),
            2,
            "{stored_in}"
        );
        for title in [
            "China: PV 1, UV 1",
            "United States: PV 1, UV 1",
            "Beijing: PV 1, UV 1",
        ] {
            assert!(
                page.body.contains(&format!("<title>{title}</title>")),
                "{title} ({stored_in})"
            );
        }
        let page = chinese.get("/admin/dashboard?range=7").await;
        for title in ["中国：PV 1，UV 1", "美国：PV 1，UV 1", "北京市：PV 1，UV 1"] {
            assert!(
                page.body.contains(&format!("<title>{title}</title>")),
                "{title} ({stored_in})"
            );
        }
        assert!(page.body.contains("访客分布") && page.body.contains("中国各省份"));
        // The batch's funnel by province and city, once its click is counted there.
        let mut page = english.get(&format!("/admin/batches/{batch}")).await;
        for _ in 0..120 {
            if page.body.contains(">Beijing<") {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
            page = english.get(&format!("/admin/batches/{batch}")).await;
        }
        assert!(
            page.body.contains(">Beijing<") && !page.body.contains("北京"),
            "{stored_in}"
        );
        let page = chinese.get(&format!("/admin/batches/{batch}")).await;
        assert!(
            page.body.contains(">北京市<") && page.body.contains(">北京<"),
            "{stored_in}"
        );
        assert!(!page.body.contains(">Beijing<"), "{stored_in}");
    }
}
