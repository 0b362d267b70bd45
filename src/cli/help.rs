//! Help for one subcommand: its own arguments, not every server option again.

use super::*;

/// `inklink link add --help` and the like: the subcommand's own arguments, not the server's
/// 28 options that every command accepts (clap would list them all under each one).
pub(super) fn subcommand_help(args: &[OsString]) -> Option<String> {
    let words: Vec<String> = args
        .iter()
        .skip(1)
        .take_while(|arg| *arg != "--")
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    if !words.iter().any(|word| word == "--help" || word == "-h") {
        return None;
    }
    let mut command = Cli::command();
    let mut path = Vec::new();
    for word in &words {
        let current = path
            .iter()
            .fold(&command, |cmd: &clap::Command, name: &String| {
                cmd.find_subcommand(name).expect("found before")
            });
        if current.find_subcommand(word).is_some() {
            path.push(word.clone());
        }
    }
    // `serve` takes the server's options: its help lists them all, as clap makes it.
    if path.is_empty() || path[0] == "serve" {
        return None;
    }
    let mut sub = path
        .iter()
        .fold(&mut command, |cmd, name| {
            cmd.find_subcommand_mut(name).expect("found before")
        })
        .clone();
    sub = sub
        .bin_name(format!("inklink {}", path.join(" ")))
        .after_help(
            "Every option in `inklink --help` (the database, the secret, the time zone, … or their \
             INKLINK_* variables) applies to this command too.",
        );
    Some(sub.render_long_help().to_string())
}
