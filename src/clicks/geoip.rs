//! Country, province and city of an address, from a MaxMind-format city database
//! (GeoLite2-City, DB-IP City Lite, …), re-opened when the file changes on disk.

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
}

impl Named<'_> {
    fn name(&self, lang: &str) -> Option<Text> {
        self.names
            .get(lang)
            .or_else(|| self.names.get("en"))
            .map(|name| Text::from(*name))
    }
}

pub struct GeoIp {
    path: Option<PathBuf>,
    lang: String,
    reader: Option<Reader<Vec<u8>>>,
    modified: Option<SystemTime>,
}

impl GeoIp {
    /// Opens the database at `path`, if any. A missing or unreadable file is not fatal: geo
    /// fields stay empty, and the file is tried again when it appears or changes.
    pub fn open(path: Option<&Path>, lang: &str) -> Self {
        let mut geo = Self {
            path: path.map(Path::to_path_buf),
            lang: lang.to_owned(),
            reader: None,
            modified: None,
        };
        match path {
            None => tracing::warn!(
                "INKLINK_GEOIP_DB is not set: country, province and city of clicks stay empty"
            ),
            Some(path) => {
                geo.reload_if_changed();
                if geo.reader.is_none() {
                    tracing::warn!(path = %path.display(), "no GeoIP database readable yet: geo fields stay empty until it is");
                }
            }
        }
        geo
    }

    pub fn is_loaded(&self) -> bool {
        self.reader.is_some()
    }

    /// Re-opens the file when its modification time changed (monthly database updates need
    /// no restart). Returns whether a new database was loaded.
    pub fn reload_if_changed(&mut self) -> bool {
        let Some(path) = &self.path else {
            return false;
        };
        let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
        if modified.is_none() || modified == self.modified {
            return false;
        }
        match Reader::open_readfile(path) {
            Ok(reader) => {
                tracing::info!(path = %path.display(), kind = %reader.metadata().database_type, "GeoIP database loaded");
                self.reader = Some(reader);
                self.modified = modified;
                true
            }
            Err(err) => {
                // A file half-way through being copied: keep the old one and look again later.
                tracing::warn!(path = %path.display(), error = %err, "cannot read the GeoIP database");
                false
            }
        }
    }

    pub fn lookup(&self, ip: IpAddr) -> Place {
        let Some(reader) = &self.reader else {
            return Place::default();
        };
        let record = match reader
            .lookup(ip)
            .and_then(|found| found.decode::<CityRecord>())
        {
            Ok(Some(record)) => record,
            Ok(None) => return Place::default(),
            Err(err) => {
                tracing::debug!(%ip, error = %err, "GeoIP lookup failed");
                return Place::default();
            }
        };
        let lang = self.lang.as_str();
        Place {
            country: record.country.and_then(|c| c.name(lang)),
            province: record.subdivisions.first().and_then(|s| s.name(lang)),
            city: record.city.and_then(|c| c.name(lang)),
        }
    }
}
