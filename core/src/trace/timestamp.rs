//! Trace timestamps: microseconds written as an integer, a float or a decimal string, turned into
//! `i64` nanoseconds (DESIGN §1). Strings are parsed digit by digit, so torch_npu's
//! `"1704161511420306.491"` keeps its nanoseconds exactly; floats are rounded to the nanosecond.

/// Microseconds as an unsigned integer → nanoseconds.
pub fn from_micros_u64(us: u64) -> Option<i64> {
    i64::try_from(us).ok()?.checked_mul(1000)
}

/// Microseconds as a signed integer → nanoseconds.
pub fn from_micros_i64(us: i64) -> Option<i64> {
    us.checked_mul(1000)
}

/// Microseconds as a float → nanoseconds, rounded; `None` for NaN, infinities and overflow.
pub fn from_micros_f64(us: f64) -> Option<i64> {
    let ns = (us * 1000.0).round();
    // 2^63 is exactly representable; anything at or beyond it does not fit.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    (ns.is_finite() && ns > -LIMIT && ns < LIMIT).then_some(ns as i64)
}

/// Microseconds written as text (`"12"`, `"-3.5"`, `"1704161511420306.491"`, `"1.5e3"`) →
/// nanoseconds. Plain decimals are exact to the nanosecond (further digits round half up), in one
/// pass over the bytes; exponents go through `f64`.
pub fn from_micros_str(text: &str) -> Option<i64> {
    from_micros_bytes(text.trim().as_bytes())
}

/// [`from_micros_str`] on the bytes of the text (no surrounding whitespace).
pub fn from_micros_bytes(bytes: &[u8]) -> Option<i64> {
    let (negative, digits) = match bytes.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, bytes),
    };
    let mut ns: i64 = 0;
    let mut seen_digit = false;
    let mut fraction: Option<u32> = None;
    let mut round_up = false;
    for &b in digits {
        match b {
            b'0'..=b'9' => {
                seen_digit = true;
                let d = i64::from(b - b'0');
                match fraction {
                    None => ns = ns.checked_mul(10)?.checked_add(d)?,
                    Some(n) if n < 3 => {
                        ns = ns.checked_mul(10)?.checked_add(d)?;
                        fraction = Some(n + 1);
                    }
                    Some(3) => {
                        round_up = d >= 5;
                        fraction = Some(4);
                    }
                    Some(_) => {}
                }
            }
            b'.' if fraction.is_none() => fraction = Some(0),
            b'e' | b'E' => return from_micros_f64(std::str::from_utf8(bytes).ok()?.parse().ok()?),
            _ => return None,
        }
    }
    if !seen_digit {
        return None;
    }
    let places = fraction.map_or(0, |n| n.min(3));
    ns = ns.checked_mul(10i64.pow(3 - places))?;
    if round_up {
        ns = ns.checked_add(1)?;
    }
    Some(if negative { -ns } else { ns })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_keep_nanoseconds_exactly() {
        assert_eq!(
            from_micros_str("1704161511420306.491"),
            Some(1_704_161_511_420_306_491)
        );
        assert_eq!(from_micros_str("12"), Some(12_000));
        assert_eq!(from_micros_str("-3.5"), Some(-3_500));
        assert_eq!(from_micros_str("0.0004"), Some(0));
        assert_eq!(from_micros_str("0.0005"), Some(1));
        assert_eq!(from_micros_str(".25"), Some(250));
        assert_eq!(from_micros_str("1.5e3"), Some(1_500_000));
        assert_eq!(from_micros_str(" 7 "), Some(7_000));
    }

    #[test]
    fn rejects_what_is_not_a_number() {
        for bad in [
            "",
            ".",
            "abc",
            "1.2.3",
            "--1",
            "1_000",
            "99999999999999999999",
        ] {
            assert_eq!(from_micros_str(bad), None, "{bad}");
        }
        assert_eq!(from_micros_f64(f64::NAN), None);
        assert_eq!(from_micros_f64(1e300), None);
        assert_eq!(from_micros_u64(u64::MAX), None);
        assert_eq!(from_micros_i64(i64::MIN), None);
    }

    #[test]
    fn numbers_convert_to_nanoseconds() {
        assert_eq!(
            from_micros_u64(1_682_700_000_000_000),
            Some(1_682_700_000_000_000_000)
        );
        assert_eq!(from_micros_i64(-5), Some(-5_000));
        assert_eq!(
            from_micros_f64(4_458_700_000_123.456),
            Some(4_458_700_000_123_456)
        );
        assert_eq!(from_micros_f64(0.0015), Some(2));
    }
}
