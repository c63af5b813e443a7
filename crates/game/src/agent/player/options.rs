//! Reading a sensor's option from a structured reply: by the token log-probabilities of the option
//! letters when the provider reports them (the reference implementation's way), else the parsed letter.

use super::sensors::Method;
use sleuth_llm::TokenLogprob;

/// An option chosen from a structured reply.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Pick {
    pub(super) index: usize,
    pub(super) probs: Vec<f64>,
    pub(super) method: Method,
}

/// Chooses one of the option `letters`: by log-probability when `logprobs` has the choice token, else
/// the `parsed` letter, else uniformly (index 0).
pub(super) fn choose_option(
    letters: &[String],
    parsed: Option<&str>,
    logprobs: Option<&[TokenLogprob]>,
) -> Pick {
    if let Some(probs) = logprobs.and_then(|lps| option_distribution(letters, lps)) {
        let index = argmax(&probs);
        return Pick {
            index,
            probs,
            method: Method::Logprobs,
        };
    }
    if let Some(index) = parsed.and_then(|p| letters.iter().position(|l| l == p.trim())) {
        let probs = (0..letters.len())
            .map(|i| if i == index { 1.0 } else { 0.0 })
            .collect();
        return Pick {
            index,
            probs,
            method: Method::Parsed,
        };
    }
    let n = letters.len().max(1) as f64;
    Pick {
        index: 0,
        probs: vec![1.0 / n; letters.len()],
        method: Method::Uniform,
    }
}

/// The distribution over the option letters at the first output token that is one of them. The schema
/// puts the choice first, so that token is the answer (a letter in the reason comes later). The simulated
/// model reports one entry per enum with every option in `top`; an HTTP model reports every token with
/// its five best alternatives, possibly with quotes or spaces attached (`"A`, ` B`), which are merged.
/// Options absent from the alternatives get probability 0.
fn option_distribution(letters: &[String], lps: &[TokenLogprob]) -> Option<Vec<f64>> {
    let norm = |t: &str| {
        t.trim_matches(|c: char| c.is_whitespace() || c == '"' || c == '\'')
            .to_string()
    };
    let position = |t: &str| {
        let t = norm(t);
        letters.iter().position(|l| *l == t)
    };
    let at = lps.iter().find(|t| position(&t.token).is_some())?;
    let mut lp: Vec<Option<f64>> = vec![None; letters.len()];
    let add = |lp: &mut Vec<Option<f64>>, token: &str, x: f64| {
        if x.is_nan() || x == f64::INFINITY {
            return;
        }
        if let Some(i) = position(token) {
            lp[i] = Some(match lp[i] {
                Some(y) => log_sum_exp(y, x),
                None => x,
            });
        }
    };
    for (t, x) in &at.top {
        add(&mut lp, t, *x);
    }
    // The chosen token itself, if the alternatives left it out.
    if let Some(i) = position(&at.token) {
        if lp[i].is_none() {
            add(&mut lp, &at.token, at.logprob);
        }
    }
    let max = lp
        .iter()
        .flatten()
        .cloned()
        .fold(f64::NEG_INFINITY, f64::max);
    if !max.is_finite() {
        return None;
    }
    let weights: Vec<f64> = lp
        .iter()
        .map(|x| x.map_or(0.0, |x| (x - max).exp()))
        .collect();
    let z: f64 = weights.iter().sum();
    (z > 0.0).then(|| weights.iter().map(|w| w / z).collect())
}

fn log_sum_exp(a: f64, b: f64) -> f64 {
    let m = a.max(b);
    if m == f64::NEG_INFINITY {
        return m;
    }
    m + ((a - m).exp() + (b - m).exp()).ln()
}

/// Index of the largest value; the first on ties.
pub(super) fn argmax(xs: &[f64]) -> usize {
    let mut best = 0;
    for (i, x) in xs.iter().enumerate() {
        if x.total_cmp(&xs[best]).is_gt() {
            best = i;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use sleuth_script::option_letter;

    fn letters(n: usize) -> Vec<String> {
        (0..n).map(option_letter).collect()
    }

    fn lp(token: &str, logprob: f64, top: &[(&str, f64)]) -> TokenLogprob {
        TokenLogprob {
            token: token.into(),
            logprob,
            top: top.iter().map(|(t, x)| (t.to_string(), *x)).collect(),
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn options_are_read_from_logprobs_with_a_fallback_to_the_parsed_answer() {
        let abc = letters(3);
        // The simulated model's form: one entry per enum, every option among the alternatives. The
        // most probable option wins even when the sampled one differs.
        let sim = [lp("A", -1.5, &[("A", -1.5), ("B", -0.4), ("C", -2.0)])];
        let p = choose_option(&abc, Some("A"), Some(&sim));
        assert_eq!(p.method, Method::Logprobs);
        assert_eq!(p.index, 1);
        assert!(close(p.probs.iter().sum::<f64>(), 1.0));
        assert!(p.probs[1] > p.probs[0] && p.probs[0] > p.probs[2]);

        // An HTTP model's form: every token, quotes and spaces attached, a duplicate alternative merged,
        // a letter inside the reason ignored, an option missing from the alternatives at 0.
        let http = [
            lp("{\"", -0.01, &[]),
            lp("choice", -0.01, &[]),
            lp("\":\"", -0.01, &[]),
            lp(
                "C",
                -0.3,
                &[("C", -0.3), (" A", -2.0), ("A", -2.0), ("The", -4.0)],
            ),
            lp("\",\"", -0.01, &[]),
            lp(" B", -0.1, &[(" B", -0.1)]),
        ];
        let p = choose_option(&abc, Some("C"), Some(&http));
        assert_eq!(p.method, Method::Logprobs);
        assert_eq!(p.index, 2);
        assert_eq!(p.probs[1], 0.0);
        let (pa, pc) = ((-2.0f64).exp() * 2.0, (-0.3f64).exp());
        assert!(close(p.probs[0], pa / (pa + pc)), "{:?}", p.probs);

        // No log-probabilities, or none on an option letter: the parsed answer, as a certainty.
        for lps in [None, Some(&http[..3])] {
            let p = choose_option(&abc, Some("B"), lps);
            assert_eq!(
                p,
                Pick {
                    index: 1,
                    probs: vec![0.0, 1.0, 0.0],
                    method: Method::Parsed
                }
            );
        }
        // Nothing usable at all: uniform.
        let p = choose_option(&abc, Some("Z"), None);
        assert_eq!(p.method, Method::Uniform);
        assert!(p.probs.iter().all(|x| close(*x, 1.0 / 3.0)));
    }
}
