//! The proxy's `/metrics` read back: what `doctor` reports of a running
//! proxy and what `run` sums for its closing lines.

/// The sum of every sample of `metric` (all its labels) in Prometheus
/// text; a negative or unreadable sample counts nothing.
pub fn total(text: &str, metric: &str) -> u64 {
    text.lines()
        .filter(|l| {
            l.strip_prefix(metric)
                .is_some_and(|rest| rest.starts_with(' ') || rest.starts_with('{'))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|v| v.max(0.0) as u64)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_add_up_every_label() {
        let text = "# HELP x\nctxfold_proxy_requests_total{endpoint=\"messages\",status=\"2xx\"} 3\nctxfold_proxy_requests_total{endpoint=\"chat\",status=\"4xx\"} 2\nctxfold_proxy_requests_total_other 9\nctxfold_proxy_compactions_total 1\n";
        assert_eq!(total(text, "ctxfold_proxy_requests_total"), 5);
        assert_eq!(total(text, "ctxfold_proxy_compactions_total"), 1);
        assert_eq!(total(text, "ctxfold_proxy_tokens_after_total"), 0);
    }
}
