//! From a raw click to a stored row: who (a keyed visitor hash, bot or not), with what (browser,
//! OS, device, from the user agent by woothee), from where (GeoIP, referrer host).

use super::capture::clip;
use super::event::{ClickEvent, EventRow};
use super::geoip::{GeoIp, Place};
use siphasher::sip128::{Hasher128, SipHasher24};
use std::collections::HashMap;
use std::hash::Hasher;
use std::net::IpAddr;

/// What a user agent says about the visitor's software.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Agent {
    pub browser: Option<String>,
    pub browser_version: Option<String>,
    pub os: Option<String>,
    pub os_version: Option<String>,
    pub device: Option<String>,
    pub is_bot: bool,
}

/// Link-preview fetchers of chat and social apps, and scripted clients: woothee does not call
/// them crawlers, but none of them is a person following the link.
const BOT_MARKERS: &[&str] = &[
    "facebookexternalhit",
    "facebookcatalog",
    "meta-externalagent",
    "twitterbot",
    "slackbot",
    "slack-imgproxy",
    "discordbot",
    "telegrambot",
    "whatsapp/",
    "linkedinbot",
    "skypeuripreview",
    "pinterestbot",
    "redditbot",
    "embedly",
    "iframely",
    "vkshare",
    "line-poker",
    "viber",
    "bitlybot",
    "applebot",
    "curl/",
    "wget/",
    "python-requests",
    "python-urllib",
    "go-http-client",
    "libwww-perl",
    "scrapy",
    "headlesschrome",
];

/// Chinese super-apps browse inside their own web views; their token names the app, which is
/// what an operator wants to see rather than the engine underneath.
const IN_APP: &[(&str, &str)] = &[
    ("MicroMessenger/", "WeChat"),
    ("DingTalk/", "DingTalk"),
    ("AlipayClient/", "Alipay"),
    ("Weibo__", "Weibo"),
    (" QQ/", "QQ"),
];

const MAX_NAME: usize = 64;

pub fn parse_agent(user_agent: Option<&str>) -> Agent {
    // Every browser sends a user agent; a request without one is a script.
    let Some(ua) = user_agent else {
        return Agent {
            is_bot: true,
            ..Agent::default()
        };
    };
    let known = |value: &str| {
        (!value.is_empty() && value != woothee::woothee::VALUE_UNKNOWN)
            .then(|| clip(value, MAX_NAME).to_owned())
    };
    let lower = ua.to_ascii_lowercase();
    let marked_bot = BOT_MARKERS.iter().any(|marker| lower.contains(marker));
    let Some(parsed) = woothee::parser::Parser::new().parse(ua) else {
        return Agent {
            is_bot: marked_bot,
            ..Agent::default()
        };
    };
    let is_bot = marked_bot || parsed.category == "crawler";
    let (browser, browser_version) = match in_app(ua) {
        Some((app, version)) => (Some(app.to_owned()), known(version)),
        None => (known(parsed.name), known(parsed.version)),
    };
    let device = if is_bot {
        "bot"
    } else {
        match parsed.category {
            "pc" => "desktop",
            "smartphone" if ua.contains("iPad") || !ua.contains("Mobile") => "tablet",
            "smartphone" => "mobile",
            "mobilephone" => "feature phone",
            "appliance" => "appliance",
            _ => "other",
        }
    };
    Agent {
        browser,
        browser_version,
        os: known(parsed.os),
        os_version: known(&parsed.os_version),
        device: Some(device.to_owned()),
        is_bot,
    }
}

fn in_app(ua: &str) -> Option<(&'static str, &str)> {
    IN_APP.iter().find_map(|(token, app)| {
        let at = ua.find(token)? + token.len();
        let version = ua[at..]
            .split(|c: char| c.is_whitespace() || c == '(' || c == ';')
            .next()
            .unwrap_or_default();
        Some((*app, version))
    })
}

/// The host a referer points at, lower-cased; `None` for anything that is not a URL.
pub fn referer_host(referer: &str) -> Option<String> {
    let url = url::Url::parse(referer).ok()?;
    url.host_str()
        .map(|host| clip(&host.to_ascii_lowercase(), 255).to_owned())
}

/// Caches are cleared when full: the working set (a few thousand user agents and addresses at
/// a time) fits easily, and a flood of distinct values costs parsing, not memory.
const CACHE_LIMIT: usize = 50_000;

/// Enriches events one after another; owned by the writer task, so nothing here is shared.
pub struct Enricher {
    geo: GeoIp,
    visitor_key: [u8; 16],
    instance: u64,
    sequence: u64,
    agents: HashMap<Box<str>, Agent>,
    places: HashMap<IpAddr, Place>,
}

impl Enricher {
    /// `visitor_key` keys the visitor hash (derived from the secret, so every instance of one
    /// deployment agrees on who is the same visitor); `instance` makes this process's event
    /// keys distinct from every other's.
    pub fn new(geo: GeoIp, visitor_key: [u8; 16], instance: u64) -> Self {
        Self {
            geo,
            visitor_key,
            instance,
            sequence: 0,
            agents: HashMap::new(),
            places: HashMap::new(),
        }
    }

    /// Picks up a replaced GeoIP file.
    pub fn refresh_geoip(&mut self) {
        if self.geo.reload_if_changed() {
            self.places.clear();
        }
    }

    /// The same visitor (address and user agent) gets the same identity on every instance.
    pub fn visitor(&self, ip: IpAddr, user_agent: Option<&str>) -> String {
        let mut hasher = SipHasher24::new_with_key(&self.visitor_key);
        match ip {
            IpAddr::V4(v4) => hasher.write(&v4.octets()),
            IpAddr::V6(v6) => hasher.write(&v6.octets()),
        }
        hasher.write_u8(0);
        hasher.write(user_agent.unwrap_or_default().as_bytes());
        format!("{:032x}", hasher.finish128().as_u128())
    }

    pub fn enrich(&mut self, event: ClickEvent) -> EventRow {
        self.sequence += 1;
        let event_key = format!("{:016x}{:016x}", self.instance, self.sequence);
        let ua = event.user_agent.as_deref();
        let agent = match ua {
            Some(ua) => {
                if let Some(agent) = self.agents.get(ua) {
                    agent.clone()
                } else {
                    if self.agents.len() >= CACHE_LIMIT {
                        self.agents.clear();
                    }
                    let agent = parse_agent(Some(ua));
                    self.agents.insert(ua.into(), agent.clone());
                    agent
                }
            }
            None => parse_agent(None),
        };
        let place = if let Some(place) = self.places.get(&event.client_ip) {
            place.clone()
        } else {
            if self.places.len() >= CACHE_LIMIT {
                self.places.clear();
            }
            let place = self.geo.lookup(event.client_ip);
            self.places.insert(event.client_ip, place.clone());
            place
        };
        let clip_name = |name: Option<String>| name.map(|n| clip(&n, 128).to_owned());
        EventRow {
            event_key,
            record_time: event.at,
            compression_code: event.code.into(),
            url_map_id: event.link_id,
            host: event.host.map(Into::into),
            client_ip: event.client_ip.to_string(),
            unique_identity: self.visitor(event.client_ip, ua),
            referer_host: event.referer.as_deref().and_then(referer_host),
            user_agent: event.user_agent.map(Into::into),
            referer: event.referer.map(Into::into),
            query_string: event.query.map(Into::into),
            country: clip_name(place.country),
            province: clip_name(place.province),
            city: clip_name(place.city),
            browser: agent.browser,
            browser_version: agent.browser_version,
            os: agent.os,
            os_version: agent.os_version,
            device: agent.device,
            is_bot: agent.is_bot,
            transform_status: event.outcome.status().to_owned(),
            failure_reason: event.outcome.reason().map(str::to_owned),
        }
    }
}
