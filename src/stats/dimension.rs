//! What the daily statistics hold: the rows of every link and of all links together, and the
//! dimensions of their breakdowns (`tally` counts each stored click into them once; `recount`
//! counts days again for `stats rebuild`).
//!
//! Definitions: a page view (PV) is a successful redirect of a visitor that is not a bot; UV
//! counts distinct visitor identities and IP distinct client addresses among page views;
//! effective counts every successful redirect (bots included), ineffective every failure.

/// `url_map_id` of the rows that count every link together (and unknown codes).
pub const ALL_LINKS: i64 = -1;
/// `url_map_id` of the visits to codes that match no link.
pub const UNKNOWN_LINK: i64 = 0;

/// What a breakdown counts page views by. Stored by [`Dimension::name`] in
/// `visit_statistics_breakdown.dimension` and in `visit_day_values`'s packed rows
/// (`stats::dayvalues`); a new dimension is a variant here, a value for it
/// in `tally::work::work_out`, and a title on the dashboard (`admin::dashboard`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dimension {
    Country,
    Province,
    City,
    /// The visitor's network operator (`INKLINK_CARRIER_DB`).
    Carrier,
    Browser,
    Os,
    Device,
    Referrer,
    UtmSource,
    UtmMedium,
    UtmCampaign,
    Channel,
    /// The local hour of the day (`00` to `23`), drawn as its own chart.
    Hour,
}

impl Dimension {
    /// The breakdowns dashboards show as tables, in their order ([`Dimension::Hour`] is drawn
    /// as its own chart).
    pub const SHOWN: [Self; 12] = [
        Self::Country,
        Self::Province,
        Self::City,
        Self::Carrier,
        Self::Browser,
        Self::Os,
        Self::Device,
        Self::Referrer,
        Self::UtmSource,
        Self::UtmMedium,
        Self::UtmCampaign,
        Self::Channel,
    ];

    /// The campaign parameters of a short URL's query, each counted under its own name.
    pub const QUERY: [Self; 4] = [
        Self::UtmSource,
        Self::UtmMedium,
        Self::UtmCampaign,
        Self::Channel,
    ];

    /// How many dimensions there are (those [`Dimension::SHOWN`] and the hour): each one's
    /// `as usize` is below it, so that a turn can keep something per dimension in an array.
    pub const COUNT: usize = Self::SHOWN.len() + 1;

    /// The stored name (and, for [`Dimension::QUERY`], the query parameter's name).
    pub fn name(self) -> &'static str {
        match self {
            Self::Country => "country",
            Self::Province => "province",
            Self::City => "city",
            Self::Carrier => "carrier",
            Self::Browser => "browser",
            Self::Os => "os",
            Self::Device => "device",
            Self::Referrer => "referrer",
            Self::UtmSource => "utm_source",
            Self::UtmMedium => "utm_medium",
            Self::UtmCampaign => "utm_campaign",
            Self::Channel => "channel",
            Self::Hour => "hour",
        }
    }

    /// The dimension stored as `name`; `None` for a name this version does not know.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::SHOWN
            .into_iter()
            .chain([Self::Hour])
            .find(|dimension| dimension.name() == name)
    }

    /// One of the campaign parameters of a short URL's query.
    pub fn is_query(self) -> bool {
        Self::QUERY.contains(&self)
    }

    /// Values chosen by visitors (a referrer, a query parameter): a day keeps a bounded
    /// number of them per link.
    pub fn is_capped(self) -> bool {
        self == Self::Referrer || self.is_query()
    }

    /// For the dimensions one visitor can have several values of in a day, the kind letter
    /// of the day's sets of visitors per value (their UV is counted from those sets; the
    /// others count a value's new visitors with the day's visitors).
    pub fn set_kind(self) -> Option<&'static str> {
        match self {
            Self::Referrer => Some("r"),
            Self::Hour => Some("h"),
            Self::UtmSource => Some("s"),
            Self::UtmMedium => Some("m"),
            Self::UtmCampaign => Some("c"),
            Self::Channel => Some("n"),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Dimension;

    #[test]
    fn every_dimension_has_a_place_below_the_count() {
        let mut places: Vec<usize> = (Dimension::SHOWN.into_iter().chain([Dimension::Hour]))
            .map(|dimension| dimension as usize)
            .collect();
        places.sort_unstable();
        places.dedup();
        assert_eq!(places, (0..Dimension::COUNT).collect::<Vec<_>>());
    }
}
