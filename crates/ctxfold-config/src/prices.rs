//! `[prices.MODEL]`: dollars per million tokens for a model family (a
//! model's name is priced by the longest family it starts with), over the
//! built-in table of [`ctxfold_core::cost`]. `input` and `output` are
//! required; `cache_write` and `cache_read` default to `input` (a provider
//! whose cache costs nothing extra and saves nothing).

use ctxfold_core::cost::{Price, PriceTable};

use crate::SectionProblem;

/// The keys of one `[prices.MODEL]` table.
pub const PRICE_KEYS: &[&str] = &["cache_read", "cache_write", "input", "output"];

const EXPECTED: &str = "dollars per million tokens: a number, 0 or more";

/// `[prices]` as one layer sets it (see [`SectionCheck`](crate::SectionCheck)).
pub fn check_prices(v: &toml::Value) -> Result<(), SectionProblem> {
    for (family, entry) in SectionProblem::table(v, "a table of models ([prices.MODEL])")? {
        one(family, entry, false)?;
    }
    Ok(())
}

/// The built-in table with `[prices]` (merged over every layer) over it.
pub fn price_table(v: Option<&toml::Value>) -> Result<PriceTable, SectionProblem> {
    let mut table = PriceTable::default();
    let Some(v) = v else { return Ok(table) };
    for (family, entry) in SectionProblem::table(v, "a table of models ([prices.MODEL])")? {
        if let Some(p) = one(family, entry, true)? {
            table.set(&family.to_ascii_lowercase(), p);
        }
    }
    Ok(table)
}

/// One family's table, checked; with `whole`, its price (`input` and
/// `output` present: a layer may set only some keys, the merged table
/// must have both).
fn one(family: &str, entry: &toml::Value, whole: bool) -> Result<Option<Price>, SectionProblem> {
    let key = |k: &str| vec![family.to_owned(), k.to_owned()];
    let entry = entry.as_table().ok_or_else(|| SectionProblem::Invalid {
        key: vec![family.to_owned()],
        expected: format!("a table of prices ({})", PRICE_KEYS.join(", ")),
    })?;
    let mut got = [None; 4];
    for (k, v) in entry {
        let Some(i) = PRICE_KEYS.iter().position(|n| n == k) else {
            return Err(SectionProblem::UnknownKey {
                key: key(k),
                expected: PRICE_KEYS.to_vec(),
            });
        };
        let n = v
            .as_float()
            .or_else(|| v.as_integer().map(|n| n as f64))
            .filter(|n| n.is_finite() && *n >= 0.0)
            .ok_or_else(|| SectionProblem::Invalid {
                key: key(k),
                expected: EXPECTED.to_owned(),
            })?;
        got[i] = Some(n);
    }
    if !whole {
        return Ok(None);
    }
    let [cache_read, cache_write, input, output] = got;
    let (Some(input), Some(output)) = (input, output) else {
        let missing = if input.is_none() { "input" } else { "output" };
        return Err(SectionProblem::Invalid {
            key: key(missing),
            expected: format!("{EXPECTED} (input and output are required)"),
        });
    };
    Ok(Some(Price {
        input,
        cache_write: cache_write.unwrap_or(input),
        cache_read: cache_read.unwrap_or(input),
        output,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> toml::Value {
        toml::from_str::<toml::Table>(s).unwrap()["prices"].clone()
    }

    #[test]
    fn a_family_is_priced_over_the_built_in_table() {
        let v = parse("[prices.my-model]\ninput = 1\noutput = 2.5\ncache_read = 0.1\n");
        check_prices(&v).unwrap();
        let t = price_table(Some(&v)).unwrap();
        let (f, p) = t.lookup("my-model-7b").unwrap();
        assert_eq!(f, "my-model");
        assert_eq!(
            (p.input, p.cache_write, p.cache_read, p.output),
            (1.0, 1.0, 0.1, 2.5)
        );
        assert!(t.lookup("gpt-5").is_some());
    }

    #[test]
    fn a_bad_price_names_its_key() {
        let bad = |s: &str| check_prices(&parse(s)).unwrap_err();
        assert!(matches!(
            bad("[prices.m]\ninput = -1\n"),
            SectionProblem::Invalid { key, .. } if key == ["m", "input"]
        ));
        assert!(matches!(
            bad("[prices.m]\ninptu = 1\n"),
            SectionProblem::UnknownKey { key, .. } if key == ["m", "inptu"]
        ));
        assert!(matches!(
            price_table(Some(&parse("[prices.m]\ninput = 1\n"))).unwrap_err(),
            SectionProblem::Invalid { key, .. } if key == ["m", "output"]
        ));
    }
}
