//! fio's command line (`init.c`, `parse_cmd_line`), minus fslab's own flags.
//!
//! fio reads its arguments with `getopt_long_only`, so `--opt=value`, `--opt value`, `-opt=value`
//! all work, and every job option is also a long option. Options before the first `--name`
//! (or after `--name=global`) set the defaults that every job inherits, job files included;
//! options after a `--name=JOB` belong to that job. Arguments that are not options are job
//! files, `-` meaning stdin; GNU getopt moves them to the end, so an option written after a
//! job file is still a default for it (`fio job.fio --bs=16k` changes the file's jobs unless a
//! section sets `bs` itself).
//!
//! fslab's shared flags (`--fs`, `--device`, `-o`, `--stats`, `--trace`, ...) are taken out by
//! the binary before this parser sees the arguments; fio's own `-o` short form of `--output`
//! is therefore not available (write `--output=FILE`).

use std::path::PathBuf;

use thiserror::Error;

use super::number::{TimeUnit, parse_time_us};
use super::options::{self, Lookup, closest_option};

/// Which report formats to print (`--output-format`, a comma list).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputFormats {
    /// fio's human-readable report.
    pub normal: bool,
    /// `terse` (`--minimal`).
    pub terse: bool,
    /// `json`.
    pub json: bool,
    /// `json+` (json with latency bins).
    pub json_plus: bool,
}

impl Default for OutputFormats {
    fn default() -> Self {
        OutputFormats {
            normal: true,
            terse: false,
            json: false,
            json_plus: false,
        }
    }
}

impl OutputFormats {
    /// Parse fio's comma list.
    pub fn parse(s: &str) -> Option<OutputFormats> {
        let mut f = OutputFormats {
            normal: false,
            terse: false,
            json: false,
            json_plus: false,
        };
        for part in s.split(',') {
            match part {
                "normal" => f.normal = true,
                "terse" => f.terse = true,
                "json" => f.json = true,
                "json+" => {
                    f.json = true;
                    f.json_plus = true;
                }
                _ => return None,
            }
        }
        Some(f)
    }

    /// Whether any JSON is printed.
    pub fn any_json(&self) -> bool {
        self.json || self.json_plus
    }
}

/// When to draw the ETA line (`--eta`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EtaWhen {
    /// On a terminal only (fio's default).
    #[default]
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// fio's global switches fiolike implements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Switches {
    /// `--output=FILE`.
    pub output: Option<PathBuf>,
    /// `--output-format` / `--minimal`.
    pub formats: OutputFormats,
    /// `--terse-version` (2..5; 3 by default).
    pub terse_version: u8,
    /// `--section` (repeatable).
    pub sections: Vec<String>,
    /// `--parse-only`.
    pub parse_only: bool,
    /// `--status-interval`, in milliseconds (0: off).
    pub status_interval_ms: u64,
    /// `--eta`.
    pub eta: EtaWhen,
}

impl Default for Switches {
    fn default() -> Self {
        Switches {
            output: None,
            formats: OutputFormats::default(),
            terse_version: 3,
            sections: Vec::new(),
            parse_only: false,
            status_interval_ms: 0,
            eta: EtaWhen::Auto,
        }
    }
}

/// One job option on the command line, in order. `--name=X` starts a job (`X` = `global`:
/// back to the defaults).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CmdItem {
    /// `--name=X`.
    Name(String),
    /// Any other job option, as `key=value` or a bare `key`.
    Option(String),
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Run (or with `--parse-only`, only check) the jobs.
    Run,
    /// `--help`.
    Help,
    /// `--version`.
    Version,
}

/// The parsed command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandLine {
    /// What to do.
    pub action: Action,
    /// Global switches.
    pub switches: Switches,
    /// Job options and `--name` markers, in order.
    pub items: Vec<CmdItem>,
    /// Job files (`-` = stdin), in order.
    pub job_files: Vec<String>,
}

/// A command line fio (or fiolike) refuses.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CmdlineError {
    /// Not an option fio knows.
    #[error("fio: unrecognized option '{arg}'{}", suggestion.map(|s| format!("\nDid you mean {s}?")).unwrap_or_default())]
    Unrecognized {
        /// The argument as given.
        arg: String,
        /// fio's guess.
        suggestion: Option<&'static str>,
    },
    /// A fio switch fiolike does not implement.
    #[error("fiolike: --{name} is a fio switch that fiolike does not implement")]
    NotImplemented {
        /// The switch.
        name: String,
    },
    /// A switch or option that needs a value got none.
    #[error("fio: option '--{name}' requires an argument")]
    NeedsArgument {
        /// The switch.
        name: String,
    },
    /// A switch value that does not parse.
    #[error("fio: failed parsing {what}")]
    BadValue {
        /// The switch and value.
        what: String,
    },
    /// `--section=global`.
    #[error("fio: can't use global as only section")]
    GlobalSection,
}

/// fio's global switches that fiolike does not implement (refused by name).
const SWITCHES_NOT_IMPLEMENTED: &[&str] = &[
    "latency-log",
    "bandwidth-log",
    "append-terse",
    "cmdhelp",
    "enghelp",
    "showcmd",
    "readonly",
    "eta-interval",
    "eta-newline",
    "debug",
    "inflate-log",
    "alloc-size",
    "profile",
    "warnings-fatal",
    "max-jobs",
    "server",
    "server-internal",
    "daemonize",
    "client",
    "remote-config",
    "cpuclock-test",
    "crctest",
    "memcpytest",
    "idle-prof",
    "trigger-file",
    "trigger-timeout",
    "trigger",
    "trigger-remote",
    "aux-path",
    "merge-blktrace-only",
];

/// fio's own switches fiolike implements (used for suggestions, with the job options).
const SWITCHES: &[&str] = &[
    "output",
    "output-format",
    "minimal",
    "terse-version",
    "section",
    "parse-only",
    "status-interval",
    "eta",
    "version",
    "help",
];

fn suggest_switch(name: &str) -> Option<&'static str> {
    let job_option = closest_option(name);
    let mut best: Option<(&'static str, usize)> =
        job_option.map(|o| (o, options::string_distance(name, o)));
    for s in SWITCHES.iter().chain(SWITCHES_NOT_IMPLEMENTED) {
        let d = options::string_distance(name, s);
        if best.is_none_or(|(_, bd)| d < bd) {
            best = Some((s, d));
        }
    }
    best.and_then(|(s, d)| (d <= name.len().div_ceil(2)).then_some(s))
}

/// Parse fio's arguments (without the program name and without fslab's flags).
pub fn parse(args: &[String]) -> Result<CommandLine, CmdlineError> {
    let mut cl = CommandLine {
        action: Action::Run,
        switches: Switches::default(),
        items: Vec::new(),
        job_files: Vec::new(),
    };
    let mut i = 0;
    let mut only_files = false;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if only_files || arg == "-" || !arg.starts_with('-') {
            cl.job_files.push(arg.clone());
            continue;
        }
        if arg == "--" {
            only_files = true;
            continue;
        }
        let body = arg.strip_prefix("--").unwrap_or(&arg[1..]);
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (body, None),
        };
        // A value for a switch that needs one: inline, or the next argument.
        let take_value = |i: &mut usize| -> Result<String, CmdlineError> {
            if let Some(v) = &inline {
                return Ok(v.clone());
            }
            match args.get(*i) {
                Some(v) => {
                    *i += 1;
                    Ok(v.clone())
                }
                None => Err(CmdlineError::NeedsArgument {
                    name: name.to_string(),
                }),
            }
        };
        match name {
            "output" => cl.switches.output = Some(PathBuf::from(take_value(&mut i)?)),
            "output-format" => {
                let v = take_value(&mut i)?;
                cl.switches.formats =
                    OutputFormats::parse(&v).ok_or_else(|| CmdlineError::BadValue {
                        what: format!("output-format={v}"),
                    })?;
            }
            "minimal" => {
                cl.switches.formats = OutputFormats {
                    normal: false,
                    terse: true,
                    json: false,
                    json_plus: false,
                }
            }
            "terse-version" => {
                let v = take_value(&mut i)?;
                cl.switches.terse_version = match v.as_str() {
                    "2" => 2,
                    "3" => 3,
                    "4" => 4,
                    "5" => 5,
                    _ => {
                        return Err(CmdlineError::BadValue {
                            what: format!("terse-version={v} (2..5)"),
                        });
                    }
                };
            }
            "section" => {
                let v = take_value(&mut i)?;
                if v == "global" {
                    return Err(CmdlineError::GlobalSection);
                }
                cl.switches.sections.push(v);
            }
            "parse-only" => cl.switches.parse_only = true,
            "status-interval" => {
                let v = take_value(&mut i)?;
                let us =
                    parse_time_us(&v, TimeUnit::Seconds).map_err(|_| CmdlineError::BadValue {
                        what: format!("time {v}"),
                    })?;
                cl.switches.status_interval_ms = us / 1000;
            }
            "eta" => {
                let v = take_value(&mut i)?;
                cl.switches.eta = match v.as_str() {
                    "always" => EtaWhen::Always,
                    "never" => EtaWhen::Never,
                    "auto" => EtaWhen::Auto,
                    _ => {
                        return Err(CmdlineError::BadValue {
                            what: format!("eta={v}"),
                        });
                    }
                };
            }
            "version" | "v" => cl.action = Action::Version,
            "help" | "h" => cl.action = Action::Help,
            _ if SWITCHES_NOT_IMPLEMENTED.contains(&name) => {
                return Err(CmdlineError::NotImplemented {
                    name: name.to_string(),
                });
            }
            _ => match options::lookup(name) {
                Lookup::Unknown => {
                    return Err(CmdlineError::Unrecognized {
                        arg: arg.clone(),
                        suggestion: suggest_switch(name),
                    });
                }
                Lookup::NotImplemented | Lookup::Implemented(_) => {
                    let value = match inline {
                        Some(v) => Some(v),
                        None if options::may_be_bare(name) => None,
                        None => match options::lookup(name) {
                            // An option fio has but fiolike lacks is refused when applied;
                            // do not swallow the next argument for it.
                            Lookup::NotImplemented => None,
                            _ => Some(take_value(&mut i)?),
                        },
                    };
                    if name == "name" {
                        cl.items.push(CmdItem::Name(value.unwrap_or_default()));
                    } else {
                        cl.items.push(CmdItem::Option(match value {
                            Some(v) => format!("{name}={v}"),
                            None => name.to_string(),
                        }));
                    }
                }
            },
        }
    }
    Ok(cl)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<CommandLine, CmdlineError> {
        parse(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn jobs_options_and_files_in_order() {
        let cl = p(&[
            "--bs=8k",
            "job.fio",
            "--name=a",
            "--rw",
            "write",
            "--time_based",
            "-runtime=2",
            "-",
        ])
        .unwrap();
        assert_eq!(cl.job_files, vec!["job.fio", "-"]);
        assert_eq!(
            cl.items,
            vec![
                CmdItem::Option("bs=8k".into()),
                CmdItem::Name("a".into()),
                CmdItem::Option("rw=write".into()),
                CmdItem::Option("time_based".into()),
                CmdItem::Option("runtime=2".into()),
            ]
        );
    }

    #[test]
    fn switches() {
        let cl = p(&[
            "--output-format=json+,normal",
            "--output",
            "out.txt",
            "--section=b",
            "--status-interval=2",
            "--parse-only",
            "--terse-version=3",
        ])
        .unwrap();
        assert!(cl.switches.formats.json_plus && cl.switches.formats.json);
        assert!(cl.switches.formats.normal && !cl.switches.formats.terse);
        assert_eq!(cl.switches.output, Some(PathBuf::from("out.txt")));
        assert_eq!(cl.switches.sections, vec!["b"]);
        assert_eq!(cl.switches.status_interval_ms, 2000);
        assert!(cl.switches.parse_only);
        let cl = p(&["--minimal"]).unwrap();
        assert!(cl.switches.formats.terse && !cl.switches.formats.normal);
    }

    #[test]
    fn refusals_name_the_argument() {
        let e = p(&["--fsycn=1"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "fio: unrecognized option '--fsycn=1'\nDid you mean fsync?"
        );
        assert!(matches!(
            p(&["--server"]).unwrap_err(),
            CmdlineError::NotImplemented { .. }
        ));
        assert!(matches!(
            p(&["--output-format=xml"]).unwrap_err(),
            CmdlineError::BadValue { .. }
        ));
        assert!(matches!(
            p(&["--rw"]).unwrap_err(),
            CmdlineError::NeedsArgument { .. }
        ));
        assert_eq!(
            p(&["--section=global"]).unwrap_err(),
            CmdlineError::GlobalSection
        );
    }

    #[test]
    fn double_dash_ends_options() {
        let cl = p(&["--", "--weird-name.fio"]).unwrap();
        assert_eq!(cl.job_files, vec!["--weird-name.fio"]);
    }
}
