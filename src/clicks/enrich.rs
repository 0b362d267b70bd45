//! From a raw click to a stored row: who (a keyed visitor hash, bot or not), with what (browser,
//! OS, device, from the user agent by woothee), from where (GeoIP, referrer host).

use super::agent::{Agent, parse_agent};
use super::capture::clip;
use super::event::ClickEvent;
use super::geoip::{GeoIp, Place};
use crate::clickstore::places::{Level, PlaceName};
use crate::clickstore::row::{Address, Digest, EventKey, EventRow, Text};
use siphasher::sip128::{Hasher128, SipHasher24};
use std::collections::{HashMap, HashSet};
use std::hash::Hasher;
use std::net::IpAddr;

/// The host a referer points at, lower-cased; `None` for anything that is not a URL.
pub fn referer_host(referer: &str) -> Option<Text> {
    let url = url::Url::parse(referer).ok()?;
    url.host_str()
        .map(|host| Text::from(clip(&host.to_ascii_lowercase(), 255)))
}

/// Caches are cleared when full: the working set (a few thousand user agents and addresses at
/// a time) fits easily, and a flood of distinct values costs parsing, not memory.
const CACHE_LIMIT: usize = 50_000;

/// The longest country, province or city name kept (the columns' width).
const MAX_PLACE: usize = 128;

/// Enriches events one after another; owned by the writer task, so nothing here is shared.
/// Everything a row shares with other rows (its user agent and what it says, its address
/// and where that is, its host, its outcome) is allocated once per distinct value.
pub struct Enricher {
    geo: GeoIp,
    visitor_key: [u8; 16],
    instance: u64,
    sequence: u64,
    agents: HashMap<Text, Agent>,
    places: HashMap<IpAddr, (Address, Place)>,
    hosts: HashMap<Text, ()>,
    /// The places whose names in the UI's languages were handed to be stored, and those not
    /// yet handed (see [`Enricher::take_place_names`]).
    named: HashSet<(Level, Text)>,
    unnamed: Vec<PlaceName>,
    /// Keep only the network of each address (INKLINK_KEEP_ADDRESSES=network).
    networks_only: bool,
}

/// The network an address belongs to: its /24 (IPv4) or /48 (IPv6), host bits zero.
pub fn network_of(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            IpAddr::from([a, b, c, 0])
        }
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 80) - 1);
            IpAddr::V6(bits.into())
        }
    }
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
            hosts: HashMap::new(),
            named: HashSet::new(),
            unnamed: Vec::new(),
            networks_only: false,
        }
    }

    /// Stores (and counts visitors by) the network of each address instead of the address.
    pub fn keep_networks_only(mut self, networks_only: bool) -> Self {
        self.networks_only = networks_only;
        self
    }

    /// Picks up a replaced GeoIP file.
    pub fn refresh_geoip(&mut self) {
        if self.geo.reload_if_changed() {
            self.places.clear();
            // A new database may name places anew: learned again as they are seen.
            self.named.clear();
        }
    }

    /// The same visitor (address and user agent) gets the same identity on every instance.
    pub fn visitor(&self, ip: IpAddr, user_agent: Option<&str>) -> Digest {
        let mut hasher = SipHasher24::new_with_key(&self.visitor_key);
        match ip {
            IpAddr::V4(v4) => hasher.write(&v4.octets()),
            IpAddr::V6(v6) => hasher.write(&v6.octets()),
        }
        hasher.write_u8(0);
        hasher.write(user_agent.unwrap_or_default().as_bytes());
        Digest::of(hasher.finish128().as_u128())
    }

    /// Keeps the names of places not seen before, for [`Enricher::take_place_names`].
    fn learn(&mut self, names: Vec<PlaceName>) {
        for mut name in names {
            name.stored = clip_place(name.stored);
            if self.named.len() >= CACHE_LIMIT {
                self.named.clear();
            }
            if self.named.insert((name.level, name.stored.clone())) {
                name.en = clip(&name.en, MAX_PLACE).into();
                name.zh = clip(&name.zh, MAX_PLACE).into();
                self.unnamed.push(name);
            }
        }
    }

    /// The names of places first seen since the last call, to be stored beside the clicks
    /// (a failed store gives them back with [`Enricher::give_back_place_names`]).
    pub fn take_place_names(&mut self) -> Vec<PlaceName> {
        std::mem::take(&mut self.unnamed)
    }

    pub fn give_back_place_names(&mut self, names: Vec<PlaceName>) {
        // A database that keeps refusing them must not hold them without bound: forgotten, a
        // place is learned again at its next sighting after the address cache turns over.
        if self.unnamed.len() + names.len() <= CACHE_LIMIT {
            self.unnamed.extend(names);
        } else {
            for name in names {
                self.named.remove(&(name.level, name.stored));
            }
        }
    }

    pub fn enrich(&mut self, event: ClickEvent) -> EventRow {
        let key = event.key.unwrap_or_else(|| {
            self.sequence += 1;
            // A stripe number the journal never gives out.
            EventKey::new(self.instance, usize::from(u8::MAX), self.sequence)
        });
        let event_key = Digest::of(key.0);
        // What is stored and counted; GeoIP below reads the whole address, which stays here.
        let kept_ip = match self.networks_only {
            true => network_of(event.client_ip),
            false => event.client_ip,
        };
        let unique_identity = self.visitor(kept_ip, event.user_agent.as_deref());
        let (user_agent, mut agent) = match event.user_agent {
            Some(ua) => {
                let (ua, agent) = interned(&mut self.agents, ua, |ua| parse_agent(Some(ua)));
                (Some(ua), agent)
            }
            None => (None, parse_agent(None)),
        };
        if event.head {
            agent.mark_bot();
        }
        let (client_ip, place) = match self.places.get(&event.client_ip) {
            Some(found) => found.clone(),
            None => {
                if self.places.len() >= CACHE_LIMIT {
                    self.places.clear();
                }
                let (place, names) = self.geo.lookup(event.client_ip);
                self.learn(names);
                let found = (Address::Ip(kept_ip), clipped(place));
                self.places.insert(event.client_ip, found.clone());
                found
            }
        };
        let host = event
            .host
            .map(|host| interned(&mut self.hosts, host, |_| ()).0);
        EventRow {
            event_key,
            record_time: event.at,
            compression_code: event.code.into(),
            url_map_id: event.link_id,
            host,
            client_ip,
            unique_identity,
            referer_host: event.referer.as_deref().and_then(referer_host),
            user_agent,
            referer: event.referer.map(Into::into),
            query_string: event.query.map(Into::into),
            country: place.country,
            province: place.province,
            city: place.city,
            carrier: place.carrier,
            agent,
            outcome: event.outcome,
            generation: event.generation,
        }
    }
}

/// The cached copy of `key` and what `make` derives from it, made on the first sight of `key`.
fn interned<V: Clone>(
    cache: &mut HashMap<Text, V>,
    key: Box<str>,
    make: impl FnOnce(&str) -> V,
) -> (Text, V) {
    if let Some((key, value)) = cache.get_key_value(&*key) {
        return (key.clone(), value.clone());
    }
    if cache.len() >= CACHE_LIMIT {
        cache.clear();
    }
    let value = make(&key);
    let key = Text::from(key);
    cache.insert(key.clone(), value.clone());
    (key, value)
}

fn clip_place(name: Text) -> Text {
    match clip(&name, MAX_PLACE) {
        kept if kept.len() == name.len() => name,
        kept => Text::from(kept),
    }
}

fn clipped(place: Place) -> Place {
    Place {
        country: place.country.map(clip_place),
        province: place.province.map(clip_place),
        city: place.city.map(clip_place),
        carrier: place.carrier,
    }
}
