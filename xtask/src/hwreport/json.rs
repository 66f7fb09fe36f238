//! The little JSON the hardware report needs: read the bench's `summary.json`,
//! write `mwait-hw-report.json`. xtask has no dependencies, so this is a small
//! recursive-descent reader and a writer, for UTF-8 text of ordinary size.

use std::fmt::Write as _;

/// A JSON value. Objects keep their keys in order, so that the report's JSON
/// reads in the order of the Markdown.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

/// The widest line [`Json::pretty`] keeps a value on.
const PRETTY_WIDTH: usize = 100;

/// The most nested arrays and objects [`parse`] accepts (its recursion depth).
const MAX_DEPTH: usize = 64;

impl Json {
    /// An object from `(key, value)` pairs.
    pub fn obj<K: Into<String>>(pairs: impl IntoIterator<Item = (K, Json)>) -> Json {
        Json::Obj(pairs.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    /// A string value.
    pub fn str(s: impl Into<String>) -> Json {
        Json::Str(s.into())
    }

    /// `Some` as the value, `None` as `null`.
    pub fn opt<T>(v: Option<T>, f: impl FnOnce(T) -> Json) -> Json {
        v.map(f).unwrap_or(Json::Null)
    }

    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Indented JSON for people: a value whose compact form fits in
    /// [`PRETTY_WIDTH`] characters stays on one line.
    pub fn pretty(&self) -> String {
        let mut out = String::new();
        self.pretty_into(&mut out, 0);
        out
    }

    fn pretty_into(&self, out: &mut String, indent: usize) {
        let compact = self.to_string();
        if compact.len() + indent <= PRETTY_WIDTH {
            out.push_str(&compact);
            return;
        }
        let pad = "  ".repeat(indent + 1);
        let (open, close) = match self {
            Json::Arr(_) => ('[', ']'),
            Json::Obj(_) => ('{', '}'),
            _ => {
                out.push_str(&compact);
                return;
            }
        };
        out.push(open);
        let items: Vec<(Option<&str>, &Json)> = match self {
            Json::Arr(a) => a.iter().map(|v| (None, v)).collect(),
            Json::Obj(m) => m.iter().map(|(k, v)| (Some(k.as_str()), v)).collect(),
            _ => Vec::new(),
        };
        for (i, (k, v)) in items.iter().enumerate() {
            out.push_str(if i == 0 { "\n" } else { ",\n" });
            out.push_str(&pad);
            if let Some(k) = k {
                out.push_str(&quote(k));
                out.push_str(": ");
            }
            v.pretty_into(out, indent + 1);
        }
        out.push('\n');
        out.push_str(&"  ".repeat(indent));
        out.push(close);
    }

    /// The value as it would appear in a table cell: strings bare, numbers without
    /// a trailing `.0`, everything else as JSON.
    pub fn display(&self) -> String {
        match self {
            Json::Str(s) => s.clone(),
            other => other.to_string(),
        }
    }
}

impl std::fmt::Display for Json {
    /// Compact JSON, on one line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Json::Null => f.write_str("null"),
            Json::Bool(b) => write!(f, "{b}"),
            // JSON has no NaN or infinity; null is what the bench writes for them too.
            Json::Num(n) if !n.is_finite() => f.write_str("null"),
            Json::Num(n) if n.fract() == 0.0 && n.abs() < 1e15 => write!(f, "{}", *n as i64),
            Json::Num(n) => write!(f, "{n}"),
            Json::Str(s) => f.write_str(&quote(s)),
            Json::Arr(a) => {
                f.write_str("[")?;
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str("]")
            }
            Json::Obj(m) => {
                f.write_str("{")?;
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}: {v}", quote(k))?;
                }
                f.write_str("}")
            }
        }
    }
}

/// `s` as a JSON string literal.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Parses one JSON document (whitespace around it allowed).
pub fn parse(text: &str) -> Result<Json, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
    };
    let v = p.value(0)?;
    p.ws();
    if p.i != p.s.len() {
        return Err(p.err("trailing characters"));
    }
    Ok(v)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn err(&self, what: &str) -> String {
        format!("JSON: {what} at byte {}", self.i)
    }

    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        self.ws();
        if self.s.get(self.i) == Some(&b) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn literal(&mut self, word: &str, v: Json) -> Result<Json, String> {
        if self.s[self.i..].starts_with(word.as_bytes()) {
            self.i += word.len();
            Ok(v)
        } else {
            Err(self.err("unknown literal"))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json, String> {
        if depth > MAX_DEPTH {
            return Err(self.err("nested too deeply"));
        }
        self.ws();
        match self.s.get(self.i) {
            None => Err(self.err("unexpected end")),
            Some(b'n') => self.literal("null", Json::Null),
            Some(b't') => self.literal("true", Json::Bool(true)),
            Some(b'f') => self.literal("false", Json::Bool(false)),
            Some(b'"') => self.string().map(Json::Str),
            Some(b'[') => {
                self.i += 1;
                let mut a = Vec::new();
                if self.eat(b']') {
                    return Ok(Json::Arr(a));
                }
                loop {
                    a.push(self.value(depth + 1)?);
                    if self.eat(b']') {
                        return Ok(Json::Arr(a));
                    }
                    if !self.eat(b',') {
                        return Err(self.err("expected , or ]"));
                    }
                }
            }
            Some(b'{') => {
                self.i += 1;
                let mut m = Vec::new();
                if self.eat(b'}') {
                    return Ok(Json::Obj(m));
                }
                loop {
                    self.ws();
                    let k = self.string()?;
                    if !self.eat(b':') {
                        return Err(self.err("expected :"));
                    }
                    m.push((k, self.value(depth + 1)?));
                    if self.eat(b'}') {
                        return Ok(Json::Obj(m));
                    }
                    if !self.eat(b',') {
                        return Err(self.err("expected , or }"));
                    }
                }
            }
            Some(_) => self.number(),
        }
    }

    fn number(&mut self) -> Result<Json, String> {
        let start = self.i;
        while self.i < self.s.len()
            && matches!(
                self.s[self.i],
                b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'
            )
        {
            self.i += 1;
        }
        std::str::from_utf8(&self.s[start..self.i])
            .ok()
            .and_then(|t| t.parse::<f64>().ok())
            .map(Json::Num)
            .ok_or_else(|| {
                self.i = start;
                self.err("expected a value")
            })
    }

    fn string(&mut self) -> Result<String, String> {
        if self.s.get(self.i) != Some(&b'"') {
            return Err(self.err("expected a string"));
        }
        self.i += 1;
        let mut out = Vec::new();
        loop {
            let Some(&b) = self.s.get(self.i) else {
                return Err(self.err("unterminated string"));
            };
            self.i += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    let Some(&e) = self.s.get(self.i) else {
                        return Err(self.err("unterminated escape"));
                    };
                    self.i += 1;
                    let c = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode_escape()?,
                        _ => return Err(self.err("unknown escape")),
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                b => out.push(b),
            }
        }
        String::from_utf8(out).map_err(|_| self.err("string is not UTF-8"))
    }

    /// The four hex digits after `\u` (and a low surrogate after a high one).
    fn unicode_escape(&mut self) -> Result<char, String> {
        let hex4 = |p: &mut Self| -> Result<u32, String> {
            let t =
                p.s.get(p.i..p.i + 4)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u32::from_str_radix(h, 16).ok())
                    .ok_or_else(|| p.err("bad \\u escape"))?;
            p.i += 4;
            Ok(t)
        };
        let hi = hex4(self)?;
        let code = if (0xD800..0xDC00).contains(&hi) && self.s[self.i..].starts_with(b"\\u") {
            self.i += 2;
            let lo = hex4(self)?;
            0x10000 + ((hi - 0xD800) << 10) + (lo.wrapping_sub(0xDC00) & 0x3FF)
        } else {
            hi
        };
        Ok(char::from_u32(code).unwrap_or('\u{FFFD}'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_shape_of_the_bench_summary() {
        let text = r#"{"machine": {"cpu": "AMD EPYC", "hypervisor": true, "usable_cpus": 2, "backend": "futex", "quick": true},
 "results": [
  {"bench": "pingpong", "impl": "waitcell", "p50_ns": 651.5, "p99_ns": null, "samples": 1200},
  {"bench": "notify", "impl": "atomic-wait", "ns": 1.6e2}
 ]}"#;
        let v = parse(text).unwrap();
        let m = v.get("machine").unwrap();
        assert_eq!(m.get("cpu").unwrap().as_str(), Some("AMD EPYC"));
        assert_eq!(m.get("hypervisor"), Some(&Json::Bool(true)));
        assert_eq!(m.get("usable_cpus"), Some(&Json::Num(2.0)));
        let Some(Json::Arr(rs)) = v.get("results") else {
            panic!("results is not an array: {v:?}")
        };
        assert_eq!(rs.len(), 2);
        assert_eq!(rs[0].get("p50_ns"), Some(&Json::Num(651.5)));
        assert_eq!(rs[0].get("p99_ns"), Some(&Json::Null));
        assert_eq!(rs[1].get("ns"), Some(&Json::Num(160.0)));
    }

    #[test]
    fn strings_round_trip_through_escapes() {
        let s = "quote \" backslash \\ newline \n tab \t bell \u{7} é ✓ 😀";
        let written = Json::str(s).to_string();
        assert!(!written.contains('\n'), "{written}");
        assert!(written.contains("\\u0007"), "{written}");
        assert_eq!(parse(&written).unwrap(), Json::str(s));
        assert_eq!(
            parse(r#""\ud83d\ude00 \u00e9""#).unwrap(),
            Json::str("😀 é")
        );
    }

    #[test]
    fn values_round_trip() {
        let v = Json::obj([
            (
                "a",
                Json::Arr(vec![Json::Num(1.0), Json::Num(-2.5), Json::Null]),
            ),
            ("b", Json::obj([("c", Json::Bool(false))])),
            ("d", Json::str("")),
        ]);
        let text = v.to_string();
        assert_eq!(
            text,
            r#"{"a": [1, -2.5, null], "b": {"c": false}, "d": ""}"#
        );
        assert_eq!(parse(&text).unwrap(), v);
        assert_eq!(Json::Num(f64::NAN).to_string(), "null");
    }

    #[test]
    fn pretty_output_is_the_same_value_on_short_lines() {
        let long = "x".repeat(PRETTY_WIDTH);
        let v = Json::obj([
            ("short", Json::Arr(vec![Json::Num(1.0), Json::Num(2.0)])),
            (
                "long",
                Json::Arr(vec![Json::str(&long), Json::obj([("k", Json::Null)])]),
            ),
        ]);
        let p = v.pretty();
        assert_eq!(parse(&p).unwrap(), v);
        assert!(p.contains("\"short\": [1, 2]"), "{p}");
        assert!(p.contains("\n    {\"k\": null}\n  ]"), "{p}");
        assert!(p.starts_with("{\n  \"short\""), "{p}");
        assert_eq!(Json::Num(3.0).pretty(), "3");
    }

    #[test]
    fn malformed_documents_are_refused() {
        for bad in [
            "",
            "{",
            "[1,]",
            "{\"a\" 1}",
            "\"open",
            "nul",
            "1 2",
            "{\"a\": tru}",
            "\"\\x\"",
        ] {
            assert!(parse(bad).is_err(), "accepted {bad:?}");
        }
        let deep = "[".repeat(MAX_DEPTH + 2) + &"]".repeat(MAX_DEPTH + 2);
        assert!(parse(&deep).unwrap_err().contains("deeply"));
    }
}
