use super::*;
use serde_json::json;

fn est(without: (u64, u64), with: (u64, u64)) -> Estimate {
    Estimate {
        without_input: without.0,
        without_cached: without.1,
        with_input: with.0,
        with_cached: with.1,
    }
}

#[test]
fn the_longest_family_prices_a_model_and_none_is_invented() {
    let t = PriceTable::default();
    assert_eq!(t.lookup("gpt-5-mini-2025-08-07").unwrap().0, "gpt-5-mini");
    assert_eq!(t.lookup("openai/gpt-5").unwrap().0, "gpt-5");
    assert_eq!(
        t.lookup("claude-sonnet-4-5-20250929").unwrap().0,
        "claude-sonnet-4"
    );
    assert_eq!(t.lookup("claude-opus-4-5").unwrap().0, "claude-opus-4-5");
    assert_eq!(t.lookup("claude-opus-4-1").unwrap().0, "claude-opus-4");
    assert!(t.lookup("llama-3-8b").is_none());
    let mut t = t;
    let p = Price {
        input: 1.0,
        cache_write: 2.0,
        cache_read: 0.5,
        output: 4.0,
    };
    t.set("llama-3", p);
    assert_eq!(t.lookup("llama-3-8b"), Some(("llama-3", p)));
    assert_eq!(t.configured(), ["llama-3".to_owned()]);
}

#[test]
fn an_estimate_reads_the_shared_prefix_and_writes_the_rest() {
    let r = est((1000, 800), (400, 100)).request("m", 50, None);
    assert_eq!(r.source, Source::Estimate);
    let w = |write, read| Tokens {
        input: 0,
        cache_write: write,
        cache_read: read,
        output: 50,
    };
    assert_eq!(r.without, w(200, 800));
    assert_eq!(r.with, w(300, 100));
    let p = Price {
        input: 3.0,
        cache_write: 3.75,
        cache_read: 0.3,
        output: 15.0,
    };
    // 200 × 3.75 + 800 × 0.3 + 50 × 15 = 750 + 240 + 750
    assert_eq!(r.without.micros(&p), 1740);
}

#[test]
fn usage_of_each_api_is_read_and_the_side_without_scaled_to_it() {
    let anthropic = json!({"model": "m", "input_tokens": 0, "raw": {
        "input_tokens": 10, "cache_creation_input_tokens": 190,
        "cache_read_input_tokens": 600, "output_tokens": 7}});
    // Estimated 400 sent, the upstream counted 800: twice.
    let r = est((1000, 800), (400, 100)).request("m", 50, Some(&anthropic));
    assert_eq!(r.source, Source::Usage);
    assert_eq!(
        r.with,
        Tokens {
            input: 10,
            cache_write: 190,
            cache_read: 600,
            output: 7
        }
    );
    assert_eq!(
        r.without,
        Tokens {
            input: 0,
            cache_write: 400,
            cache_read: 1600,
            output: 7
        }
    );
    let chat = json!({"prompt_tokens": 300, "completion_tokens": 9,
        "prompt_tokens_details": {"cached_tokens": 256}});
    let t = reported(&chat).unwrap();
    assert_eq!((t.input, t.cache_read, t.output), (44, 256, 9));
    let responses = json!({"input_tokens": 300, "output_tokens": 9,
        "input_tokens_details": {"cached_tokens": 100}});
    let t = reported(&responses).unwrap();
    assert_eq!((t.input, t.cache_read, t.output), (200, 100, 9));
    // Usage naming no input is no usage: the estimate stands.
    let empty = json!({"output_tokens": 3});
    let r = est((10, 0), (10, 0)).request("m", 5, Some(&empty));
    assert_eq!(r.source, Source::Estimate);
}

#[test]
fn sums_by_model_price_only_what_has_a_price() {
    let t = PriceTable::default();
    let mut sum = CostSum::default();
    let a = est((1_000_000, 0), (500_000, 0)).request("gpt-5", 0, None);
    let b = est((10, 0), (10, 0)).request("my-own-model", 0, None);
    sum.add(&a, &t);
    sum.add(&b, &t);
    sum.add(&a, &t);
    assert_eq!(sum.requests(), 3);
    // gpt-5 writes at the input price: 1.25 $/M.
    assert_eq!(sum.micros(), (1_250_000, 2_500_000));
    assert_eq!(sum.unpriced().collect::<Vec<_>>(), ["my-own-model"]);
    let mut all = CostSum::default();
    all.merge(&sum, &t);
    all.merge(&sum, &t);
    assert_eq!(all.micros(), (2_500_000, 5_000_000));
    assert_eq!(all.requests(), 6);
}

#[test]
fn a_request_survives_the_metadata_round_trip() {
    let r = est((10, 2), (8, 2)).request("gpt-5", 3, None);
    let mut rec = Record::new(
        1,
        "2026-01-01T00:00:00Z",
        crate::Body::Assistant {
            content: "x".into(),
        },
    );
    rec.metadata
        .get_or_insert_default()
        .insert(REQUEST_META.into(), r.to_value());
    assert_eq!(Request::of_record(&rec), Some(r));
}

#[test]
fn dollars_show_cents_at_least() {
    assert_eq!(dollars(0), "$0.00");
    assert_eq!(dollars(1_500_000), "$1.50");
    assert_eq!(dollars(1_234_567), "$1.234567");
    assert_eq!(dollars(10_000), "$0.01");
}
