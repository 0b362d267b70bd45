//! Codes per second of the generators: `cargo bench --bench codes`.

use inklink::rules::{CodeFormat, CodeGenerator};
use std::hint::black_box;
use std::time::Instant;

fn measure(label: &str, count: u64, mut make: impl FnMut(u64)) {
    let start = Instant::now();
    for n in 0..count {
        make(n);
    }
    let elapsed = start.elapsed();
    println!(
        "{label:<34} {count:>9} codes in {:>7.1} ms = {:>10.0} codes/s",
        elapsed.as_secs_f64() * 1e3,
        count as f64 / elapsed.as_secs_f64()
    );
}

fn main() {
    for (length, check) in [(6, false), (6, true), (12, false)] {
        let codes = CodeGenerator::new(CodeFormat::new(length, check), b"benchmark secret");
        measure(
            &format!("sequence, length {length}, check {check}"),
            2_000_000,
            |id| {
                black_box(codes.code_for_id(black_box(id)).unwrap());
            },
        );
    }
    let codes = CodeGenerator::new(CodeFormat::new(6, false), b"benchmark secret");
    let urls: Vec<String> = (0..500_000)
        .map(|n| format!("https://example.com/campaign/{n}?utm_source=sms"))
        .collect();
    measure("hash, first candidate, length 6", urls.len() as u64, |n| {
        black_box(codes.hash_candidates(&urls[n as usize]).next());
    });
}
