//! Properties of the code generators.

use crate::support::Case;
use inklink::rules::codes::permutation::Permutation;
use inklink::rules::codes::{ALPHABET, check_character, is_reserved};
use inklink::rules::{CodeError, CodeFormat, CodeGenerator, ShortCode};
use std::collections::HashSet;

fn generator(length: u8, check: bool) -> CodeGenerator {
    CodeGenerator::new(CodeFormat::new(length, check), b"property-test-secret")
}

#[test]
fn permutation_is_a_bijection_on_small_domains() {
    for length in 1..=3u32 {
        let domain = 62u128.pow(length);
        let permutation = Permutation::new(domain, *b"0123456789abcdef");
        let mut seen = vec![false; domain as usize];
        for x in 0..domain {
            let y = permutation.permute(x);
            assert!(y < domain);
            assert!(!seen[y as usize], "two inputs map to {y} (length {length})");
            seen[y as usize] = true;
            assert_eq!(permutation.invert(y), x);
        }
        assert!(seen.iter().all(|s| *s));
    }
}

#[test]
fn a_different_key_gives_a_different_permutation() {
    let a = generator(6, false);
    let b = CodeGenerator::new(CodeFormat::new(6, false), b"another secret");
    let same = (0..1000)
        .filter(|id| a.code_for_id(*id).unwrap() == b.code_for_id(*id).unwrap())
        .count();
    assert!(same < 5, "{same} of 1000 codes equal under two keys");
}

#[test]
fn a_million_consecutive_ids_give_a_million_distinct_codes() {
    let codes = generator(6, false);
    let mut seen = HashSet::with_capacity(1_000_000);
    for id in 0..1_000_000u64 {
        if let Some(code) = codes.code_for_id(id).unwrap() {
            assert_eq!(code.as_str().len(), 6);
            assert!(seen.insert(code), "duplicate code at id {id}");
        }
    }
    assert!(seen.len() >= 999_990);
}

#[test]
fn every_character_is_roughly_uniform_in_every_position() {
    let codes = generator(6, false);
    let samples = 620_000u64;
    let mut counts = [[0u64; 62]; 6];
    for id in 0..samples {
        let Some(code) = codes.code_for_id(id).unwrap() else {
            continue;
        };
        for (position, byte) in code.as_str().bytes().enumerate() {
            let index = ALPHABET.iter().position(|b| *b == byte).unwrap();
            counts[position][index] += 1;
        }
    }
    for (position, row) in counts.iter().enumerate() {
        let total: u64 = row.iter().sum();
        let expected = total as f64 / 62.0;
        let chi_square: f64 = row
            .iter()
            .map(|&observed| (observed as f64 - expected).powi(2) / expected)
            .sum();
        // 61 degrees of freedom: the 99.99th percentile is about 113.
        assert!(
            chi_square < 113.0,
            "position {position}: chi-square {chi_square:.1}"
        );
        assert!(
            row.iter().all(|&c| c > 0),
            "position {position} misses a character"
        );
    }
}

#[test]
fn consecutive_ids_share_no_obvious_prefix() {
    let codes = generator(6, false);
    let list: Vec<String> = (0..10_000u64)
        .filter_map(|id| codes.code_for_id(id).unwrap())
        .map(|code| code.to_string())
        .collect();
    let shared_two = list
        .windows(2)
        .filter(|pair| pair[0].as_bytes()[..2] == pair[1].as_bytes()[..2])
        .count();
    let shared_first = list
        .windows(2)
        .filter(|pair| pair[0].as_bytes()[0] == pair[1].as_bytes()[0])
        .count();
    // Random codes share a first character 1 time in 62 and two 1 in 3,844.
    assert!(
        shared_first < 400,
        "{shared_first} neighbours share a first character"
    );
    assert!(
        shared_two < 15,
        "{shared_two} neighbours share two leading characters"
    );
}

#[test]
fn reserved_words_are_never_produced() {
    let codes = generator(6, false);
    // "static" has the shape of a 6-character code: find the id that would produce it.
    let id = codes.id_for_code("static").expect("a generated shape");
    assert_eq!(codes.code_for_id(id).unwrap(), None);
    for word in ["health", "assets", "public"] {
        let id = codes.id_for_code(word).unwrap();
        assert_eq!(codes.code_for_id(id).unwrap(), None, "{word} was produced");
    }
    let id = generator(5, false).id_for_code("login").unwrap();
    assert_eq!(generator(5, false).code_for_id(id).unwrap(), None);
    // Hash candidates skip them too: every candidate is a valid, non-reserved code.
    for candidate in codes.hash_candidates("https://example.com/").take(200) {
        assert!(!is_reserved(candidate.as_str()));
    }
}

#[test]
fn ids_beyond_the_code_space_are_refused() {
    let codes = generator(4, false);
    assert!(codes.code_for_id(62u64.pow(4) - 1).is_ok());
    let err = codes.code_for_id(62u64.pow(4)).unwrap_err();
    assert!(err.to_string().contains("INKLINK_CODE_LENGTH"));
}

#[test]
fn codes_decode_back_to_their_ids() {
    for check in [false, true] {
        let codes = generator(7, check);
        for id in (0..1_000_000u64).step_by(9973) {
            if let Some(code) = codes.code_for_id(id).unwrap() {
                assert_eq!(code.as_str().len(), 7 + usize::from(check));
                assert_eq!(codes.id_for_code(code.as_str()), Some(id));
            }
        }
    }
}

#[test]
fn lengths_four_to_twelve_all_work() {
    for length in 4..=12u8 {
        let codes = generator(length, false);
        let a = codes.code_for_id(0).unwrap().unwrap();
        let b = codes.code_for_id(1).unwrap().unwrap();
        assert_eq!(a.as_str().len(), usize::from(length));
        assert_ne!(a, b);
    }
}

#[test]
fn check_character_catches_substitutions_and_transpositions() {
    let format = CodeFormat::new(6, true);
    let codes = generator(6, true);
    let mut transpositions = 0;
    let mut caught = 0;
    for id in 0..300u64 {
        let Some(code) = codes.code_for_id(id).unwrap() else {
            continue;
        };
        assert!(format.admits(&code));
        let bytes = code.as_str().as_bytes().to_vec();
        for position in 0..bytes.len() {
            for &replacement in ALPHABET.iter() {
                if replacement == bytes[position] {
                    continue;
                }
                let mut typo = bytes.clone();
                typo[position] = replacement;
                let typo = ShortCode::parse(std::str::from_utf8(&typo).unwrap()).unwrap();
                assert!(!format.admits(&typo), "{typo} passed for {code}");
            }
        }
        for position in 0..bytes.len() - 1 {
            if bytes[position] == bytes[position + 1] {
                continue;
            }
            let mut swapped = bytes.clone();
            swapped.swap(position, position + 1);
            transpositions += 1;
            let swapped = ShortCode::parse(std::str::from_utf8(&swapped).unwrap()).unwrap();
            if !format.admits(&swapped) {
                caught += 1;
            }
        }
    }
    assert!(
        caught * 100 >= transpositions * 95,
        "caught {caught} of {transpositions} transpositions"
    );
    // Codes of other shapes (custom codes) are not judged by the check character.
    assert!(format.admits(&ShortCode::parse("spring-sale").unwrap()));
    assert!(format.admits(&ShortCode::parse("abcdef").unwrap()));
    assert_eq!(check_character(b"0000"), b'0');
}

#[test]
fn a_custom_code_of_the_generated_shape_needs_its_check_character() {
    let format = CodeFormat::new(6, true);
    let body = b"Promo1";
    let good = format!("Promo1{}", char::from(check_character(body)));
    assert!(
        format
            .check_custom(&ShortCode::parse(&good).unwrap())
            .is_ok()
    );
    let wrong = if good.ends_with('x') {
        "Promo1y"
    } else {
        "Promo1x"
    };
    let err = format
        .check_custom(&ShortCode::parse(wrong).unwrap())
        .unwrap_err();
    assert!(
        matches!(err, CodeError::CheckCharacter { len: 7, .. }),
        "{err}"
    );
    assert!(err.to_string().contains(&good[6..]));
}

#[test]
fn hash_candidates_are_deterministic_and_use_the_whole_alphabet() {
    let codes = generator(6, false);
    let first: Vec<_> = codes
        .hash_candidates("https://example.com/a")
        .take(5)
        .collect();
    let again: Vec<_> = codes
        .hash_candidates("https://example.com/a")
        .take(5)
        .collect();
    assert_eq!(first, again);
    assert_eq!(
        first.iter().collect::<HashSet<_>>().len(),
        5,
        "candidates differ from each other"
    );
    let other: Vec<_> = codes
        .hash_candidates("https://example.com/b")
        .take(1)
        .collect();
    assert_ne!(first[0], other[0]);
    // A true modulo reaches all 62 characters (a `& 0x3D` mask reaches only 32).
    let mut used = HashSet::new();
    for n in 0..2000 {
        let url = format!("https://example.com/{n}");
        for byte in codes.hash_candidates(&url).next().unwrap().as_str().bytes() {
            used.insert(byte);
        }
    }
    assert_eq!(used.len(), 62);
}

#[test]
fn custom_code_rules() {
    let good = [
        "a",
        "Spring-Sale_2026",
        "ABC",
        "abc",
        "x".repeat(64).leak(),
        "api2",
        "admins",
    ];
    for code in good {
        assert_eq!(ShortCode::parse(code).unwrap().as_str(), code);
    }
    let bad: &[Case<CodeError>] = &[
        ("", |e| matches!(e, CodeError::Empty)),
        ("x".repeat(65).leak(), |e| {
            matches!(e, CodeError::TooLong { len: 65 })
        }),
        ("a b", |e| matches!(e, CodeError::InvalidCharacter(' '))),
        ("a/b", |e| matches!(e, CodeError::InvalidCharacter('/'))),
        ("a.b", |e| matches!(e, CodeError::InvalidCharacter('.'))),
        ("tést", |e| matches!(e, CodeError::InvalidCharacter('é'))),
        ("a%20", |e| matches!(e, CodeError::InvalidCharacter('%'))),
        ("\0", |e| matches!(e, CodeError::InvalidCharacter('\0'))),
        ("admin", |e| matches!(e, CodeError::Reserved(_))),
        ("Admin", |e| matches!(e, CodeError::Reserved(_))),
        ("API", |e| matches!(e, CodeError::Reserved(_))),
        ("static", |e| matches!(e, CodeError::Reserved(_))),
        ("healthz", |e| matches!(e, CodeError::Reserved(_))),
        ("metrics", |e| matches!(e, CodeError::Reserved(_))),
    ];
    for (code, expected) in bad {
        let err = ShortCode::parse(code).unwrap_err();
        assert!(expected(&err), "{code:?} gave {err:?}");
        assert!(!err.to_string().is_empty());
    }
}
