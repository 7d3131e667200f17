//! Splitting an inline command line into arguments, exactly as Redis's `sdssplitargs` does:
//! whitespace separates, double quotes understand `\n \r \t \b \a \\ \" \xHH`, single quotes
//! understand only `\'`, and a closing quote must be followed by whitespace or the end.

/// Splits `line` into arguments; `None` means unbalanced quotes.
pub fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    // sdssplitargs reads a C string: a NUL byte ends the line.
    let line = &line[..line.iter().position(|&b| b == 0).unwrap_or(line.len())];
    let mut args = Vec::new();
    let mut i = 0;
    let n = line.len();
    loop {
        while i < n && is_space(line[i]) {
            i += 1;
        }
        if i >= n {
            return Some(args);
        }
        let mut current = Vec::new();
        let mut in_dq = false;
        let mut in_sq = false;
        loop {
            if in_dq {
                if i >= n {
                    return None;
                }
                let c = line[i];
                if c == b'\\' && i + 3 < n && line[i + 1] == b'x' && is_hex(line[i + 2]) && is_hex(line[i + 3]) {
                    current.push(hex_val(line[i + 2]) * 16 + hex_val(line[i + 3]));
                    i += 3;
                } else if c == b'\\' && i + 1 < n {
                    i += 1;
                    current.push(match line[i] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                } else if c == b'"' {
                    // The closing quote must be followed by a space or nothing.
                    if i + 1 < n && !is_space(line[i + 1]) {
                        return None;
                    }
                    i += 1;
                    break;
                } else {
                    current.push(c);
                }
            } else if in_sq {
                if i >= n {
                    return None;
                }
                let c = line[i];
                if c == b'\\' && i + 1 < n && line[i + 1] == b'\'' {
                    i += 1;
                    current.push(b'\'');
                } else if c == b'\'' {
                    if i + 1 < n && !is_space(line[i + 1]) {
                        return None;
                    }
                    i += 1;
                    break;
                } else {
                    current.push(c);
                }
            } else {
                if i >= n {
                    break;
                }
                match line[i] {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => {
                        break;
                    }
                    b'"' => in_dq = true,
                    b'\'' => in_sq = true,
                    c => current.push(c),
                }
            }
            i += 1;
        }
        args.push(current);
    }
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn is_hex(c: u8) -> bool {
    c.is_ascii_hexdigit()
}

fn hex_val(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => c - b'A' + 10,
    }
}

#[cfg(test)]
mod tests {
    use super::split_args;

    fn s(line: &str) -> Option<Vec<String>> {
        split_args(line.as_bytes()).map(|v| v.into_iter().map(|a| String::from_utf8_lossy(&a).into_owned()).collect())
    }

    #[test]
    fn splits_like_sdssplitargs() {
        assert_eq!(s("set a b"), Some(vec!["set".into(), "a".into(), "b".into()]));
        assert_eq!(s("  set   \"a b\"  'c d' "), Some(vec!["set".into(), "a b".into(), "c d".into()]));
        assert_eq!(s("\"\\x41\\n\""), Some(vec!["A\n".into()]));
        assert_eq!(s("'it\\'s'"), Some(vec!["it's".into()]));
        assert_eq!(s("\"abc"), None);
        assert_eq!(s("\"abc\"def"), None);
        assert_eq!(s(""), Some(vec![]));
        // Found by the fuzzer: a NUL used to loop forever producing empty arguments.
        assert_eq!(s(")\0x y"), Some(vec![")".into()]));
        assert_eq!(s("\"a\0\""), None);
    }
}
