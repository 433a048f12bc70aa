//! fio's job-file grammar (`init.c`, `__parse_jobs_ini`), read into sections of option lines.
//!
//! - Lines are stripped of leading blanks; a line whose first non-blank character is `;` or
//!   `#` is a comment, and everything from the first `;` or `#` of any line is cut off.
//! - `[name]` opens a section; a name starting with `global` is a global section, whose
//!   options change the defaults of every job after it (in this file and the files after it).
//! - An option line before any section is an error (`option <...> outside of [] job section`).
//! - `include FILE` splices FILE's option lines into the current section (relative to the
//!   including file when not found as given); an included file may not open sections.
//! - `${VAR}` is replaced by the environment variable (empty when unset) and `$pagesize`,
//!   `$mb_memory`, `$ncpus` by the machine's values; when a keyword was replaced and the value
//!   holds `+ - * /`, fio pipes it through `bc`: fiolike evaluates the same integer arithmetic
//!   itself (see [`eval_arithmetic`]).
//! - `--section=NAME` keeps only the named job sections (global sections always apply).
//!
//! The result keeps each line as written after substitution; options are applied later by
//! [`super::options`], so the JSON "job options" show what the user wrote.

use std::path::{Path, PathBuf};

use thiserror::Error;

/// A section as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawSection {
    /// The title between the brackets.
    pub name: String,
    /// Whether it is a `[global...]` section.
    pub global: bool,
    /// The option lines, after comment stripping and `${VAR}`/keyword substitution.
    pub lines: Vec<String>,
}

/// A job file that could not be read.
#[derive(Debug, Error)]
pub enum JobFileError {
    /// The file could not be opened.
    #[error("fio: unable to open '{path}' job file: {source}")]
    Open {
        /// The path as given.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// An option line before the first section.
    #[error("fio: option <{line}> outside of [] job section ({path}:{lineno})")]
    OutsideSection {
        /// The file.
        path: String,
        /// The line number (1-based).
        lineno: usize,
        /// The line.
        line: String,
    },
    /// A malformed section title.
    #[error("fio: bad section title <{line}> ({path}:{lineno})")]
    BadSection {
        /// The file.
        path: String,
        /// The line number (1-based).
        lineno: usize,
        /// The line.
        line: String,
    },
    /// An included file tried to open a section.
    #[error("No new sections in included files ({path}:{lineno})")]
    SectionInInclude {
        /// The included file.
        path: String,
        /// The line number (1-based).
        lineno: usize,
    },
    /// Includes nested too deep (a file including itself).
    #[error("fio: include nesting too deep at {path}")]
    IncludeLoop {
        /// The file.
        path: String,
    },
    /// Arithmetic after a keyword substitution that does not evaluate.
    #[error("fio: failed parsing {line}: cannot evaluate the arithmetic")]
    Arithmetic {
        /// The line after substitution.
        line: String,
    },
}

/// Values that `$pagesize`, `$mb_memory` and `$ncpus` stand for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keywords {
    /// `$pagesize`.
    pub pagesize: u64,
    /// `$mb_memory`.
    pub mb_memory: u64,
    /// `$ncpus`.
    pub ncpus: u64,
}

impl Keywords {
    /// This machine's values.
    pub fn of_this_machine() -> Keywords {
        // SAFETY: sysconf only reads system configuration.
        let (page, pages, cpus) = unsafe {
            (
                libc::sysconf(libc::_SC_PAGESIZE),
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_NPROCESSORS_CONF),
            )
        };
        let page = u64::try_from(page).unwrap_or(4096);
        let pages = u64::try_from(pages).unwrap_or(0);
        Keywords {
            pagesize: page,
            mb_memory: page.saturating_mul(pages) / (1024 * 1024),
            ncpus: u64::try_from(cpus).unwrap_or(1).max(1),
        }
    }
}

/// Where `${VAR}` values come from (the process environment, or a map in tests).
pub trait Env {
    /// The variable's value, if set.
    fn var(&self, name: &str) -> Option<String>;
}

/// The process environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

/// A fixed list of variables (for tests and embedding).
#[derive(Debug, Clone, Copy)]
pub struct VarList<'a>(pub &'a [(&'a str, &'a str)]);

impl Env for VarList<'_> {
    fn var(&self, name: &str) -> Option<String> {
        self.0
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    }
}

/// Replace `${VAR}` by its value (empty when unset), as fio's `fio_option_dup_subs`.
pub fn substitute_env(line: &str, env: &dyn Env) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find('}') {
            Some(end) if end > 0 => {
                out.push_str(&env.var(&after[..end]).unwrap_or_default());
                rest = &after[end + 1..];
            }
            _ => {
                out.push_str("${");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Replace fio's reserved keywords; returns the line and whether any was replaced.
pub fn substitute_keywords(line: &str, kw: &Keywords) -> (String, bool) {
    let mut s = line.to_string();
    let mut replaced = false;
    for (word, value) in [
        ("$pagesize", kw.pagesize),
        ("$mb_memory", kw.mb_memory),
        ("$ncpus", kw.ncpus),
    ] {
        if s.contains(word) {
            s = s.replace(word, &value.to_string());
            replaced = true;
        }
    }
    (s, replaced)
}

/// Evaluate the integer arithmetic fio hands to `bc` (`+ - * /`, parentheses, integer
/// division as `bc` does with its default scale of 0). Returns `None` when the text is not
/// such an expression.
pub fn eval_arithmetic(expr: &str) -> Option<i64> {
    struct P<'a> {
        s: &'a [u8],
        i: usize,
    }
    impl P<'_> {
        fn ws(&mut self) {
            while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
                self.i += 1;
            }
        }
        fn expr(&mut self) -> Option<i64> {
            let mut v = self.term()?;
            loop {
                self.ws();
                match self.s.get(self.i) {
                    Some(b'+') => {
                        self.i += 1;
                        v = v.checked_add(self.term()?)?;
                    }
                    Some(b'-') => {
                        self.i += 1;
                        v = v.checked_sub(self.term()?)?;
                    }
                    _ => return Some(v),
                }
            }
        }
        fn term(&mut self) -> Option<i64> {
            let mut v = self.atom()?;
            loop {
                self.ws();
                match self.s.get(self.i) {
                    Some(b'*') => {
                        self.i += 1;
                        v = v.checked_mul(self.atom()?)?;
                    }
                    Some(b'/') => {
                        self.i += 1;
                        v = v.checked_div(self.atom()?)?;
                    }
                    _ => return Some(v),
                }
            }
        }
        fn atom(&mut self) -> Option<i64> {
            self.ws();
            match self.s.get(self.i) {
                Some(b'(') => {
                    self.i += 1;
                    let v = self.expr()?;
                    self.ws();
                    (self.s.get(self.i) == Some(&b')')).then(|| {
                        self.i += 1;
                        v
                    })
                }
                Some(b'-') => {
                    self.i += 1;
                    self.atom()?.checked_neg()
                }
                Some(c) if c.is_ascii_digit() => {
                    let start = self.i;
                    while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
                        self.i += 1;
                    }
                    std::str::from_utf8(&self.s[start..self.i])
                        .ok()?
                        .parse()
                        .ok()
                }
                _ => None,
            }
        }
    }
    let mut p = P {
        s: expr.as_bytes(),
        i: 0,
    };
    let v = p.expr()?;
    p.ws();
    (p.i == p.s.len()).then_some(v)
}

/// Substitute `${VAR}` and keywords in an option line, evaluating arithmetic after a keyword
/// as fio does with `bc`.
pub fn substitute(line: &str, env: &dyn Env, kw: &Keywords) -> Result<String, JobFileError> {
    let s = substitute_env(line, env);
    let (s, replaced) = substitute_keywords(&s, kw);
    if !replaced || !s.contains(['+', '-', '*', '/']) || s.contains('\'') {
        return Ok(s);
    }
    let Some((key, value)) = s.split_once('=') else {
        return Ok(s);
    };
    match eval_arithmetic(value) {
        Some(v) => Ok(format!("{key}={v}")),
        None => Err(JobFileError::Arithmetic { line: s }),
    }
}

/// fio's `strip_blank_end`: cut at the first `;` or `#`, then trailing blanks.
fn strip_comment_and_end(line: &str) -> &str {
    let cut = line.find([';', '#']).unwrap_or(line.len());
    line[..cut].trim_end_matches(|c: char| c.is_whitespace() || c.is_control())
}

/// A job file's text and where it came from (for `include` and messages).
#[derive(Debug, Clone)]
pub struct Source<'a> {
    /// What to call it in messages.
    pub name: &'a str,
    /// Its directory, for relative includes (`None` for stdin).
    pub dir: Option<&'a Path>,
    /// The text.
    pub text: &'a str,
}

/// How a job file is read: which sections to keep, and the substitution sources.
pub struct ReadOptions<'a> {
    /// `--section` names (empty: all).
    pub sections: &'a [String],
    /// `${VAR}` values.
    pub env: &'a dyn Env,
    /// Keyword values.
    pub keywords: Keywords,
}

fn is_empty_or_comment(line: &str) -> bool {
    for c in line.chars() {
        if c == ';' || c == '#' {
            return true;
        }
        if !c.is_whitespace() && !c.is_control() {
            return false;
        }
    }
    true
}

fn keep_section(name: &str, sections: &[String]) -> bool {
    sections.is_empty() || name.starts_with("global") || sections.iter().any(|s| s == name)
}

const MAX_INCLUDE_DEPTH: usize = 16;

/// Read the lines of an included file into `lines`.
fn include_lines(
    path: &str,
    including_dir: Option<&Path>,
    opts: &ReadOptions<'_>,
    lines: &mut Vec<String>,
    depth: usize,
) -> Result<(), JobFileError> {
    if depth > MAX_INCLUDE_DEPTH {
        return Err(JobFileError::IncludeLoop {
            path: path.to_string(),
        });
    }
    let mut resolved = PathBuf::from(path);
    if !resolved.exists()
        && let Some(dir) = including_dir
    {
        resolved = dir.join(path);
    }
    let text = std::fs::read_to_string(&resolved).map_err(|source| JobFileError::Open {
        path: resolved.display().to_string(),
        source,
    })?;
    let name = resolved.display().to_string();
    let dir = resolved.parent().map(Path::to_path_buf);
    for (i, raw) in text.lines().enumerate() {
        if is_empty_or_comment(raw) {
            continue;
        }
        let line = strip_comment_and_end(raw.trim_start());
        if line.starts_with('[') {
            return Err(JobFileError::SectionInInclude {
                path: name,
                lineno: i + 1,
            });
        }
        if let Some(inc) = line.strip_prefix("include ") {
            include_lines(inc.trim(), dir.as_deref(), opts, lines, depth + 1)?;
            continue;
        }
        lines.push(substitute(line, opts.env, &opts.keywords)?);
    }
    Ok(())
}

/// Read a job file into its sections (sections filtered by `--section`).
pub fn parse_job_text(
    src: &Source<'_>,
    opts: &ReadOptions<'_>,
) -> Result<Vec<RawSection>, JobFileError> {
    let mut out: Vec<RawSection> = Vec::new();
    // Whether the current section is being skipped by --section.
    let mut skipping = false;
    for (i, raw) in src.text.lines().enumerate() {
        let lineno = i + 1;
        if is_empty_or_comment(raw) {
            continue;
        }
        let line = strip_comment_and_end(raw.trim_start());
        if let Some(title) = line.strip_prefix('[') {
            let Some(name) = title.strip_suffix(']') else {
                return Err(JobFileError::BadSection {
                    path: src.name.to_string(),
                    lineno,
                    line: line.to_string(),
                });
            };
            if name.is_empty() {
                return Err(JobFileError::BadSection {
                    path: src.name.to_string(),
                    lineno,
                    line: line.to_string(),
                });
            }
            skipping = !keep_section(name, opts.sections);
            if !skipping {
                out.push(RawSection {
                    name: name.to_string(),
                    global: name.starts_with("global"),
                    lines: Vec::new(),
                });
            }
            continue;
        }
        if skipping {
            continue;
        }
        let Some(section) = out.last_mut() else {
            return Err(JobFileError::OutsideSection {
                path: src.name.to_string(),
                lineno,
                line: line.to_string(),
            });
        };
        if let Some(inc) = line.strip_prefix("include ") {
            include_lines(inc.trim(), src.dir, opts, &mut section.lines, 1)?;
            continue;
        }
        section
            .lines
            .push(substitute(line, opts.env, &opts.keywords)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KW: Keywords = Keywords {
        pagesize: 4096,
        mb_memory: 1000,
        ncpus: 2,
    };

    fn read(text: &str, env: &[(&str, &str)], sections: &[String]) -> Vec<RawSection> {
        let env = VarList(env);
        let opts = ReadOptions {
            sections,
            env: &env,
            keywords: KW,
        };
        parse_job_text(
            &Source {
                name: "t.fio",
                dir: None,
                text,
            },
            &opts,
        )
        .unwrap()
    }

    #[test]
    fn sections_comments_and_substitution() {
        let text = "; two-job example\n[global]\ndirectory=${FIODIR}\n  bs=4k ; inline\nsize=${SZ}\n\n# c\n[mixed]\nrw=randrw\ngroup_reporting\nnumjobs=$ncpus\n";
        let s = read(text, &[("FIODIR", "/mnt/fio"), ("SZ", "2m")], &[]);
        assert_eq!(s.len(), 2);
        assert!(s[0].global && !s[1].global);
        assert_eq!(s[0].lines, vec!["directory=/mnt/fio", "bs=4k", "size=2m"]);
        assert_eq!(
            s[1].lines,
            vec!["rw=randrw", "group_reporting", "numjobs=2"]
        );
    }

    #[test]
    fn unset_variables_become_empty_and_blanks_after_equals_stay() {
        let s = read("[a]\ndirectory = ${NOPE}/x\n", &[], &[]);
        assert_eq!(s[0].lines, vec!["directory = /x"]);
    }

    #[test]
    fn keyword_arithmetic_is_evaluated_like_bc() {
        let s = read("[a]\nsize=8*$mb_memory\nbs=$pagesize\n", &[], &[]);
        assert_eq!(s[0].lines, vec!["size=8000", "bs=4096"]);
        assert_eq!(eval_arithmetic("(2+3)*4 - 10/3"), Some(17));
        assert_eq!(eval_arithmetic("2+"), None);
    }

    #[test]
    fn option_outside_a_section_is_an_error_naming_the_line() {
        let opts = ReadOptions {
            sections: &[],
            env: &VarList(&[]),
            keywords: KW,
        };
        let e = parse_job_text(
            &Source {
                name: "j.fio",
                dir: None,
                text: "rw=write\n[a]\n",
            },
            &opts,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "fio: option <rw=write> outside of [] job section (j.fio:1)"
        );
        let e = parse_job_text(
            &Source {
                name: "j.fio",
                dir: None,
                text: "[a\nrw=write\n",
            },
            &opts,
        )
        .unwrap_err();
        assert!(matches!(e, JobFileError::BadSection { lineno: 1, .. }));
    }

    #[test]
    fn section_filter_keeps_globals() {
        let text = "[global]\nbs=8k\n[a]\nrw=read\n[b]\nrw=write\n";
        let s = read(text, &[], &["b".to_string()]);
        let names: Vec<_> = s.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, vec!["global", "b"]);
    }

    #[test]
    fn include_splices_lines_relative_to_the_including_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("inc.fio"), "bs=16k\n; c\nsize=1m\n").unwrap();
        std::fs::write(dir.path().join("bad.fio"), "[x]\n").unwrap();
        let opts = ReadOptions {
            sections: &[],
            env: &VarList(&[]),
            keywords: KW,
        };
        let s = parse_job_text(
            &Source {
                name: "main.fio",
                dir: Some(dir.path()),
                text: "[a]\nrw=write\ninclude inc.fio\n",
            },
            &opts,
        )
        .unwrap();
        assert_eq!(s[0].lines, vec!["rw=write", "bs=16k", "size=1m"]);
        let e = parse_job_text(
            &Source {
                name: "main.fio",
                dir: Some(dir.path()),
                text: "[a]\ninclude bad.fio\n",
            },
            &opts,
        )
        .unwrap_err();
        assert!(matches!(e, JobFileError::SectionInInclude { .. }));
        let e = parse_job_text(
            &Source {
                name: "main.fio",
                dir: Some(dir.path()),
                text: "[a]\ninclude missing.fio\n",
            },
            &opts,
        )
        .unwrap_err();
        assert!(e.to_string().contains("unable to open"), "{e}");
    }
}
