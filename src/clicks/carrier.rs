//! Which carrier a network belongs to: the mainland-China operators by their autonomous
//! systems (and, for a network this table does not list, by the organisation's name in the ASN
//! database), everything else "other".

pub const CHINA_MOBILE: &str = "中国移动";
pub const CHINA_UNICOM: &str = "中国联通";
pub const CHINA_TELECOM: &str = "中国电信";
pub const CHINA_BROADNET: &str = "中国广电";
pub const OTHER: &str = "other";

/// A carrier as an English page names it (the operators are stored by their Chinese names,
/// as Chinese operators search for them).
pub fn in_english(stored: &str) -> &str {
    match stored {
        CHINA_MOBILE => "China Mobile",
        CHINA_UNICOM => "China Unicom",
        CHINA_TELECOM => "China Telecom",
        CHINA_BROADNET => "China Broadnet",
        other => other,
    }
}

/// The operators' autonomous systems on the mainland (backbones, provincial and mobile
/// networks, IDC).
const NETWORKS: &[(&str, &[u32])] = &[
    (
        CHINA_MOBILE,
        &[
            9808, 24400, 24444, 24445, 38019, 56040, 56041, 56042, 56044, 56046, 56047, 56048,
            58453,
        ],
    ),
    (
        CHINA_UNICOM,
        &[4808, 4837, 9800, 9929, 10099, 17621, 17622, 17623, 17816],
    ),
    (
        CHINA_TELECOM,
        &[
            4134, 4809, 4811, 4812, 4813, 4816, 17638, 23724, 58466, 134419, 136188, 140292,
        ],
    ),
    (CHINA_BROADNET, &[7641]),
];

/// The carrier of autonomous system `asn` run by `organization`.
pub fn of(asn: Option<u32>, organization: Option<&str>) -> &'static str {
    if let Some(asn) = asn
        && let Some((name, _)) = NETWORKS.iter().find(|(_, list)| list.contains(&asn))
    {
        return name;
    }
    let organization = organization.unwrap_or_default().to_ascii_lowercase();
    let named = |words: &[&str]| words.iter().any(|w| organization.contains(w));
    if named(&["china mobile", "cmnet"]) {
        CHINA_MOBILE
    } else if named(&["china unicom", "cnc group", "china netcom", "unicom"]) {
        CHINA_UNICOM
    } else if named(&["china telecom", "chinanet"]) {
        CHINA_TELECOM
    } else if named(&["broadnet", "china broadcasting", "china cable"]) {
        CHINA_BROADNET
    } else {
        OTHER
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks_and_names_give_the_carrier() {
        assert_eq!(of(Some(4134), None), CHINA_TELECOM);
        assert_eq!(of(Some(56040), Some("x")), CHINA_MOBILE);
        assert_eq!(
            of(Some(1), Some("China Unicom Guangdong IP network")),
            CHINA_UNICOM
        );
        assert_eq!(of(None, Some("CHINANET-BACKBONE")), CHINA_TELECOM);
        assert_eq!(of(Some(15169), Some("GOOGLE")), OTHER);
    }
}
