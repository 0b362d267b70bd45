//! Choropleth maps: the countries of the world and the provinces of China, shaded by page
//! views, drawn as SVG from outlines shipped in `assets/maps/` (Natural Earth's, public domain;
//! `assets/maps/make_maps.py` says how they were made). Each place with visits carries its
//! values as a `<title>` (hover, and a tap through admin.js); the page lists them in a table.

use std::sync::LazyLock;

/// Which outlines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outline {
    /// Countries by ISO 3166-1 alpha-2 code (`CN`), or numeric (`156`).
    World,
    /// China's provinces by ISO 3166-2 code, letters (`CN-BJ`) or numbers (`CN-11`), as GeoIP
    /// databases give either.
    China,
}

/// A place shown on a map: its code as the GeoIP database gives it (some give none for
/// provinces), its English name, what its `<title>` says, and the value that shades it.
pub struct Region<'a> {
    pub code: Option<&'a str>,
    pub english: &'a str,
    pub title: String,
    pub value: i64,
}

struct Shape {
    code: &'static str,
    numeric: &'static str,
    /// The English name, as [`short_name`] has it: for databases that give a province no code.
    name: String,
    d: &'static str,
    /// Where the outline is (its box's centre) and whether it is too small to see or tap.
    centre: (i32, i32),
    tiny: bool,
}

struct Map {
    width: u32,
    height: u32,
    shapes: Vec<Shape>,
}

static WORLD: LazyLock<Map> = LazyLock::new(|| parse(include_str!("../../assets/maps/world.tsv")));
static CHINA: LazyLock<Map> = LazyLock::new(|| parse(include_str!("../../assets/maps/china.tsv")));

/// Shades from light to dark for five steps of page views (the darkest has the most), and the
/// colour of a place without any.
const SHADES: [&str; 5] = ["#c6dbef", "#9ecae1", "#6baed6", "#3182bd", "#08519c"];
const NONE: &str = "#e5e7eb";

/// The file `make_maps.py` writes: a `# viewBox 0 0 W H` line, then `code, numeric code, name,
/// path` per line, the path a move and relative lines per ring.
fn parse(text: &'static str) -> Map {
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default();
    let size: Vec<u32> = header
        .trim_start_matches("# viewBox 0 0 ")
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .take(2)
        .collect();
    let shapes = lines
        .filter_map(|line| {
            let mut fields = line.splitn(4, '\t');
            let (code, numeric, name, d) = (
                fields.next()?,
                fields.next()?,
                fields.next()?,
                fields.next()?,
            );
            let (low, high) = bounds(d);
            Some(Shape {
                code,
                numeric,
                name: short_name(name),
                d,
                centre: ((low.0 + high.0) / 2, (low.1 + high.1) / 2),
                tiny: high.0 - low.0 < 4 && high.1 - low.1 < 4,
            })
        })
        .collect();
    Map {
        width: size.first().copied().unwrap_or(1000),
        height: size.get(1).copied().unwrap_or(500),
        shapes,
    }
}

/// The box around a path of `M x y l dx dy … z` rings.
fn bounds(d: &str) -> ((i32, i32), (i32, i32)) {
    let (mut low, mut high) = ((i32::MAX, i32::MAX), (i32::MIN, i32::MIN));
    for ring in d.split('M').filter(|r| !r.is_empty()) {
        let ring = ring.trim_end_matches('z');
        let (start, steps) = ring.split_once('l').unwrap_or((ring, ""));
        let mut numbers = start.split(' ').filter_map(|n| n.parse::<i32>().ok());
        let (Some(mut x), Some(mut y)) = (numbers.next(), numbers.next()) else {
            continue;
        };
        let mut see = |x: i32, y: i32| {
            low = (low.0.min(x), low.1.min(y));
            high = (high.0.max(x), high.1.max(y));
        };
        see(x, y);
        let mut deltas = steps.split(' ').filter_map(|n| n.parse::<i32>().ok());
        while let (Some(dx), Some(dy)) = (deltas.next(), deltas.next()) {
            x += dx;
            y += dy;
            see(x, y);
        }
    }
    if low.0 > high.0 {
        return ((0, 0), (0, 0));
    }
    (low, high)
}

/// Whether a place of this code or English name is on the map of `outline`.
pub fn knows(outline: Outline, code: Option<&str>, english: &str) -> bool {
    map_of(outline)
        .shapes
        .iter()
        .any(|shape| is(outline, shape, code, english))
}

fn map_of(outline: Outline) -> &'static Map {
    match outline {
        Outline::World => &WORLD,
        Outline::China => &CHINA,
    }
}

/// Whether `shape` is the place of `code` or, for a province without one, of that English
/// name.
fn is(outline: Outline, shape: &Shape, code: Option<&str>, english: &str) -> bool {
    match code {
        Some(code) => {
            code.eq_ignore_ascii_case(shape.code) || code.eq_ignore_ascii_case(shape.numeric)
        }
        None => outline == Outline::China && short_name(english) == shape.name,
    }
}

/// A province's name as databases spell it in many ways (`Guangxi Zhuang Autonomous Region`,
/// `Beijing Shi`, `Nei Mongol`, `Xizang`): its first word, lower-cased, or the one name of the
/// two that are not one word.
fn short_name(english: &str) -> String {
    let lower = english.trim().to_lowercase();
    if lower.starts_with("inner mongol") || lower.starts_with("nei mongol") {
        return "inner mongolia".to_owned();
    }
    let first = lower
        .split([' ', '-', ','])
        .next()
        .unwrap_or_default()
        .to_owned();
    match first.as_str() {
        "xizang" => "tibet".to_owned(),
        _ => first,
    }
}

/// The map of `outline` with `regions` shaded (on a scale from the least to the most page
/// views), labelled `caption` for screen readers. Regions the outlines do not have are left
/// to the table beside the map.
pub fn choropleth(outline: Outline, regions: &[Region], caption: &str) -> String {
    let map = map_of(outline);
    let max = regions.iter().map(|r| r.value).max().unwrap_or(0).max(1);
    let find = |shape: &Shape| {
        regions
            .iter()
            .find(|r| is(outline, shape, r.code, r.english))
    };
    let mut svg = format!(
        "<svg class=\"map\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}\"><g stroke=\"#fff\" stroke-width=\"0.6\" stroke-linejoin=\"round\">",
        map.width,
        map.height,
        super::escape(caption)
    );
    let mut dots = String::new();
    for shape in &map.shapes {
        match find(shape).filter(|r| r.value > 0) {
            None => svg.push_str(&format!("<path fill=\"{NONE}\" d=\"{}\"/>", shape.d)),
            Some(region) => {
                // Square-root steps: a capital's thousands do not wash out a province's tens.
                let step = ((region.value as f64 / max as f64).sqrt() * SHADES.len() as f64)
                    .ceil()
                    .clamp(1.0, SHADES.len() as f64) as usize;
                let title = super::escape(&region.title);
                svg.push_str(&format!(
                    "<path fill=\"{}\" d=\"{}\"><title>{title}</title></path>",
                    SHADES[step - 1],
                    shape.d
                ));
                if shape.tiny {
                    let (x, y) = shape.centre;
                    dots.push_str(&format!(
                        "<circle cx=\"{x}\" cy=\"{y}\" r=\"5\" fill=\"{}\" stroke=\"#1d2330\"><title>{title}</title></circle>",
                        SHADES[step - 1]
                    ));
                }
            }
        }
    }
    svg.push_str("</g>");
    svg.push_str(&dots);
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_outlines_are_read_whole() {
        assert!(WORLD.shapes.len() > 200, "{}", WORLD.shapes.len());
        assert_eq!(CHINA.shapes.len(), 31);
        for code in ["CN", "US", "DE", "JP", "GB", "SG", "HK"] {
            assert!(WORLD.shapes.iter().any(|s| s.code == code), "{code}");
        }
        assert!(WORLD.shapes.iter().any(|s| s.code == "SG" && s.tiny));
        assert!(!WORLD.shapes.iter().any(|s| s.code == "CN" && s.tiny));
    }

    #[test]
    fn regions_are_found_by_letters_or_numbers_and_shaded_by_their_share() {
        let region = |code, english, title: &str, value| Region {
            code,
            english,
            title: title.to_owned(),
            value,
        };
        let regions = [
            region(Some("CN-BJ"), "Beijing", "Beijing: 100", 100),
            region(Some("CN-44"), "Guangdong", "Guangdong <1>", 1),
            region(Some("CN-XX"), "Nowhere", "nowhere", 5),
        ];
        let svg = choropleth(Outline::China, &regions, "Provinces");
        assert!(svg.contains("<title>Beijing: 100</title>"));
        assert!(svg.contains("<title>Guangdong &lt;1&gt;</title>"));
        assert!(!svg.contains("nowhere"));
        assert_eq!(svg.matches(SHADES[4]).count(), 1, "the most is the darkest");
        assert_eq!(
            svg.matches(SHADES[0]).count(),
            1,
            "a hundredth is the lightest"
        );
        assert_eq!(svg.matches(NONE).count(), 29);
    }

    #[test]
    fn provinces_without_a_code_are_found_by_their_english_name() {
        for (english, code) in [
            ("Guangxi Zhuang Autonomous Region", "CN-GX"),
            ("Beijing Shi", "CN-BJ"),
            ("Inner Mongolia Autonomous Region", "CN-NM"),
            ("Nei Mongol", "CN-NM"),
            ("Xizang", "CN-XZ"),
            ("Shaanxi", "CN-SN"),
            ("Shanxi", "CN-SX"),
        ] {
            let shape = CHINA.shapes.iter().find(|s| s.code == code).unwrap();
            assert!(is(Outline::China, shape, None, english), "{english}");
            assert!(knows(Outline::China, None, english), "{english}");
        }
        assert!(!knows(Outline::China, None, "California"));
        assert!(
            !knows(Outline::World, None, "China"),
            "countries go by code"
        );
        assert!(knows(Outline::World, Some("156"), "China"));
    }
}
