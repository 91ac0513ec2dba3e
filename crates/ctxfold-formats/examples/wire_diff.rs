#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    missing_docs
)]
use std::io::Write;
use std::path::Path;

use ctxfold_formats::{Format, Transcript, anthropic, openai, responses};

fn dump(out: &mut impl Write, name: &str, t: &Transcript) {
    let all: Vec<&ctxfold_core::Record> = t.records.iter().collect();
    let o = openai::to_json(&all, &t.extras);
    let a = anthropic::to_json(&all, &t.extras);
    let r = responses::to_json(&all, &t.extras);
    writeln!(out, "{name} openai {}", o).unwrap();
    writeln!(out, "{name} anthropic {}", a).unwrap();
    writeln!(out, "{name} responses {}", r).unwrap();
    // Round trips through each format.
    if let Ok(t2) = openai::from_json(&o) {
        let all2: Vec<&ctxfold_core::Record> = t2.records.iter().collect();
        writeln!(out, "{name} openai2 {}", openai::to_json(&all2, &t2.extras)).unwrap();
        writeln!(
            out,
            "{name} openai2a {}",
            anthropic::to_json(&all2, &t2.extras)
        )
        .unwrap();
    }
    if let Ok(t2) = anthropic::from_json(&a) {
        let all2: Vec<&ctxfold_core::Record> = t2.records.iter().collect();
        writeln!(
            out,
            "{name} anthropic2 {}",
            anthropic::to_json(&all2, &t2.extras)
        )
        .unwrap();
        writeln!(
            out,
            "{name} anthropic2o {}",
            openai::to_json(&all2, &t2.extras)
        )
        .unwrap();
    }
    if let Ok(t2) = responses::from_json(&r) {
        let all2: Vec<&ctxfold_core::Record> = t2.records.iter().collect();
        writeln!(
            out,
            "{name} responses2 {}",
            responses::to_json(&all2, &t2.extras)
        )
        .unwrap();
    }
    for f in [Format::Openai, Format::Anthropic] {
        let b = ctxfold_formats::export_bytes(t, f, Path::new("x")).unwrap();
        out.write_all(&b).unwrap();
    }
}

fn main() {
    let mut out =
        std::io::BufWriter::new(std::fs::File::create(std::env::args().nth(1).unwrap()).unwrap());
    let mut dirs: Vec<_> = std::fs::read_dir("/work/shared/corpus/jp")
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    for d in dirs {
        let Ok(t) = ctxfold_formats::import(&d, Some(Format::Jp)) else {
            eprintln!("skip {}", d.display());
            continue;
        };
        dump(&mut out, &d.display().to_string(), &t);
    }
    let mut files: Vec<_> = std::fs::read_dir("crates/ctxfold-formats/tests/data")
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for f in files {
        let Ok(t) = ctxfold_formats::import(&f, None) else {
            continue;
        };
        dump(&mut out, &f.display().to_string(), &t);
    }
    for f in std::env::args().skip(2) {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        for (n, t) in [
            openai::from_json(&v),
            anthropic::from_json(&v),
            responses::from_json(&v),
        ]
        .into_iter()
        .enumerate()
        {
            if let Ok(t) = t {
                dump(&mut out, &format!("{f}#{n}"), &t);
            }
        }
    }
}
