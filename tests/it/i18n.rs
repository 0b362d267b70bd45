//! Two languages everywhere: every text of the admin UI and every message a person can read
//! there has its Chinese, and the Chinese keeps the values of the English.

use inklink::i18n::Lang;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Literals of the scanned code that no person reads: `expect` reasons, SQL, sample rows.
const INTERNAL: &[&str] = &[
    "AppState is registered",
    "the cookie just added",
    "a target URL parses",
    "url_map_id IN (SELECT link_id FROM link_tag WHERE tag = ?)",
    "the system random source",
    "value outside the code space",
    "alphabet is ASCII",
    "domain out of range",
    "{x} is outside the permutation's domain",
    "{y} is outside the permutation's domain",
    "code length {length} outside 1..=12",
    "a result per valid row",
    "writing to memory",
    "Spring sale, SMS 1",
    "every item has a result",
    "at least one length",
    "16 bytes fit a salt",
    "argon2id with default parameters hashes any password",
    "argon2id with default parameters hashes any secret",
    "the semaphore is never closed",
    "argon2 does not panic",
    "a valid name",
    "database error: {0}",
    "CAST(SUM({column}) AS {int})",
    "user {id}",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files(dir: &str, ext: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    out.sort();
    out
}

/// The string literal starting at the `"` at `start` of `text`, unescaped, and where it ends.
fn literal(text: &str, start: usize) -> Option<(String, usize)> {
    let mut out = String::new();
    let mut chars = text[start + 1..].char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, start + 1 + i + 1)),
            '\\' => match chars.next()?.1 {
                'n' => out.push('\n'),
                other => out.push(other),
            },
            c => out.push(c),
        }
    }
    None
}

/// Every `t("…")` / `f("…")` in `text`: the English texts a page or the code translates.
fn translated_calls(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for call in [".t(\"", ".f(\""] {
        let mut from = 0;
        while let Some(at) = text[from..].find(call) {
            let quote = from + at + call.len() - 1;
            let (english, end) = literal(text, quote).expect("a closed literal");
            out.push(english);
            from = end;
        }
    }
    out
}

/// Does a literal read like words a person reads (`the file is empty`, `Countries`)?
fn reads_as_words(s: &str) -> bool {
    let capitalised_word = s.len() > 2
        && s.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && s.chars().skip(1).all(|c| c.is_ascii_lowercase());
    let words = s.as_bytes().windows(4).any(|w| {
        w[0].is_ascii_alphabetic()
            && w[1].is_ascii_alphabetic()
            && w[2] == b' '
            && (w[3].is_ascii_lowercase() || w[3] == b'{')
    });
    capitalised_word || words
}

/// The messages of the code a person can read on an admin page: the errors of the rules and
/// services, and the admin UI's own texts.
fn code_messages() -> Vec<(String, String)> {
    let mut sources: Vec<PathBuf> = ["src/admin", "src/services", "src/rules"]
        .iter()
        .flat_map(|dir| files(dir, "rs"))
        .collect();
    sources.push(root().join("src/analytics/report.rs"));
    let mut out = Vec::new();
    for path in sources {
        let text = std::fs::read_to_string(&path).unwrap();
        for (number, line) in text.lines().enumerate() {
            let trimmed = line.trim_start();
            if trimmed.starts_with("//") || line.contains("tracing::") || line.contains("panic!") {
                continue;
            }
            let mut from = 0;
            while let Some(at) = line[from..].find('"') {
                let start = from + at;
                // Skip char literals like '"' and raw strings.
                if start > 0 && line.as_bytes()[start - 1] == b'\'' {
                    from = start + 1;
                    continue;
                }
                let Some((text, end)) = literal(line, start) else {
                    break;
                };
                if reads_as_words(&text) && !INTERNAL.contains(&text.as_str()) {
                    let name = path.strip_prefix(root()).unwrap().display().to_string();
                    out.push((format!("{name}:{}", number + 1), text));
                }
                from = end;
            }
        }
    }
    out
}

fn template_texts() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for path in files("templates/admin", "html") {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.strip_prefix(root()).unwrap().display().to_string();
        out.extend(
            translated_calls(&text)
                .into_iter()
                .map(|t| (name.clone(), t)),
        );
    }
    for path in files("src/charts", "rs") {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.strip_prefix(root()).unwrap().display().to_string();
        out.extend(
            translated_calls(&text)
                .into_iter()
                .map(|t| (name.clone(), t)),
        );
    }
    out
}

#[test]
fn every_text_and_message_of_the_admin_ui_has_its_chinese() {
    let known: BTreeSet<&str> = Lang::translated().into_iter().collect();
    let mut missing: Vec<String> = template_texts()
        .into_iter()
        .chain(code_messages())
        .filter(|(_, english)| !known.contains(english.as_str()))
        .map(|(place, english)| format!("{place}: {english:?}"))
        .collect();
    missing.sort();
    missing.dedup();
    assert!(
        missing.is_empty(),
        "{} texts have no Chinese in locales/admin.zh-CN.toml:\n{}",
        missing.len(),
        missing.join("\n")
    );
    // And the scan itself finds what it should.
    assert!(template_texts().len() > 300);
    assert!(
        code_messages()
            .iter()
            .any(|(_, m)| m == "wrong user name or password")
    );
}

fn placeholders(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    let mut position = 0;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        let name = rest[open + 1..open + close].split(':').next().unwrap_or("");
        if name.is_empty() {
            out.insert(position.to_string());
            position += 1;
        } else {
            out.insert(name.to_owned());
        }
        rest = &rest[open + close + 1..];
    }
    out
}

#[test]
fn every_translation_keeps_the_values_of_its_english() {
    for english in Lang::translated() {
        let chinese = Lang::ZhCn.t(english);
        assert_ne!(chinese.trim(), "", "{english:?} has an empty translation");
        let (from, to) = (placeholders(english), placeholders(chinese));
        // `{}` in the Chinese may stand for a positional value by its number.
        let to: BTreeSet<String> = to.into_iter().collect();
        assert_eq!(
            from, to,
            "{english:?} → {chinese:?} changes the values it shows"
        );
    }
}

#[test]
fn messages_with_values_come_out_in_chinese() {
    let zh = Lang::ZhCn;
    assert_eq!(zh.t("Links"), "链接");
    assert_eq!(
        zh.say("Created http://s.example/abc"),
        "已创建 http://s.example/abc"
    );
    assert_eq!(
        zh.say("there is no link with the code 'abc'"),
        "没有代码为 'abc' 的链接"
    );
    assert_eq!(zh.say("Disable 3 links?"), "停用 3 个链接？");
    assert_eq!(zh.say("Disable 1 link?"), "停用 1 个链接？");
    // English is the text itself; unknown text stays as it is.
    assert_eq!(Lang::En.say("Created x"), "Created x");
    assert_eq!(zh.say("spring-sale"), "spring-sale");
    let _ = Path::new("");
}
