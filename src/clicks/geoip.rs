//! Country, province and city of an address, from a MaxMind-format city database
//! (GeoLite2-City, DB-IP City Lite, …), and its carrier from an ASN database (GeoLite2-ASN,
//! DB-IP ASN Lite), each re-opened when its file changes on disk.

use crate::clickstore::places::{Level, PlaceName};
use crate::clickstore::row::Text;
use maxminddb::Reader;
use serde::Deserialize;
use std::collections::HashMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Place {
    pub country: Option<Text>,
    pub province: Option<Text>,
    pub city: Option<Text>,
    /// The visitor's network operator (`INKLINK_CARRIER_DB`): 中国移动, 中国联通, 中国电信,
    /// 中国广电 or other.
    pub carrier: Option<Text>,
}

/// The fields of a city record we read; names are kept for every language in the file.
#[derive(Deserialize)]
struct CityRecord<'a> {
    #[serde(borrow, default)]
    country: Option<Named<'a>>,
    #[serde(borrow, default)]
    subdivisions: Vec<Named<'a>>,
    #[serde(borrow, default)]
    city: Option<Named<'a>>,
}

#[derive(Deserialize)]
struct Named<'a> {
    #[serde(borrow, default)]
    names: HashMap<&'a str, &'a str>,
    #[serde(borrow, default)]
    iso_code: Option<&'a str>,
}

impl Named<'_> {
    fn name(&self, lang: &str) -> Option<Text> {
        self.names
            .get(lang)
            .or_else(|| self.names.get("en"))
            .map(|name| Text::from(*name))
    }
}

/// An mmdb file, re-opened when it changes on disk.
struct Watched {
    path: Option<PathBuf>,
    reader: Option<Reader<Vec<u8>>>,
    modified: Option<SystemTime>,
    what: &'static str,
}

impl Watched {
    fn open(path: Option<&Path>, what: &'static str) -> Self {
        let mut file = Self {
            path: path.map(Path::to_path_buf),
            reader: None,
            modified: None,
            what,
        };
        if let Some(path) = path {
            file.reload_if_changed();
            if file.reader.is_none() {
                tracing::warn!(path = %path.display(), database = what, "database not readable yet: its fields stay empty until it is");
            }
        }
        file
    }

    /// Re-opens the file when its modification time changed (monthly database updates need
    /// no restart). Returns whether a new database was loaded.
    fn reload_if_changed(&mut self) -> bool {
        let Some(path) = &self.path else {
            return false;
        };
        let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
        if modified.is_none() || modified == self.modified {
            return false;
        }
        match Reader::open_readfile(path) {
            Ok(reader) => {
                tracing::info!(path = %path.display(), database = self.what, kind = %reader.metadata().database_type, "database loaded");
                self.reader = Some(reader);
                self.modified = modified;
                true
            }
            Err(err) => {
                // A file half-way through being copied: keep the old one and look again later.
                tracing::warn!(path = %path.display(), database = self.what, error = %err, "cannot read the database");
                false
            }
        }
    }
}

/// The fields of an ASN record (GeoLite2-ASN, DB-IP ASN Lite, iptoasn's mmdb).
#[derive(Deserialize)]
struct AsnRecord<'a> {
    #[serde(default)]
    autonomous_system_number: Option<u32>,
    #[serde(borrow, default)]
    autonomous_system_organization: Option<&'a str>,
}

pub struct GeoIp {
    lang: String,
    city: Watched,
    /// `INKLINK_CARRIER_DB`: the network an address belongs to, read as a carrier.
    carriers: Watched,
}

impl GeoIp {
    /// Opens the city database at `path`, if any. A missing or unreadable file is not fatal:
    /// geo fields stay empty, and the file is tried again when it appears or changes.
    pub fn open(path: Option<&Path>, lang: &str) -> Self {
        if path.is_none() {
            tracing::warn!(
                "INKLINK_GEOIP_DB is not set: country, province and city of clicks stay empty"
            );
        }
        Self {
            lang: lang.to_owned(),
            city: Watched::open(path, "GeoIP"),
            carriers: Watched::open(None, "carrier"),
        }
    }

    /// Reads carriers from the ASN database at `path` (see [`super::carrier`]).
    pub fn with_carriers(mut self, path: Option<&Path>) -> Self {
        self.carriers = Watched::open(path, "carrier");
        self
    }

    pub fn is_loaded(&self) -> bool {
        self.city.reader.is_some()
    }

    /// Re-opens either file when it changed. Returns whether a new database was loaded.
    pub fn reload_if_changed(&mut self) -> bool {
        let city = self.city.reload_if_changed();
        let carriers = self.carriers.reload_if_changed();
        city || carriers
    }

    /// Where `ip` is, and what each of its places is called in the UI's languages.
    pub fn lookup(&self, ip: IpAddr) -> (Place, Vec<PlaceName>) {
        let (mut place, names) = self.city_of(ip);
        place.carrier = self.carrier_of(ip);
        (place, names)
    }

    fn carrier_of(&self, ip: IpAddr) -> Option<Text> {
        let reader = self.carriers.reader.as_ref()?;
        match reader
            .lookup(ip)
            .and_then(|found| found.decode::<AsnRecord>())
        {
            Ok(Some(record)) => Some(Text::from(super::carrier::of(
                record.autonomous_system_number,
                record.autonomous_system_organization,
            ))),
            Ok(None) => None,
            Err(err) => {
                tracing::debug!(%ip, error = %err, "carrier lookup failed");
                None
            }
        }
    }

    fn city_of(&self, ip: IpAddr) -> (Place, Vec<PlaceName>) {
        let Some(reader) = &self.city.reader else {
            return Default::default();
        };
        let record = match reader
            .lookup(ip)
            .and_then(|found| found.decode::<CityRecord>())
        {
            Ok(Some(record)) => record,
            Ok(None) => return Default::default(),
            Err(err) => {
                tracing::debug!(%ip, error = %err, "GeoIP lookup failed");
                return Default::default();
            }
        };
        let lang = self.lang.as_str();
        let country_code = record.country.as_ref().and_then(|c| c.iso_code);
        let province_code = record
            .subdivisions
            .first()
            .and_then(|s| s.iso_code)
            .zip(country_code)
            .map(|(province, country)| format!("{country}-{province}"));
        let mut names = Vec::with_capacity(3);
        let mut named = |level: Level, place: Option<&Named>, code: Option<String>| {
            let place = place?;
            let stored = place.name(lang)?;
            let en: Box<str> = place
                .names
                .get("en")
                .map_or(stored.as_ref().into(), |n| (*n).into());
            let zh = place.names.get("zh-CN").map_or(en.clone(), |n| (*n).into());
            names.push(PlaceName {
                level,
                stored: stored.clone(),
                code: code.map(Into::into),
                en,
                zh,
            });
            Some(stored)
        };
        let place = Place {
            country: named(
                Level::Country,
                record.country.as_ref(),
                country_code.map(str::to_owned),
            ),
            province: named(Level::Province, record.subdivisions.first(), province_code),
            city: named(Level::City, record.city.as_ref(), None),
            carrier: None,
        };
        (place, names)
    }
}
